/**
 * The embedded SQL engine against the emulators' S3: two hours of raw objects in the batch layout
 * (docs/history.md §1) are compacted into Parquet history, folded into expected state, reconciled
 * against a table-side file, and the findings read back from the UNLOAD's objects; then a replay is
 * unloaded by key bucket and an erasure rewrites the history partitions without the key. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/duckdb-engine.test.ts`.
 */
import assert from 'node:assert/strict';
import { gunzipSync, gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { DuckDbEngine } from '../../bin/local/duckdb-engine.js';
import { listObjectKeys as listKeys } from '../../functions/adapters/s3-list.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { bucketOf, buildStatements, HOUR_MS } from '../../functions/sql/index.js';
import { pos } from '../helpers/history-rows.js';
import { batchOf, keyIdOf, v2Line } from '../helpers/raw-v2.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'sqlengine',
  tables: [
    { source: 'public.orders', target: 'sqlengine-orders', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.customers', target: 'sqlengine-customers', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'sqlengine-raw' },
});

const H6 = Date.UTC(2026, 10, 30, 6);
const H7 = H6 + HOUR_MS;
const O = 'public.orders';
const C = 'public.customers';
const kid = (id: number) => keyIdOf({ id });

describe('DuckDB engine on the emulators', () => {
  let target: Target;
  let config: TidemarkConfig;
  let engine: DuckDbEngine;
  const put = (key: string, body: Buffer | string) => target.clients.s3.send(new PutObjectCommand({ Bucket: config.raw.bucket, Key: key, Body: body }));
  const keysUnder = async (prefix: string) => {
    const out: string[] = [];
    for await (const k of listKeys(target.clients.s3, config.raw.bucket, prefix)) out.push(k);
    return out.sort();
  };
  const lines = async (key: string) => {
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: key }));
    const text = gunzipSync(Buffer.from((await got.Body?.transformToByteArray()) ?? [])).toString('utf8');
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    engine = new DuckDbEngine({
      s3: target.clients.s3,
      bucket: config.raw.bucket,
      rawPrefix: config.raw.prefix,
      quarantinePrefix: config.raw.quarantinePrefix,
      warehousePrefix: 'warehouse/',
      tableSidePrefix: 'reports/table_side/',
      eraseKeysPrefix: 'history/erase_keys/',
      memoryLimit: '256MB',
    });
    const raw = config.raw.prefix;
    // Hour 6: two batches (two shards), orders 1-3 created, a two-row record (its second line refers to the first), customers 1-2.
    const a = batchOf(raw, [
      v2Line({ table: O, key: { id: 1 }, op: 'c', position: pos(10), arrivalTs: H6 + 60_000, sequence: '100', hash: 'o1-10' }),
      v2Line({ table: O, key: { id: 2 }, op: 'c', position: pos(11), arrivalTs: H6 + 60_000, sequence: '101', hash: 'o2-11', message: '{"rows":[2,3]}' }),
      v2Line({ table: O, key: { id: 3 }, op: 'c', position: pos(12), arrivalTs: H6 + 60_000, sequence: '101', hash: 'o3-12', messageRef: true }),
    ]);
    const b = batchOf(raw, [v2Line({ table: C, key: { id: 1 }, op: 'c', position: pos(5), arrivalTs: H6 + 120_000, sequence: '7', hash: 'c1-5' }), v2Line({ table: C, key: { id: 2 }, op: 'c', position: pos(6), arrivalTs: H6 + 120_000, sequence: '8', hash: 'c2-6' })], 'shardId-000000000001');
    // Hour 7: order 1 updated, order 2 deleted, order 4 created, a late redelivery of order 1's create; customers truncated, then customer 3 inserted.
    const c = batchOf(raw, [
      v2Line({ table: O, key: { id: 1 }, op: 'u', position: pos(20), arrivalTs: H7 + 60_000, sequence: '200', hash: 'o1-20' }),
      v2Line({ table: O, key: { id: 2 }, op: 'd', position: pos(21), arrivalTs: H7 + 60_000, sequence: '201', hash: 'o2-21' }),
      v2Line({ table: O, key: { id: 4 }, op: 'c', position: pos(22), arrivalTs: H7 + 60_000, sequence: '202', hash: 'o4-22' }),
      v2Line({ table: O, key: { id: 1 }, op: 'c', position: pos(10), arrivalTs: H7 + 61_000, sequence: '203', hash: 'o1-10' }),
      v2Line({ table: C, key: null, op: 't', position: pos(8), arrivalTs: H7 + 62_000, sequence: '204', hash: null }),
      v2Line({ table: C, key: { id: 3 }, op: 'c', position: pos(9), arrivalTs: H7 + 63_000, sequence: '205', hash: 'c3-9' }),
    ]);
    for (const o of [a, b, c]) await put(o.key, o.body);
  });

  after(async () => {
    await engine?.close();
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('compacts two hours of raw into Parquet history, partitioned by table and day, once', async () => {
    const r6 = await engine.run(buildStatements('compact-hour', { hour: H6 })[0] ?? assert.fail());
    const r7 = await engine.run(buildStatements('compact-hour', { hour: H7 })[0] ?? assert.fail());
    assert.deepEqual([r6.rows, r7.rows], [5, 6]);
    assert.equal((await engine.run(buildStatements('compact-hour', { hour: H7 })[0] ?? assert.fail())).rows, 0, 'a rerun adds nothing');
    const files = await keysUnder('warehouse/history/');
    assert.equal(files.length, 4, files.join('\n'));
    assert.ok(files.every((k) => /^warehouse\/history\/source_table=public\.(orders|customers)\/dt=2026-11-30\/g00000001-[^/]+\.parquet$/.test(k)), files.join('\n'));
  });

  it('folds both hours into expected state, rewriting each table partition as a new generation', async () => {
    for (const h of [H6, H7]) await engine.runAll(buildStatements('fold-expected', { hour: h }));
    const files = await keysUnder('warehouse/expected_state/');
    assert.deepEqual(
      files.map((k) => k.replace(/-[^/]+\.parquet$/, '')),
      ['warehouse/expected_state/source_table=public.customers/g00000003', 'warehouse/expected_state/source_table=public.orders/g00000002'],
      'older generations are gone',
    );
    assert.deepEqual((await keysUnder('warehouse/truncates/')).length, 1);
  });

  it('reconciles against a table-side file and writes the findings, which read back with their classes', async () => {
    const side = [
      { source_table: O, key_id: kid(1), key_json: '{"id":1}', position: pos(20), deleted: false, erased: false, hash: 'o1-20', applied_at: H7 },
      { source_table: O, key_id: kid(2), key_json: '{"id":2}', position: pos(11), deleted: false, erased: false, hash: 'o2-11', applied_at: H7 },
      { source_table: O, key_id: kid(3), key_json: '{"id":3}', position: pos(12), deleted: false, erased: false, hash: 'other', applied_at: H7 },
      { source_table: O, key_id: kid(9), key_json: '{"id":9}', position: pos(1), deleted: false, erased: false, hash: 'x', applied_at: H7 },
      { source_table: C, key_id: kid(1), key_json: '{"id":1}', position: pos(5), deleted: false, erased: false, hash: 'c1-5', applied_at: H7 },
      { source_table: C, key_id: kid(3), key_json: '{"id":3}', position: pos(9), deleted: false, erased: false, hash: 'c3-9', applied_at: H7 },
    ];
    await put('reports/table_side/run_id=r1/part-0.jsonl.gz', gzipSync(`${side.map((s) => JSON.stringify(s)).join('\n')}\n`));
    const output = `s3://${config.raw.bucket}/reports/reconcile/r1/findings/`;
    const args = { tables: [O, C], runId: 'r1', cutoff: H7 + 2 * HOUR_MS } as const;
    const report = await engine.run(buildStatements('reconcile-full', { ...args, part: 'findings', output })[0] ?? assert.fail());
    assert.equal(report.rows, 4);
    const findings = (await Promise.all(report.written.map(lines))).flat();
    assert.deepEqual(
      findings.map((f) => [f.source_table, f.key_id, f.class]).sort(),
      [
        [O, kid(2), 'deleted-live'],
        [O, kid(3), 'mismatch'],
        [O, kid(4), 'missing'],
        [O, kid(9), 'extra'],
      ].sort(),
    );
    assert.ok(report.written.every((k) => k.startsWith('reports/reconcile/r1/findings/') && k.endsWith('.json.gz')));
    const counts: Record<string, unknown> = {};
    for await (const row of engine.query(buildStatements('reconcile-full', { ...args, part: 'counts' })[0] ?? assert.fail())) counts[`${row.source_table} ${row.class}`] = row.keys;
    assert.deepEqual(counts, { [`${C} ok`]: 3, [`${O} deleted-live`]: 1, [`${O} extra`]: 1, [`${O} mismatch`]: 1, [`${O} missing`]: 1, [`${O} ok`]: 1 });
  });

  it('unloads a replay by key bucket, each bucket in key and position order, messageRef lines resolved', async () => {
    const output = `s3://${config.raw.bucket}/jobs/replay/r2/`;
    const report = await engine.run(buildStatements('replay-select', { tables: [O], since: H6, until: H7 + HOUR_MS, buckets: 4, uncompactedFrom: H7 + HOUR_MS, output })[0] ?? assert.fail());
    assert.equal(report.rows, 7);
    for (const key of report.written) {
      const bucket = Number(/\/bucket=(\d+)\//.exec(key)?.[1]);
      const rows = await lines(key);
      assert.ok(rows.every((r) => bucketOf(String(r.key_id), 4) === bucket && !('bucket' in r)), key);
      const order = rows.map((r) => `${r.key_id} ${r.position}`);
      assert.deepEqual(order, [...order].sort(), key);
    }
    const all = (await Promise.all(report.written.map(lines))).flat();
    assert.equal(all.find((r) => r.key_id === kid(3))?.message, '{"rows":[2,3]}');
  });

  it('erases a key from history: the partition is rewritten and its old file removed', async () => {
    const before = await keysUnder('warehouse/history/source_table=public.orders/');
    // The run's keys as erase writes them: the statements join them, no key in their text.
    await put('history/erase_keys/run_id=erase-1/keys.jsonl.gz', gzipSync(`${JSON.stringify({ source_table: O, key_id: kid(1), key_hash: 'h1', request: 'req-1' })}\n`));
    const found = [];
    for await (const row of engine.query(buildStatements('erase-find-history', { runId: 'erase-1', tables: [O] })[0] ?? assert.fail())) found.push(row);
    assert.deepEqual(found, [{ request: 'req-1', key_hash: 'h1', lines: 3, max_position: pos(20) }]);
    const r = await engine.run(buildStatements('erase-history', { runId: 'erase-1', tables: [O] })[0] ?? assert.fail());
    assert.equal(r.rows, 3);
    assert.deepEqual([...r.removed].sort(), before);
    const afterKeys = await keysUnder('warehouse/history/source_table=public.orders/');
    assert.equal(afterKeys.length, 1);
    assert.match(afterKeys[0] ?? '', /\/g00000002-/);
    await engine.runAll(buildStatements('erase-expected', { runId: 'erase-1', tables: [O] }));
    const left: string[] = [];
    for await (const row of engine.query(buildStatements('window-keys', { tables: [O], from: H6, to: H7 })[0] ?? assert.fail())) left.push(String(row.key_id));
    assert.deepEqual(left, [kid(2), kid(3), kid(4)]);
  });
});
