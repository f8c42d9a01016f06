/**
 * replay-select on DuckDB: the selection (tables, arrival range, positions, keys) from history and
 * from raw of the hours not compacted yet, each event once, in key and position order, with its key
 * bucket as bucketOf computes it and a messageRef line's message taken from its record's first line
 * in the same raw object (even a line of another table).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bucketOf } from '../../../../functions/sql/bucket.js';
import { replaySelect } from '../../../../functions/sql/statements/replay-select.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { historyRow, pos } from '../../../helpers/history-rows.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 30, 6);
const H2 = H0 + 2 * HOUR; // the first hour not compacted
const T = 'public.orders';
const kid = (k: number) => JSON.stringify([String(k)]);

describe('replay-select', () => {
  let bench: SqlBench;
  let rawObject = '';
  before(async () => {
    bench = await SqlBench.open();
    const obj = 's3://bench-bucket/raw/dt=2026-11-30/hr=06/a.jsonl.gz';
    await bench.insert('history', [
      historyRow({ key: 2, position: pos(20), op: 'u', hour: H0, arrival: H0 + 10, message: '{"m":"k2-20"}' }),
      historyRow({ key: 1, position: pos(12), op: 'u', hour: H0, arrival: H0 + 20, message: '{"m":"k1-12"}' }),
      historyRow({ key: 1, position: pos(11), op: 'c', hour: H0, arrival: H0 + 5, message: '{"m":"k1-11"}' }),
      // a multi-row record: its first line belongs to another table, the orders line refers to it
      historyRow({ table: 'public.other', key: 8, position: pos(30), hour: H0, arrival: H0 + 30, rawObject: obj, sequence: '77', message: '{"m":"shared"}' }),
      historyRow({ key: 3, position: pos(31), hour: H0, arrival: H0 + 30, rawObject: obj, sequence: '77', messageRef: true }),
      historyRow({ key: 4, position: pos(5), hour: H0 + HOUR, arrival: H0 + HOUR + 1 }),
      historyRow({ key: 5, position: pos(6), hour: H0 - 30 * HOUR, arrival: H0 - 30 * HOUR }), // before the batch span: never read
      historyRow({ key: 1, position: pos(99), hour: H2, arrival: H2 + 1 }), // compacted while the replay planned: raw is read for H2
      historyRow({ kind: 'control', key: null, position: null, hour: H0, arrival: H0 + 1 }),
      historyRow({ key: null, op: 't', position: pos(15), hour: H0, arrival: H0 + 40, message: '{"m":"truncate-15"}' }), // a truncate: no key
    ]);
    const raw = batchOf('raw/', [
      v2Line({ table: T, key: { id: 1 }, op: 'u', position: pos(13), arrivalTs: H2 + 100, sequence: '500', message: '{"m":"raw-first"}' }),
      v2Line({ table: T, key: { id: 6 }, op: 'c', position: pos(40), arrivalTs: H2 + 100, sequence: '500', messageRef: true }),
      v2Line({ table: 'public.other', key: { id: 1 }, op: 'c', position: pos(41), arrivalTs: H2 + 200, sequence: '501' }),
      // A truncate's line as ingest writes it: the normalizer's key id of no key.
      v2Line({ table: T, key: {}, op: 't', position: pos(50), arrivalTs: H2 + 300, sequence: '502', message: '{"m":"truncate-50"}' }),
    ]);
    bench.object(raw.key, raw.body);
    rawObject = bench.uri(raw.key);
    await bench.sources();
  });
  after(() => bench.close());

  const base = { tables: [T], since: H0, until: H2 + HOUR, buckets: 16, uncompactedFrom: H2, batchSpanMs: 2 * HOUR };

  it('selects each event once, from history before the frontier and raw after it, in key and position order, truncates first', async () => {
    const rows = await bench.run(replaySelect(base));
    assert.deepEqual(
      rows.map((r) => [r.key_id, r.position, r.message]),
      [
        [null, pos(15), '{"m":"truncate-15"}'],
        [null, pos(50), '{"m":"truncate-50"}'],
        [kid(1), pos(11), '{"m":"k1-11"}'],
        [kid(1), pos(12), '{"m":"k1-12"}'],
        [kid(1), pos(13), '{"m":"raw-first"}'],
        [kid(2), pos(20), '{"m":"k2-20"}'],
        [kid(3), pos(31), '{"m":"shared"}'],
        [kid(4), pos(5), '{}'],
        [kid(6), pos(40), '{"m":"raw-first"}'],
      ],
    );
    const k6 = rows.find((r) => r.key_id === kid(6));
    assert.deepEqual({ raw: k6?.raw_object, shard: k6?.shard, sequence: k6?.sequence, transport: k6?.transport_kind }, { raw: rawObject, shard: 'shardId-000000000000', sequence: '500', transport: 'kinesis' });
  });

  it('assigns each key the bucket bucketOf computes, for any bucket count', async () => {
    for (const buckets of [1, 7, 16, 100]) {
      const rows = await bench.run(replaySelect({ ...base, buckets }));
      for (const r of rows) assert.equal(r.bucket, r.key_id === null ? 0 : bucketOf(String(r.key_id), buckets), `${r.key_id} with ${buckets} buckets`);
      assert.deepEqual(rows.filter((r) => r.op === 't').map((r) => r.bucket), [0, 0], 'truncates go to bucket 0');
    }
    assert.equal(bucketOf('["1"]', 16), 0x4d8a15e3 % 16);
  });

  it('narrows by arrival time, position range and keys', async () => {
    const inHour = await bench.run(replaySelect({ ...base, since: H0 + 10, until: H0 + 21 }));
    assert.deepEqual(inHour.map((r) => [r.key_id, r.position]), [[kid(1), pos(12)], [kid(2), pos(20)]]);
    const positions = await bench.run(replaySelect({ ...base, fromPosition: pos(12), toPosition: pos(20) }));
    assert.deepEqual(positions.map((r) => r.position), [pos(15), pos(12), pos(13), pos(20)]);
    // Truncates are table-level: a selection of keys leaves them out.
    const keys = await bench.run(replaySelect({ ...base, keys: [{ table: T, keyIds: [kid(1), kid(6)] }] }));
    assert.deepEqual(keys.map((r) => [r.key_id, r.position]), [[kid(1), pos(11)], [kid(1), pos(12)], [kid(1), pos(13)], [kid(6), pos(40)]]);
  });

  it('unloads partitioned by bucket, the bucket the last column', async () => {
    const s = replaySelect({ ...base, output: 's3://bench-bucket/jobs/replay/r1/' });
    assert.equal(s.kind, 'unload');
    assert.deepEqual(s.output, { location: 's3://bench-bucket/jobs/replay/r1/', partitionedBy: ['bucket'] });
    assert.equal(s.columns?.at(-1)?.name, 'bucket');
    assert.equal((await bench.run(s)).length, 9);
  });

  it('refuses what it cannot select', () => {
    assert.throws(() => replaySelect({ ...base, since: H2, until: H0 }), /since before until/);
    assert.throws(() => replaySelect({ ...base, buckets: 101 }), /1 to 100/);
    assert.throws(() => replaySelect({ ...base, fromPosition: "a1' OR 1=1" }), /encoded position/);
    assert.throws(() => replaySelect({ ...base, uncompactedFrom: H2 + 1 }), /start of an hour/);
  });
});
