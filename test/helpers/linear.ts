/**
 * Linear time, checked as a ratio rather than a time: the best of three runs of the same work at
 * 1/8 of the size and at full size, in CPU time (`process.cpuUsage`), which a loaded machine does
 * not inflate as it does wall time. A linear algorithm takes about 8× as long, a quadratic one 64×.
 */
import assert from 'node:assert/strict';

function best(work: () => void): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const started = process.cpuUsage();
    work();
    const used = process.cpuUsage(started);
    fastest = Math.min(fastest, (used.user + used.system) / 1e3);
  }
  return fastest;
}

/** Fails when `workOf(size)` grows clearly faster than linearly from size/8 to size. */
export function assertLinear(workOf: (size: number) => () => void, size: number, what: string): void {
  // Warm the code paths up first, so the small size is not charged with compilation.
  workOf(Math.ceil(size / 8))();
  const small = best(workOf(Math.ceil(size / 8)));
  const large = best(workOf(size));
  const ratio = large / Math.max(small, 0.05);
  assert.ok(ratio < 24, `${what}: ${large.toFixed(1)} ms at ${size} ÷ ${small.toFixed(1)} ms at ${Math.ceil(size / 8)} = ${ratio.toFixed(1)} (linear ≈ 8, quadratic ≈ 64)`);
}
