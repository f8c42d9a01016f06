/**
 * Planning CPU cost (planBatch alone, on already-normalized events) and the printed comparison.
 */
import { planBatch } from '../../functions/core/plan.js';
import type { ChangeEvent } from '../../functions/core/types.js';

/** planBatch timings. */
export interface PlanningCost {
  readonly microsPerEvent: number;
  readonly eventsPerSecond: number;
  readonly bigBatchEvents: number;
  readonly bigBatchMs: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/**
 * Times planBatch over `batches` (`repeats` passes, median pass) and over one batch of the first
 * `bigBatch` events of the stream (median of `repeats`). One warm-up pass is not timed.
 */
export function measurePlanning(batches: readonly (readonly ChangeEvent[])[], identify: (e: ChangeEvent) => string, repeats = 5, bigBatch = 10_000): PlanningCost {
  const events = batches.reduce((n, b) => n + b.length, 0);
  const pass = (): number => {
    const started = performance.now();
    let writes = 0;
    for (const b of batches) writes += planBatch(b, identify).writes.length;
    const ms = performance.now() - started;
    if (writes < 0) throw new Error('unreachable'); // keeps the result observable
    return ms;
  };
  pass();
  const passMs = median(Array.from({ length: repeats }, pass));
  const big = batches.flat().slice(0, bigBatch);
  planBatch(big, identify);
  const bigMs = median(
    Array.from({ length: repeats }, () => {
      const started = performance.now();
      planBatch(big, identify);
      return performance.now() - started;
    }),
  );
  return { microsPerEvent: (passMs * 1000) / events, eventsPerSecond: events / (passMs / 1000), bigBatchEvents: big.length, bigBatchMs: bigMs };
}

/** One side of the comparison. */
export interface Side {
  readonly wallMs: number;
  readonly requests: number;
  readonly writeUnits: number;
  readonly s3Puts: number;
}

const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const ratio = (a: number, b: number): string => (b > 0 && a > 0 ? `${fixed(a / b, 2)}x` : '-');
const row = (label: string, a: string, b: string, r: string): string => `${label.padEnd(30)}${a.padStart(12)}${b.padStart(12)}${r.padStart(10)}`;

/**
 * The comparison table. Every "per event" figure divides by delivered records (redelivered copies
 * included), the same denominator on both sides. The ratio column is labelled per line.
 */
export function comparisonTable(records: number, tidemark: Side, baseline: Side): string[] {
  const tRate = records / (tidemark.wallMs / 1000);
  const bRate = records / (baseline.wallMs / 1000);
  return [
    row('', 'tidemark', 'baseline', 'ratio'),
    row('wall time (s)', fixed(tidemark.wallMs / 1000, 1), fixed(baseline.wallMs / 1000, 1), ''),
    row('events/s  (t/b)', fixed(tRate, 0), fixed(bRate, 0), ratio(tRate, bRate)),
    row('DynamoDB requests/event (b/t)', fixed(tidemark.requests / records, 3), fixed(baseline.requests / records, 3), ratio(baseline.requests, tidemark.requests)),
    row('write units/event (b/t)', fixed(tidemark.writeUnits / records, 3), fixed(baseline.writeUnits / records, 3), ratio(baseline.writeUnits, tidemark.writeUnits)),
    row('S3 PUTs/event', fixed(tidemark.s3Puts / records, 4), fixed(baseline.s3Puts / records, 0), '-'),
  ];
}
