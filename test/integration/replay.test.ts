/**
 * Replay drills on the integration target: a Debezium PostgreSQL history is ingested through the
 * Lambda's own batch path (raw landed, then applied), then replayed from raw through the replay
 * state machine's definition, run locally by bin/local/stepfunctions.ts:
 * - an already-applied window costs read units only: 0 write requests, 0 write units, with the
 *   read units DynamoDB Local reports for the pre-read (0.5 per key, eventually consistent);
 * - lost and regressed rows are restored to the fold of the history;
 * - a fresh table gets the same key schema and the same rows (full diff), under the reserved
 *   prefix `<pipeline>-fresh-` only, and no other run may fill it;
 * - a live replay reaching past the tombstone horizon is refused unless forced;
 * - the dry run says per key what a real run would do;
 * - `--from-dlq`: whole failed batches in the local on-failure file are re-ingested (raw, then
 *   state), and SQS-shaped shard/sequence ranges are replayed from raw.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/replay.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand, DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { streamNameOf } from '../../bin/local/provision.js';
import { localDeps } from '../../bin/cli/context.js';
import { runReplayLocally } from '../../bin/cli/replay.js';
import { getRow } from '../../bin/cli/state.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { freshTablePrefix } from '../../functions/config/types.js';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import { stringifyJson } from '../../functions/core/json.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { keyAttributes } from '../../functions/adapters/item-codec.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import { buildReplayEngine, replayTables } from '../../functions/replay/deps.js';
import { parseFailedBatchLines } from '../../functions/replay/dlq.js';
import { findRangeInRaw, replayFailedBatches } from '../../functions/replay/from-dlq.js';
import type { JobContext, ReplayRequest } from '../../functions/replay/job.js';
import { ReplayRefusedError } from '../../functions/replay/safety.js';
import { PgHistory, type PgEvent, PLACEHOLDER, pgMessage } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { replayContext } from '../../functions/composition.js';
import { buildStorage } from '../../functions/adapters/storage.js';

const base = parseConfig({
  name: 'replay',
  tables: [
    { source: 'public.customers', target: 'replay-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'replay-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
  ],
  raw: { bucket: 'replay-raw' },
  replay: { objectsPerBatch: 2, maxConcurrency: 2 },
});

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const DAY = 86_400_000;
const SHARD = 'shardId-000000000000';

function records(events: readonly PgEvent[], firstSequence: number, arrival: number): RawRecord[] {
  return events.map((e, i) => ({
    value: Buffer.from(e.value),
    key: Buffer.from(e.partitionKey),
    topic: null,
    headers: {},
    transport: { kind: 'kinesis', stream: 'replay-cdc', shard: SHARD, sequence: String(firstSequence + i).padStart(20, '0'), partitionKey: e.partitionKey, arrivalTime: arrival + i },
  }));
}

function columns(row: JsonObject | null): JsonObject | null {
  if (!row) return null;
  const plain = JSON.parse(stringifyJson(row)) as JsonObject;
  return Object.fromEntries(Object.entries(plain).filter(([k]) => !k.startsWith('__')));
}

describe(`replay on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let customers: TableConfig;
  let deps: IngestDeps;
  let ctx: JobContext;
  const history = new PgHistory();
  const now = Date.now();
  let nextSequence = 1;

  async function ingest(events: readonly PgEvent[], arrival: number, batchSize = 40): Promise<void> {
    const all = records(events, nextSequence, arrival);
    nextSequence += events.length;
    for (let i = 0; i < all.length; i += batchSize) {
      const result = await processBatch(all.slice(i, i + batchSize), deps);
      assert.deepEqual(result.batchItemFailures, []);
    }
  }

  const request = (over: Partial<ReplayRequest> = {}): ReplayRequest => ({ runId: `r${Math.random().toString(36).slice(2, 8)}`, tables: ['public.customers', 'public.orders'], into: 'live', now, ...over });
  const tally = (out: Record<string, JsonValue>) => (out.summary as { tally: Record<string, number> }).tally;

  async function expectFold(tableName = customers.target): Promise<void> {
    const expected = history.fold().get('public.customers') ?? new Map();
    for (const [keyText, want] of expected) {
      const row = await getRow(target.clients.dynamodb, { ...customers, target: tableName }, JSON.parse(keyText) as JsonObject);
      const visible = row && row.__deleted !== true ? columns(row) : null;
      assert.deepEqual(visible, want.row, `${tableName} ${keyText}`);
    }
  }

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    customers = config.tables[0] as TableConfig;
    deps = { ...localDeps(config, target.clients), log: quiet };
    ctx = replayContext(config, target.clients, quiet);
    // 30 customers, updated twice, 5 deleted; 10 orders. Landed now, in batches of 40.
    for (let id = 1; id <= 30; id++) history.emit('customers', 'c', { id }, { name: `c${id}`, tier: 'basic' });
    for (let id = 1; id <= 10; id++) history.emit('orders', 'c', { order_id: id }, { customer: id, total: id * 10 });
    for (let id = 1; id <= 30; id++) history.emit('customers', 'u', { id }, { name: `c${id}`, tier: 'gold' });
    for (let id = 1; id <= 5; id++) history.emit('customers', 'd', { id }, null);
    await ingest(history.events, now - 60_000);
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('replays an already-applied window for read units only: 0 write requests and 0 write units', async () => {
    const out = await runReplayLocally(ctx, request());
    const t = tally(out);
    assert.equal(t.records, history.events.length);
    assert.equal(t.writeRequests, 0);
    assert.equal(t.writeUnits, 0);
    assert.equal(t.applied, 0);
    assert.equal(t.skippedByPreRead, 40);
    // DynamoDB Local's consumed capacity for BatchGetItem: 0.5 RCU per item under 4 KB, eventually consistent.
    assert.equal(t.readUnits, 40 * 0.5);
    await expectFold();
  });

  it('restores lost and regressed rows to the fold of raw, writing only those keys', async () => {
    const lost = [6, 7, 8];
    for (const id of lost) await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: customers.target, Key: keyAttributes(customers, { id }) }));
    // Key 9 regressed to an older position than raw holds.
    await target.clients.dynamodb.send(
      new PutItemCommand({ TableName: customers.target, Item: { id: { N: '9' }, name: { S: 'stale' }, __pos: { S: '0' }, __deleted: { BOOL: false } } }),
    );
    const out = await runReplayLocally(ctx, request({ tables: ['public.customers'] }));
    const t = tally(out);
    assert.equal(t.applied, 4);
    assert.equal(t.writeRequests, 4);
    assert.equal(t.writeUnits, 4, 'one write unit per restored row under 1 KB');
    await expectFold();
  });

  it('rebuilds a fresh table with the same key schema, verified by a full diff', async () => {
    const fresh = `${freshTablePrefix(config.name)}customers`;
    const out = await runReplayLocally(ctx, request({ tables: ['public.customers'], into: `fresh:${fresh}` }));
    const t = tally(out);
    assert.equal(t.applied, 30, 'every key written once, deletes as tombstones');
    const schema = async (name: string) => (await target.clients.dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table?.KeySchema;
    assert.deepEqual(await schema(fresh), await schema(customers.target));
    await expectFold(fresh);
    const verify = out.verify as { diff: { counts: Record<string, number> }; steps: string[] };
    assert.deepEqual(verify.diff.counts, { same: 25, onlyLive: 0, onlyFresh: 0, liveNewer: 0, freshNewer: 0, conflict: 0 });
    assert.match(verify.steps.join('\n'), /set tables\[source=public\.customers\]\.target to/);
    const describe = async (name: string) => (await target.clients.dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table;
    assert.equal((await describe(fresh))?.DeletionProtectionEnabled ?? false, (await describe(customers.target))?.DeletionProtectionEnabled ?? false, 'deletion protection as live');
  });

  it('refuses to fill a fresh table another run created, and any name outside <pipeline>-fresh-', async () => {
    const fresh = `${freshTablePrefix(config.name)}customers`;
    const before = await getRow(target.clients.dynamodb, { ...customers, target: fresh }, { id: 11 });
    assert.ok(before, 'the rebuild of the test above');
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: fresh, Key: keyAttributes(customers, { id: 11 }) }));
    // Another run, same table: refused (its tags name the run that created it, or cannot be read at all).
    await assert.rejects(runReplayLocally(ctx, request({ tables: ['public.customers'], into: `fresh:${fresh}` })), /FreshTableError[\s\S]*a fresh replay fills only a table it created/);
    assert.equal(await getRow(target.clients.dynamodb, { ...customers, target: fresh }, { id: 11 }), null, 'nothing written');
    // A live table of the pipeline that the old `<name>-*` rule would have let a rebuild fill.
    await assert.rejects(runReplayLocally(ctx, request({ tables: ['public.customers'], into: `fresh:${config.tables[1]?.target}` })), /live target table|must be named/);
    await assert.rejects(runReplayLocally(ctx, request({ tables: ['public.customers'], into: `fresh:${config.name}-elsewhere` })), /must be named .*-fresh-<suffix>/);
  });

  it('refuses a live replay reaching past the tombstone horizon, unless forced; judged by landing time', async () => {
    const old = history.emit('customers', 'u', { id: 10 }, { name: 'c10', tier: 'platinum' });
    await ingest([old], now - 8 * DAY);
    await assert.rejects(runReplayLocally(ctx, request({ tables: ['public.customers'] })), (e: unknown) => e instanceof Error && /ReplayRefusedError/.test(e.message) && /tombstone horizon/.test(e.message));
    assert.equal(new ReplayRefusedError('x').name, 'ReplayRefusedError');
    await assert.rejects(runReplayLocally(ctx, request({ tables: ['public.customers'], since: now - 8 * DAY - 3_600_000 })), /States|tombstone/);
    // Narrowed to recent landings: allowed.
    const recent = await runReplayLocally(ctx, request({ tables: ['public.customers'], since: now - 3_600_000 }));
    const customerEvents = history.events.filter((e) => e.table === 'public.customers').length;
    assert.equal(tally(recent).records, customerEvents - 1, 'every customers record but the old landing');
    assert.equal(tally(recent).writeUnits, 0);
    const forced = await runReplayLocally(ctx, request({ tables: ['public.customers'], force: true }));
    assert.equal(tally(forced).records, customerEvents);
    assert.equal(tally(forced).applied, 0, 'forced, it runs: the old landing was applied by ingest already, so nothing is written');
    assert.equal(tally(forced).writeUnits, 0);
  });

  it('dry run: per key stored position, replayed winner and action, and writes nothing', async () => {
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: customers.target, Key: keyAttributes(customers, { id: 12 }) }));
    const engine = buildReplayEngine(buildStorage(config, target.clients), { tables: replayTables(config, ['public.customers'], { kind: 'live' }), target: { kind: 'live' }, ledger: null, log: quiet });
    const recs = records(history.events.filter((e) => e.table === 'public.customers' && e.key.id === 12), 1, now - 60_000);
    const r = await engine.replay(recs, { tables: ['public.customers'] }, { dryRun: true });
    assert.equal(r.dryRun.length, 1);
    assert.deepEqual({ ...r.dryRun[0], winner: undefined }, { table: 'public.customers', key: '["12"]', stored: null, storedDeleted: false, winner: undefined, op: 'u', action: 'write' });
    assert.equal(r.tally.writeRequests, 0);
    assert.equal(await getRow(target.clients.dynamodb, customers, { id: 12 }), null);
    await runReplayLocally(ctx, request({ tables: ['public.customers'], since: now - 3_600_000 }));
    await expectFold();
  });

  it('a truncate in raw empties the rebuilt table below it too, whichever batch meets it first', async () => {
    // A Debezium PostgreSQL truncate of orders (the shape of test/fixtures/debezium/pg-truncate.json), after every order row.
    const last = history.events[history.events.length - 1] as PgEvent;
    const seqOf = JSON.parse(String((last.message.source as { sequence: string }).sequence)) as string[];
    const lsn = Number(seqOf[1]) + 8;
    const truncate = pgMessage({ table: 'orders', op: 'u', lsn, lastCommitLsn: Number(seqOf[1]) });
    const message = { ...truncate, op: 't', before: null, after: null };
    const event: PgEvent = { ...last, table: 'public.orders', op: 'u', message, value: JSON.stringify(message), partitionKey: 'truncate', key: {}, after: null };
    await ingest([event], now - 30_000);
    const orders = config.tables[1] as TableConfig;
    assert.equal(await getRow(target.clients.dynamodb, orders, { order_id: 1 }), null, 'ingest swept the live table');
    const fresh = `${freshTablePrefix(config.name)}orders`;
    const out = await runReplayLocally(ctx, request({ tables: ['public.orders'], into: `fresh:${fresh}` }));
    assert.equal(tally(out).truncates, 1);
    for (let id = 1; id <= 10; id++) assert.equal(await getRow(target.clients.dynamodb, { ...orders, target: fresh }, { order_id: id }), null, `order ${id}`);
  });

  it('--from-dlq: records of a range that never reached raw are read from the stream, landed, then applied', async () => {
    const lost = [history.emit('customers', 'u', { id: 23 }, { name: 'c23', tier: 'stream' }), history.emit('customers', 'u', { id: 24 }, { name: 'c24', tier: 'stream' })];
    const put = await target.clients.kinesis.send(
      new PutRecordsCommand({ StreamName: streamNameOf(config), Records: lost.map((e) => ({ PartitionKey: 'same-shard', Data: Buffer.from(e.value) })) }),
    );
    const seqs = (put.Records ?? []).map((r) => r.SequenceNumber ?? '');
    const shard = put.Records?.[0]?.ShardId ?? '';
    const descriptor = { version: '1.0', KinesisBatchInfo: { shardId: shard, startSequenceNumber: seqs[0], endSequenceNumber: seqs[1], batchSize: 2, streamArn: `arn:aws:kinesis:us-east-1:000000000000:stream/${streamNameOf(config)}` } };
    const { batches } = parseFailedBatchLines(JSON.stringify(descriptor), 'sqs');
    const engine = buildReplayEngine(buildStorage(config, target.clients), { tables: replayTables(config, ['public.customers', 'public.orders'], { kind: 'live' }), target: { kind: 'live' }, ledger: null, log: quiet });
    const report = await replayFailedBatches(batches.map((batch) => ({ batch })), { config, s3: target.clients.s3, ingest: deps, engine, ledger: null, kinesis: target.clients.kinesis });
    assert.equal(report.fromStream, 2);
    assert.equal(report.missing, 0);
    assert.equal(report.failedBatches, 0);
    assert.equal(report.ingest.applied, 2);
    await expectFold();
    const range = (batches[0] as { range: Parameters<typeof findRangeInRaw>[2] }).range;
    assert.equal((await findRangeInRaw(target.clients.s3, config, range)).length, 2, 'now in raw');
  });

  it('--from-dlq: re-ingests whole failed batches (raw, then state) and replays SQS ranges from raw', async () => {
    const lostBatch = [history.emit('customers', 'u', { id: 20 }, { name: 'c20', tier: 'vip' }), history.emit('orders', 'u', { order_id: 3 }, { customer: 3, total: 999 })];
    const lostRecords = records(lostBatch, nextSequence, now);
    nextSequence += lostBatch.length;
    // The Kinesis event as Lambda delivered it, inside an S3-destination invocation record.
    const payload = {
      Records: lostRecords.map((r) => ({
        kinesis: { kinesisSchemaVersion: '1.0', partitionKey: r.transport.partitionKey, sequenceNumber: r.transport.sequence, data: Buffer.from(r.value ?? []).toString('base64'), approximateArrivalTimestamp: r.transport.arrivalTime / 1000 },
        eventSource: 'aws:kinesis',
        eventVersion: '1.0',
        eventID: `${SHARD}:${r.transport.sequence}`,
        eventName: 'aws:kinesis:record',
        invokeIdentityArn: 'arn:aws:iam::000000000000:role/x',
        awsRegion: 'us-east-1',
        eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/replay-cdc',
      })),
    };
    const info = (first: RawRecord, last: RawRecord, n: number) => ({
      shardId: SHARD,
      startSequenceNumber: first.transport.sequence,
      endSequenceNumber: last.transport.sequence,
      approximateArrivalOfFirstRecord: new Date(first.transport.arrivalTime).toISOString(),
      approximateArrivalOfLastRecord: new Date(last.transport.arrivalTime).toISOString(),
      batchSize: n,
      streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/replay-cdc',
    });
    const whole = { requestContext: { requestId: 'x', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:f', condition: 'RetryAttemptsExhausted', approximateInvokeCount: 6 }, responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' }, version: '1.0', timestamp: new Date().toISOString(), KinesisBatchInfo: info(lostRecords[0] as RawRecord, lostRecords[1] as RawRecord, 2), payload: JSON.stringify(payload) };
    // An applied-then-lost range: in raw, missing from current state (an SQS message has only the range).
    const inRaw = history.events.filter((e) => e.table === 'public.customers' && [21, 22].includes(e.key.id as number) && e.op === 'u');
    const rangeRecords = records(inRaw, nextSequence, now);
    nextSequence += inRaw.length;
    for (let i = 0; i < rangeRecords.length; i++) assert.equal((await processBatch([rangeRecords[i] as RawRecord], deps)).batchItemFailures.length, 0);
    for (const id of [21, 22]) await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: customers.target, Key: keyAttributes(customers, { id }) }));
    const rangeOnly = { ...whole, KinesisBatchInfo: info(rangeRecords[0] as RawRecord, rangeRecords[1] as RawRecord, 2), payload: undefined };
    const file = [JSON.stringify(whole), JSON.stringify(rangeOnly)].join('\n');
    const { batches, problems } = parseFailedBatchLines(file, 'on-failure.jsonl');
    assert.deepEqual(problems, []);
    const engine = buildReplayEngine(buildStorage(config, target.clients), { tables: replayTables(config, ['public.customers', 'public.orders'], { kind: 'live' }), target: { kind: 'live' }, ledger: null, log: quiet });
    const report = await replayFailedBatches(batches.map((batch) => ({ batch })), { config, s3: target.clients.s3, ingest: deps, engine, ledger: null });
    assert.equal(report.reingested, 1);
    assert.equal(report.fromRaw, 1);
    assert.equal(report.missing, 0);
    assert.equal(report.failedBatches, 0);
    assert.equal(report.ingest.applied, 2);
    assert.equal(report.replay.applied, 2);
    assert.equal(columns(await getRow(target.clients.dynamodb, config.tables[1] as TableConfig, { order_id: 3 }))?.total, 999);
    await expectFold();
    // The re-ingested batch is now in raw: a replay from raw alone keeps it.
    const again = await runReplayLocally(ctx, request({ since: now - 3_600_000 }));
    assert.equal(tally(again).writeUnits, 0);
  });
  it('replays unchanged-TOAST placeholder updates into an emptied table and a fresh one with every column: each key in position order, whatever raw object holds its events (issue 20, item 20)', async () => {
    // Debezium PostgreSQL writes `__debezium_unavailable_value` for an unchanged TOAST column
    // (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-toasted-values).
    const orders = config.tables[1] as TableConfig;
    const ids = Array.from({ length: 20 }, (_, i) => 100 + i);
    const created = ids.map((id) => history.emit('orders', 'c', { order_id: id }, { customer: id, total: 1, note: `note of ${id}` }));
    const updates = [2, 3].flatMap((total) => ids.map((id) => history.emit('orders', 'u', { order_id: id }, { customer: id, total, note: PLACEHOLDER })));
    // Batches of 7: a key's create and its two placeholder updates sit in different raw objects.
    await ingest([...created, ...updates], now - 20_000, 7);
    const want = (id: number) => ({ order_id: id, customer: id, total: 3, note: `note of ${id}` });
    const rowsOf = async (table: string) => Promise.all(ids.map(async (id) => columns(await getRow(target.clients.dynamodb, { ...orders, target: table }, { order_id: id }))));
    const partial = async (table: string) => (await Promise.all(ids.map(async (id) => (await getRow(target.clients.dynamodb, { ...orders, target: table }, { order_id: id }))?.__partial === true))).filter(Boolean).length;
    assert.deepEqual(await rowsOf(orders.target), ids.map(want), 'ingest merged each update with the row');
    // Emptied: the live rows deleted, then replayed live.
    for (const id of ids) await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: orders.target, Key: keyAttributes(orders, { order_id: id }) }));
    const live = await runReplayLocally(ctx, request({ tables: ['public.orders'], since: now - 60_000 }));
    assert.ok(tally(live).applied >= ids.length, 'every emptied key written');
    assert.deepEqual(await rowsOf(orders.target), ids.map(want), 'no column missing, none older');
    assert.equal(await partial(orders.target), 0, 'no row partial');
    // Fresh: rebuilt from raw into a new table.
    const fresh = `${freshTablePrefix(config.name)}orders-toast`;
    await runReplayLocally(ctx, request({ tables: ['public.orders'], into: `fresh:${fresh}` }));
    assert.deepEqual(await rowsOf(fresh), ids.map(want));
    assert.equal(await partial(fresh), 0);
  });
});
