/**
 * Reconcile's Lambda steps on SQL (functions/jobs/reconcile/run.ts) over an in-memory S3 and a mocked
 * DynamoDB: the plan of each mode, the export's data files, and the report read back from the
 * classify outputs: counts, findings less the erased ones (by the ledger), repair outcomes attached,
 * the manifest diffed against the table side (full and window mode), the per-table reports, metrics,
 * the status rows, and the run's scratch deleted. RepairPlan reads the same findings.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { type AttributeValue, BatchGetItemCommand, DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../../lib/config/config.js';
import { compactionFrontierKey, tableSideRunPrefix } from '../../../../../functions/adapters/raw-layout.js';
import { FIRST_KEY_ID } from '../../../../../functions/adapters/ledger-keys.js';
import { keyHash } from '../../../../../functions/core/key-hash.js';
import { keyId, normalizeKey } from '../../../../../functions/core/keys.js';
import { type JobDeps, JobInputError } from '../../../../../functions/jobs/deps.js';
import { queryAt } from '../../../../../functions/jobs/queries.js';
import { repairKeyId } from '../../../../../functions/jobs/reconcile/repair.js';
import { heldLines } from '../../../../../bin/cli/reconcile.js';
import { exportFiles, findingOf, planReconcileRepair, planReconcileRun, type ReconcileRun, reportReconcileRun } from '../../../../../functions/jobs/reconcile/run.js';
import type { Finding } from '../../../../../functions/jobs/reconcile/types.js';
import { CollectingMetricSink } from '../../../../../functions/telemetry/sinks.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 30, 6, 20);
const SECRET = 'reconcile-run-unit-ledger-key-0123456789';
const config = parseConfig({
  name: 'shop',
  tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
  raw: { bucket: 'shop-raw' },
  replay: { erase: { ledgerKeySecret: 'env:TIDEMARK_RUN_TEST_KEY' } },
});
const table = config.tables[0] as (typeof config.tables)[number];
const idOf = (n: number) => keyId(table, normalizeKey(table, { order_id: n }));
const gz = (rows: readonly object[]) => gzipSync(Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''), 'utf8'));

/** A findings row as the classify query writes it. */
const findingRow = (n: number, cls: string, extra: Record<string, unknown> = {}) => ({
  source_table: 'public.orders',
  key_id: idOf(n),
  key_json: JSON.stringify({ order_id: n }),
  class: cls,
  expected_position: `a${n}`,
  expected_op: 'u',
  expected_hash: `h${n}`,
  expected_deleted: false,
  actual_position: null,
  actual_deleted: null,
  actual_hash: null,
  actual_applied_at: null,
  ...extra,
});
const sideLine = (n: number, extra: Record<string, unknown> = {}) => ({ source_table: 'public.orders', key_id: idOf(n), key_json: JSON.stringify({ order_id: n }), position: `a${n}`, deleted: false, erased: false, hash: `h${n}`, applied_at: NOW - 2 * HOUR, ...extra });

describe('reconcile run steps', () => {
  let s3: FakeS3;
  let ddb: AwsClientStub<DynamoDBClient>;
  let metrics: CollectingMetricSink;
  let dynamodb: DynamoDBClient;
  const deps = () => ({ config, s3: s3.client, dynamodb, log: memoryLog(), metrics, now: () => NOW }) as unknown as JobDeps;
  const text = (key: string) => {
    const body = Buffer.from(s3.get(key) ?? []);
    return (body[0] === 0x1f ? gunzipSync(body) : body).toString('utf8');
  };
  const json = (key: string) => JSON.parse(text(key));
  const findingsOf = (objects: readonly string[]): Finding[] =>
    objects.flatMap((uri) =>
      text(uri.replace(`s3://${config.raw.bucket}/`, ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Finding),
    );

  /** The status table's rows, `partition\0row` → item (the plan reads the tables' lifecycles with BatchGetItem). */
  let status: Map<string, Record<string, AttributeValue>>;

  beforeEach(() => {
    status = new Map();
    s3 = fakeS3();
    metrics = new CollectingMetricSink();
    dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    ddb = mockClient(dynamodb);
    ddb.on(DescribeTableCommand).resolves({ Table: { TableArn: 'arn:aws:dynamodb:us-east-1:111122223333:table/shop-orders' } });
    ddb.on(QueryCommand).resolves({ Items: [] });
    ddb.on(UpdateItemCommand).resolves({});
    ddb.on(GetItemCommand).resolves({});
    ddb.on(PutItemCommand).resolves({});
    ddb.on(BatchGetItemCommand).callsFake((input: { RequestItems: Record<string, { Keys: Record<string, AttributeValue>[] }> }) => {
      const [[name, { Keys }]] = Object.entries(input.RequestItems) as [[string, { Keys: Record<string, AttributeValue>[] }]];
      return {
        Responses: {
          [name]: Keys.flatMap((k): Record<string, AttributeValue>[] => {
            const item = status.get(`${k.pipeline?.S}\u0000${k.table?.S}`);
            return item ? [item] : [];
          }),
        },
      };
    });
    process.env.TIDEMARK_RUN_TEST_KEY = SECRET;
  });
  afterEach(() => {
    s3.restore();
    ddb.restore();
    delete process.env.TIDEMARK_RUN_TEST_KEY;
  });

  /** A run as Plan fixes it, with the outputs of the classify queries in place. */
  async function planned(request: Parameters<typeof planReconcileRun>[0]) {
    s3.put(compactionFrontierKey(config.history.prefix), JSON.stringify({ compactedThrough: Date.UTC(2026, 10, 30, 5), cleanedThrough: null }));
    return planReconcileRun({ cutoffSeconds: 0, ...request }, deps());
  }

  it('plans a full run: one export item per table, the findings and counts queries, the run stored', async () => {
    const plan = await planned({ mode: 'full', runId: 'full-1' });
    assert.equal(plan.run.mode, 'full');
    assert.equal(plan.run.window, null);
    assert.equal(plan.windowKeys, null);
    assert.equal(plan.classify.count, 2);
    assert.equal(plan.exports?.count, 1);
    const items = json(plan.exports?.key ?? '') as { table: string; tableArn: string; exportPrefix: string }[];
    assert.deepEqual(
      items.map((i) => [i.table, i.tableArn, i.exportPrefix]),
      [['public.orders', 'arn:aws:dynamodb:us-east-1:111122223333:table/shop-orders', 'history/unload/reconcile/full-1/export/public.orders']],
    );
    assert.deepEqual(json(`${plan.run.prefix}run.json`), plan.run);
    assert.equal(plan.run.manifest, null);
    assert.equal(plan.run.repair, false);
  });

  it('plans a window run over the last compacted hours, or the hours a since/until range covers; nothing when nothing is compacted', async () => {
    const plan = await planned({ mode: 'window', hours: 2, runId: 'w-1' });
    assert.deepEqual(plan.run.window, { fromMs: Date.UTC(2026, 10, 30, 4), toMs: Date.UTC(2026, 10, 30, 5) });
    assert.equal(plan.windowKeys?.count, 1);
    assert.equal(plan.windowKeys?.prefix, 'history/unload/reconcile/w-1/window-keys/');
    assert.equal(plan.exports, null);
    const ranged = await planned({ mode: 'window', since: '2026-11-30T03:10:00Z', until: '2026-11-30T05:00:00Z' });
    assert.deepEqual(ranged.run.window, { fromMs: Date.UTC(2026, 10, 30, 3), toMs: Date.UTC(2026, 10, 30, 4) });
    assert.match(ranged.run.runId, /^window-20261130T062000-[0-9a-f]{6}$/);
    const manifest = await planned({ mode: 'window', manifest: 's3://elsewhere/lists/keys.jsonl', repair: true });
    assert.deepEqual(manifest.run.manifest, { bucket: 'elsewhere', key: 'lists/keys.jsonl' });
    assert.equal(manifest.run.repair, true);
    s3.restore();
    s3 = fakeS3();
    const none = await planReconcileRun({ mode: 'window' }, deps());
    assert.equal(none.run.window, null);
    assert.equal(none.windowKeys, null);
    assert.equal(none.classify.count, 0, 'no window: nothing to classify');
  });

  it('refuses bad input before it writes anything', async () => {
    for (const request of [{ mode: 'sideways' }, { hours: 0 }, { cutoffSeconds: -1 }, { runId: 'a b' }, { since: 'yesterday' }, { since: '2026-11-30T05:00:00Z', until: '2026-11-30T04:00:00Z' }, { tables: ['public.nope'] }]) {
      await assert.rejects(planReconcileRun(request as never, deps()), (e: Error) => e instanceof JobInputError || e.name === 'JobInputError', JSON.stringify(request));
    }
    ddb.on(DescribeTableCommand).resolves({ Table: {} });
    await assert.rejects(planReconcileRun({ mode: 'full' }, deps()), /has no ARN/);
    assert.deepEqual(s3.keys(), []);
  });

  it('finds the data files next to the export manifest summary; refuses anything else', () => {
    const item = { table: 'public.orders', tableArn: 'arn', bucket: 'shop-raw', exportPrefix: 'x/', runId: 'r' };
    assert.deepEqual(exportFiles({ item, export: { manifest: 'x/AWSDynamoDB/0123-abc/manifest-summary.json' } }), { bucket: 'shop-raw', key: 'x/AWSDynamoDB/0123-abc/manifest-files.json' });
    assert.throws(() => exportFiles({ item, export: { manifest: 'x/AWSDynamoDB/0123-abc/data.json.gz' } }), JobInputError);
    assert.throws(() => exportFiles({ item, export: { manifest: 'manifest-summary.json' } }), JobInputError);
  });

  it('a findings row becomes a finding with keys and positions only', () => {
    assert.deepEqual(findingOf(findingRow(1, 'missing')), { class: 'missing', table: 'public.orders', key: '{"order_id":1}', expected: { position: 'a1', op: 'u', deleted: false, hash: 'h1' }, actual: null });
    assert.deepEqual(findingOf(findingRow(2, 'extra', { expected_position: null, actual_position: 'b2', actual_deleted: false, actual_hash: 'x', actual_applied_at: '17' })), {
      class: 'extra',
      table: 'public.orders',
      key: '{"order_id":2}',
      expected: null,
      actual: { position: 'b2', deleted: false, hash: 'x', appliedAt: 17 },
    });
    const sparse = findingOf(findingRow(3, 'stale', { expected_op: null, expected_hash: null, actual_position: 'a0', actual_hash: null, actual_applied_at: null }));
    assert.deepEqual([sparse.expected?.op, sparse.expected?.hash, sparse.actual?.hash, sparse.actual?.appliedAt], ['', null, '', 0]);
  });

  it('reports a full run: counts, findings less the erased key, repair outcomes, the manifest diff, table reports, metrics, status; the scratch deleted', async () => {
    const plan = await planned({ mode: 'full', runId: 'full-2', repair: true, manifest: 's3://shop-raw/reports/manifests/m.jsonl' });
    const run: ReconcileRun = plan.run;
    const out = run.outputs;
    s3.put(`${out.counts}a-0.json.gz`, gz([
      { source_table: 'public.orders', class: 'missing', keys: 2 },
      { source_table: 'public.orders', class: 'stale', keys: '1' },
      { source_table: 'public.orders', class: 'ok', keys: 5 },
      { source_table: 'public.orders', class: 'in-flight', keys: 1 },
      { source_table: 'public.orders', class: 'erased', keys: 1 },
    ]));
    // Two objects: gzip and plain (a classify output is gzip by its bytes, not its name), and an empty one.
    s3.put(`${out.findings}a-0.json.gz`, gz([findingRow(1, 'missing'), findingRow(6, 'missing')]));
    s3.put(`${out.findings}b-0.json.gz`, `${JSON.stringify(findingRow(2, 'stale', { actual_position: 'a0', actual_deleted: false, actual_hash: 'h0', actual_applied_at: 1 }))}\n\n`);
    s3.put(`${out.findings}c-0.json.gz`, '');
    // The table side: 2 live (not listed: manifest-extra), 3 deleted (listed: manifest-missing), 4 live and listed, 5 applied after the cutoff.
    const side = tableSideRunPrefix(config.history.prefix, run.runId);
    s3.put(`${side}part-0.jsonl.gz`, gz([sideLine(2), sideLine(3, { deleted: true }), sideLine(4), sideLine(5, { applied_at: NOW + 1 })]));
    s3.put(
      'reports/manifests/m.jsonl',
      [
        JSON.stringify({ table: 'public.orders', key: { order_id: 3 } }),
        JSON.stringify({ table: 'public.orders', key: { order_id: 4 } }),
        JSON.stringify({ table: 'public.orders', key: { order_id: 5 } }),
        JSON.stringify({ table: 'public.orders', key: { order_id: 9 } }),
        JSON.stringify({ table: 'public.other', key: { order_id: 9 } }),
        '["not an entry"]',
        '',
      ].join('\n'),
    );
    s3.put(`${out.exports}public.orders/AWSDynamoDB/x/data/0.json.gz`, 'row values');
    s3.put(`${out.windowKeys}0.json.gz`, 'keys');
    s3.put(`history/unload/reconcile/${run.runId}/repair/part=00000/0.json.gz`, 'events');
    // Repair outcomes as the Repair step stored them.
    s3.put(`${run.prefix}repair-outcomes.json`, JSON.stringify({ [repairKeyId('public.orders', idOf(1))]: 'applied', [repairKeyId('public.orders', idOf(2))]: 'stale' }));
    // The ledger holds key 6's erasure at a position above its winner: not a finding.
    ddb.on(QueryCommand).resolves({
      Items: [
        {
          pipeline: { S: 'shop#erased' },
          table: { S: 'public.orders#h' },
          source: { S: 'public.orders' },
          keyHash: { S: keyHash(Buffer.from(SECRET, 'utf8'), 'public.orders', idOf(6)) },
          keyId: { S: FIRST_KEY_ID },
          position: { S: 'b' },
          erasedAt: { N: '1' },
          reason: { S: 'unit' },
        },
      ],
    });

    const report = await reportReconcileRun({ run, repaired: { repaired: 1, failed: 1, outcomesKey: `${run.prefix}repair-outcomes.json` } as never }, deps());
    assert.deepEqual(report.findings.byClass, { missing: 1, 'deleted-live': 0, stale: 1, mismatch: 0, ahead: 0, extra: 0, 'manifest-missing': 2, 'manifest-extra': 1 });
    assert.equal(report.findings.total, 5);
    assert.deepEqual(report.findings.byTable['public.orders'], { missing: 1, stale: 1, 'manifest-missing': 2, 'manifest-extra': 1 });
    assert.deepEqual([report.counts.keys, report.counts.inFlight, report.counts.erased, report.counts.manifestKeys], [10, 1, 2, 4]);
    assert.deepEqual([report.counts.repaired, report.counts.repairFailed, report.repair, report.critical], [1, 1, true, false]);
    const findings = findingsOf(report.findingObjects);
    assert.deepEqual(
      findings.map((f) => [f.class, f.key, f.repair]),
      [
        ['missing', '{"order_id":1}', 'applied'],
        ['stale', '{"order_id":2}', 'stale'],
        ['manifest-extra', '{"order_id":2}', undefined],
        ['manifest-missing', '{"order_id":3}', undefined],
        ['manifest-missing', '{"order_id":9}', undefined],
      ],
    );
    assert.equal(findings.find((f) => f.key === '{"order_id":3}')?.actual?.deleted, true, 'a deleted row is named with what the table holds');
    // The per-table report, the run's report, the status row and the metrics.
    const tableReport = json(report.tableReports['public.orders']?.report.replace('s3://shop-raw/', '') ?? '');
    assert.equal(tableReport.counts['manifest-missing'], 2);
    assert.deepEqual(tableReport.firstFindings.missing.map((f: Finding) => f.key), ['{"order_id":1}']);
    assert.equal(tableReport.findings, `s3://shop-raw/${run.prefix}findings/`);
    assert.deepEqual(json(`${run.prefix}report.json`), report);
    const status = ddb.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    assert.equal(status.length, 1);
    assert.deepEqual([status[0]?.Key?.pipeline?.S, status[0]?.Key?.table?.S], ['shop/public.orders', 'job#reconcile'], "the job row in the table's partition (layout 2)");
    assert.equal(status[0]?.ExpressionAttributeValues?.[':f']?.M?.missing?.N, '1');
    assert.deepEqual([status[0]?.ExpressionAttributeValues?.[':rp']?.N, status[0]?.ExpressionAttributeValues?.[':rf']?.N], ['1', '1'], 'key 1 repaired, key 2 not (stale)');
    assert.equal(metrics.totals.get('public.orders:ReconcileMissing'), 1);
    assert.equal(metrics.totals.get('*:ReconcileKeys'), 10);
    // Export, table side, window keys, findings and repair selection are gone; the counts and the reports stay.
    const left = s3.keys();
    for (const gone of [out.exports, side, out.windowKeys, out.findings, `history/unload/reconcile/${run.runId}/repair/`]) assert.ok(!left.some((k) => k.startsWith(gone)), `${gone} deleted`);
    assert.ok(left.some((k) => k.startsWith(out.counts)));
  });

  it('reports a window run: the listed keys the table side lacks are read from the table; no manifest-extra; a clean run has no findings objects', async () => {
    const plan = await planned({ mode: 'window', runId: 'w-2', manifest: 's3://shop-raw/m.jsonl.gz' });
    const run = plan.run;
    s3.put(`${run.outputs.counts}a-0.json.gz`, gz([{ source_table: 'public.orders', class: 'ok', keys: 3 }]));
    s3.put(`${tableSideRunPrefix(config.history.prefix, run.runId)}window-0.jsonl.gz`, gz([sideLine(1), sideLine(7)]));
    s3.put('m.jsonl.gz', gz([{ table: 'public.orders', key: { order_id: 1 } }, { table: 'public.orders', key: { order_id: 2 } }, { table: 'public.orders', key: { order_id: 3 } }]));
    // Key 2 is a deleted row in the table, key 3 has no item at all.
    ddb.on(BatchGetItemCommand).resolves({ Responses: { 'shop-orders': [{ order_id: { N: '2' }, __pos: { S: 'a2' }, __deleted: { BOOL: true }, __hash: { S: 'h2' }, __appliedAt: { N: String(NOW - HOUR) } }] } });
    const report = await reportReconcileRun({ run }, deps());
    assert.deepEqual(
      findingsOf(report.findingObjects).map((f) => [f.class, f.key, f.actual?.deleted ?? null]),
      [
        ['manifest-missing', '{"order_id":2}', true],
        ['manifest-missing', '{"order_id":3}', null],
      ],
    );
    assert.equal(report.counts.manifestKeys, 3);
    assert.deepEqual(report.window, { from: '2026-11-30T03:00:00.000Z', to: '2026-11-30T06:00:00.000Z' });
    const batchKeys = ddb.commandCalls(BatchGetItemCommand).flatMap((c) => c.args[0].input.RequestItems?.['shop-orders']?.Keys ?? []);
    assert.deepEqual(
      batchKeys.map((k) => k.order_id?.N),
      ['2', '3'],
      'only the listed keys the window did not read',
    );
    assert.equal(metrics.totals.get('*:ReconcileWindowFindings'), 2);

    const clean = await planned({ mode: 'window', runId: 'w-3' });
    const cleanReport = await reportReconcileRun({ run: clean.run }, deps());
    assert.equal(cleanReport.findings.total, 0);
    assert.deepEqual(cleanReport.findingObjects, []);
    assert.equal(cleanReport.tableReports['public.orders']?.findings, null);
  });

  it('RepairPlan takes the repairable findings less the erased keys and plans their replay-select', async () => {
    const plan = await planned({ mode: 'full', runId: 'full-3', repair: true });
    s3.put(`${plan.run.outputs.findings}a-0.json.gz`, gz([findingRow(1, 'missing'), findingRow(2, 'ahead'), findingRow(3, 'mismatch', { actual_hash: 'bad' }), findingRow(4, 'stale')]));
    ddb.on(QueryCommand).resolves({
      Items: [{ source: { S: 'public.orders' }, table: { S: 'public.orders#h' }, keyHash: { S: keyHash(Buffer.from(SECRET, 'utf8'), 'public.orders', idOf(4)) }, keyId: { S: FIRST_KEY_ID }, position: { S: '' }, erasedAt: { N: '1' } }],
    });
    const repair = await planReconcileRepair({ run: plan.run }, deps());
    assert.equal(repair.keys, 2, 'missing and mismatch: never ahead, never an erased key');
    assert.equal(repair.count, 1);
    assert.deepEqual(
      (json(repair.keysKey) as { keyId: string; class: string }[]).map((k) => [k.keyId, k.class]),
      [
        [idOf(1), 'missing'],
        [idOf(3), 'mismatch'],
      ],
    );
  });

  it('a suspended table: its keys changed since the hold are `held` (labelled, not findings, no alarm metric); --repair leaves the table alone', async () => {
    const heldFrom = NOW - 30 * 60_000;
    status.set('shop/public.orders\u0000status', { pipeline: { S: 'shop/public.orders' }, table: { S: 'status' }, lifecycle: { S: 'suspended' }, lifecycleAt: { N: String(heldFrom) }, heldFrom: { N: String(heldFrom) } });
    const plan = await planned({ mode: 'full', runId: 'held-1', repair: true });
    const since = heldFrom - config.ingest.timeoutSeconds * 1000 - 5_000;
    assert.deepEqual(plan.run.held, { 'public.orders': { state: 'suspended', heldFrom, rawSince: since } });
    for (let index = 0; index < plan.classify.count; index++) {
      const { query } = await queryAt({ ...plan.classify, index }, deps());
      assert.deepEqual(query.statement.args.held, { tables: [{ table: 'public.orders', since }], until: NOW });
      assert.match(query.athena.QueryString, /'held'/);
    }
    const run = plan.run;
    // The classify outputs: 4 keys held, 1 stale key whose raw is older than the hold.
    s3.put(`${run.outputs.counts}a-0.json.gz`, gz([{ source_table: 'public.orders', class: 'held', keys: 4 }, { source_table: 'public.orders', class: 'stale', keys: 1 }, { source_table: 'public.orders', class: 'ok', keys: 2 }]));
    s3.put(`${run.outputs.findings}a-0.json.gz`, gz([findingRow(1, 'stale')]));
    const repair = await planReconcileRepair({ run }, deps());
    assert.equal(repair.keys, 0, 'a held table is not written, not even its older findings');
    const report = await reportReconcileRun({ run, repaired: { repaired: 0, failed: 0 } as never }, deps());
    assert.deepEqual(report.held, { 'public.orders': { state: 'suspended', heldFrom: new Date(heldFrom).toISOString(), keys: 4, repairSkipped: true } });
    assert.equal(report.counts.held, 4);
    assert.equal(report.findings.total, 1, 'only the key older than the hold');
    assert.deepEqual(report.findings.byTable['public.orders'], { stale: 1 });
    assert.equal(metrics.totals.get('*:ReconcileStale'), 1);
    assert.equal(metrics.totals.get('*:ReconcileMissing'), 0);
    assert.equal(metrics.totals.get('*:ReconcileKeys'), 7);
    assert.deepEqual(heldLines(report), [`  public.orders: suspended since ${new Date(heldFrom).toISOString().slice(0, 19)}Z: 4 keys changed since then not judged (landed in raw, applied on resume); --repair left the table alone`]);

    // Running again: nothing held, nothing labelled.
    status.clear();
    const running = await planned({ mode: 'full', runId: 'held-2' });
    assert.deepEqual(running.run.held, {});
    assert.equal((await queryAt({ ...running.classify, index: 0 }, deps())).query.statement.args.held, undefined);
  });
});
