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
 * SQS messages are deleted only after their batch was replayed without failures; S3 objects and
 * file lines are left in place (replaying them again is a no-op).
 */
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../commons/config.js';
import type { RawRecord } from '../core/normalize.js';
import { allTableSegments, decodeTableSegment, parseRawObject, parseRawObjectKey, RawRecordSet, readRawObject } from '../adapters/raw-reader.js';
import type { IngestDeps } from '../ingest/process-batch.js';
import { processBatch } from '../ingest/process-batch.js';
import { addTally, emptyTally, type ReplayEngine, type ReplayTally } from './engine.js';
import { type BatchRange, compareSequence, type DlqProblem, type FailedBatch, inBatchRange, parseFailedBatch } from './dlq.js';

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
  const segments = await allTableSegments(s3, bucket, config.raw.prefix);
  const shardSegment = range.shard.replace(/[^A-Za-z0-9._=-]/g, '_');
  const set = new RawRecordSet();
  for (const segment of segments) {
    for (const listPrefix of hourPrefixes(`${config.raw.prefix}table=${segment}/`, range)) {
      let token: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: listPrefix, ContinuationToken: token }));
        for (const o of page.Contents ?? []) {
          const parts = o.Key ? parseRawObjectKey(config.raw.prefix, o.Key) : null;
          if (!o.Key || !parts) continue;
          const name = decodeTableSegment(parts.name);
          if (!parts.name.startsWith(`${shardSegment}-`) && !name.startsWith(`${range.shard}-`)) continue;
          set.add(parseRawObject(await readRawObject(s3, bucket, o.Key), o.Key));
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    }
  }
  return set
    .records()
    .map((r) => r.record)
    .filter((r) => inBatchRange(range, r.transport));
}

function hourPrefixes(segmentPrefix: string, range: BatchRange): string[] {
  if (range.firstArrival === null) return [segmentPrefix];
  const from = Math.floor((range.firstArrival - HOUR_MS) / HOUR_MS);
  const to = Math.floor((range.lastArrival ?? range.firstArrival) / HOUR_MS);
  const out: string[] = [];
  for (let h = from; h <= to && out.length < 72; h++) {
    const iso = new Date(h * HOUR_MS).toISOString();
    out.push(`${segmentPrefix}dt=${iso.slice(0, 10)}/hr=${iso.slice(11, 13)}/`);
  }
  return out;
}

/**
 * The records of a range still in the Kinesis stream (within its retention): read from the range's
 * first sequence number until past its last. Empty when the stream no longer has them.
 */
export async function readRangeFromStream(kinesis: KinesisClient, range: BatchRange, maxCalls = 50): Promise<RawRecord[]> {
  if (range.stream === null) return [];
  let iterator: string | undefined;
  try {
    iterator = (
      await kinesis.send(new GetShardIteratorCommand({ StreamName: range.stream, ShardId: range.shard, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: range.startSequence }))
    ).ShardIterator;
  } catch {
    // Trimmed, or the stream is gone: only raw could have held these records.
    return [];
  }
  const out: RawRecord[] = [];
  for (let calls = 0; iterator && calls < maxCalls; calls++) {
    const res = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    for (const r of res.Records ?? []) {
      const sequence = r.SequenceNumber ?? '';
      if (compareSequence(sequence, range.endSequence) > 0) return out;
      out.push({
        value: r.Data ?? null,
        key: r.PartitionKey ? Buffer.from(r.PartitionKey, 'utf8') : null,
        topic: null,
        headers: {},
        transport: { kind: 'kinesis', stream: range.stream, shard: range.shard, sequence, partitionKey: r.PartitionKey ?? null, arrivalTime: r.ApproximateArrivalTimestamp?.getTime() ?? Date.now() },
      });
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
  /** Records of a range that raw does not hold. */
  readonly missing: number;
  readonly failedBatches: number;
  readonly acknowledged: number;
  readonly ingest: { applied: number; stale: number; duplicates: number; quarantined: number; failed: number; writeUnits: number; s3Puts: number };
  readonly replay: ReplayTally;
}

/** Replays every failed batch; acknowledges (deletes) the SQS messages of those that fully succeeded. */
export async function replayFailedBatches(
  items: readonly DlqItem[],
  deps: {
    readonly config: TidemarkConfig;
    readonly s3: S3Client;
    readonly ingest: IngestDeps;
    readonly engine: ReplayEngine;
    /** When given, records of a range that raw lacks are read from the stream (if still retained). */
    readonly kinesis?: KinesisClient;
    readonly onBatch?: (done: number, total: number) => void;
  },
): Promise<DlqReplayReport> {
  const report = {
    batches: items.length,
    reingested: 0,
    fromRaw: 0,
    fromStream: 0,
    records: 0,
    missing: 0,
    failedBatches: 0,
    acknowledged: 0,
    ingest: { applied: 0, stale: 0, duplicates: 0, quarantined: 0, failed: 0, writeUnits: 0, s3Puts: 0 },
    replay: emptyTally(),
  };
  const tables = deps.config.tables.map((t) => t.source);
  let done = 0;
  for (const item of items) {
    let ok = true;
    const reingest = async (group: readonly RawRecord[]) => {
      const result = await processBatch(group, deps.ingest);
      const s = result.summary;
      report.ingest.applied += s.applied;
      report.ingest.stale += s.stale;
      report.ingest.duplicates += s.duplicates;
      report.ingest.quarantined += s.quarantined;
      report.ingest.failed += s.failed;
      report.ingest.writeUnits += s.writeUnits;
      report.ingest.s3Puts += s.s3Puts;
      return result.batchItemFailures.length === 0;
    };
    if (item.batch.kind === 'records') {
      report.reingested++;
      for (const group of item.batch.groups) {
        report.records += group.length;
        if (!(await reingest(group))) ok = false;
      }
    } else {
      report.fromRaw++;
      const range = item.batch.range;
      const records = await findRangeInRaw(deps.s3, deps.config, range);
      report.records += records.length;
      const result = await deps.engine.replay(records, { tables });
      addTally(report.replay, result.tally);
      if (result.failures.length > 0) ok = false;
      let found = records.length;
      if (deps.kinesis && (range.batchSize === null || found < range.batchSize)) {
        // Records that never reached raw (landing kept failing): the stream may still hold them.
        const inRaw = new Set(records.map((r) => r.transport.sequence));
        const missing = (await readRangeFromStream(deps.kinesis, range)).filter((r) => !inRaw.has(r.transport.sequence));
        if (missing.length > 0) {
          report.fromStream += missing.length;
          report.records += missing.length;
          found += missing.length;
          if (!(await reingest(missing))) ok = false;
        }
      }
      if (range.batchSize !== null && found < range.batchSize) {
        report.missing += range.batchSize - found;
        ok = false;
      }
    }
    if (ok && item.ack) {
      await item.ack();
      report.acknowledged++;
    }
    if (!ok) report.failedBatches++;
    deps.onBatch?.(++done, items.length);
  }
  return report;
}
