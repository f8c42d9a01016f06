/**
 * Deliveries for convergence tests: fast-check arbitraries that deliver a list of records at least
 * once each, in any order or in order, with duplicates and any split into batches, and a plain view
 * of a MemoryStore to compare the outcome with. Example: `deliveries(3)` may give the batches
 * [[2], [0, 2], [1]] (record 2 delivered twice); `inOrderDeliveries(3)` keeps 0, 1, 2 in order and
 * re-sends a window after the end, as a connector does when it restarts from an older offset.
 */
import fc from 'fast-check';
import type { MemoryStore } from '../../../../../functions/core/memory-store.js';

/** Index batches: every index at least once, any order, some twice, split into batches of 1 to 4. */
export function deliveries(n: number): fc.Arbitrary<number[][]> {
  const indexes = Array.from({ length: n }, (_, i) => i);
  return fc
    .record({
      order: fc.shuffledSubarray(indexes, { minLength: n, maxLength: n }),
      duplicates: fc.array(fc.record({ index: fc.nat({ max: n - 1 }), at: fc.nat() }), { maxLength: n }),
      cuts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
    })
    .map(({ order, duplicates, cuts }) => {
      const stream = [...order];
      for (const d of duplicates) stream.splice(d.at % (stream.length + 1), 0, d.index);
      return split(stream, cuts);
    });
}

/** Index batches in order 0..n-1, then a window re-sent after the end (a restart from an older offset). */
export function inOrderDeliveries(n: number): fc.Arbitrary<number[][]> {
  return fc
    .record({ from: fc.nat({ max: n - 1 }), cuts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }) })
    .map(({ from, cuts }) => {
      const indexes = Array.from({ length: n }, (_, i) => i);
      return split([...indexes, ...indexes.slice(from)], cuts);
    });
}

function split(stream: readonly number[], cuts: readonly number[]): number[][] {
  const batches: number[][] = [];
  for (let i = 0, c = 0; i < stream.length; c++) {
    const size = cuts[c % cuts.length] ?? 1;
    batches.push(stream.slice(i, i + size));
    i += size;
  }
  return batches;
}

/** Every stored item of every table: what a reader (tombstones included) would see. */
export function storeView(store: MemoryStore): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  for (const table of store.tableNames()) {
    for (const [keyId, item] of store.entries(table)) view[`${table}/${keyId}`] = { row: item.row, deleted: item.deleted, position: item.position, op: item.op };
  }
  return view;
}
