/**
 * Erase on DuckDB, over one run's keys in `erase_keys` (never key values in the SQL text):
 * erase-find-raw finds exactly the raw objects (`"$path"`, DuckDB's `filename`) of the hours read
 * holding a line of a requested key, in both layouts (not the same key id of another table, not
 * another run's keys, not objects outside the hours read); erase-find-history counts what history
 * holds of each request; erase-history deletes exactly the requested keys' records (every line of a
 * multi-row record that carried one) and erase-expected their expected rows.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { athena, duckdb, render } from '../../../../functions/sql/dialect.js';
import { renderSql, SqlArgumentError } from '../../../../functions/sql/sql.js';
import { eraseExpected } from '../../../../functions/sql/statements/erase-expected.js';
import { eraseFindHistory } from '../../../../functions/sql/statements/erase-find-history.js';
import { eraseFindRaw } from '../../../../functions/sql/statements/erase-find-raw.js';
import { compactHour } from '../../../../functions/sql/statements/compact-hour.js';
import { eraseHistory } from '../../../../functions/sql/statements/erase-history.js';
import { runIdArg } from '../../../../functions/sql/statements/erase-keys.js';
import { optimize } from '../../../../functions/sql/statements/maintenance.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { historyRow, pos } from '../../../helpers/history-rows.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 30, 6);
const kid = (k: number | string) => JSON.stringify([String(k)]);
const RUN = 'erase-20261130T060000-1a2b3c';
const tables = ['public.orders', 'public.customers'];

/** The run's keys, one line per key, as the erase run's Collect step writes them. */
function keysObject(bench: SqlBench, runId: string, keys: readonly { table: string; keyId: string; request: string }[]): void {
  const lines = keys.map((k) => JSON.stringify({ source_table: k.table, key_id: k.keyId, key_hash: `hash-of-${k.request}`, request: k.request }));
  bench.object(`erase_keys/run_id=${runId}/keys.jsonl`, `${lines.join('\n')}\n`);
}
const runKeys = [
  { table: 'public.orders', keyId: kid(1), request: 'req-1' },
  { table: 'public.orders', keyId: kid("it's"), request: 'req-2' },
  { table: 'public.customers', keyId: kid(7), request: 'req-3' },
  { table: 'public.customers', keyId: kid(404), request: 'req-4' }, // held nowhere
];

describe('erase-find-raw', () => {
  let bench: SqlBench;
  const objects: Record<string, string> = {};
  const legacyKey = 'raw/table=public.orders/dt=2026-11-30/hr=07/sh-1-2-abcd.jsonl.gz';
  const legacyOther = 'raw/table=public.orders/dt=2026-11-30/hr=07/sh-3-4-abcd.jsonl.gz';
  before(async () => {
    bench = await SqlBench.open();
    const batches = {
      holdsKey1: [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 + 1 }), v2Line({ table: 'public.orders', key: { id: 2 }, arrivalTs: H0 + 1 })],
      holdsQuoted: [v2Line({ table: 'public.orders', key: { id: "it's" }, arrivalTs: H0 + HOUR + 5 })],
      holdsCustomer: [v2Line({ table: 'public.customers', key: { id: 7 }, arrivalTs: H0 + 2 * HOUR })],
      otherTableSameKey: [v2Line({ table: 'public.customers', key: { id: 1 }, arrivalTs: H0 + 10 })],
      otherRunsKey: [v2Line({ table: 'public.orders', key: { id: 9 }, arrivalTs: H0 + 10 })],
      noKey: [v2Line({ table: 'public.orders', key: { id: 3 }, arrivalTs: H0 + 20 }), v2Line({ kind: 'control', key: null, table: null, arrivalTs: H0 + 20 })],
      beforeGrace: [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 - 5 * HOUR })],
    };
    for (const [name, lines] of Object.entries(batches)) {
      const o = batchOf('raw/', lines, `shard-${name}`);
      bench.object(o.key, o.body);
      objects[name] = bench.uri(o.key);
    }
    const legacy = (id: number) => JSON.stringify({ kind: 'change', format: 'debezium-postgresql', op: 'c', table: 'public.orders', key: JSON.stringify({ id }), position: 'a11', transport: { kind: 'kinesis', stream: 's', shard: 'sh', sequence: '1', partitionKey: null, arrivalTime: H0 + HOUR }, message: '{}' });
    bench.object(legacyKey, gzipSync(`${legacy(1)}\n${legacy(5)}\n`));
    bench.object(legacyOther, gzipSync(`${legacy(5)}\n`));
    keysObject(bench, RUN, runKeys);
    keysObject(bench, 'another-run', [{ table: 'public.orders', keyId: kid(9), request: 'req-9' }]);
    await bench.sources();
  });
  after(() => bench.close());

  it('finds exactly the objects of the hours read that hold one of the run\'s keys', async () => {
    const rows = await bench.run(eraseFindRaw({ runId: RUN, tables, since: H0 - HOUR, until: H0 + 3 * HOUR }));
    assert.deepEqual(rows.map((r) => r.raw_object), [objects.holdsKey1, objects.holdsQuoted, objects.holdsCustomer].sort());
  });

  it('reads only the hours asked for, and the run\'s keys', async () => {
    const s = eraseFindRaw({ runId: RUN, tables, since: H0 - 6 * HOUR, until: H0 + 3 * HOUR });
    assert.deepEqual(s.reads, [
      { table: 'raw_lines', filter: { hours: { from: H0 - 6 * HOUR, to: H0 + 3 * HOUR } } },
      { table: 'erase_keys', filter: { runId: RUN } },
    ]);
    const rows = await bench.run(s);
    assert.ok(rows.some((r) => r.raw_object === objects.beforeGrace));
  });

  it('finds first-layout objects too, their key ids rebuilt from the key JSON', async () => {
    const legacy = { tables: [{ table: 'public.orders', segments: ['public.orders'], key: ['id'] }], since: H0, until: H0 + 2 * HOUR };
    const rows = await bench.run(eraseFindRaw({ runId: RUN, tables, since: H0 + 2 * HOUR, until: H0 + 3 * HOUR, legacy }));
    assert.deepEqual(rows.map((r) => r.raw_object), [bench.uri(legacyKey), objects.holdsCustomer].sort());
  });

  it('never writes a key into its text: the run id is the only value', () => {
    const s = eraseFindRaw({ runId: RUN, tables, since: H0, until: H0 + HOUR });
    for (const d of [duckdb, athena('tidemark_shop')]) {
      const r = render(s, d);
      assert.ok(!(r.sql ?? '').includes('["1"]'));
      assert.ok(r.params.includes(RUN));
      assert.ok(!r.params.some((p) => typeof p === 'string' && p.startsWith('["')));
    }
  });
});

describe('erase-find-raw over compacted hours', () => {
  let bench: SqlBench;
  const made: Record<string, string> = {};
  const land = (name: string, lines: ReturnType<typeof v2Line>[]) => {
    const o = batchOf('raw/', lines, `shard-${name}`);
    bench.object(o.key, o.body);
    made[name] = bench.uri(o.key);
  };
  const compacted = (late: number[] = []) => ({ from: H0, through: H0 + HOUR, late });
  before(async () => {
    bench = await SqlBench.open();
    // Hours H0 and H0+1 compacted; H0+2 not yet.
    land('h0Key1', [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 + 1 }), v2Line({ table: 'public.orders', key: { id: 2 }, arrivalTs: H0 + 2 })]);
    land('h0Other', [v2Line({ table: 'public.orders', key: { id: 3 }, arrivalTs: H0 + 3 })]);
    land('h1Customer', [v2Line({ table: 'public.customers', key: { id: 7 }, arrivalTs: H0 + HOUR + 5 })]);
    land('h1SameKeyOtherTable', [v2Line({ table: 'public.customers', key: { id: 1 }, arrivalTs: H0 + HOUR + 6 })]);
    land('h2Quoted', [v2Line({ table: 'public.orders', key: { id: "it's" }, arrivalTs: H0 + 2 * HOUR + 5 })]);
    keysObject(bench, RUN, runKeys);
    await bench.sources();
    await bench.run(compactHour({ hour: H0 }));
    await bench.run(compactHour({ hour: H0 + HOUR }));
  });
  after(() => bench.close());

  const find = async (args: Partial<Parameters<typeof eraseFindRaw>[0]>) =>
    (await bench.run(eraseFindRaw({ runId: RUN, tables, since: H0, until: H0 + 2 * HOUR, ...args }))).map((r) => r.raw_object);

  it('finds through history exactly what reading every hour of raw finds', async () => {
    const all = await find({});
    assert.deepEqual(all, [made.h0Key1, made.h1Customer, made.h2Quoted].sort());
    assert.deepEqual(await find({ compacted: compacted() }), all);
    // Compacted through the last hour read: history alone.
    assert.deepEqual(await find({ until: H0 + HOUR, compacted: compacted() }), [made.h0Key1, made.h1Customer].sort());
    // An hour before `from` (cleaned past the grace) is read from raw, not named from history.
    assert.deepEqual(await find({ compacted: { from: H0 + HOUR, through: H0 + HOUR, late: [] } }), all);
  });

  it('reads raw only for the hours after the frontier and the late hours; history for the rest, narrowed to the tables and days', () => {
    const s = eraseFindRaw({ runId: RUN, tables, since: H0 - 2 * HOUR, until: H0 + 2 * HOUR, compacted: { from: H0 - 2 * HOUR, through: H0 + HOUR, late: [H0 - HOUR, H0 - 9 * HOUR] } });
    assert.deepEqual(s.reads, [
      { table: 'history', filter: { tables, days: { from: '2026-11-30', to: '2026-11-30' } } },
      { table: 'raw_lines', filter: { hours: { from: H0 - HOUR, to: H0 - HOUR } } },
      { table: 'raw_lines', filter: { hours: { from: H0 + 2 * HOUR, to: H0 + 2 * HOUR } } },
      { table: 'erase_keys', filter: { runId: RUN } },
    ]);
    const text = render(s, athena('tidemark_shop')).sql ?? '';
    assert.ok(!text.includes('["1"]'));
  });

  it('reaches an object that landed after its hour was compacted only when its hour is named late', async () => {
    land('h0Late', [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 + 30 })]);
    await bench.sources();
    assert.ok(!(await find({ compacted: compacted() })).includes(made.h0Late), 'history does not hold it yet');
    const found = await find({ compacted: compacted([H0]) });
    assert.deepEqual(found, [made.h0Key1, made.h0Late, made.h1Customer, made.h2Quoted].sort());
    assert.deepEqual(found, await find({}));
  });
});

describe('erase-find-history, erase-history and erase-expected', () => {
  let bench: SqlBench;
  const record = { rawObject: 's3://bench-bucket/raw/x.jsonl.gz', sequence: '77' };
  before(async () => {
    bench = await SqlBench.open();
    // Each line its own record (its own sequence), but for one multi-row record: key 1's line and
    // key 3's line share a message holding both.
    let seq = 0;
    const own = (spec: Parameters<typeof historyRow>[0]) => historyRow({ sequence: String(++seq), ...spec });
    await bench.insert('history', [
      own({ key: 1, hour: H0 }),
      own({ key: 1, position: pos(2), hour: H0 + 30 * HOUR }),
      own({ key: "it's", hour: H0 }),
      own({ key: 2, hour: H0 }),
      own({ key: 1, position: pos(5), hour: H0, ...record }),
      own({ key: 3, position: pos(5), hour: H0, ...record }),
      own({ table: 'public.customers', key: 1, hour: H0 }),
      own({ table: 'public.customers', key: 7, position: pos(9), hour: H0 }),
      own({ table: 'public.other', key: 1, hour: H0 }),
      own({ kind: 'control', key: null, position: null, hour: H0 }),
    ]);
    const row = (table: string, key: number | string) => ({ source_table: table, key_id: kid(key), key_json: '{}', position: pos(1), op: 'c', hash: 'h', commit_ts: 1, deleted: false, conflict: false, hour: H0 });
    await bench.insert('expected_state', [row('public.orders', 1), row('public.orders', "it's"), row('public.orders', 2), row('public.customers', 1), row('public.customers', 7)]);
    keysObject(bench, RUN, runKeys);
    keysObject(bench, 'another-run', [{ table: 'public.orders', keyId: kid(2), request: 'req-9' }]);
    await bench.sources();
  });
  after(() => bench.close());

  it('counts what history holds of each request, by request and keyed hash; none for a key it lacks', async () => {
    const rows = await bench.run(eraseFindHistory({ runId: RUN, tables }));
    assert.deepEqual(rows, [
      { request: 'req-1', key_hash: 'hash-of-req-1', lines: 3, max_position: pos(5) },
      { request: 'req-2', key_hash: 'hash-of-req-2', lines: 1, max_position: pos(1) },
      { request: 'req-3', key_hash: 'hash-of-req-3', lines: 1, max_position: pos(9) },
    ]);
  });

  it('deletes every record of the run\'s keys from history, the other lines of their records too, and nothing else', async () => {
    const s = eraseHistory({ runId: RUN, tables });
    assert.equal(s.kind, 'merge');
    assert.deepEqual({ ...s.writes, affected: null }, { table: 'history', mode: 'rewrite', filter: { tables }, affected: null });
    const affected = s.writes?.affected;
    assert.ok(affected);
    assert.deepEqual(await bench.query(`${renderSql(affected, duckdb).text} ORDER BY 1, 2`), [
      { source_table: 'public.customers', dt: '2026-11-30' },
      { source_table: 'public.orders', dt: '2026-11-30' },
      { source_table: 'public.orders', dt: '2026-12-01' },
    ]);
    await bench.run(s);
    const left = await bench.query('SELECT source_table, key_id FROM history ORDER BY source_table, key_id NULLS FIRST');
    assert.deepEqual(left, [
      { source_table: 'public.customers', key_id: kid(1) },
      { source_table: 'public.orders', key_id: null },
      { source_table: 'public.orders', key_id: kid(2) },
      { source_table: 'public.other', key_id: kid(1) },
    ]);
  });

  it('deletes the run\'s keys\' expected rows, and nothing else', async () => {
    await bench.run(eraseExpected({ runId: RUN, tables }));
    assert.deepEqual(await bench.query('SELECT source_table, key_id FROM expected_state ORDER BY 1, 2'), [
      { source_table: 'public.customers', key_id: kid(1) },
      { source_table: 'public.orders', key_id: kid(2) },
    ]);
  });

  it('inlines only the run id and the tables where Athena takes no parameters', () => {
    const text = render(eraseHistory({ runId: RUN, tables: ['public.orders'] }), athena('tidemark_shop')).sql ?? '';
    assert.match(text, /^MERGE INTO "tidemark_shop"\."history" t USING \(SELECT DISTINCT/);
    assert.ok(text.includes(`k.run_id = '${RUN}'`));
    assert.ok(!text.includes('["'));
    assert.equal(render(optimize('history', ['public.orders']), athena('tidemark_shop')).sql, `OPTIMIZE "tidemark_shop"."history" REWRITE DATA USING BIN_PACK WHERE source_table IN ('public.orders')`);
    assert.throws(() => optimize('truncates', ['public.orders']), /not partitioned by source_table/);
  });

  it('refuses a run id that is not one, and a run without tables', () => {
    assert.equal(runIdArg(RUN), RUN);
    for (const bad of ['', "x' OR '1'='1", 'a'.repeat(129), 'a b']) assert.throws(() => eraseHistory({ runId: bad, tables }), SqlArgumentError, JSON.stringify(bad));
    assert.throws(() => eraseExpected({ runId: RUN, tables: [] }), /at least one/);
  });
});
