/**
 * Compaction on DuckDB: compact-hour copies every line of one hour of batch objects into history
 * with its raw object, once, however often it runs; compact-objects adds late objects of a compacted
 * hour; compact-legacy-hour reads the first layout and rebuilds key ids as keyId does.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { keyId } from '../../../../functions/core/keys.js';
import { compactHour } from '../../../../functions/sql/statements/compact-hour.js';
import { compactLegacyHour } from '../../../../functions/sql/statements/compact-legacy-hour.js';
import { compactObjects } from '../../../../functions/sql/statements/compact-objects.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const H6 = Date.UTC(2026, 10, 30, 6);
const H7 = Date.UTC(2026, 10, 30, 7);
const at = (hour: number, minute: number) => hour + minute * 60_000;

describe('compact-hour', () => {
  let bench: SqlBench;
  const a = batchOf('raw/', [
    v2Line({ table: 'public.orders', key: { id: 1 }, op: 'c', position: 'a11', arrivalTs: at(H6, 1), sequence: '11', headers: { trace: 'x' } }),
    v2Line({ table: 'public.customers', key: { id: 9 }, op: 'u', position: 'a12', arrivalTs: at(H6, 1), sequence: '11', messageRef: true, beforeNull: true }),
    v2Line({ kind: 'control', table: null, key: null, arrivalTs: at(H6, 2), sequence: '12' }),
  ]);
  const b = batchOf('raw/', [v2Line({ table: 'public.orders', key: { id: 2 }, op: 'd', position: 'a13', arrivalTs: at(H6, 30), sequence: '20' })], 'shardId-000000000001');
  const next = batchOf('raw/', [v2Line({ table: 'public.orders', key: { id: 3 }, op: 'c', position: 'a14', arrivalTs: at(H7, 5), sequence: '30' })]);

  before(async () => {
    bench = await SqlBench.open();
    for (const o of [a, b, next]) bench.object(o.key, o.body);
    await bench.sources();
  });
  after(() => bench.close());

  it('copies every line of the hour, with its raw object and the line fields in history columns', async () => {
    await bench.run(compactHour({ hour: H6 }));
    const rows = await bench.rows('history', 'raw_object, sequence, source_table');
    assert.equal(rows.length, 4);
    assert.deepEqual(new Set(rows.map((r) => r.raw_object)), new Set([bench.uri(a.key), bench.uri(b.key)]));
    const order = rows.find((r) => r.key_id === '["1"]');
    assert.deepEqual(
      { ...order, hash: null, message: null },
      {
        source_table: 'public.orders', key_id: '["1"]', key_json: '{"id":1}', position: 'a11', op: 'c', kind: 'change', control: null, format: 'debezium-postgresql', ordering: 'source',
        hash: null, commit_ts: at(H6, 1) - 5, arrival_ts: at(H6, 1), txid: null, is_snapshot: false, before_null: false, partial: false, transport_kind: 'kinesis', stream: 'orders-stream',
        shard: 'shardId-000000000000', sequence: '11', partition_key: 'pk', topic: null, headers: { trace: 'x' }, message_key: 'pk', message_key_base64: null, message: null,
        message_base64: null, message_ref: false, raw_object: bench.uri(a.key), dt: '2026-11-30', hr: 6,
      },
    );
    const ref = rows.find((r) => r.key_id === '["9"]');
    assert.equal(ref?.message_ref, true);
    assert.equal(ref?.before_null, true);
    assert.equal(ref?.message, null);
    const control = rows.find((r) => r.kind === 'control');
    assert.equal(control?.source_table, '', 'a control naming no table is kept under the empty table name');
  });

  it('adds nothing when it runs again: every object of the hour is already there', async () => {
    await bench.run(compactHour({ hour: H6 }));
    assert.equal((await bench.rows('history')).length, 4);
  });

  it('compacts the next hour on its own', async () => {
    await bench.run(compactHour({ hour: H7 }));
    const rows = await bench.query('SELECT key_id, hr FROM history WHERE hr = 7');
    assert.deepEqual(rows, [{ key_id: '["3"]', hr: 7 }]);
  });

  it('compact-objects adds a late object of a compacted hour, and only once', async () => {
    const late = batchOf('raw/', [v2Line({ table: 'public.orders', key: { id: 4 }, op: 'c', position: 'a15', arrivalTs: at(H6, 50), sequence: '40' })], 'shardId-000000000002');
    bench.object(late.key, late.body);
    await bench.sources();
    await bench.run(compactObjects({ objects: [bench.uri(late.key), bench.uri(a.key)] }));
    await bench.run(compactObjects({ objects: [bench.uri(late.key)] }));
    const rows = await bench.query('SELECT key_id FROM history WHERE raw_object = ?', [bench.uri(late.key)]);
    assert.deepEqual(rows, [{ key_id: '["4"]' }]);
    assert.equal((await bench.rows('history')).length, 6, 'the already compacted object a is not added again');
  });

  it('refuses an object URI outside the batch layout', () => {
    assert.throws(() => compactObjects({ objects: ['s3://b/raw/table=x/dt=2026-11-30/a.jsonl.gz'] }), /not a raw batch object/);
    assert.throws(() => compactObjects({ objects: [] }), /at least one/);
  });
});

describe('compact-legacy-hour', () => {
  let bench: SqlBench;
  const table = { key: ['order_id', 'sku'], keyTypes: {} };
  const legacy = (key: Record<string, unknown>, position: string, extra: Record<string, unknown> = {}) => ({
    kind: 'change', format: 'debezium-postgresql', op: 'c', control: null, table: 'public.order lines', key: JSON.stringify(key), position, orderingStrength: 'source',
    commitTs: 1, txid: null, snapshot: false, transport: { kind: 'kinesis', stream: 's', shard: 'sh', sequence: position, partitionKey: null, arrivalTime: at(H6, 3) },
    topic: null, headers: {}, messageKey: null, message: '{}', ...extra,
  });
  const key = 'raw/table=public.order%20lines/dt=2026-11-30/hr=06/sh-1-2-abcd.jsonl.gz';

  before(async () => {
    bench = await SqlBench.open();
    const lines = [
      legacy({ order_id: 7, sku: 'A"b/é' }, 'a11'),
      legacy({ order_id: 'BIG', sku: 'x' }, 'a12'),
      legacy({ order_id: 8, sku: 'y' }, 'a13', { table: 'public.order_lines' }),
    ];
    const text = lines.map((l) => JSON.stringify(l).replace('\\"order_id\\":\\"BIG\\"', '\\"order_id\\":12345678901234567890')).join('\n');
    bench.object(key, gzipSync(`${text}\n`));
    await bench.sources();
  });
  after(() => bench.close());

  it('rebuilds each key id as keyId does, keeps only the named table, and leaves hashes unknown', async () => {
    await bench.run(compactLegacyHour({ table: 'public.order lines', segments: ['public.order%20lines', 'public.order_lines'], key: table.key, hour: H6 }));
    const rows = await bench.rows('history', 'position');
    assert.deepEqual(
      rows.map((r) => [r.key_id, r.hash, r.arrival_ts, r.raw_object]),
      [
        [keyId(table, { order_id: 7, sku: 'A"b/é' }), null, at(H6, 3), bench.uri(key)],
        ['["12345678901234567890","x"]', null, at(H6, 3), bench.uri(key)],
      ],
    );
    await bench.run(compactLegacyHour({ table: 'public.order lines', segments: ['public.order%20lines'], key: table.key, hour: H6 }));
    assert.equal((await bench.rows('history')).length, 2, 'a second run adds nothing');
  });
});
