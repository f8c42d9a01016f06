/**
 * Snapshot detection's Lambda steps on SQL (functions/jobs/snapshot/run.ts, orphans.ts) over an
 * in-memory S3 and a mocked DynamoDB: the plan stores its three queries; the report reads the
 * anomalies, re-snapshots and orphans back, checks each orphan's stored item, tombstones the rest
 * through the guarded writer with `apply`, emits a metric per finding kind and deletes the outputs.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { type AttributeValue, BatchGetItemCommand, DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../../lib/config/config.js';
import { jobDeps } from '../../../../../functions/composition.js';
import { encodePosition } from '../../../../../functions/core/position.js';
import { type JobDeps, JobInputError } from '../../../../../functions/jobs/deps.js';
import { queryAt } from '../../../../../functions/jobs/queries.js';
import { MAX_LISTED_KEYS, tombstone } from '../../../../../functions/jobs/snapshot/orphans.js';
import { planSnapshotRun, reportSnapshotRun } from '../../../../../functions/jobs/snapshot/run.js';
import { CollectingMetricSink } from '../../../../../functions/telemetry/sinks.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const NOW = Date.UTC(2026, 10, 30, 6, 20);
const config = parseConfig({
  name: 'shop',
  tables: [
    { source: 'public.orders', target: 'shop-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
    { source: 'public.items', target: 'shop-items', key: ['sku'] },
  ],
  raw: { bucket: 'shop-raw' },
});
const END = encodePosition([5000n, 1n]);
const gz = (rows: readonly object[]) => gzipSync(Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''), 'utf8'));
const orphan = (id: number, extra: Record<string, unknown> = {}) => ({ source_table: 'public.orders', key_id: `["${id}"]`, key_json: JSON.stringify({ order_id: id }), position: encodePosition([100n + BigInt(id)]), snapshot_start: NOW - 3_600_000, snapshot_end_position: END, snapshot_keys: '40', ...extra });
const item = (id: number, position: string, deleted = false) => ({ order_id: { N: String(id) }, __pos: { S: position }, __deleted: { BOOL: deleted }, __hash: { S: 'h' }, __appliedAt: { N: '1' } });

describe('snapshot detection run steps', () => {
  let s3: FakeS3;
  let ddb: AwsClientStub<DynamoDBClient>;
  let metrics: CollectingMetricSink;
  let log: ReturnType<typeof memoryLog>;
  let writes: { key: unknown; op: string; position: string }[];
  let outcome: () => Promise<{ outcome: string }>;
  let deps: JobDeps;
  /** The status table's rows, `partition\0row` → item (BatchGetItem reads them). */
  let status: Map<string, Record<string, AttributeValue>>;
  const statusRow = (table: string, row: string, attrs: Record<string, AttributeValue>) => status.set(`shop/${table}\u0000${row}`, { pipeline: { S: `shop/${table}` }, table: { S: row }, ...attrs });

  beforeEach(() => {
    s3 = fakeS3();
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    ddb = mockClient(dynamodb);
    status = new Map();
    ddb.on(BatchGetItemCommand).callsFake((input: { RequestItems: Record<string, { Keys: Record<string, AttributeValue>[] }> }) => {
      const [[name, { Keys }]] = Object.entries(input.RequestItems) as [[string, { Keys: Record<string, AttributeValue>[] }]];
      return { Responses: { [name]: Keys.flatMap((k): Record<string, AttributeValue>[] => { const item = status.get(`${k.pipeline?.S}\u0000${k.table?.S}`); return item ? [item] : []; }) } };
    });
    metrics = new CollectingMetricSink();
    log = memoryLog();
    writes = [];
    outcome = async () => ({ outcome: 'applied' });
    const real = jobDeps(config, { s3: s3.client, dynamodb }, { metrics, log, now: () => NOW });
    const writer = {
      write: async (w: { key: unknown; effect: { kind: string }; encodedPosition: string }) => {
        writes.push({ key: w.key, op: w.effect.kind, position: w.encodedPosition });
        return outcome();
      },
    };
    deps = { ...real, writer: writer as unknown as JobDeps['writer'] };
  });
  afterEach(() => {
    s3.restore();
    ddb.restore();
  });

  it('plans the three detection queries over the lookback, each to its own output; refuses bad input', async () => {
    const plan = await planSnapshotRun({ hours: 24, runId: 's-1' }, deps);
    assert.deepEqual(plan.run.tables, ['public.orders', 'public.items']);
    assert.equal(plan.run.lookbackFromMs, NOW - 24 * 3_600_000);
    assert.equal(plan.run.apply, false);
    assert.deepEqual(plan.run.outputs, { anomalies: 'history/unload/snapshot/s-1/anomalies/', resnapshots: 'history/unload/snapshot/s-1/resnapshots/', orphans: 'history/unload/snapshot/s-1/orphans/' });
    assert.equal(plan.queries.count, 3);
    const names = [];
    for (let index = 0; index < plan.queries.count; index++) names.push((await queryAt({ ...plan.queries, index }, deps)).query.statement.name);
    assert.deepEqual(names, ['detect-anomalies', 'detect-resnapshots', 'detect-orphans']);
    const one = await planSnapshotRun({ tables: ['public.items', 'public.items'], apply: true }, deps);
    assert.deepEqual(one.run.tables, ['public.items']);
    assert.match(one.run.runId, /^snapshot-20261130T062000-[0-9a-f]{6}$/);
    for (const request of [{ hours: 0 }, { runId: 'no spaces' }, { tables: ['public.nope'] }]) {
      await assert.rejects(planSnapshotRun(request as never, deps), (e: Error) => e instanceof JobInputError || e.name === 'JobInputError', JSON.stringify(request));
    }
  });

  it('reports anomalies, re-snapshots and orphans per table; an orphan gone or tombstoned since is none; apply tombstones the rest at the snapshot end', async () => {
    const plan = await planSnapshotRun({ runId: 's-2', apply: true }, deps);
    const { outputs } = plan.run;
    s3.put(`${outputs.anomalies}0.json.gz`, gz([{ source_table: 'public.items', kind: 'no-deletes', recent: 500, history: 0.2 }]));
    s3.put(`${outputs.resnapshots}0.json.gz`, gz([
      { source_table: 'public.orders', streaming_since: NOW - 7_200_000, resnapshot_reads: '12', first_read_at: NOW - 3_600_000 },
      { source_table: 'public.items', streaming_since: null, resnapshot_reads: 0, first_read_at: null },
    ]));
    // Key 1: gone. Key 2: tombstoned at the end already. Key 3: live (an orphan, tombstoned). Key 4: live, its tombstone refused.
    s3.put(`${outputs.orphans}0.json.gz`, gz([orphan(0, { key_id: null, key_json: null, position: null }), orphan(1), orphan(2), orphan(3), orphan(4)]));
    s3.put(`${outputs.orphans}1.json.gz`, '');
    ddb.on(GetItemCommand, { Key: { order_id: { N: '1' } } }).resolves({ ConsumedCapacity: { CapacityUnits: 1 } });
    ddb.on(GetItemCommand, { Key: { order_id: { N: '2' } } }).resolves({ Item: item(2, END, true), ConsumedCapacity: { CapacityUnits: 1 } });
    ddb.on(GetItemCommand, { Key: { order_id: { N: '3' } } }).resolves({ Item: item(3, encodePosition([103n])), ConsumedCapacity: { CapacityUnits: 1 } });
    ddb.on(GetItemCommand, { Key: { order_id: { N: '4' } } }).resolves({ Item: item(4, encodePosition([104n])), ConsumedCapacity: { CapacityUnits: 1 } });
    let n = 0;
    outcome = async () => {
      if (n++ === 0) return { outcome: 'applied' };
      throw new Error('throttled');
    };
    const report = await reportSnapshotRun({ run: plan.run }, deps);
    const orders = report.tables.find((t) => t.table === 'public.orders');
    const items = report.tables.find((t) => t.table === 'public.items');
    assert.ok(orders && items);
    assert.equal(orders.resnapshotReads, 12);
    assert.deepEqual(orders.anomalies.map((a) => [a.kind, a.detail]), [['resnapshot', { snapshotReadsAfterStreaming: 12, streamingSince: new Date(NOW - 7_200_000).toISOString() }]]);
    assert.deepEqual(orders.snapshot, { startPosition: '', endPosition: END, keys: 40 });
    assert.deepEqual(orders.orphans, { count: 2, tombstoned: 1, failed: 1, keys: ['{"order_id":3}', '{"order_id":4}'] });
    assert.equal(orders.readUnits, 4);
    assert.deepEqual(writes, [
      { key: { order_id: 3 }, op: 'tombstone', position: END },
      { key: { order_id: 4 }, op: 'tombstone', position: END },
    ]);
    assert.ok(log.lines.some((l) => l.level === 'warn' && l.message === 'orphan not tombstoned' && String(l.extra?.outcome).includes('throttled')));
    assert.deepEqual(items.anomalies.map((a) => a.kind), ['no-deletes']);
    assert.equal(items.snapshot, null);
    assert.equal(items.resnapshotReads, 0);
    assert.equal(report.findings, 3, 'the re-snapshot, the anomaly and the orphan left');
    assert.equal(metrics.totals.get('public.orders:SnapshotOrphans'), 1);
    assert.equal(metrics.totals.get('*:Resnapshots'), 1);
    assert.equal(metrics.totals.get('*:AnomalyNoDeletes'), 1);
    assert.deepEqual(JSON.parse(Buffer.from(s3.get('reports/snapshot/s-2/report.json') ?? []).toString('utf8')), report);
    // Each table's open findings, in its partition of the status table (layout 2), for `tidemark status`.
    const open = ddb.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    assert.deepEqual(
      open.map((u) => [u.Key?.pipeline?.S, u.Key?.table?.S, u.ExpressionAttributeValues?.[':open']?.L?.map((k) => k.S), u.ExpressionAttributeValues?.[':o']?.N]),
      [
        ['shop/public.orders', 'job#snapshot', ['resnapshot', 'orphan'], '1'],
        ['shop/public.items', 'job#snapshot', ['no-deletes'], '0'],
      ],
    );
    assert.deepEqual(
      s3.keys().filter((k) => k.startsWith('history/unload/')),
      [],
      'the outputs (the orphans output holds keys) are deleted once the report is written',
    );
  });

  it('without apply nothing is written; keys past the listed maximum are counted, not listed', async () => {
    const plan = await planSnapshotRun({ runId: 's-3', tables: ['public.orders'] }, deps);
    s3.put(`${plan.run.outputs.orphans}0.json.gz`, gz(Array.from({ length: MAX_LISTED_KEYS + 2 }, (_, i) => orphan(i + 10))));
    ddb.on(GetItemCommand).resolves({ Item: item(1, encodePosition([1n])) });
    const report = await reportSnapshotRun({ run: plan.run }, deps);
    const [orders] = report.tables;
    assert.equal(orders?.orphans.count, MAX_LISTED_KEYS + 2);
    assert.equal(orders?.orphans.keys.length, MAX_LISTED_KEYS);
    assert.equal(orders?.orphans.tombstoned, 0);
    assert.deepEqual(writes, []);
    assert.equal(report.findings, MAX_LISTED_KEYS + 2);
  });

  it('a tombstone of a key that is not an object is refused before any write', async () => {
    assert.equal(await tombstone(deps, 'public.orders', '[1]', END), 'failed: key is not an object');
    assert.equal(await tombstone(deps, 'public.orders', '{"order_id":1}', END), 'applied');
    assert.equal(writes.length, 1);
  });

  /** A recorded schema (core/schema-drift.ts) with `total` changes, the last of which are listed. */
  const schema = (changes: readonly object[], total = changes.length, incompatible = changes.filter((c) => (c as { holds: boolean }).holds === false).length) =>
    JSON.stringify({ since: encodePosition([1n]), columns: [{ name: 'order_id', type: 'number', kind: 'N', basis: 'rows', present: true, since: encodePosition([1n]) }], changes, ddl: [], total, incompatible });
  const P = (n: number) => encodePosition([BigInt(n)]);
  const ADDED = { kind: 'added', column: 'coupon', to: 'string', position: P(10), commitTs: NOW - 3_000, basis: 'rows', holds: true };
  const REMOVED = { kind: 'removed', column: 'coupon', from: 'string', position: P(20), commitTs: NOW - 2_000, basis: 'rows', holds: true };
  const RETYPED = { kind: 'type-changed', column: 'total', from: 'number', to: 'string', position: P(30), commitTs: null, basis: 'rows', holds: false };
  const seenOf = () =>
    ddb.commandCalls(UpdateItemCommand).map((c) => {
      const v = c.args[0].input.ExpressionAttributeValues ?? {};
      return [c.args[0].input.Key?.pipeline?.S, v[':sc']?.N, v[':si']?.N, v[':open']?.L?.map((k) => k.S)];
    });

  it('reports the schema changes recorded since the previous report, with positions and the incompatible one named; counts it as a finding', async () => {
    statusRow('public.orders', 'schema', { schema: { S: schema([ADDED, REMOVED, RETYPED]) } });
    statusRow('public.orders', 'status', { format: { S: 'debezium-postgresql' }, orderingStrength: { S: 'source' } });
    const first = await reportSnapshotRun({ run: (await planSnapshotRun({ runId: 'd-1' }, deps)).run }, deps);
    const orders = first.tables.find((t) => t.table === 'public.orders');
    const items = first.tables.find((t) => t.table === 'public.items');
    assert.ok(orders && items);
    assert.equal(orders.drift.previous, null, 'the first report lists the whole recorded history');
    assert.deepEqual(
      orders.drift.changes.map((c) => [c.kind, c.column, c.from ?? null, c.to ?? null, c.position, c.commitTime, c.holds]),
      [
        ['added', 'coupon', null, 'string', P(10), new Date(NOW - 3_000).toISOString(), true],
        ['removed', 'coupon', 'string', null, P(20), new Date(NOW - 2_000).toISOString(), true],
        ['type-changed', 'total', 'number', 'string', P(30), null, false],
      ],
    );
    assert.equal(orders.drift.incompatible, 1);
    assert.equal(orders.drift.hasIncompatible, true);
    assert.deepEqual(orders.drift.notation, { format: 'debezium-postgresql', ordering: 'source' });
    assert.equal(items.drift.recorded, false);
    assert.deepEqual(first.drift, { changes: 3, incompatible: 1, tables: 1 });
    assert.equal(first.findings, 1, 'the change the target cannot hold is a finding; additions and removals are not');
    assert.equal(metrics.totals.get('public.orders:SchemaDriftChanges'), 3);
    assert.equal(metrics.totals.get('*:SchemaDriftIncompatible'), 1);
    // The counts this report saw are kept in job#snapshot: the next report starts from them.
    assert.deepEqual(seenOf(), [
      ['shop/public.orders', '3', '1', ['schema-incompatible']],
      ['shop/public.items', '0', '0', []],
    ]);
    assert.ok(!JSON.stringify(first).includes('SPRING'), 'no row values');

    // The next report, after one more change: only it.
    const NEXT = { kind: 'added', column: 'note', to: 'string', position: P(40), commitTs: NOW, basis: 'rows', holds: true };
    statusRow('public.orders', 'schema', { schema: { S: schema([ADDED, REMOVED, RETYPED, NEXT]) } });
    statusRow('public.orders', 'job#snapshot', { runId: { S: 'd-1' }, lastRunAt: { N: String(NOW) }, schemaChanges: { N: '3' }, schemaIncompatible: { N: '1' } });
    ddb.resetHistory();
    const second = await reportSnapshotRun({ run: (await planSnapshotRun({ runId: 'd-2', tables: ['public.orders'] }, deps)).run }, deps);
    const [again] = second.tables;
    assert.deepEqual(again?.drift.previous, { runId: 'd-1', at: new Date(NOW).toISOString() });
    assert.deepEqual(again?.drift.changes.map((c) => c.column), ['note']);
    assert.equal(again?.drift.hasIncompatible, false);
    assert.equal(second.findings, 0);
    assert.deepEqual(seenOf(), [['shop/public.orders', '4', '1', []]]);
    // One BatchGetItem at the plan (lifecycles) and one at the report (schema, last report, status rows).
    assert.equal(ddb.commandCalls(BatchGetItemCommand).length, 2);
  });

  it('counts changes the capped history no longer lists; a row recorded anew (counts went down) is reported whole', async () => {
    const listed = Array.from({ length: 100 }, (_, i) => ({ ...ADDED, column: `c${i}`, position: P(100 + i) }));
    statusRow('public.orders', 'schema', { schema: { S: schema(listed, 150, 2) } });
    statusRow('public.orders', 'job#snapshot', { runId: { S: 'old' }, schemaChanges: { N: '20' }, schemaIncompatible: { N: '1' } });
    const report = await reportSnapshotRun({ run: (await planSnapshotRun({ runId: 'd-3', tables: ['public.orders'] }, deps)).run }, deps);
    const [orders] = report.tables;
    assert.equal(orders?.drift.changes.length, 100);
    assert.equal(orders?.drift.unlisted, 30);
    assert.equal(orders?.drift.incompatible, 1, 'exact from the counts, though the incompatible change is not listed');
    assert.deepEqual(report.drift, { changes: 130, incompatible: 1, tables: 1 });

    statusRow('public.orders', 'schema', { schema: { S: schema([ADDED]) } });
    const anew = await reportSnapshotRun({ run: (await planSnapshotRun({ runId: 'd-4', tables: ['public.orders'] }, deps)).run }, deps);
    assert.deepEqual(anew.tables[0]?.drift.changes.map((c) => c.column), ['coupon']);
    assert.equal(anew.tables[0]?.drift.unlisted, 0);
  });

  it('a suspended or stopped table is labelled and left out of the queries: no orphan or anomaly from its unapplied rows; its drift is still reported', async () => {
    statusRow('public.orders', 'status', { lifecycle: { S: 'suspended' }, lifecycleAt: { N: String(NOW - 60_000) }, heldFrom: { N: String(NOW - 60_000) } });
    statusRow('public.orders', 'schema', { schema: { S: schema([ADDED]) } });
    const plan = await planSnapshotRun({ runId: 'h-1' }, deps);
    assert.deepEqual(Object.keys(plan.run.held), ['public.orders']);
    for (let index = 0; index < plan.queries.count; index++) {
      const { query } = await queryAt({ ...plan.queries, index }, deps);
      assert.deepEqual(query.statement.args.tables, ['public.items'], query.statement.name);
    }
    const report = await reportSnapshotRun({ run: plan.run }, deps);
    const orders = report.tables.find((t) => t.table === 'public.orders');
    assert.deepEqual(orders?.held, { state: 'suspended', heldFrom: new Date(NOW - 60_000).toISOString() });
    assert.deepEqual(orders?.anomalies, []);
    assert.equal(orders?.orphans.count, 0);
    assert.deepEqual(orders?.drift.changes.map((c) => c.column), ['coupon']);
    assert.deepEqual(report.held, ['public.orders']);
    assert.equal(report.tables.find((t) => t.table === 'public.items')?.held, null);

    statusRow('public.items', 'status', { lifecycle: { S: 'error' }, lifecycleAt: { N: String(NOW - 5_000) }, heldFrom: { N: String(NOW - 9_000) }, lifecycleReason: { S: 'the target table does not exist' } });
    const all = await planSnapshotRun({ runId: 'h-2' }, deps);
    assert.equal(all.queries.count, 0, 'every table held: nothing to query');
    const stopped = await reportSnapshotRun({ run: all.run }, deps);
    assert.deepEqual(stopped.tables.find((t) => t.table === 'public.items')?.held, { state: 'stopped', heldFrom: new Date(NOW - 9_000).toISOString() });
    assert.ok(!JSON.stringify(stopped).includes('does not exist'), 'the reason is not copied into the report');
  });
});
