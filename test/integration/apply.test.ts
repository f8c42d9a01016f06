/**
 * The apply path end to end on the integration target: Debezium PostgreSQL messages are put on
 * Kinesis, applied by the local event-source-mapping stand-in (`runPoller`), and checked by reading
 * DynamoDB and the raw/quarantine objects in S3. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/apply.test.ts`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { PutRecordsCommand, type _Record } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { localDeps } from '../../bin/cli/context.js';
import { kinesisEvent, mskEvent } from '../../bin/cli/kinesis-shape.js';
import { runnerFiles, runPoller } from '../../bin/cli/runner.js';
import { parseOnFailureRecord } from '../../bin/local/on-failure.js';
import { handleEvent } from '../../functions/ingest.js';
import { identityGap } from '../../functions/telemetry/contract.js';
import { getRow, scanTable, statusRows } from '../../bin/cli/state.js';
import { streamNameOf } from '../../bin/local/provision.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { JsonObject } from '../../functions/core/json.js';
import { stringifyJson } from '../../functions/core/json.js';
import type { PlannedWrite } from '../../functions/core/plan.js';
import { recordsFromKinesis } from '../../functions/adapters/records.js';
import type { WriteResult } from '../../functions/adapters/dynamo-writer.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { type BatchSummary, type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import { PgHistory, type PgEvent, PLACEHOLDER, pgMessage, pgPosition } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'apply',
  tables: [
    { source: 'public.customers', target: 'apply-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'apply-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
  ],
  raw: { bucket: 'apply-raw' },
});

const DAY_S = 86_400;

interface Env {
  readonly config: TidemarkConfig;
  readonly stateDir: string;
  readonly streamName: string;
  readonly customers: TableConfig;
  readonly orders: TableConfig;
}

interface Delivery {
  readonly partitionKey: string;
  readonly data: string | Uint8Array;
}

interface Put {
  readonly shardId: string;
  readonly sequences: string[];
}

/** Logs kept in memory, so injected failures do not spam stderr and can be asserted on. */
function memoryLog(): Log & { readonly errors: string[] } {
  const errors: string[] = [];
  const noop = () => {};
  return { debug: noop, info: noop, warn: noop, error: (m) => errors.push(m), errors };
}

/** Row columns only (no `__` metadata), as plain JSON. */
function columns(row: JsonObject | null | undefined): JsonObject | null {
  if (!row) return null;
  const plain = JSON.parse(stringifyJson(row)) as JsonObject;
  return Object.fromEntries(Object.entries(plain).filter(([k]) => !k.startsWith('__')));
}

describe(`apply path on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  const dirs: string[] = [];
  const configs: TidemarkConfig[] = [];

  before(async () => {
    target = await openTarget();
  });

  after(async () => {
    for (const c of configs) await target?.teardown(c).catch(() => {});
    await target?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function fresh(): Promise<Env> {
    const config = uniqueConfig(base);
    configs.push(config);
    await target.setup(config);
    const stateDir = mkdtempSync(join(tmpdir(), 'tidemark-apply-'));
    dirs.push(stateDir);
    return { config, stateDir, streamName: streamNameOf(config), customers: config.tables[0]!, orders: config.tables[1]! };
  }

  function depsFor(env: Env, log: Log = memoryLog()): IngestDeps {
    return { ...localDeps(env.config, target.clients), log };
  }

  /** PutRecords in order; checks every record was accepted and sequence numbers increase. */
  async function put(env: Env, records: readonly Delivery[]): Promise<Put> {
    const res = await target.clients.kinesis.send(
      new PutRecordsCommand({
        StreamName: env.streamName,
        Records: records.map((r) => ({ PartitionKey: r.partitionKey, Data: typeof r.data === 'string' ? Buffer.from(r.data, 'utf8') : r.data })),
      }),
    );
    assert.equal(res.FailedRecordCount ?? 0, 0, JSON.stringify(res.Records));
    const sequences = (res.Records ?? []).map((r) => r.SequenceNumber!);
    assert.equal(sequences.length, records.length);
    for (let i = 1; i < sequences.length; i++) assert.ok(BigInt(sequences[i]!) > BigInt(sequences[i - 1]!), 'PutRecords kept the order');
    return { shardId: res.Records![0]!.ShardId!, sequences };
  }

  const putEvents = (env: Env, events: readonly PgEvent[]) => put(env, events.map((e) => ({ partitionKey: e.partitionKey, data: e.value })));

  async function poll(
    env: Env,
    opts: { batchSize: number; deps?: IngestDeps; beforeInvoke?: (shard: string, records: readonly _Record[]) => void | Promise<void>; maxRetries?: number; windowMs?: number },
  ): Promise<{ totals: BatchSummary; batches: BatchSummary[] }> {
    const batches: BatchSummary[] = [];
    const totals = await runPoller({
      kinesis: target.clients.kinesis,
      deps: opts.deps ?? depsFor(env),
      streamName: env.streamName,
      stateDir: env.stateDir,
      batchSize: opts.batchSize,
      maxBatchingWindowMs: opts.windowMs ?? 0,
      maxRetries: opts.maxRetries ?? 3,
      stopWhenIdle: 3,
      beforeInvoke: opts.beforeInvoke,
      onBatch: (_shard, summary) => batches.push({ ...summary }),
    });
    return { totals, batches };
  }

  async function listKeys(env: Env, prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const res = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: env.config.raw.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of res.Contents ?? []) keys.push(o.Key!);
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async function readLines(env: Env, key: string): Promise<JsonObject[]> {
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: env.config.raw.bucket, Key: key }));
    const bytes = Buffer.from((await got.Body!.transformToByteArray()) ?? []);
    const text = gunzipSync(bytes).toString('utf8');
    assert.ok(text.endsWith('\n'), 'newline-terminated JSON lines');
    return text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as JsonObject);
  }

  async function scanAll(client: Target['clients']['dynamodb'], table: TableConfig, includeDeleted: boolean): Promise<JsonObject[]> {
    const rows: JsonObject[] = [];
    for await (const r of scanTable(client, table, includeDeleted)) rows.push(r);
    return rows;
  }

  async function status(env: Env, table: string): Promise<JsonObject | undefined> {
    return (await statusRows(target.clients.dynamodb, env.config)).find((r) => r.table === table);
  }

  it('converges under cross-batch reordering and a redelivered window; redeliveries are never applied twice', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const c = (id: number, row: JsonObject) => h.emit('customers', 'c', { id }, row);
    const u = (id: number, row: JsonObject) => h.emit('customers', 'u', { id }, row);
    const d = (id: number, row: JsonObject) => h.emit('customers', 'd', { id }, row);
    const oc = (id: number, row: JsonObject) => h.emit('orders', 'c', { order_id: id }, row);
    const ou = (id: number, row: JsonObject) => h.emit('orders', 'u', { order_id: id }, row);
    const od = (id: number, row: JsonObject) => h.emit('orders', 'd', { order_id: id }, row);
    const e = [
      c(1, { name: 'Ann', email: 'ann1@example.com', bio: 'b1' }), // 0
      c(2, { name: 'Bob', email: 'bob@example.com', bio: 'b2' }), // 1
      oc(10, { customer_id: 1, status: 'placed', amount_minor: 100 }), // 2
      u(1, { name: 'Ann', email: 'ann2@example.com', bio: 'b1' }), // 3
      ou(10, { customer_id: 1, status: 'paid', amount_minor: 100 }), // 4
      c(3, { name: 'Cid', email: 'cid@example.com', bio: 'b3' }), // 5
      d(2, { name: 'Bob', email: 'bob@example.com', bio: 'b2' }), // 6
      ou(10, { customer_id: 1, status: 'shipped', amount_minor: 100 }), // 7
      oc(11, { customer_id: 3, status: 'placed', amount_minor: 250 }), // 8
      u(1, { name: 'Ann', email: 'ann3@example.com', bio: 'b1' }), // 9
      od(11, { customer_id: 3, status: 'placed', amount_minor: 250 }), // 10
      u(3, { name: 'Cid II', email: 'cid@example.com', bio: 'b3' }), // 11
    ];
    // Three batches of four, each key at most once per batch; batch 3 carries older events
    // (3 and 4) after newer ones for the same keys were applied in batch 2.
    const planned = [
      [e[0]!, e[2]!, e[5]!, e[8]!],
      [e[9]!, e[7]!, e[1]!, e[10]!],
      [e[3]!, e[4]!, e[6]!, e[11]!],
    ];
    const seen: string[][] = [];
    const capture = (_shard: string, records: readonly _Record[]) => {
      seen.push(records.map((r) => Buffer.from(r.Data!).toString('utf8')));
    };
    await putEvents(env, planned.flat());
    const first = await poll(env, { batchSize: 4, beforeInvoke: capture });
    assert.deepEqual(
      seen,
      planned.map((b) => b.map((x) => x.value)),
      'the poller delivered the planned batches',
    );
    assert.equal(first.totals.records, 12);
    assert.equal(first.totals.applied, 10, JSON.stringify(first.totals));
    assert.equal(first.totals.stale, 2, 'events 3 and 4 arrive after newer ones and are stale');
    assert.equal(first.totals.failed + first.totals.quarantined + first.totals.conflicts, 0);
    assert.deepEqual(
      first.batches.map((b) => [b.applied, b.stale]),
      [
        [4, 0],
        [4, 0],
        [2, 2],
      ],
    );

    // The stored state is the fold of the history by position.
    const expected = h.fold();
    for (const table of [env.customers, env.orders]) {
      const want = expected.get(table.source)!;
      const live = await scanAll(target.clients.dynamodb, table, false);
      const keyCol = table.key[0]!;
      const wantLive = [...want].filter(([, v]) => v.row !== null);
      assert.deepEqual(
        live.map((r) => JSON.stringify({ [keyCol]: Number(r[keyCol]) })).sort(),
        wantLive.map(([k]) => k).sort(),
        `${table.source}: live keys`,
      );
      for (const [k, v] of want) {
        const row = await getRow(target.clients.dynamodb, table, JSON.parse(k) as JsonObject);
        assert.ok(row, `${table.source} ${k} is stored`);
        assert.equal(row.__pos, v.position, `${table.source} ${k}: __pos is the highest position`);
        assert.equal(row.__deleted, v.row === null, `${table.source} ${k}: deleted`);
        if (v.row !== null) assert.deepEqual(columns(row), v.row, `${table.source} ${k}: values`);
      }
    }
    assert.equal((await getRow(target.clients.dynamodb, env.customers, { id: 1 }))?.email, 'ann3@example.com');
    assert.equal((await getRow(target.clients.dynamodb, env.orders, { order_id: 10 }))?.status, 'shipped');

    const snapshot = async () => [...(await scanAll(target.clients.dynamodb, env.customers, true)), ...(await scanAll(target.clients.dynamodb, env.orders, true))].map((r) => stringifyJson(r)).sort();
    const before = await snapshot();

    // At-least-once: batch 2 is delivered again. Nothing is applied; the rows (incl. __appliedAt) do not move.
    await putEvents(env, planned[1]!);
    const again = await poll(env, { batchSize: 4 });
    assert.equal(again.totals.records, 4);
    assert.equal(again.totals.applied, 0, JSON.stringify(again.totals));
    assert.equal(again.totals.duplicates, 3, 'events 9, 7 and 10 are already stored at their position');
    assert.equal(again.totals.stale, 1, 'event 1 is older than the stored tombstone');
    assert.deepEqual(await snapshot(), before);

    const cust = await status(env, 'public.customers');
    const ord = await status(env, 'public.orders');
    assert.equal(cust?.applied, 6);
    assert.equal(cust?.stale, 2);
    assert.equal(cust?.duplicates, 1);
    assert.equal(ord?.applied, 4);
    assert.equal(ord?.stale, 1);
    assert.equal(ord?.duplicates, 2);
    // Every received record is counted exactly once as an outcome, in every batch and in the status rows.
    for (const b of [...first.batches, ...again.batches]) assert.equal(identityGap(b), 0, JSON.stringify(b));
    for (const row of await statusRows(target.clients.dynamodb, env.config)) assert.equal(identityGap(row), 0, JSON.stringify(row));
    assert.equal(cust?.received, 9, 'seven customer events, then two of them redelivered');
    // Compressed raw bytes are counted per table: every run landed objects for both tables.
    assert.ok(Number(cust?.rawBytes) > 0 && Number(ord?.rawBytes) > 0, `rawBytes ${cust?.rawBytes} / ${ord?.rawBytes}`);
  });

  it('keeps a deleted row deleted when an older update is redelivered, as a tombstone with a 7-day TTL', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const ins = h.emit('customers', 'c', { id: 7 }, { name: 'Gus', email: 'gus1@example.com', bio: 'g' });
    const upd = h.emit('customers', 'u', { id: 7 }, { name: 'Gus', email: 'gus2@example.com', bio: 'g' });
    const del = h.emit('customers', 'd', { id: 7 }, { name: 'Gus', email: 'gus2@example.com', bio: 'g' });
    const keep = h.emit('customers', 'c', { id: 8 }, { name: 'Hal', email: 'hal@example.com', bio: 'h' });
    await putEvents(env, [ins, upd, del, keep]);
    const first = await poll(env, { batchSize: 1 });
    assert.equal(first.batches.length, 4, 'one event per batch');
    assert.equal(first.totals.applied, 4);

    const startedS = Math.floor(Date.now() / 1000);
    await putEvents(env, [upd, ins]);
    const second = await poll(env, { batchSize: 1 });
    assert.equal(second.totals.applied, 0, JSON.stringify(second.totals));
    assert.equal(second.totals.stale, 2);

    const row = await getRow(target.clients.dynamodb, env.customers, { id: 7 });
    assert.ok(row);
    assert.equal(row.__deleted, true);
    assert.equal(row.__op, 'd');
    assert.equal(row.__pos, del.position);
    assert.equal(row.email, undefined, 'a tombstone carries no row values');
    const expiresAt = row.__expiresAt as number;
    assert.equal(typeof expiresAt, 'number');
    // The tombstone was written in the first run, shortly before `startedS`.
    assert.ok(Math.abs(expiresAt - (startedS + 7 * DAY_S)) <= 120, `__expiresAt ${expiresAt} ~ now + 7 days (${startedS + 7 * DAY_S})`);

    const live = await scanAll(target.clients.dynamodb, env.customers, false);
    assert.deepEqual(
      live.map((r) => r.id),
      [8],
    );
    const all = await scanAll(target.clients.dynamodb, env.customers, true);
    assert.deepEqual(all.map((r) => r.id).sort(), [7, 8]);
    assert.equal((await getRow(target.clients.dynamodb, env.customers, { id: 8 }))?.__expiresAt, undefined, 'live rows have no TTL');
  });

  it('keeps stored values for unchanged-TOAST placeholders across batches', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const ins = h.emit('customers', 'c', { id: 5 }, { name: 'Eve', email: 'eve1@example.com', bio: 'A' });
    await putEvents(env, [ins]);
    const first = await poll(env, { batchSize: 10 });
    assert.equal(first.totals.applied, 1);
    assert.equal((await getRow(target.clients.dynamodb, env.customers, { id: 5 }))?.bio, 'A');

    const upd = h.emit('customers', 'u', { id: 5 }, { name: 'Eve', email: 'eve2@example.com', bio: PLACEHOLDER });
    await putEvents(env, [upd]);
    const second = await poll(env, { batchSize: 10 });
    assert.equal(second.totals.applied, 1, JSON.stringify(second.totals));

    const row = await getRow(target.clients.dynamodb, env.customers, { id: 5 });
    assert.ok(row);
    assert.deepEqual(columns(row), { id: 5, name: 'Eve', email: 'eve2@example.com', bio: 'A' });
    assert.equal(row.__pos, upd.position);
    assert.equal(row.__missing, undefined);
    assert.equal(row.__partial, undefined);
    assert.equal((await status(env, 'public.customers'))?.placeholders, 1);
  });

  it('quarantines bad records with their reason and applies the rest of the batch', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const good1 = h.emit('customers', 'c', { id: 21 }, { name: 'Ivy', email: 'ivy@example.com', bio: 'i' });
    const badJson = '{"before":null,"after":{"id":22,';
    const noKey = JSON.stringify(
      pgMessage({ table: 'customers', op: 'c', after: { name: 'No Key', email: 'nk@example.com' }, lsn: 40_000_016, lastCommitLsn: 40_000_000 }),
    );
    const unknownTable = JSON.stringify(pgMessage({ table: 'widgets', op: 'c', after: { id: 23, name: 'w' }, lsn: 40_000_024, lastCommitLsn: 40_000_016 }));
    const badKey = JSON.stringify(
      pgMessage({ table: 'customers', op: 'c', after: { id: 'abc', name: 'Bad', email: 'bad@example.com' }, lsn: 40_000_032, lastCommitLsn: 40_000_024 }),
    );
    const good2 = h.emit('orders', 'c', { order_id: 30 }, { customer_id: 21, status: 'placed', amount_minor: 990 });
    const deliveries: Delivery[] = [
      { partitionKey: good1.partitionKey, data: good1.value },
      { partitionKey: '{"id":22}', data: badJson },
      { partitionKey: 'no-key', data: noKey },
      { partitionKey: '{"id":23}', data: unknownTable },
      { partitionKey: '{"id":"abc"}', data: badKey },
      { partitionKey: good2.partitionKey, data: good2.value },
    ];
    const { shardId, sequences } = await put(env, deliveries);
    const { totals, batches } = await poll(env, { batchSize: 10 });
    assert.equal(batches.length, 1, 'one batch');
    assert.equal(totals.quarantined, 4, JSON.stringify(totals));
    assert.equal(totals.applied, 2);
    assert.equal(totals.failed, 0);

    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 21 })), good1.after);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.orders, { order_id: 30 })), good2.after);
    assert.deepEqual(
      (await scanAll(target.clients.dynamodb, env.customers, true)).map((r) => r.id),
      [21],
    );

    const qKeys = await listKeys(env, env.config.raw.quarantinePrefix);
    assert.equal(qKeys.length, 1, qKeys.join());
    assert.match(qKeys[0]!, new RegExp(`^${env.config.raw.quarantinePrefix}dt=\\d{4}-\\d\\d-\\d\\d/hr=\\d\\d/${shardId}-${sequences[0]}-${sequences[5]}-[0-9a-f]{16}\\.jsonl\\.gz$`));
    const lines = await readLines(env, qKeys[0]!);
    const bySequence = new Map(lines.map((l) => [(l.transport as JsonObject).sequence as string, l]));
    assert.equal(lines.length, 4);
    const expectReason = (i: number, reason: string) => {
      const line = bySequence.get(sequences[i]!);
      assert.ok(line, `record ${i} is quarantined`);
      assert.equal(line.reason, reason, `record ${i}`);
      assert.equal(typeof line.detail, 'string');
      assert.equal(Buffer.from(line.valueBase64 as string, 'base64').toString('utf8'), deliveries[i]!.data, `record ${i}: original bytes kept`);
      assert.equal(Buffer.from(line.keyBase64 as string, 'base64').toString('utf8'), deliveries[i]!.partitionKey);
      assert.equal((line.transport as JsonObject).shard, shardId);
    };
    expectReason(1, 'invalid-json');
    expectReason(2, 'missing-key');
    expectReason(3, 'unknown-table');
    expectReason(4, 'bad-key');

    // One raw object for the batch, holding lines of the configured tables of the accepted records only.
    const rawKeys = await listKeys(env, env.config.raw.prefix);
    assert.equal(rawKeys.length, 1, rawKeys.join('\n'));
    const rawTables = new Set((await readLines(env, rawKeys[0]!)).map((l) => l.table));
    assert.deepEqual([...rawTables].sort(), ['public.customers', 'public.orders']);
    // Quarantines of configured tables count under the table; `*` only holds unknown tables.
    assert.equal((await status(env, '*'))?.quarantined, 2, 'invalid JSON and the unconfigured table');
    assert.equal((await status(env, 'public.customers'))?.quarantined, 2, 'missing and bad key of public.customers');
    assert.equal(lines.filter((l) => l.table === 'public.customers').length, 2);
  });

  it('retries a batch that failed after raw landing and before apply: converges, one raw object for the batch', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const events = [
      h.emit('customers', 'c', { id: 31 }, { name: 'Jo', email: 'jo@example.com', bio: 'j' }),
      h.emit('customers', 'c', { id: 32 }, { name: 'Kai', email: 'kai@example.com', bio: 'k' }),
      h.emit('orders', 'c', { order_id: 40 }, { customer_id: 31, status: 'placed', amount_minor: 10 }),
      h.emit('customers', 'u', { id: 31 }, { name: 'Jo', email: 'jo2@example.com', bio: 'j' }),
    ];
    const { sequences } = await put(env, events.map((e) => ({ partitionKey: e.partitionKey, data: e.value })));
    const log = memoryLog();
    const deps = depsFor(env, log);
    let invocations = 0;
    let rawBeforeRetry: string[] = [];
    const write = deps.writer.write.bind(deps.writer);
    let writeCalls = 0;
    deps.writer.write = async (w: PlannedWrite): Promise<WriteResult> => {
      writeCalls++;
      if (invocations === 1) throw new Error('injected: DynamoDB unreachable');
      return write(w);
    };
    const { totals } = await poll(env, {
      batchSize: 10,
      deps,
      beforeInvoke: async () => {
        invocations++;
        if (invocations === 2) rawBeforeRetry = await listKeys(env, env.config.raw.prefix);
      },
    });
    assert.equal(invocations, 2, 'one failed invocation, one retry');
    assert.ok(writeCalls > 3, 'the first invocation reached the writer');
    assert.ok(
      log.errors.some((m) => m === 'handler invocation failed'),
      log.errors.join('; '),
    );
    assert.equal(rawBeforeRetry.length, 1, 'raw landed before the failure');
    assert.equal(totals.applied, 3, JSON.stringify(totals));
    assert.equal(totals.duplicates + totals.stale, 0, 'nothing was applied by the failed attempt');

    const rawKeys = await listKeys(env, env.config.raw.prefix);
    assert.deepEqual(rawKeys, rawBeforeRetry, 'the retry rewrote the same deterministic keys');
    const lines = await readLines(env, rawKeys[0]!);
    assert.deepEqual(
      lines.filter((l) => l.table === 'public.customers').map((l) => (l.transport as JsonObject).sequence),
      [sequences[0], sequences[1], sequences[3]],
      'one line per record, not duplicated',
    );
    assert.equal(lines.filter((l) => l.table === 'public.orders').length, 1);

    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 31 })), events[3]!.after);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 32 })), events[1]!.after);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.orders, { order_id: 40 })), events[2]!.after);
  });

  it('retries a batch whose invocation crashed before the handler ran', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const events = [
      h.emit('customers', 'c', { id: 35 }, { name: 'Lu', email: 'lu@example.com', bio: 'l' }),
      h.emit('orders', 'c', { order_id: 45 }, { customer_id: 35, status: 'placed', amount_minor: 20 }),
      h.emit('orders', 'u', { order_id: 45 }, { customer_id: 35, status: 'paid', amount_minor: 20 }),
    ];
    await putEvents(env, events);
    const log = memoryLog();
    let invocations = 0;
    let rawBeforeRetry: string[] = [];
    const { totals } = await poll(env, {
      batchSize: 10,
      deps: depsFor(env, log),
      beforeInvoke: async () => {
        invocations++;
        if (invocations === 1) throw new Error('injected: crash before invoke');
        rawBeforeRetry = await listKeys(env, env.config.raw.prefix);
      },
    });
    assert.equal(invocations, 2);
    assert.equal(rawBeforeRetry.length, 0, 'nothing landed before the crash');
    assert.ok(log.errors.includes('handler invocation failed'));
    assert.equal(totals.records, 3);
    assert.equal(totals.applied, 2, JSON.stringify(totals));
    assert.equal(totals.superseded, 1);
    assert.equal((await listKeys(env, env.config.raw.prefix)).length, 1, 'one object for the batch');
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 35 })), events[0]!.after);
    const order = await getRow(target.clients.dynamodb, env.orders, { order_id: 45 });
    assert.equal(order?.status, 'paid');
    assert.equal(order?.__pos, events[2]!.position);
  });

  it('reports the lowest failed record in batchItemFailures on a persistent write error and applies the other keys', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const events = [
      h.emit('customers', 'c', { id: 41 }, { name: 'Max', email: 'max@example.com', bio: 'm' }), // 0
      h.emit('orders', 'c', { order_id: 50 }, { customer_id: 41, status: 'placed', amount_minor: 5 }), // 1
      h.emit('customers', 'c', { id: 42 }, { name: 'Ned', email: 'ned@example.com', bio: 'n' }), // 2: fails
      h.emit('customers', 'c', { id: 43 }, { name: 'Oli', email: 'oli@example.com', bio: 'o' }), // 3
      h.emit('customers', 'u', { id: 42 }, { name: 'Ned', email: 'ned2@example.com', bio: 'n' }), // 4: fails
      h.emit('orders', 'u', { order_id: 50 }, { customer_id: 41, status: 'paid', amount_minor: 5 }), // 5
    ];
    const sequences = events.map((_, i) => `4960000000000000000000000000000000000000000000000000000${i + 1}`);
    const event = kinesisEvent(
      env.streamName,
      'shardId-000000000000',
      events.map((e, i) => ({ data: Buffer.from(e.value), partitionKey: e.partitionKey, sequenceNumber: sequences[i]!, arrival: new Date() })),
    );
    const deps = depsFor(env);
    const write = deps.writer.write.bind(deps.writer);
    const attempted: string[] = [];
    deps.writer.write = async (w: PlannedWrite): Promise<WriteResult> => {
      attempted.push(`${w.table}:${String(Object.values(w.key)[0])}`);
      if (w.table === 'public.customers' && String(w.key.id) === '42') {
        return { outcome: 'failed', writeUnits: 0, requests: 1, missing: [], spilled: false, error: new Error('injected: persistent write error') };
      }
      return write(w);
    };
    const result = await processBatch(recordsFromKinesis(event), deps);
    assert.deepEqual(result.batchItemFailures, [{ itemIdentifier: sequences[2] }]);
    assert.equal(result.summary.failed, 1);
    assert.equal(result.summary.applied, 3, JSON.stringify(result.summary));
    assert.ok(attempted.includes('public.customers:42'));

    assert.equal(await getRow(target.clients.dynamodb, env.customers, { id: 42 }), null);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 41 })), events[0]!.after);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 43 })), events[3]!.after);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.orders, { order_id: 50 })), events[5]!.after);
    const cust = await status(env, 'public.customers');
    assert.equal(cust?.failed, 1);
    assert.equal(cust?.state, 'ERROR');
    assert.match(String(cust?.lastError), /injected: persistent write error/);
  });

  it('lands raw lines with the untouched message text, transport metadata and normalized fields', async () => {
    const env = await fresh();
    const insert = pgMessage({
      table: 'customers',
      op: 'c',
      after: { id: 61, name: 'Raw  Ünïcode ✓', email: 'raw@example.com', balance: '__BIG__' },
      lsn: 50_000_008,
      lastCommitLsn: 50_000_000,
      txId: 901,
      tsMs: 1_735_732_812_345,
    });
    // Pretty-printed, with a number beyond double precision: the raw line must keep the text exactly.
    const insertText = JSON.stringify(insert, null, 2).replace('"__BIG__"', '12345678901234567890.10');
    const update = pgMessage({
      table: 'customers',
      op: 'u',
      after: { id: 61, name: 'Raw', email: 'raw2@example.com', balance: 1 },
      lsn: 50_000_016,
      lastCommitLsn: 50_000_008,
      txId: 902,
    });
    const updateText = JSON.stringify(update);
    const { shardId, sequences } = await put(env, [
      { partitionKey: '{"id":61}', data: insertText },
      { partitionKey: '{"id":61}', data: updateText },
    ]);
    const { totals } = await poll(env, { batchSize: 10 });
    assert.equal(totals.records, 2);

    const keys = await listKeys(env, env.config.raw.prefix);
    assert.equal(keys.length, 1, keys.join());
    assert.match(keys[0]!, new RegExp(`^${env.config.raw.prefix}dt=\\d{4}-\\d\\d-\\d\\d/hr=\\d\\d/${shardId}-${sequences[0]}-${sequences[1]}-[0-9a-f]{16}\\.jsonl\\.gz$`));
    const lines = await readLines(env, keys[0]!);
    assert.equal(lines.length, 2);
    const [first, second] = lines as [JsonObject, JsonObject];
    assert.equal(first.message, insertText, 'message text untouched');
    assert.equal(second.message, updateText);
    assert.equal(first.messageKey, '{"id":61}');
    const transport = first.transport as JsonObject;
    assert.equal(transport.kind, 'kinesis');
    assert.equal(transport.stream, env.streamName);
    assert.equal(transport.shard, shardId);
    assert.equal(transport.sequence, sequences[0]);
    assert.equal(transport.partitionKey, '{"id":61}');
    assert.equal(typeof transport.arrivalTime, 'number');
    assert.equal((second.transport as JsonObject).sequence, sequences[1]);
    assert.equal(first.kind, 'change');
    assert.equal(first.table, 'public.customers');
    assert.equal(first.op, 'c');
    assert.equal(second.op, 'u');
    assert.equal(first.position, pgPosition(50_000_000, 50_000_008));
    assert.equal(second.position, pgPosition(50_000_008, 50_000_016));
    assert.equal(first.key, '{"id":61}');
    assert.equal(first.commitTs, 1_735_732_812_345);
    assert.equal(first.txid, '901');
    assert.equal(first.snapshot, false);
    assert.match(String(first.format), /^debezium/);
    // The second layout's fields, read by the jobs' SQL without parsing the message.
    assert.equal(first.v, 2);
    assert.equal(first.keyId, '["61"]');
    assert.equal(first.arrivalTs, transport.arrivalTime);
    assert.match(String(first.hash), /^[A-Za-z0-9_-]+$/);
    assert.notEqual(first.hash, second.hash, 'the content hash tells the two changes apart');
    assert.equal(first.beforeNull, false);
    assert.equal(first.partial, false);
  });

  it('keeps the whole records of a batch whose raw landing kept failing, in the S3 on-failure shape, and they apply later', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const events = [
      h.emit('customers', 'c', { id: 71 }, { name: 'Pia', email: 'pia@example.com', bio: 'p' }),
      h.emit('orders', 'c', { order_id: 80 }, { customer_id: 71, status: 'placed', amount_minor: 3 }),
      h.emit('customers', 'u', { id: 71 }, { name: 'Pia', email: 'pia2@example.com', bio: 'p' }),
    ];
    const { shardId, sequences } = await putEvents(env, events);
    const log = memoryLog();
    const healthy = depsFor(env, log);
    // An S3 outage longer than the landing retries and the event source's retries.
    const outage: IngestDeps = { ...healthy, raw: { land: async () => Promise.reject(new Error('injected: S3 unavailable')), quarantine: (b, l) => healthy.raw.quarantine(b, l) }, landing: { budgetMs: 300 } };
    const { totals } = await poll(env, { batchSize: 10, deps: outage, maxRetries: 1 });
    assert.equal(totals.failed, 6, 'two invocations, three records each, all failed');
    assert.equal(totals.applied, 0);
    assert.equal(identityGap(totals), 0);
    assert.equal(await getRow(target.clients.dynamodb, env.customers, { id: 71 }), null);

    const file = runnerFiles(env.stateDir, env.streamName).onFailure;
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 1);
    const { record, event } = parseOnFailureRecord(lines[0] ?? '');
    assert.equal(record.KinesisBatchInfo.shardId, shardId);
    assert.equal(record.KinesisBatchInfo.startSequenceNumber, sequences[0]);
    assert.equal(record.KinesisBatchInfo.endSequenceNumber, sequences[2]);
    assert.equal(record.KinesisBatchInfo.batchSize, 3);
    assert.deepEqual(
      recordsFromKinesis(event).map((r) => Buffer.from(r.value ?? []).toString('utf8')),
      events.map((e) => e.value),
      'the whole records, not just their coordinates',
    );

    // Recovery: the records from the on-failure file go through the handler once S3 is back.
    const response = await handleEvent(event, healthy);
    assert.deepEqual(response.batchItemFailures, []);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 71 })), events[2]?.after ?? null);
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.orders, { order_id: 80 })), events[1]?.after ?? null);
    assert.equal((await listKeys(env, env.config.raw.prefix)).length, 1, 'one object for the batch');
  });

  it('gives a different batch with the same coordinates its own raw object instead of overwriting', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const a = h.emit('customers', 'c', { id: 91 }, { name: 'A', email: 'a@example.com', bio: 'a' });
    const b = h.emit('customers', 'c', { id: 92 }, { name: 'B', email: 'b@example.com', bio: 'b' });
    // Two `tidemark apply` runs of different files in one hour: same stream, shard and line-number sequences.
    const at = new Date();
    const shaped = (e: PgEvent) => kinesisEvent('tidemark-apply', 'shardId-000000000000', [{ data: Buffer.from(e.value), partitionKey: '1', sequenceNumber: '000000000001', arrival: at }]);
    await handleEvent(shaped(a), depsFor(env));
    await handleEvent(shaped(b), depsFor(env));
    await handleEvent(shaped(a), depsFor(env)); // a retry of the first: the same object again
    const keys = await listKeys(env, env.config.raw.prefix);
    assert.equal(keys.length, 2, keys.join('\n'));
    const messages = (await Promise.all(keys.map((k) => readLines(env, k)))).flat().map((l) => l.message);
    assert.deepEqual(messages.sort(), [a.value, b.value].sort());
  });

  it('resumes after a torn checkpoint file and converges', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const first = [h.emit('customers', 'c', { id: 95 }, { name: 'T', email: 't1@example.com', bio: 't' })];
    await putEvents(env, first);
    await poll(env, { batchSize: 10 });
    const { checkpoints } = runnerFiles(env.stateDir, env.streamName);
    assert.ok(existsSync(checkpoints));
    writeFileSync(checkpoints, ''); // torn by a crash mid-write (or a full disk)
    const second = [h.emit('customers', 'u', { id: 95 }, { name: 'T', email: 't2@example.com', bio: 't' })];
    await putEvents(env, second);
    const log = memoryLog();
    const warnings: string[] = [];
    const { totals } = await poll(env, { batchSize: 10, deps: { ...depsFor(env, log), log: { ...log, warn: (m) => warnings.push(m) } } });
    assert.ok(warnings.some((w) => w.startsWith('checkpoint file is torn')), warnings.join('; '));
    assert.equal(totals.records, 1, 'resumed from the previous whole checkpoint: only the new record');
    assert.equal(totals.applied, 1);
    assert.equal((await getRow(target.clients.dynamodb, env.customers, { id: 95 }))?.email, 't2@example.com');
    assert.doesNotThrow(() => JSON.parse(readFileSync(checkpoints, 'utf8')));
  });

  it('invokes with at most batchSize records, and gathers a partial batch for the batching window', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const events = Array.from({ length: 5 }, (_, i) => h.emit('orders', 'c', { order_id: 200 + i }, { customer_id: 1, status: 'placed', amount_minor: i }));
    await putEvents(env, events);
    const sizes: number[] = [];
    await poll(env, { batchSize: 2, beforeInvoke: (_s, r) => void sizes.push(r.length) });
    assert.deepEqual(sizes, [2, 2, 1]);

    const more = Array.from({ length: 3 }, (_, i) => h.emit('orders', 'c', { order_id: 300 + i }, { customer_id: 1, status: 'placed', amount_minor: i }));
    await putEvents(env, more.slice(0, 1));
    const gathered: number[] = [];
    const late = setTimeout(() => void putEvents(env, more.slice(1)), 150);
    try {
      await poll(env, { batchSize: 10, windowMs: 1500, beforeInvoke: (_s, r) => void gathered.push(r.length) });
    } finally {
      clearTimeout(late);
    }
    assert.deepEqual(gathered, [3], 'records that arrive within the window share one invocation');
  });

  it('keeps a binary Kafka key exactly in raw (base64), through the MSK handler path', async () => {
    const env = await fresh();
    const h = new PgHistory();
    const e = h.emit('customers', 'c', { id: 97 }, { name: 'Bin', email: 'bin@example.com', bio: 'b' });
    const key = Uint8Array.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
    const response = await handleEvent(mskEvent([{ topic: 'shop.public.customers', partition: 2, offset: 41, key, value: Buffer.from(e.value), timestamp: Date.now() }]), depsFor(env));
    assert.deepEqual(response, { batchItemFailures: [] });
    const keys = await listKeys(env, env.config.raw.prefix);
    assert.equal(keys.length, 1);
    const [line] = await readLines(env, keys[0] ?? '');
    assert.ok(line);
    assert.equal(line.messageKey, null);
    assert.deepEqual([...Buffer.from(String(line.messageKeyBase64), 'base64')], [...key]);
    assert.equal(line.message, e.value);
    const transport = line.transport as JsonObject;
    assert.deepEqual(transport, { kind: 'kafka', stream: 'shop.public.customers', shard: '2', sequence: '41', partitionKey: null, arrivalTime: transport.arrivalTime });
    assert.deepEqual(columns(await getRow(target.clients.dynamodb, env.customers, { id: 97 })), e.after);
  });
});
