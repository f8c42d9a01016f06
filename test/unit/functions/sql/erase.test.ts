/**
 * Erase on DuckDB: erase-find-raw finds exactly the raw objects inside the grace holding a line of a
 * requested key (not the same key id of another table, not objects outside the hours read);
 * erase-history and erase-expected delete exactly the requested keys' lines and rows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { duckdb } from '../../../../functions/sql/dialect.js';
import { renderSql } from '../../../../functions/sql/sql.js';
import { eraseExpected } from '../../../../functions/sql/statements/erase-expected.js';
import { eraseFindRaw } from '../../../../functions/sql/statements/erase-find-raw.js';
import { eraseHistory } from '../../../../functions/sql/statements/erase-history.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { historyRow, pos } from '../../../helpers/history-rows.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 30, 6);
const kid = (k: number | string) => JSON.stringify([String(k)]);
const keys = [
  { table: 'public.orders', keyIds: [kid(1), kid("it's")] },
  { table: 'public.customers', keyIds: [kid(7)] },
];

describe('erase-find-raw', () => {
  let bench: SqlBench;
  const objects: Record<string, string> = {};
  before(async () => {
    bench = await SqlBench.open();
    const batches = {
      holdsKey1: [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 + 1 }), v2Line({ table: 'public.orders', key: { id: 2 }, arrivalTs: H0 + 1 })],
      holdsQuoted: [v2Line({ table: 'public.orders', key: { id: "it's" }, arrivalTs: H0 + HOUR + 5 })],
      holdsCustomer: [v2Line({ table: 'public.customers', key: { id: 7 }, arrivalTs: H0 + 2 * HOUR })],
      otherTableSameKey: [v2Line({ table: 'public.customers', key: { id: 1 }, arrivalTs: H0 + 10 })],
      noKey: [v2Line({ table: 'public.orders', key: { id: 3 }, arrivalTs: H0 + 20 }), v2Line({ kind: 'control', key: null, table: null, arrivalTs: H0 + 20 })],
      beforeGrace: [v2Line({ table: 'public.orders', key: { id: 1 }, arrivalTs: H0 - 5 * HOUR })],
    };
    for (const [name, lines] of Object.entries(batches)) {
      const o = batchOf('raw/', lines, `shard-${name}`);
      bench.object(o.key, o.body);
      objects[name] = bench.uri(o.key);
    }
    await bench.sources();
  });
  after(() => bench.close());

  it('finds exactly the objects inside the grace that hold a requested key', async () => {
    const rows = await bench.run(eraseFindRaw({ keys, since: H0 - HOUR, until: H0 + 3 * HOUR }));
    assert.deepEqual(rows.map((r) => r.raw_object).sort(), [objects.holdsKey1, objects.holdsQuoted, objects.holdsCustomer].sort());
  });

  it('reads only the hours of the grace', async () => {
    const s = eraseFindRaw({ keys, since: H0 - 6 * HOUR, until: H0 + 3 * HOUR });
    assert.deepEqual(s.reads, [{ table: 'raw_lines', filter: { hours: { from: H0 - 6 * HOUR, to: H0 + 3 * HOUR } } }]);
    const rows = await bench.run(s);
    assert.ok(rows.some((r) => r.raw_object === objects.beforeGrace));
  });
});

describe('erase-history and erase-expected', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
    await bench.insert('history', [
      historyRow({ key: 1, hour: H0 }),
      historyRow({ key: 1, position: pos(2), hour: H0 + 30 * HOUR }),
      historyRow({ key: "it's", hour: H0 }),
      historyRow({ key: 2, hour: H0 }),
      historyRow({ table: 'public.customers', key: 1, hour: H0 }),
      historyRow({ table: 'public.customers', key: 7, hour: H0 }),
      historyRow({ kind: 'control', key: null, position: null, hour: H0 }),
    ]);
    const row = (table: string, key: number | string) => ({ source_table: table, key_id: kid(key), key_json: '{}', position: pos(1), op: 'c', hash: 'h', commit_ts: 1, deleted: false, conflict: false, hour: H0 });
    await bench.insert('expected_state', [row('public.orders', 1), row('public.orders', "it's"), row('public.orders', 2), row('public.customers', 1), row('public.customers', 7)]);
  });
  after(() => bench.close());

  it('deletes every line of the requested keys from history, and nothing else', async () => {
    const s = eraseHistory({ keys });
    assert.equal(s.kind, 'delete');
    await bench.run(s);
    const left = await bench.query("SELECT source_table, key_id FROM history ORDER BY source_table, key_id NULLS FIRST");
    assert.deepEqual(left, [
      { source_table: 'public.customers', key_id: kid(1) },
      { source_table: 'public.orders', key_id: null },
      { source_table: 'public.orders', key_id: kid(2) },
    ]);
  });

  it('deletes the requested keys\' expected rows, and nothing else', async () => {
    await bench.run(eraseExpected({ keys }));
    assert.deepEqual(await bench.query('SELECT source_table, key_id FROM expected_state ORDER BY 1, 2'), [
      { source_table: 'public.customers', key_id: kid(1) },
      { source_table: 'public.orders', key_id: kid(2) },
    ]);
  });

  it('rewrites only the partitions holding the keys, and refuses an empty request', async () => {
    const s = eraseHistory({ keys: [{ table: 'public.orders', keyIds: [kid(2)] }] });
    assert.deepEqual({ ...s.writes, affected: null }, { table: 'history', mode: 'rewrite', filter: { tables: ['public.orders'] }, affected: null });
    const affected = s.writes?.affected;
    assert.ok(affected);
    assert.deepEqual(await bench.query(renderSql(affected, duckdb).text), [{ source_table: 'public.orders', dt: '2026-11-30' }]);
    assert.throws(() => eraseHistory({ keys: [] }), /at least one/);
    assert.throws(() => eraseExpected({ keys: [{ table: 'public.orders', keyIds: [] }] }), /must not be empty/);
  });
});
