/**
 * Erase drills on the integration target, through the erase state machine's definition run
 * locally: a customer's key leaves current state, raw (found by the key filters in the objects'
 * metadata: HEAD, then GET only the candidates) and quarantine; the ledger records a keyed hash;
 * replays into the live or a fresh table never bring it back, while a later genuine change of the
 * same key still applies. s3rver does not implement bucket versioning (GET/PUT ?versioning and
 * ?versions answer NotImplemented): the summary says so, and the overwrite is the only copy.
 * The copies outside raw are reached too: the event source mapping's on-failure objects lose the
 * key's records, and `replay --from-dlq` leaves out what the ledger refuses. A key found nowhere is
 * reported as not found and recorded only when its future arrivals are to be blocked.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/erase.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { gunzipSync, gzipSync } from 'node:zlib';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localDeps } from '../../bin/cli/context.js';
import { runEraseLocally } from '../../bin/cli/erase.js';
import { runReplayLocally } from '../../bin/cli/replay.js';
import { getRow } from '../../bin/cli/state.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { freshTablePrefix } from '../../functions/config/types.js';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { type EraseContext, submitErase, submitEraseBatch } from '../../functions/erase/erase.js';
import { KEY_FILTER_METADATA } from '../../functions/core/key-filter.js';
import { EraseLedger } from '../../functions/adapters/erase-ledger.js';
import { type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import type { JobContext } from '../../functions/replay/job.js';
import { PgHistory, type PgEvent } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { ingestDeps, replayContext } from '../../functions/composition.js';
import { buildStorage } from '../../functions/adapters/storage.js';
import { BLOCK_ALL_POSITION } from '../../functions/adapters/erase-ledger.js';
import { buildReplayEngine, ledgerViewFor, replayTables } from '../../functions/replay/deps.js';
import { parseFailedBatchLines } from '../../functions/replay/dlq.js';
import { replayFailedBatches } from '../../functions/replay/from-dlq.js';
import { CollectingMetricSink } from '../../functions/telemetry/sinks.js';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { compactLocally } from '../../bin/cli/jobs-local.js';
import { eraseSummaryOf } from '../../bin/cli/erase.js';
import { localSqlEngine } from '../../bin/cli/replay.js';
import { compactionFrontierKey, historyWarehousePrefix, parseRawObjectKey, spillObjectKey } from '../../functions/adapters/raw-layout.js';
import { getJson, putJson } from '../../functions/adapters/s3-json.js';
import { EXPECTED_STATE, HISTORY } from '../../functions/sql/schemas.js';
import { bind, call, sql } from '../../functions/sql/sql.js';
import { selectStatement } from '../../functions/sql/statement.js';
import { runCli } from './jobs-env.js';
import { listObjectKeys } from '../../functions/adapters/s3-list.js';

const base = parseConfig({
  name: 'erase',
  tables: [
    { source: 'public.customers', target: 'erase-customers', key: ['id'], keyTypes: { id: 'number' } },
    // A name with a space and a non-ASCII letter: percent-encoded in raw paths, partitions and spill prefixes, quoted in SQL.
    { source: 'public.café menu', target: 'erase-cafe-menu', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'erase-raw' },
  replay: { objectsPerBatch: 3 },
});
const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const ENV = { TIDEMARK_ERASE_KEY: 'integration-test-ledger-key-0123456789' };

describe(`erase on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let customers: TableConfig;
  let cafe: TableConfig;
  let deps: IngestDeps;
  const history = new PgHistory();
  const now = Date.now();
  let sequence = 1;

  const recordsOf = (events: readonly PgEvent[], extra: readonly Uint8Array[] = []): RawRecord[] =>
    [...events.map((e) => Buffer.from(e.value)), ...extra].map((value, i) => ({
      value,
      key: null,
      topic: null,
      headers: {},
      transport: { kind: 'kinesis', stream: 'erase-cdc', shard: 'shardId-000000000000', sequence: String(sequence++).padStart(20, '0'), partitionKey: 'p', arrivalTime: now - 60_000 + i },
    }));

  async function rawLines(): Promise<{ key: string; lines: Record<string, unknown>[] }[]> {
    const out: { key: string; lines: Record<string, unknown>[] }[] = [];
    const listing = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: config.raw.prefix }));
    for (const o of listing.Contents ?? []) {
      if (!o.Key?.endsWith('.jsonl.gz')) continue;
      const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: o.Key }));
      const text = gunzipSync(Buffer.from((await got.Body?.transformToByteArray()) ?? [])).toString('utf8');
      out.push({ key: o.Key, lines: text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) });
    }
    return out;
  }

  /** The rows of history or expected_state of one key, read by DuckDB from the Parquet stand-in as the jobs read it. */
  async function tableRows(table: 'history' | 'expected_state', keyId: string | null, source = 'public.customers'): Promise<Record<string, unknown>[]> {
    const engine = await localSqlEngine(config, target.clients.s3);
    const schema = table === 'history' ? HISTORY : EXPECTED_STATE;
    const where = keyId === null ? sql`t.source_table = ${bind(source)}` : sql`t.source_table = ${bind(source)} AND t.key_id = ${bind(keyId)}`;
    const statement = selectStatement(`test-${table}`, sql`SELECT t.* FROM ${call((d) => d.table(table))} t WHERE ${where}`, { reads: [{ table, filter: { tables: [source] } }], columns: schema.columns });
    const rows: Record<string, unknown>[] = [];
    try {
      for await (const row of engine.query(statement)) rows.push(row);
    } finally {
      await engine.close();
    }
    return rows;
  }

  async function keysUnder(prefix: string): Promise<string[]> {
    const out: string[] = [];
    for await (const key of listObjectKeys(target.clients.s3, config.raw.bucket, prefix)) out.push(key);
    return out;
  }

  before(async () => {
    process.env.TIDEMARK_ERASE_KEY = ENV.TIDEMARK_ERASE_KEY;
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    customers = config.tables[0] as TableConfig;
    cafe = config.tables[1] as TableConfig;
    deps = { ...localDeps(config, target.clients), log: quiet };
    // Six batches (six raw objects) of 20 customers each: key 7 only in batches 1 and 4.
    for (let b = 0; b < 6; b++) {
      const events: PgEvent[] = [];
      for (let i = 0; i < 20; i++) {
        const id = 100 + b * 20 + i;
        events.push(history.emit('customers', 'c', { id }, { name: `n${id}` }));
      }
      if (b === 1) events.push(history.emit('customers', 'c', { id: 7 }, { name: 'Ada', email: 'ada@example.com' }));
      if (b === 4) events.push(history.emit('customers', 'u', { id: 7 }, { name: 'Ada L', email: 'ada@example.com' }));
      // A message for a table that is not configured: quarantined with its bytes, and it names key 7.
      const stray = b === 4 ? [Buffer.from(JSON.stringify({ ...history.events[history.events.length - 1]?.message, source: { connector: 'postgresql', schema: 'public', table: 'customers', lsn: 'not-a-number' } }))] : [];
      const res = await processBatch(recordsOf(events, stray), deps);
      assert.deepEqual(res.batchItemFailures, []);
    }
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('erases the key from current state, raw and quarantine, reading only the objects the SQL finds holding it', async () => {
    const objectsBefore = await rawLines();
    assert.equal(objectsBefore.length, 6);
    for (const o of objectsBefore) {
      const head = await target.clients.s3.send(new HeadObjectCommand({ Bucket: config.raw.bucket, Key: o.key }));
      assert.ok(head.Metadata?.[KEY_FILTER_METADATA]?.startsWith('b1.'), 'RawStore.land wrote a key filter');
    }
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const requestKey = await submitErase(ctx, 'erase-1', { table: 'public.customers', key: { id: 7 }, reason: 'test request 1' });
    const out = await runEraseLocally(ctx, { runId: 'erase-1', requestKey });
    const s = out.summary as Record<string, JsonValue>;
    assert.equal(s.objects, 2, 'the query names exactly the two objects holding the key, no listing or HEAD of the rest');
    assert.equal(s.objectsRead, 2, 'only those are read');
    assert.equal(s.falsePositives, 0);
    assert.equal(s.objectsRewritten, 2);
    assert.equal(s.linesRemoved, 2);
    assert.equal(s.otherRowsRemoved, 0);
    assert.equal(s.versioning, false, 's3rver does not implement versioning');
    assert.equal(s.quarantineLinesRewritten, 1);
    assert.equal(s.itemDeleted, true);

    const row = await getRow(target.clients.dynamodb, customers, { id: 7 });
    assert.equal(row?.__deleted, true);
    assert.equal(row?.name, undefined, 'the tombstone holds no values');
    const after = await rawLines();
    const all = after.flatMap((o) => o.lines);
    assert.equal(all.filter((l) => l.key === '{"id":7}').length, 0);
    assert.equal(all.length, 120, 'every other line kept');
    assert.ok(!after.some((o) => o.lines.some((l) => String(l.message ?? '').includes('ada@example.com'))));
    const quarantine = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: config.raw.quarantinePrefix }));
    const qLines: Record<string, unknown>[] = [];
    for (const q of quarantine.Contents ?? []) {
      const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: q.Key }));
      const text = gunzipSync(Buffer.from((await got.Body?.transformToByteArray()) ?? [])).toString('utf8');
      qLines.push(...text.split('\n').filter(Boolean).map((x) => JSON.parse(x) as Record<string, unknown>));
    }
    assert.equal(qLines.length, 1);
    assert.equal(qLines[0]?.valueBase64, null);
    assert.equal(typeof qLines[0]?.reason, 'string', 'the reason and transport stay');
    assert.ok(qLines[0]?.erased);
    const ledger = await new EraseLedger(target.clients.dynamodb, config.statusTable, config.name).list();
    assert.equal(ledger.length, 1);
    assert.equal(ledger[0]?.reason, 'test request 1');
    assert.equal(JSON.stringify(ledger).includes('Ada'), false);
    assert.equal(ledger[0]?.position, history.events.find((e) => e.op === 'u' && e.key.id === 7)?.position);
  });

  /** Lambda's S3 on-failure record of a Kinesis batch holding `records` (the shape of functions/replay/dlq.ts). */
  const onFailureDoc = (records: readonly RawRecord[]) => ({
    requestContext: { requestId: 'r', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:f', condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    version: '1.0',
    timestamp: new Date(now).toISOString(),
    KinesisBatchInfo: {
      shardId: 'shardId-000000000000',
      startSequenceNumber: records[0]?.transport.sequence,
      endSequenceNumber: records[records.length - 1]?.transport.sequence,
      approximateArrivalOfFirstRecord: new Date(now).toISOString(),
      approximateArrivalOfLastRecord: new Date(now).toISOString(),
      batchSize: records.length,
      streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/erase-cdc',
    },
    payload: JSON.stringify({
      Records: records.map((r) => ({
        kinesis: { kinesisSchemaVersion: '1.0', partitionKey: 'p', sequenceNumber: r.transport.sequence, data: Buffer.from(r.value ?? []).toString('base64'), approximateArrivalTimestamp: r.transport.arrivalTime / 1000 },
        eventSource: 'aws:kinesis',
        eventVersion: '1.0',
        eventID: `shardId-000000000000:${r.transport.sequence}`,
        eventName: 'aws:kinesis:record',
        invokeIdentityArn: 'arn:aws:iam::000000000000:role/x',
        awsRegion: 'us-east-1',
        eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/erase-cdc',
      })),
    }),
  });

  it('replays never bring the erased key back, into live or fresh', async () => {
    process.env.TIDEMARK_ERASE_KEY = ENV.TIDEMARK_ERASE_KEY;
    const ctx: JobContext = replayContext(config, target.clients, quiet, ENV);
    const live = await runReplayLocally(ctx, { runId: 'rl', tables: ['public.customers'], into: 'live', now });
    assert.equal((live.summary as { tally: { erased: number } }).tally.erased, 0, 'raw no longer holds the key');
    const fresh = `${freshTablePrefix(config.name)}rebuilt`;
    await runReplayLocally(ctx, { runId: 'rf', tables: ['public.customers'], into: `fresh:${fresh}`, now });
    assert.equal(await getRow(target.clients.dynamodb, { ...customers, target: fresh }, { id: 7 }), null);
  });

  it('the ledger still stops copies of old changes (a stale raw copy) while a later genuine change applies', async () => {
    const ctx: JobContext = replayContext(config, target.clients, quiet, ENV);
    // An old change of key 7 arrives again (a connector redelivery) and lands in raw.
    const old = history.events.find((e) => e.op === 'c' && e.key.id === 7) as PgEvent;
    await processBatch(recordsOf([old]), deps);
    const r1 = await runReplayLocally(ctx, { runId: 'r2', tables: ['public.customers'], into: 'live', now });
    assert.equal((r1.summary as { tally: { erased: number } }).tally.erased, 1);
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 7 }))?.__deleted, true);
    // A genuine later change of key 7.
    const later = history.emit('customers', 'u', { id: 7 }, { name: 'New Ada' });
    await processBatch(recordsOf([later]), deps);
    const r2 = await runReplayLocally(ctx, { runId: 'r3', tables: ['public.customers'], into: 'live', now });
    assert.equal((r2.summary as { tally: { erased: number } }).tally.erased, 1);
    const row = (await getRow(target.clients.dynamodb, customers, { id: 7 })) as JsonObject;
    assert.equal(row.name, 'New Ada');
  });

  it('erases the key from the on-failure objects, and replay --from-dlq leaves out what the ledger refuses (issue 20, item 3)', async () => {
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const mine = history.emit('customers', 'c', { id: 8 }, { name: 'Bea', email: 'bea@example.com' });
    const other = history.emit('customers', 'c', { id: 9 }, { name: 'Cy' });
    const failed = recordsOf([mine, other]);
    const objectKey = `${config.replay.onFailurePrefix}mapping-uuid/shardId-000000000000/2026/11/30/failed-1`;
    await target.clients.s3.send(new PutObjectCommand({ Bucket: config.raw.bucket, Key: objectKey, Body: JSON.stringify(onFailureDoc(failed)) }));
    assert.deepEqual((await processBatch(recordsOf([mine]), deps)).batchItemFailures, []);
    const requestKey = await submitErase(ctx, 'erase-8', { table: 'public.customers', key: { id: 8 }, reason: 'test request 8' });
    const s = (await runEraseLocally(ctx, { runId: 'erase-8', requestKey })).summary as Record<string, JsonValue>;
    assert.equal(s.found, true);
    assert.equal(s.onFailureRecordsRemoved, 1);
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: objectKey }));
    const text = Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8');
    assert.ok(!text.includes(Buffer.from(mine.value).toString('base64')), 'the key’s record is gone from the failed batch');
    assert.ok(text.includes(Buffer.from(other.value).toString('base64')), 'the other record stays');
    // A copy of the key's record elsewhere (a local on-failure file): re-ingest refuses it by the ledger.
    const { batches } = parseFailedBatchLines(JSON.stringify(onFailureDoc(recordsOf([mine, other]))), 'on-failure.jsonl');
    const ledger = await ledgerViewFor(config, target.clients.dynamodb, ['public.customers'], ENV);
    assert.ok(ledger, 'the ledger holds the erasure');
    const engine = buildReplayEngine(buildStorage(config, target.clients), { tables: replayTables(config, ['public.customers'], { kind: 'live' }), target: { kind: 'live' }, ledger, log: quiet });
    const ingest = ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: quiet });
    const report = await replayFailedBatches(batches.map((batch) => ({ batch })), { config, s3: target.clients.s3, ingest, engine, ledger });
    assert.equal(report.erased, 1);
    assert.equal(report.failedBatches, 0);
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 8 }))?.name, undefined, 'key 8 stays erased');
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 9 }))?.name, 'Cy');
    const landed = (await rawLines()).flatMap((o) => o.lines);
    assert.ok(!landed.some((l) => l.keyId === '["8"]'), 'the refused record did not land in raw again');
  });

  it('erasing a key found nowhere says so and records nothing; with blockFuture it is recorded and its arrivals refused (issue 20, item 18)', async () => {
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const ledgerStore = new EraseLedger(target.clients.dynamodb, config.statusTable, config.name);
    const before = (await ledgerStore.list()).length;
    const r1 = await submitErase(ctx, 'erase-none', { table: 'public.customers', key: { id: 999 }, reason: 'never existed' });
    const none = (await runEraseLocally(ctx, { runId: 'erase-none', requestKey: r1 })).summary as Record<string, JsonValue>;
    assert.equal(none.found, false);
    assert.equal(none.ledgerRecorded, false);
    assert.equal(none.itemDeleted, false);
    assert.equal(none.versioning, null, 'nothing was rewritten, so nothing says whether the bucket keeps versions');
    assert.equal((await ledgerStore.list()).length, before, 'no ledger entry');
    assert.equal(await getRow(target.clients.dynamodb, customers, { id: 999 }), null, 'no tombstone either');

    const r2 = await submitErase(ctx, 'erase-block', { table: 'public.customers', key: { id: 998 }, reason: 'do not process', blockFuture: true });
    const blocked = (await runEraseLocally(ctx, { runId: 'erase-block', requestKey: r2 })).summary as Record<string, JsonValue>;
    assert.equal(blocked.found, false);
    assert.equal(blocked.ledgerRecorded, true);
    assert.equal(blocked.blocked, true);
    assert.equal(blocked.ledgerPosition, BLOCK_ALL_POSITION);
    const tomb = await getRow(target.clients.dynamodb, customers, { id: 998 });
    assert.equal(tomb?.__deleted, true);
    assert.equal(tomb?.__expiresAt, undefined, 'the blocking tombstone never expires');
    // A first arrival of the key: ingest's guard refuses it, and so does the ledger on replay.
    const arrival = history.emit('customers', 'c', { id: 998 }, { name: 'Late' });
    const res = await processBatch(recordsOf([arrival]), deps);
    assert.deepEqual(res.batchItemFailures, []);
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 998 }))?.name, undefined);
    const view = await ledgerViewFor(config, target.clients.dynamodb, ['public.customers'], ENV);
    assert.equal(view?.blocks('public.customers', '["998"]', arrival.position), true);
  });

  it('a key erased after its hour was compacted, its raw gone past the grace, is found in history and gone from history and expected_state; replays do not restore it', async () => {
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const compacted = await compactLocally(config, target.clients, { throughNow: true }, { log: quiet });
    assert.ok(compacted.hours.length >= 1, 'raw compacted into history');
    assert.equal((await tableRows('history', '["101"]')).length, 1, 'history holds key 101');
    assert.equal((await tableRows('expected_state', '["101"]')).length, 1, 'and expected state');
    const othersBefore = (await tableRows('expected_state', null)).length;
    // Raw past its grace: compaction deletes the hour's objects; only history holds key 101 now.
    const holding = (await rawLines()).filter((o) => o.lines.some((l) => l.keyId === '["101"]'));
    assert.equal(holding.length, 1);
    await target.clients.s3.send(new DeleteObjectCommand({ Bucket: config.raw.bucket, Key: holding[0]?.key }));
    // … and says so in its frontier, as its clean-up does.
    const frontierKey = compactionFrontierKey(config.history.prefix);
    const frontier = await getJson<Record<string, unknown>>(target.clients.s3, config.raw.bucket, frontierKey);
    await putJson(target.clients.s3, config.raw.bucket, frontierKey, { ...frontier, cleanedThrough: parseRawObjectKey(config.raw.prefix, holding[0]?.key ?? '')?.hourStart });
    const partition = `${historyWarehousePrefix(config.history.prefix)}history/source_table=public.customers/`;
    const filesBefore = await keysUnder(partition);
    const position = (await tableRows('history', '["101"]'))[0]?.position;

    const requestKey = await submitErase(ctx, 'erase-h', { table: 'public.customers', key: { id: 101 }, reason: 'compacted' });
    const s = (await runEraseLocally(ctx, { runId: 'erase-h', requestKey })).summary as Record<string, JsonValue>;
    assert.equal(s.found, true);
    assert.equal(s.objects, 0, 'raw no longer held it');
    assert.equal(s.historyLines, 1, 'history did');
    assert.equal(s.ledgerPosition, position, 'the ledger holds it up to the position history had');
    assert.deepEqual(await tableRows('history', '["101"]'), [], 'gone from history');
    assert.deepEqual(await tableRows('expected_state', '["101"]'), [], 'gone from expected state');
    assert.equal((await tableRows('expected_state', null)).length, othersBefore - 1, 'every other key kept');
    const filesAfter = await keysUnder(partition);
    assert.ok(filesBefore.every((k) => !filesAfter.includes(k)), 'the Parquet files that held the row are deleted, every version');
    assert.deepEqual(await keysUnder(`${config.history.prefix}erase_keys/`), [], "the run's keys are deleted");
    assert.ok(!(await keysUnder(config.replay.jobsPrefix)).includes(requestKey), 'and its request');

    const rctx: JobContext = replayContext(config, target.clients, quiet, ENV);
    await runReplayLocally(rctx, { runId: 'rh', tables: ['public.customers'], into: 'live', since: now - 2 * 3_600_000, now: Date.now() });
    const row = await getRow(target.clients.dynamodb, customers, { id: 101 });
    assert.equal(row?.name, undefined, 'the live replay did not restore it');
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 102 }))?.name, 'n102', 'its neighbours come back from history');
    const fresh = `${freshTablePrefix(config.name)}afterhistory`;
    await runReplayLocally(rctx, { runId: 'rh2', tables: ['public.customers'], into: `fresh:${fresh}`, now: Date.now() });
    assert.equal(await getRow(target.clients.dynamodb, { ...customers, target: fresh }, { id: 101 }), null, 'nor a fresh one');
    assert.equal((await getRow(target.clients.dynamodb, { ...customers, target: fresh }, { id: 102 }))?.name, 'n102');
  });

  it('erases a batch of keys in one run (tidemark erase --keys-file): one ledger entry and one result line per key, not found said per key', async () => {
    const ledgerStore = new EraseLedger(target.clients.dynamodb, config.statusTable, config.name);
    const before = await ledgerStore.list();
    // 130 is in raw and history, 104 only in history (its raw object deleted above), 555 nowhere.
    const file = join(mkdtempSync(join(tmpdir(), 'erase-keys-')), 'requests.jsonl');
    writeFileSync(file, `${JSON.stringify({ table: 'public.customers', key: { id: 130 }, reason: 'batch 1' })}\n\n{"table":"public.customers","key":{"id":555}}\n${JSON.stringify({ table: 'public.customers', key: { id: 104 }, reason: 'batch 3' })}\n`);
    const bad = runCli(target, config, ['erase', '--keys-file', file]);
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /line 3: no "reason"/);
    assert.equal((await ledgerStore.list()).length, before.length, 'a file with a mistake writes nothing');
    const run = runCli(target, config, ['erase', '--keys-file', file, '--reason', 'batch default', '--json']);
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const results = lines.filter((l) => l.summary === undefined);
    assert.deepEqual(results.map((r) => [r.request, r.found, r.ledgerRecorded]), [
      [0, true, true],
      [1, false, false],
      [2, true, true],
    ]);
    assert.ok(Number(results[0]?.rawLinesRemoved) >= 1 && Number(results[0]?.historyLines) >= 1, 'raw and history both held 130');
    assert.deepEqual([results[2]?.rawLinesRemoved, results[2]?.historyLines], [0, 1], '104 only in history');
    assert.ok(!run.stdout.includes('"id"'), 'the output names keys by their keyed hash');
    const summary = lines.at(-1)?.summary as Record<string, unknown>;
    assert.deepEqual([summary.keys, summary.keysFound, summary.keysNotFound], [3, 2, 1]);
    const after = await ledgerStore.list();
    assert.equal(after.length, before.length + 2, 'one ledger entry per key found');
    assert.deepEqual(after.filter((e) => !before.some((b) => b.keyHash === e.keyHash)).map((e) => e.reason).sort(), ['batch 1', 'batch 3']);
    for (const id of [130, 104]) assert.equal((await getRow(target.clients.dynamodb, customers, { id }))?.__deleted, true, `${id} is a tombstone`);
    assert.equal(await getRow(target.clients.dynamodb, customers, { id: 555 }), null);
    for (const id of ['["130"]', '["104"]']) {
      assert.deepEqual(await tableRows('history', id), []);
      assert.deepEqual(await tableRows('expected_state', id), []);
    }
    assert.ok(!(await rawLines()).some((o) => o.lines.some((l) => l.keyId === '["130"]')), 'nor in raw');
    assert.equal((await tableRows('history', '["131"]')).length, 1, 'other keys stay');

    // Text, for people: a line per key, then the run's counts.
    writeFileSync(file, `${JSON.stringify({ table: 'public.customers', key: { id: 150 } })}\n${JSON.stringify({ table: 'public.customers', key: { id: 557 } })}\n`);
    const text = runCli(target, config, ['erase', '--keys-file', file, '--reason', 'text run']);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /^erase erase-\S+: 2 keys, 1 erased, 1 not found, in \S+\n {2}erased public\.customers id=150 up to LSN 0\/[0-9A-F]+: keyed hash \S+; item deleted, 1 raw and 1 history lines\n {2}not found: public\.customers id=557 is in no copy tidemark holds; nothing recorded in the ledger\n {2}raw: 1 objects held the keys: 1 rewritten, 0 emptied, 0 versions removed; history: 1 lines deleted\n$/);

    // The same run through the API: the full summary holds every result.
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const requestKey = await submitEraseBatch(ctx, 'erase-b', [
      { table: 'public.customers', key: { id: 140 }, reason: 'api 1' },
      { table: 'public.customers', key: { id: 141 }, reason: 'api 2' },
      { table: 'public.customers', key: { id: 556 }, reason: 'api 3' },
    ]);
    const out = (await runEraseLocally(ctx, { runId: 'erase-b', requestKey })).summary as Record<string, JsonValue>;
    assert.equal(out.results, undefined, 'the state carries no per-key results');
    const full = await eraseSummaryOf(target.clients.s3, config.raw.bucket, String(out.summaryKey));
    assert.deepEqual(full.results.map((r) => r.found), [true, true, false]);
    assert.equal(full.objectsRewritten, 1, 'both keys sat in one raw object, rewritten once');
  });

  it('a table named with a space and a non-ASCII letter: the key leaves raw, history, expected state and its spilled rows', async () => {
    const ctx: EraseContext = { config, clients: target.clients, log: quiet, env: ENV };
    const mine = history.emit('café menu', 'c', { id: 5 }, { dish: 'crème brûlée' });
    const other = history.emit('café menu', 'c', { id: 6 }, { dish: 'tarte' });
    assert.deepEqual((await processBatch(recordsOf([mine, other]), deps)).batchItemFailures, []);
    await compactLocally(config, target.clients, { throughNow: true }, { log: quiet });
    assert.equal((await tableRows('history', '["5"]', 'public.café menu')).length, 1, 'compacted into history');
    // A spilled copy of the row (an item past 400 KB), under the table's encoded segment.
    const spill = spillObjectKey(config.raw.prefix, 'public.café menu', '["5"]', mine.position);
    await target.clients.s3.send(new PutObjectCommand({ Bucket: config.raw.bucket, Key: spill, Body: gzipSync(JSON.stringify({ dish: 'crème brûlée' })) }));
    const requestKey = await submitErase(ctx, 'erase-cafe', { table: 'public.café menu', key: { id: 5 }, reason: 'encoded names' });
    const s = (await runEraseLocally(ctx, { runId: 'erase-cafe', requestKey })).summary as Record<string, JsonValue>;
    assert.equal(s.found, true);
    assert.equal(s.spilledDeleted, 1);
    assert.equal(s.linesRemoved, 1);
    assert.equal(s.historyLines, 1);
    assert.ok(!(await keysUnder(`${config.raw.prefix}spill/`)).includes(spill), 'the spilled row is deleted');
    assert.ok(!(await rawLines()).some((o) => o.lines.some((l) => l.table === 'public.café menu' && l.keyId === '["5"]')), 'gone from raw');
    assert.deepEqual(await tableRows('history', '["5"]', 'public.café menu'), []);
    assert.deepEqual(await tableRows('expected_state', '["5"]', 'public.café menu'), []);
    assert.equal((await tableRows('history', '["6"]', 'public.café menu')).length, 1, 'the other key of the table stays');
    assert.equal((await getRow(target.clients.dynamodb, cafe, { id: 5 }))?.__deleted, true);
    assert.equal((await getRow(target.clients.dynamodb, cafe, { id: 6 }))?.dish, 'tarte');
  });
});
