/**
 * `replay --from-dlq`: recover every failed batch the on-failure destinations hold.
 *
 * - Whole records (S3 on-failure objects, the local on-failure file): they never reached raw, so
 *   they go through the ingest path itself, `processBatch` (land raw, then apply under the guard).
 *   A batch that already landed is simply rewritten under the same object key and re-applied as
 *   no-ops.
 * - Shard and sequence ranges (SQS messages): the records are looked up in raw (objects of the
 *   range's hours and shard) and replayed from there by the replay engine. Records of the range
 *   that raw does not hold (their landing kept failing) are read from the stream while it still
 *   retains them, and re-ingested (land, then apply); what neither holds is reported as `missing`.
 *
 * Both paths consult the erase ledger: the replay engine through its view, and a re-ingested record
 * whose change of an erased key is at or below the erasure is left out before it lands (the whole
 * record, as erase removes it from raw: a multi-row message holds the key's values too), counted as
 * `erased`. Without that, an erased row would come back once its tombstone expires.
 *
 * SQS messages are deleted only after their batch was replayed without failures; S3 objects and
 * file lines are left in place (replaying them again is a no-op).
 */
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient, type _Record as KinesisRecord } from '@aws-sdk/client-kinesis';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../config/types.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { encodePosition } from '../core/position.js';
import type { LedgerView } from '../adapters/erase-ledger.js';
import { hoursBetween, parseRawObjectKey, rawBatchesPrefix, rawHourPrefix, rawObjectOfShard, rawTableHourPrefix, rawTablePrefix } from '../adapters/raw-layout.js';
import { allTableSegments, parseRawObject, RawRecordSet, readRawObject } from '../adapters/raw-reader.js';
import type { IngestDeps } from '../ingest/process-batch.js';
import { processBatch } from '../ingest/process-batch.js';
import { addTally, emptyTally, type ReplayEngine, type ReplayTally } from './engine.js';
import { type BatchRange, compareSequence, type DlqProblem, type FailedBatch, inBatchRange, parseFailedBatch } from './dlq.js';
import { listObjectKeys } from '../adapters/s3-list.js';

const HOUR_MS = 3_600_000;

/** A failed batch and how to acknowledge it once replayed (SQS: delete the message). */
export interface DlqItem {
  readonly batch: FailedBatch;
  readonly ack?: () => Promise<void>;
}

/** Reads every message of the on-failure queue (until it answers empty), without deleting them. */
export async function readQueue(sqs: SQSClient, queueUrl: string, problems: DlqProblem[], maxMessages = 10_000): Promise<DlqItem[]> {
  const out: DlqItem[] = [];
  const seen = new Set<string>();
  while (out.length < maxMessages) {
    const res = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, VisibilityTimeout: 900 }));
    const messages = res.Messages ?? [];
    if (messages.length === 0) break;
    for (const m of messages) {
      if (!m.MessageId || seen.has(m.MessageId)) continue;
      seen.add(m.MessageId);
      const source = `sqs:${m.MessageId}`;
      let doc: unknown;
      try {
        doc = JSON.parse(m.Body ?? '');
      } catch {
        problems.push({ source, detail: 'message body is not JSON' });
        continue;
      }
      const parsed = parseFailedBatch(doc, source);
      if (!('kind' in parsed)) {
        problems.push(parsed);
        continue;
      }
      const handle = m.ReceiptHandle;
      out.push({ batch: parsed, ack: handle ? async () => void (await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: handle }))) : undefined });
    }
  }
  return out;
}

/** Reads every S3 on-failure object under the prefix (Lambda writes one JSON invocation record per failed batch). */
export async function readOnFailureObjects(s3: S3Client, bucket: string, prefix: string, problems: DlqProblem[]): Promise<DlqItem[]> {
  const out: DlqItem[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (!o.Key) continue;
      const source = `s3://${bucket}/${o.Key}`;
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
      let doc: unknown;
      try {
        doc = JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8'));
      } catch {
        problems.push({ source, detail: 'object is not JSON' });
        continue;
      }
      const parsed = parseFailedBatch(doc, source);
      if ('kind' in parsed) out.push({ batch: parsed });
      else problems.push(parsed);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}


/** The records of a range that raw holds: objects of the range's hours whose name starts with its shard. */
export async function findRangeInRaw(s3: S3Client, config: TidemarkConfig, range: BatchRange): Promise<RawRecord[]> {
  const bucket = config.raw.bucket;
  // The batch objects of the range's hours, then each table segment's of the first layout.
  const segments: (string | null)[] = [null, ...(await allTableSegments(s3, bucket, config.raw.prefix))];
  const set = new RawRecordSet();
  for (const segment of segments) {
    for (const listPrefix of hourPrefixes(config.raw.prefix, segment, range)) {
      for await (const key of listObjectKeys(s3, bucket, listPrefix)) {
        const parts = parseRawObjectKey(config.raw.prefix, key);
        if (parts && rawObjectOfShard(parts, range.shard)) set.add(parseRawObject(await readRawObject(s3, bucket, key), key));
      }
    }
  }
  return set
    .records()
    .map((r) => r.record)
    .filter((r) => inBatchRange(range, r.transport));
}

/**
 * The hour prefixes the range's batches may have landed in (at most 72), or the whole layout: of the
 * batch objects (`segment` null), or of one table segment of the first layout.
 */
function hourPrefixes(rawPrefix: string, segment: string | null, range: BatchRange): string[] {
  if (range.firstArrival === null) return [segment === null ? rawBatchesPrefix(rawPrefix) : rawTablePrefix(rawPrefix, segment)];
  const hours = hoursBetween(range.firstArrival - HOUR_MS, range.lastArrival ?? range.firstArrival).slice(0, 72);
  return hours.map((h) => (segment === null ? rawHourPrefix(rawPrefix, h) : rawTableHourPrefix(rawPrefix, segment, h)));
}

/** An iterator at the range's first sequence number, or undefined when the stream no longer has it. */
async function rangeIterator(kinesis: KinesisClient, stream: string, range: BatchRange): Promise<string | undefined> {
  try {
    return (await kinesis.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: range.shard, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: range.startSequence })))
      .ShardIterator;
  } catch {
    // Trimmed, or the stream is gone: only raw could have held these records.
    return undefined;
  }
}

const streamRecordOf = (r: KinesisRecord, stream: string, shard: string): RawRecord => ({
  value: r.Data ?? null,
  key: r.PartitionKey ? Buffer.from(r.PartitionKey, 'utf8') : null,
  topic: null,
  headers: {},
  transport: { kind: 'kinesis', stream, shard, sequence: r.SequenceNumber ?? '', partitionKey: r.PartitionKey ?? null, arrivalTime: r.ApproximateArrivalTimestamp?.getTime() ?? Date.now() },
});

/**
 * The records of a range still in the Kinesis stream (within its retention): read from the range's
 * first sequence number until past its last. Empty when the stream no longer has them.
 */
export async function readRangeFromStream(kinesis: KinesisClient, range: BatchRange, maxCalls = 50): Promise<RawRecord[]> {
  const stream = range.stream;
  if (stream === null) return [];
  let iterator = await rangeIterator(kinesis, stream, range);
  const out: RawRecord[] = [];
  for (let calls = 0; iterator && calls < maxCalls; calls++) {
    const res = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    for (const r of res.Records ?? []) {
      if (compareSequence(r.SequenceNumber ?? '', range.endSequence) > 0) return out;
      out.push(streamRecordOf(r, stream, range.shard));
    }
    if ((res.Records ?? []).length === 0 && (res.MillisBehindLatest ?? 0) === 0) break;
    iterator = res.NextShardIterator;
  }
  return out;
}

export interface DlqReplayReport {
  readonly batches: number;
  /** Whole-record batches re-ingested (landed in raw, then applied). */
  readonly reingested: number;
  /** Range batches replayed from raw. */
  readonly fromRaw: number;
  /** Records of ranges that raw lacked, read back from the stream and re-ingested. */
  readonly fromStream: number;
  readonly records: number;
  /** Records left out of a re-ingest because they carry a change of an erased key at or below its erasure. */
  readonly erased: number;
  /** Records of a range that raw does not hold. */
  readonly missing: number;
  readonly failedBatches: number;
  readonly acknowledged: number;
  readonly ingest: { applied: number; stale: number; duplicates: number; quarantined: number; failed: number; writeUnits: number; s3Puts: number };
  readonly replay: ReplayTally;
}

interface DlqReplayDeps {
  readonly config: TidemarkConfig;
  readonly s3: S3Client;
  readonly ingest: IngestDeps;
  readonly engine: ReplayEngine;
  /** The erase ledger's view of the tables (null: nothing was ever erased). Re-ingested records are checked against it. */
  readonly ledger: LedgerView | null;
  /** When given, records of a range that raw lacks are read from the stream (if still retained). */
  readonly kinesis?: KinesisClient;
  readonly onBatch?: (done: number, total: number) => void;
}

type MutableReport = { -readonly [K in keyof DlqReplayReport]: DlqReplayReport[K] };

/** Whether a record carries a change the ledger refuses: an erased key, at or below its erasure. */
export function erasedByLedger(record: RawRecord, normalizer: Normalizer, ledger: LedgerView): boolean {
  const n = normalizer.normalize(record);
  if (!n.ok) return false;
  return n.events.some((e) => e.kind === 'change' && ledger.blocks(e.table, normalizer.keyIdOf(e), encodePosition(e.position.tuple)));
}

/** Runs records through the ingest again, without those the erase ledger refuses; true when none failed. */
async function reingest(report: MutableReport, records: readonly RawRecord[], deps: Pick<DlqReplayDeps, 'ingest' | 'ledger'>): Promise<boolean> {
  const { ingest, ledger } = deps;
  const group = ledger === null ? records : records.filter((r) => !erasedByLedger(r, ingest.normalizer, ledger));
  report.erased += records.length - group.length;
  if (group.length === 0) return true;
  const result = await processBatch(group, ingest);
  const s = result.summary;
  report.ingest.applied += s.applied;
  report.ingest.stale += s.stale;
  report.ingest.duplicates += s.duplicates;
  report.ingest.quarantined += s.quarantined;
  report.ingest.failed += s.failed;
  report.ingest.writeUnits += s.writeUnits;
  report.ingest.s3Puts += s.s3Puts;
  return result.batchItemFailures.length === 0;
}

/** A batch that carried its records: re-ingest every group. */
async function replayRecords(report: MutableReport, groups: readonly (readonly RawRecord[])[], deps: DlqReplayDeps): Promise<boolean> {
  report.reingested++;
  let ok = true;
  for (const group of groups) {
    report.records += group.length;
    if (!(await reingest(report, group, deps))) ok = false;
  }
  return ok;
}

/** Records that never reached raw (landing kept failing) may still be in the stream: re-ingests them; returns how many and whether they succeeded. */
async function recoverFromStream(report: MutableReport, range: BatchRange, records: readonly RawRecord[], deps: DlqReplayDeps): Promise<{ found: number; ok: boolean }> {
  if (!deps.kinesis || (range.batchSize !== null && records.length >= range.batchSize)) return { found: 0, ok: true };
  const inRaw = new Set(records.map((r) => r.transport.sequence));
  const missing = (await readRangeFromStream(deps.kinesis, range)).filter((r) => !inRaw.has(r.transport.sequence));
  if (missing.length === 0) return { found: 0, ok: true };
  report.fromStream += missing.length;
  report.records += missing.length;
  return { found: missing.length, ok: await reingest(report, missing, deps) };
}

/** A batch that named a range of a shard: replay it from raw, then from the stream what raw lacks. */
async function replayRange(report: MutableReport, range: BatchRange, deps: DlqReplayDeps): Promise<boolean> {
  report.fromRaw++;
  const records = await findRangeInRaw(deps.s3, deps.config, range);
  report.records += records.length;
  const result = await deps.engine.replay(records, { tables: deps.config.tables.map((t) => t.source) });
  addTally(report.replay, result.tally);
  let ok = result.failures.length === 0;
  const recovered = await recoverFromStream(report, range, records, deps);
  if (!recovered.ok) ok = false;
  const found = records.length + recovered.found;
  if (range.batchSize !== null && found < range.batchSize) {
    report.missing += range.batchSize - found;
    ok = false;
  }
  return ok;
}

/** Replays every failed batch; acknowledges (deletes) the SQS messages of those that fully succeeded. */
export async function replayFailedBatches(items: readonly DlqItem[], deps: DlqReplayDeps): Promise<DlqReplayReport> {
  const report: MutableReport = {
    batches: items.length,
    reingested: 0,
    fromRaw: 0,
    fromStream: 0,
    records: 0,
    erased: 0,
    missing: 0,
    failedBatches: 0,
    acknowledged: 0,
    ingest: { applied: 0, stale: 0, duplicates: 0, quarantined: 0, failed: 0, writeUnits: 0, s3Puts: 0 },
    replay: emptyTally(),
  };
  let done = 0;
  for (const item of items) {
    const ok = item.batch.kind === 'records' ? await replayRecords(report, item.batch.groups, deps) : await replayRange(report, item.batch.range, deps);
    if (ok && item.ack) {
      await item.ack();
      report.acknowledged++;
    }
    if (!ok) report.failedBatches++;
    deps.onBatch?.(++done, items.length);
  }
  return report;
}
