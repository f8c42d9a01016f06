/**
 * reconcile-full and reconcile-window on DuckDB: one key per class (missing, deleted-live, stale,
 * mismatch, ahead, extra), and the counted ones (ok, in-flight, unverifiable, erased), each
 * hand-computed; window-keys; and, as a property, every key classified exactly as classify.ts does.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import fc from 'fast-check';
import { type Actual, classify, type Expected } from '../../../../functions/jobs/reconcile/classify.js';
import { reconcileFull } from '../../../../functions/sql/statements/reconcile-full.js';
import { reconcileWindow } from '../../../../functions/sql/statements/reconcile-window.js';
import { windowKeys } from '../../../../functions/sql/statements/window-keys.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { historyRow, pos } from '../../../helpers/history-rows.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 30, 6);
const U = H0 + 3 * HOUR; // the hour not compacted yet
const CUTOFF = H0 + 2 * HOUR;
const T = 'public.orders';
const kid = (k: number) => JSON.stringify([String(k)]);

interface Exp {
  key: number;
  position: number;
  op?: string;
  hash?: string | null;
  conflict?: boolean;
  table?: string;
}
interface Item {
  key: number;
  position: number;
  deleted?: boolean;
  hash?: string;
  appliedAt?: number;
  erased?: boolean;
  table?: string;
}

class Sides {
  constructor(private readonly bench: SqlBench) {}

  async reset(): Promise<void> {
    for (const t of ['history', 'expected_state', 'truncates']) await this.bench.db.run(`DELETE FROM ${t}`);
    rmSync(join(this.bench.root, 'raw'), { recursive: true, force: true });
    rmSync(join(this.bench.root, 'side'), { recursive: true, force: true });
  }

  async expected(rows: readonly Exp[], watermark?: number): Promise<void> {
    await this.bench.insert(
      'expected_state',
      rows.map((e) => {
        const op = e.op ?? 'u';
        return { source_table: e.table ?? T, key_id: kid(e.key), key_json: JSON.stringify({ id: e.key }), position: pos(e.position), op, hash: e.hash === undefined ? `h${e.position}` : e.hash, commit_ts: 1, deleted: op === 'd' || (watermark !== undefined && e.position < watermark), conflict: e.conflict ?? false, hour: H0 };
      }),
    );
    // every expected key changed in the window (H0), as window-keys reads history
    await this.bench.insert('history', rows.map((e) => historyRow({ table: e.table ?? T, key: e.key, position: pos(e.position), op: e.op ?? 'u', hour: H0 })));
    if (watermark !== undefined) await this.bench.insert('truncates', [{ source_table: T, position: pos(watermark) }]);
  }

  /** Lines of the uncompacted hour U. */
  unsettled(lines: readonly { key: number; position: number; table?: string }[]): void {
    if (lines.length === 0) return;
    const o = batchOf('raw/', lines.map((l, i) => v2Line({ table: l.table ?? T, key: { id: l.key }, position: pos(l.position), op: 'u', arrivalTs: U + 60_000 + i })));
    this.bench.object(o.key, o.body);
  }

  items(run: string, items: readonly Item[]): void {
    const lines = items.map((i) => JSON.stringify({ source_table: i.table ?? T, key_id: kid(i.key), key_json: JSON.stringify({ id: i.key }), position: pos(i.position), deleted: i.deleted ?? false, erased: i.erased ?? false, hash: i.hash ?? `h${i.position}`, applied_at: i.appliedAt ?? H0 }));
    this.bench.object(`side/run_id=${run}/part-0.jsonl`, `${lines.join('\n')}\n`);
  }
}

const byKey = (rows: readonly Record<string, unknown>[]) => Object.fromEntries(rows.map((r) => [String(r.key_id), r.class]));

describe('reconcile, one key per class', () => {
  let bench: SqlBench;
  let sides: Sides;
  before(async () => {
    bench = await SqlBench.open();
    sides = new Sides(bench);
  });
  after(() => bench.close());
  beforeEach(() => sides.reset());

  it('full mode: the six classes, ok, in flight (applied after the cutoff, or raw not compacted yet) and erased', async () => {
    await sides.expected([
      { key: 1, position: 10 }, // missing: no item
      { key: 2, position: 12, op: 'd' }, // deleted-live: live item older than the delete
      { key: 3, position: 13 }, // stale: item older
      { key: 4, position: 14, hash: 'raw' }, // mismatch: same position, other content
      { key: 5, position: 15 }, // ahead: item above all raw
      { key: 7, position: 17 }, // ok
      { key: 8, position: 18 }, // in-flight: applied after the cutoff
      { key: 9, position: 19, op: 'd' }, // erased: raw's winner a delete, item erased
      { key: 10, position: 20, hash: 'raw', conflict: true }, // ok: a conflict is not a mismatch
      { key: 11, position: 21 }, // ok: item newer, but raw not compacted yet holds that position
    ]);
    sides.unsettled([
      { key: 11, position: 25 },
      { key: 12, position: 30 }, // in-flight: only in raw not compacted yet
    ]);
    sides.items('r1', [
      { key: 2, position: 11 },
      { key: 3, position: 9 },
      { key: 4, position: 14, hash: 'table' },
      { key: 5, position: 99 },
      { key: 6, position: 5 }, // extra: raw never saw the key
      { key: 7, position: 17 },
      { key: 8, position: 1, appliedAt: CUTOFF + 1 },
      { key: 9, position: 19, deleted: true, erased: true },
      { key: 10, position: 20, hash: 'table' },
      { key: 11, position: 25 },
      { key: 13, position: 3, deleted: true, erased: true }, // erased: no raw at all (erase removed it)
      { key: 12, position: 30 },
    ]);
    await bench.sources();
    const args = { tables: [T], runId: 'r1', cutoff: CUTOFF, unsettled: { from: U, to: U } } as const;
    const findings = await bench.run(reconcileFull({ ...args, part: 'findings' }));
    assert.deepEqual(byKey(findings), { [kid(1)]: 'missing', [kid(2)]: 'deleted-live', [kid(3)]: 'stale', [kid(4)]: 'mismatch', [kid(5)]: 'ahead', [kid(6)]: 'extra' });
    const stale = findings.find((r) => r.key_id === kid(3));
    assert.deepEqual(stale, {
      source_table: T, key_id: kid(3), key_json: '{"id":3}', class: 'stale', expected_position: pos(13), expected_op: 'u', expected_hash: 'h13', expected_deleted: false, expected_conflict: false,
      max_position: pos(13), actual_position: pos(9), actual_deleted: false, actual_hash: 'h9', actual_applied_at: H0, actual_erased: false, watermark: null,
    });
    const counts = await bench.run(reconcileFull({ ...args, part: 'counts' }));
    assert.deepEqual(
      Object.fromEntries(counts.map((c) => [c.class, c.keys])),
      { ahead: 1, 'deleted-live': 1, erased: 2, extra: 1, 'in-flight': 2, mismatch: 1, missing: 1, ok: 3, stale: 1 },
    );
  });

  it('a winner that arrived after the cutoff is not settled: a table behind it is in flight, a table at it is judged', async () => {
    const late = CUTOFF + 5_000;
    await sides.expected([
      { key: 1, position: 10 }, // in-flight: no item yet, the winner arrived after the cutoff
      { key: 2, position: 12 }, // in-flight: the item is behind that winner
      { key: 3, position: 13, hash: 'raw' }, // mismatch: same position, judged as usual
      { key: 4, position: 14 }, // missing: the winner arrived before the cutoff
    ]);
    await bench.insert('history', [
      historyRow({ key: 1, position: pos(10), hour: CUTOFF - HOUR, arrival: late }),
      historyRow({ key: 2, position: pos(12), hour: CUTOFF - HOUR, arrival: late }),
      historyRow({ key: 3, position: pos(13), hour: CUTOFF - HOUR, arrival: late }),
    ]);
    sides.items('r1', [{ key: 2, position: 11 }, { key: 3, position: 13, hash: 'table' }]);
    await bench.sources();
    const args = { tables: [T], runId: 'r1', cutoff: CUTOFF, recent: { from: CUTOFF - HOUR, to: CUTOFF } } as const;
    assert.deepEqual(byKey(await bench.run(reconcileFull({ ...args, part: 'findings' }))), { [kid(3)]: 'mismatch', [kid(4)]: 'missing' });
    const counts = await bench.run(reconcileFull({ ...args, part: 'counts' }));
    assert.deepEqual(Object.fromEntries(counts.map((c) => [c.class, c.keys])), { 'in-flight': 2, mismatch: 1, missing: 1 });
    const without = await bench.run(reconcileFull({ tables: [T], runId: 'r1', cutoff: CUTOFF, part: 'findings' }));
    assert.deepEqual(byKey(without), { [kid(1)]: 'missing', [kid(2)]: 'stale', [kid(3)]: 'mismatch', [kid(4)]: 'missing' }, 'without `recent` every winner is settled');
  });

  it('below a truncate watermark, items read as absent and raw winners as deleted', async () => {
    await sides.expected([{ key: 1, position: 10 }, { key: 2, position: 30 }, { key: 3, position: 11 }], 20);
    sides.items('r1', [
      { key: 1, position: 10 }, // ok: both below the watermark
      { key: 4, position: 15 }, // ok: an item below the watermark with no raw is absent
      { key: 3, position: 25 }, // ahead: a live item above the watermark raw never had
    ]);
    await bench.sources();
    const counts = await bench.run(reconcileFull({ tables: [T], runId: 'r1', cutoff: CUTOFF, part: 'counts' }));
    assert.deepEqual(Object.fromEntries(counts.map((c) => [c.class, c.keys])), { ok: 2, missing: 1, ahead: 1 });
  });

  it('a held table: keys with a change that arrived since it was held are `held`, never findings; older keys and other tables are judged as usual', async () => {
    const T2 = 'public.items';
    const S = H0 + 30 * 60_000; // held from the middle of H0
    // History at H0 arrives at H0 + 1 min (before S); keys 2 and 4 change again after S.
    await sides.expected([{ key: 1, position: 10 }, { key: 2, position: 12 }, { key: 3, position: 13, op: 'd' }, { key: 4, position: 14, table: T2 }]);
    await bench.insert('history', [historyRow({ key: 2, position: pos(12), hour: H0, arrival: S + 1 }), historyRow({ table: T2, key: 4, position: pos(14), hour: H0, arrival: S + 1 })]);
    sides.unsettled([{ key: 5, position: 40 }]); // only in raw not compacted yet, arrived after S
    sides.items('h1', [
      { key: 1, position: 5 }, // stale: its raw is older than the hold
      { key: 2, position: 5 }, // held: behind a change that arrived after the hold
      { key: 3, position: 2 }, // deleted-live: older than the hold
      { key: 4, position: 5, table: T2 }, // stale: T2 is not held
    ]);
    await bench.sources();
    const args = { tables: [T, T2], runId: 'h1', cutoff: CUTOFF + 2 * HOUR, unsettled: { from: U, to: U }, held: { tables: [{ table: T, since: S }], until: U + HOUR } } as const;
    const findings = await bench.run(reconcileFull({ ...args, part: 'findings' }));
    assert.deepEqual(findings.map((r) => [r.source_table, r.key_id, r.class]), [
      [T2, kid(4), 'stale'],
      [T, kid(1), 'stale'],
      [T, kid(3), 'deleted-live'],
    ]);
    const counts = await bench.run(reconcileFull({ ...args, part: 'counts' }));
    assert.deepEqual(counts.map((c) => [c.source_table, c.class, c.keys]), [
      [T2, 'stale', 1],
      [T, 'deleted-live', 1],
      [T, 'held', 2],
      [T, 'stale', 1],
    ]);
    const window = await bench.run(reconcileWindow({ ...args, from: H0, to: H0, part: 'counts' }));
    assert.deepEqual(window.map((c) => [c.source_table, c.class, c.keys]), [
      [T2, 'stale', 1],
      [T, 'deleted-live', 1],
      [T, 'held', 1],
      [T, 'stale', 1],
    ], 'window mode: the window key changed since the hold is held');
    const unheld = await bench.run(reconcileFull({ ...args, held: undefined, part: 'counts' }));
    assert.ok(!unheld.some((c) => c.class === 'held'), 'without held tables nothing is held');
  });

  it('window mode: the window\'s keys only; what needs the whole table is unverifiable', async () => {
    await sides.expected([{ key: 1, position: 10 }, { key: 2, position: 12 }, { key: 3, position: 13 }]);
    await bench.insert('history', [historyRow({ key: 9, position: pos(9), hour: H0 - 5 * HOUR })]); // a key outside the window
    sides.items('w1', [{ key: 2, position: 50 }, { key: 3, position: 1 }, { key: 9, position: 1 }]);
    await bench.sources();
    const args = { tables: [T], runId: 'w1', cutoff: CUTOFF, from: H0, to: H0 + HOUR } as const;
    assert.deepEqual(byKey(await bench.run(reconcileWindow({ ...args, part: 'findings' }))), { [kid(1)]: 'missing', [kid(3)]: 'stale' });
    const counts = await bench.run(reconcileWindow({ ...args, part: 'counts' }));
    assert.deepEqual(Object.fromEntries(counts.map((c) => [c.class, c.keys])), { missing: 1, stale: 1, unverifiable: 1 });
    const keys = await bench.run(windowKeys({ tables: [T], from: H0, to: H0 + HOUR }));
    assert.deepEqual(keys, [1, 2, 3].map((k) => ({ source_table: T, key_id: kid(k), key_json: `{"id":${k}}` })));
  });
});

interface KeyCase {
  winner: { position: number; op: string; hash: string | null; conflict: boolean } | null;
  unsettled: number | null;
  item: { position: number; deleted: boolean; hash: string; late: boolean; erased: boolean } | null;
}

const keyCase: fc.Arbitrary<KeyCase> = fc.record({
  winner: fc.option(fc.record({ position: fc.integer({ min: 1, max: 9 }), op: fc.constantFrom('c', 'u', 'd'), hash: fc.option(fc.constantFrom('x', 'y'), { freq: 4 }), conflict: fc.boolean() }), { freq: 3 }),
  unsettled: fc.option(fc.integer({ min: 1, max: 9 }), { freq: 2 }),
  item: fc.option(fc.record({ position: fc.integer({ min: 1, max: 9 }), deleted: fc.boolean(), hash: fc.constantFrom('x', 'y'), late: fc.boolean(), erased: fc.boolean() }), { freq: 3 }),
});

/** classify.ts, with reconcile's one extension: an erased item with no live winner is `erased`. */
function oracle(c: KeyCase, mode: 'full' | 'window', wm: number | undefined): string | null {
  const winner = c.winner;
  const w = winner ? { position: pos(winner.position), op: winner.op, hash: winner.hash, conflict: winner.conflict } : null;
  const maxes = [winner?.position, c.unsettled].filter((x): x is number => x !== undefined && x !== null);
  const expected: Expected | undefined = maxes.length > 0 ? { winner: w, maxPosition: pos(Math.max(...maxes)) } : undefined;
  const actual: Actual | undefined = c.item ? { position: pos(c.item.position), deleted: c.item.deleted, hash: c.item.hash, appliedAt: c.item.late ? CUTOFF + 1 : H0 } : undefined;
  const watermark = wm === undefined ? undefined : pos(wm);
  if (mode === 'window' && !winner) return null; // not among the window's keys
  if (!expected && !actual) return null;
  const verdict = classify(expected, actual, { mode, cutoff: CUTOFF, ...(watermark !== undefined ? { truncateWatermark: watermark } : {}) });
  const expectDeleted = w !== null && (w.op === 'd' || (watermark !== undefined && w.position < watermark));
  if (c.item?.erased && !c.item.late && !(w !== null && !expectDeleted)) return 'erased';
  return verdict;
}

describe('reconcile, property', () => {
  let bench: SqlBench;
  let sides: Sides;
  before(async () => {
    bench = await SqlBench.open();
    sides = new Sides(bench);
  });
  after(() => bench.close());

  for (const mode of ['full', 'window'] as const) {
    it(`${mode} mode classifies every key as classify.ts does`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(keyCase, { minLength: 1, maxLength: 12 }), fc.option(fc.integer({ min: 2, max: 8 }), { freq: 2 }), async (cases, wmOrNull) => {
          const wm = wmOrNull ?? undefined;
          await sides.reset();
          const exp = cases.flatMap((c, i) => (c.winner ? [{ key: i, ...c.winner }] : []));
          await sides.expected(exp, wm);
          sides.unsettled(cases.flatMap((c, i) => (c.unsettled !== null ? [{ key: i, position: c.unsettled }] : [])));
          sides.items('p', cases.flatMap((c, i) => (c.item ? [{ key: i, position: c.item.position, deleted: c.item.deleted, hash: c.item.hash, appliedAt: c.item.late ? CUTOFF + 1 : H0, erased: c.item.erased }] : [])));
          await bench.sources();
          const base = { tables: [T], runId: 'p', cutoff: CUTOFF, unsettled: { from: U, to: U } };
          const statement = (part: 'findings' | 'counts') => (mode === 'full' ? reconcileFull({ ...base, part }) : reconcileWindow({ ...base, part, from: H0, to: H0 }));
          const want = cases.map((c) => oracle(c, mode, wm));
          const wantFindings = Object.fromEntries(want.flatMap((v, i) => (v && ['missing', 'deleted-live', 'stale', 'mismatch', 'ahead', 'extra'].includes(v) ? [[kid(i), v]] : [])));
          assert.deepEqual(byKey(await bench.run(statement('findings'))), wantFindings);
          const wantCounts: Record<string, number> = {};
          for (const v of want) if (v) wantCounts[v] = (wantCounts[v] ?? 0) + 1;
          const got = Object.fromEntries((await bench.run(statement('counts'))).map((r) => [r.class, r.keys]));
          assert.deepEqual(got, wantCounts);
        }),
        { numRuns: 60 },
      );
    });
  }
});
