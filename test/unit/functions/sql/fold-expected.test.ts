/**
 * fold-expected on DuckDB: each compacted hour moves a key's expected row only forward (a late older
 * event never wins), a delete wins as deleted, a truncate marks older rows deleted while later
 * inserts stay live, a conflict is flagged, a re-run changes nothing; and, as a property, folding
 * any split of a history into hours, hour by hour, equals the fold of the whole history.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import fc from 'fast-check';
import { foldExpected } from '../../../../functions/sql/statements/fold-expected.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { type HistorySpec, historyRow, pos } from '../../../helpers/history-rows.js';

const HOUR = 3_600_000;
const H = (n: number) => Date.UTC(2026, 10, 30, 6) + n * HOUR;

async function fold(bench: SqlBench, hours: readonly number[]): Promise<void> {
  for (const h of hours) await bench.runAll(foldExpected({ hour: h }));
}

const state = async (bench: SqlBench) =>
  (await bench.rows('expected_state', 'source_table, key_id')).map((r) => ({ table: r.source_table, key: r.key_id, position: r.position, op: r.op, hash: r.hash, deleted: r.deleted, conflict: r.conflict }));

describe('fold-expected', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
  });
  after(() => bench.close());
  beforeEach(async () => {
    for (const t of ['history', 'expected_state', 'truncates']) await bench.db.run(`DELETE FROM ${t}`);
  });
  const add = (specs: readonly HistorySpec[]) => bench.insert('history', specs.map(historyRow));

  it('a late event older than the stored winner does not win, in a later hour or a redelivery', async () => {
    await add([
      { key: 1, op: 'c', position: pos(11), hour: H(0) },
      { key: 1, op: 'u', position: pos(15), hash: 'u15', hour: H(0) },
      { key: 1, op: 'u', position: pos(12), hash: 'u12', hour: H(1) },
    ]);
    await fold(bench, [H(0), H(1), H(0), H(1)]);
    assert.deepEqual(await state(bench), [{ table: 'public.orders', key: '["1"]', position: pos(15), op: 'u', hash: 'u15', deleted: false, conflict: false }]);
  });

  it('a delete wins as deleted, and a later insert brings the key back live', async () => {
    await add([
      { key: 1, op: 'c', position: pos(11), hour: H(0) },
      { key: 1, op: 'd', position: pos(12), hour: H(0) },
    ]);
    await fold(bench, [H(0)]);
    assert.deepEqual((await state(bench))[0], { table: 'public.orders', key: '["1"]', position: pos(12), op: 'd', hash: 'd-hash', deleted: true, conflict: false });
    await add([{ key: 1, op: 'c', position: pos(13), hash: 'again', hour: H(1) }]);
    await fold(bench, [H(1)]);
    assert.equal((await state(bench))[0]?.deleted, false);
  });

  it('a truncate marks older rows deleted and the hour\'s older events deleted; later inserts stay live', async () => {
    await add([
      { key: 1, op: 'c', position: pos(11), hour: H(0) },
      { key: 2, op: 'c', position: pos(12), hour: H(0) },
      { table: 'public.other', key: 1, op: 'c', position: pos(5), hour: H(0) },
      { key: null, op: 't', position: pos(20), hour: H(1) },
      { key: 3, op: 'c', position: pos(25), hour: H(1) },
      { key: 4, op: 'c', position: pos(15), hour: H(1) },
      { key: 1, op: 'c', position: pos(30), hash: 'back', hour: H(2) },
      { key: 5, op: 'u', position: pos(13), hour: H(2) },
    ]);
    await fold(bench, [H(0), H(1)]);
    const afterTruncate = await state(bench);
    assert.deepEqual(
      afterTruncate.map((r) => [r.table, r.key, r.deleted]),
      [
        ['public.orders', '["1"]', true],
        ['public.orders', '["2"]', true],
        ['public.orders', '["3"]', false],
        ['public.orders', '["4"]', true],
        ['public.other', '["1"]', false],
      ],
    );
    assert.deepEqual(await bench.rows('truncates'), [{ source_table: 'public.orders', position: pos(20) }]);
    await fold(bench, [H(2)]);
    const later = await state(bench);
    assert.deepEqual(later.find((r) => r.key === '["1"]' && r.table === 'public.orders'), { table: 'public.orders', key: '["1"]', position: pos(30), op: 'c', hash: 'back', deleted: false, conflict: false });
    assert.equal(later.find((r) => r.key === '["5"]')?.deleted, true, 'a late event below the watermark never becomes live');
  });

  it('a lower truncate never lowers the watermark', async () => {
    await add([
      { key: null, op: 't', position: pos(20), hour: H(0) },
      { key: null, op: 't', position: pos(10), hour: H(1) },
    ]);
    await fold(bench, [H(0), H(1)]);
    assert.deepEqual(await bench.rows('truncates'), [{ source_table: 'public.orders', position: pos(20) }]);
  });

  it('flags two events at the winning position with different hashes, in one hour or across hours; duplicates are not a conflict', async () => {
    await add([
      { key: 1, op: 'u', position: pos(11), hash: 'aaa', hour: H(0) },
      { key: 1, op: 'u', position: pos(11), hash: 'bbb', hour: H(0) },
      { key: 2, op: 'u', position: pos(11), hash: 'same', hour: H(0) },
      { key: 2, op: 'u', position: pos(11), hash: 'same', hour: H(0) },
      { key: 3, op: 'u', position: pos(11), hash: 'bbb', hour: H(0) },
      { key: 3, op: 'u', position: pos(11), hash: 'aaa', hour: H(1) },
      { key: 4, op: 'u', position: pos(11), hash: 'same', hour: H(0) },
      { key: 4, op: 'u', position: pos(11), hash: 'same', hour: H(1) },
    ]);
    await fold(bench, [H(0), H(1)]);
    assert.deepEqual(
      (await state(bench)).map((r) => [r.key, r.hash, r.conflict]),
      [
        ['["1"]', 'bbb', true],
        ['["2"]', 'same', false],
        ['["3"]', 'bbb', true],
        ['["4"]', 'same', false],
      ],
    );
  });

  it('an event without a hash (first layout) is no conflict with a hashed one at the same position', async () => {
    await add([
      { key: 1, op: 'u', position: pos(11), hash: null, hour: H(0) },
      { key: 1, op: 'u', position: pos(11), hash: 'h', hour: H(1) },
    ]);
    await fold(bench, [H(0), H(1)]);
    assert.deepEqual((await state(bench)).map((r) => [r.hash, r.conflict]), [['h', false]]);
  });

  it('ignores controls and keyless lines', async () => {
    await add([
      { kind: 'control', key: null, position: null, hour: H(0) },
      { key: 1, op: 'c', position: null, hour: H(0) },
    ]);
    await fold(bench, [H(0)]);
    assert.deepEqual(await state(bench), []);
  });
});

/** One generated event: table, key (null: a truncate), position, op and a hash naming its content. */
interface Ev {
  table: string;
  key: number | null;
  position: number;
  op: string;
  variant: number;
  hour: number;
}

const evArb: fc.Arbitrary<Ev> = fc.record({
  table: fc.constantFrom('public.a', 'public.b'),
  key: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 8 }),
  position: fc.integer({ min: 1, max: 12 }),
  op: fc.constantFrom('c', 'u', 'd', 'r'),
  variant: fc.integer({ min: 0, max: 1 }),
  hour: fc.integer({ min: 0, max: 3 }),
});

/** The whole-history fold (the invariant fold-expected.ts states), in TypeScript. */
function wholeFold(events: readonly Ev[]) {
  const watermark = new Map<string, string>();
  for (const e of events) if (e.key === null && (watermark.get(e.table) ?? '') < pos(e.position)) watermark.set(e.table, pos(e.position));
  const byKey = new Map<string, Ev[]>();
  for (const e of events) if (e.key !== null) byKey.set(`${e.table}|${e.key}`, [...(byKey.get(`${e.table}|${e.key}`) ?? []), e]);
  return [...byKey.entries()]
    .map(([, evs]) => {
      const top = evs.reduce((m, e) => (pos(e.position) > pos(m.position) ? e : m));
      const atTop = evs.filter((e) => e.position === top.position);
      const hashes = [...new Set(atTop.map(hashOf))].sort();
      const hash = hashes[hashes.length - 1] ?? '';
      const winner = atTop.find((e) => hashOf(e) === hash) ?? top;
      const wm = watermark.get(top.table);
      return { table: top.table, key: JSON.stringify([String(top.key)]), position: pos(top.position), op: winner.op, hash, deleted: winner.op === 'd' || (wm !== undefined && pos(top.position) < wm), conflict: hashes.length > 1 };
    })
    .sort((a, b) => (a.table + a.key < b.table + b.key ? -1 : 1));
}
const hashOf = (e: Ev) => `${e.op}${e.variant}`;

describe('fold-expected, property', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
  });
  after(() => bench.close());

  it('folding any split of a history into hours, hour by hour, equals the fold of the whole history', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(evArb, { minLength: 1, maxLength: 24 }), async (events) => {
        for (const t of ['history', 'expected_state', 'truncates']) await bench.db.run(`DELETE FROM ${t}`);
        await bench.insert(
          'history',
          events.map((e) => historyRow({ table: e.table, key: e.key, op: e.key === null ? 't' : e.op, position: pos(e.position), hash: e.key === null ? null : hashOf(e), hour: H(e.hour) })),
        );
        await fold(bench, [0, 1, 2, 3].map(H));
        const sorted = (await state(bench)).sort((a, b) => (String(a.table) + String(a.key) < String(b.table) + String(b.key) ? -1 : 1));
        assert.deepEqual(sorted, wholeFold(events));
      }),
      { numRuns: 40 },
    );
  });
});
