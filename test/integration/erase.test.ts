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
import { gunzipSync } from 'node:zlib';
import { localDeps } from '../../bin/cli/context.js';
import { runEraseLocally } from '../../bin/cli/erase.js';
import { runReplayLocally } from '../../bin/cli/replay.js';
import { getRow } from '../../bin/cli/state.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { freshTablePrefix } from '../../functions/config/types.js';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { type EraseContext, submitErase } from '../../functions/erase/erase.js';
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

const base = parseConfig({
  name: 'erase',
  tables: [{ source: 'public.customers', target: 'erase-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'erase-raw' },
  replay: { objectsPerBatch: 3 },
});
const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const ENV = { TIDEMARK_ERASE_KEY: 'integration-test-ledger-key-0123456789' };

describe(`erase on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let customers: TableConfig;
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

  before(async () => {
    process.env.TIDEMARK_ERASE_KEY = ENV.TIDEMARK_ERASE_KEY;
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    customers = config.tables[0] as TableConfig;
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
});
