/**
 * Failed batches from the event source mapping's on-failure destinations, read back for
 * `tidemark replay --from-dlq`. Three places, two shapes:
 *
 * - an S3 on-failure object (AWS), or a line of the local runner's on-failure file: Lambda's
 *   invocation record with the whole batch, e.g.
 *     {"requestContext": {"condition": "RetryAttemptsExhausted", …}, "version": "1.0",
 *      "KinesisBatchInfo": {"shardId": "shardId-000000000001", "startSequenceNumber": "4960…",
 *        "endSequenceNumber": "4960…", "approximateArrivalOfFirstRecord": "2019-11-14T00:38:04.835Z",
 *        "approximateArrivalOfLastRecord": "…", "batchSize": 500, "streamArn": "arn:aws:kinesis:…:stream/s"},
 *      "payload": "{\"Records\": [ …the Kinesis event… ]}"}
 *   The records never reached raw, so they go through the ingest path again (land, then apply).
 * - an SQS on-failure message: the same record without `payload` (shard and sequence range only).
 *   Its records are looked up in raw by shard and sequence and replayed from there.
 * The first local runner wrote `{stream, shard, startSequence, endSequence}` lines: read as ranges.
 */
import type { RawRecord } from '../core/normalize.js';
import { recordsFromKinesis, recordsFromMsk } from '../adapters/records.js';
import { type PayloadEvent, payloadEvent } from '../adapters/on-failure.js';

/** `KinesisBatchInfo` of Lambda's on-failure record: the failed batch's shard and sequence range. */
export interface KinesisBatchInfo {
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly approximateArrivalOfFirstRecord: string;
  readonly approximateArrivalOfLastRecord: string;
  readonly batchSize: number;
  readonly streamArn: string;
}

/** Lambda's on-failure record of a Kinesis batch, as the S3 destination writes it (the SQS form lacks `payload`). */
export interface OnFailureRecord {
  readonly requestContext: {
    readonly requestId: string;
    readonly functionArn: string;
    /** Why the batch was given up: retries exhausted, or records too old. */
    readonly condition: 'RetryAttemptsExhausted' | 'RecordAgeExceeded';
    readonly approximateInvokeCount: number;
  };
  readonly responseContext: { readonly statusCode: number; readonly executedVersion: string; readonly functionError?: string };
  readonly version: '1.0';
  readonly timestamp: string;
  readonly KinesisBatchInfo: KinesisBatchInfo;
  /** The invocation event as JSON text: `{"Records": [...]}` with every record's base64 data. */
  readonly payload: string;
}

export type { PayloadEvent } from '../adapters/on-failure.js';

export interface BatchRange {
  /** Stream name (from the ARN) or topic; null when the descriptor does not say. */
  readonly stream: string | null;
  readonly shard: string;
  readonly startSequence: string;
  readonly endSequence: string;
  readonly firstArrival: number | null;
  readonly lastArrival: number | null;
  /** Records in the failed batch, when known. */
  readonly batchSize: number | null;
}

export type FailedBatch =
  | {
      readonly kind: 'records';
      readonly source: string;
      readonly range: BatchRange | null;
      /** The invocation event of the payload, as Lambda delivered it (redelivered whole by the local runner's tests). */
      readonly event: PayloadEvent;
      readonly groups: readonly (readonly RawRecord[])[];
    }
  | { readonly kind: 'range'; readonly source: string; readonly range: BatchRange };

export interface DlqProblem {
  readonly source: string;
  readonly detail: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const time = (v: unknown): number | null => {
  if (typeof v !== 'string') return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
};
const streamOfArn = (arn: string | null): string | null => (arn === null ? null : (arn.split('/')[1] ?? arn));

function rangeOf(info: Record<string, unknown>): BatchRange | null {
  const shard = str(info.shardId);
  const start = str(info.startSequenceNumber);
  const end = str(info.endSequenceNumber);
  if (shard === null || start === null || end === null) return null;
  return {
    stream: streamOfArn(str(info.streamArn)),
    shard,
    startSequence: start,
    endSequence: end,
    firstArrival: time(info.approximateArrivalOfFirstRecord),
    lastArrival: time(info.approximateArrivalOfLastRecord),
    batchSize: typeof info.batchSize === 'number' ? info.batchSize : null,
  };
}

export { payloadEvent } from '../adapters/on-failure.js';

/** Reads one on-failure document (already JSON-parsed). */
export function parseFailedBatch(doc: unknown, source: string): FailedBatch | DlqProblem {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { source, detail: 'not a JSON object' };
  const d = doc as Record<string, unknown>;
  const info = [d.KinesisBatchInfo, d.KafkaBatchInfo].find((x): x is Record<string, unknown> => typeof x === 'object' && x !== null);
  const range = info ? rangeOf(info) : null;
  if ('payload' in d && d.payload !== undefined && d.payload !== null) {
    const event = payloadEvent(d.payload);
    if (event === null) return { source, detail: 'payload is not a Kinesis or MSK event' };
    const groups = event.source === 'kinesis' ? [recordsFromKinesis(event.event)] : recordsFromMsk(event.event);
    return { kind: 'records', source, range, event, groups };
  }
  if (range) return { kind: 'range', source, range };
  // The first local runner's descriptor.
  const shard = str(d.shard);
  const start = str(d.startSequence);
  const end = str(d.endSequence);
  if (shard !== null && start !== null && end !== null) {
    return { kind: 'range', source, range: { stream: str(d.stream), shard, startSequence: start, endSequence: end, firstArrival: null, lastArrival: null, batchSize: null } };
  }
  return { source, detail: 'neither a Lambda on-failure record (KinesisBatchInfo, payload) nor a {shard, startSequence, endSequence} descriptor' };
}

/** Parses a JSON Lines on-failure file (the local runner's). */
export function parseFailedBatchLines(text: string, file: string): { batches: FailedBatch[]; problems: DlqProblem[] } {
  const batches: FailedBatch[] = [];
  const problems: DlqProblem[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const source = `${file}:${i + 1}`;
    let doc: unknown;
    try {
      doc = JSON.parse(line);
    } catch {
      problems.push({ source, detail: 'not JSON' });
      return;
    }
    const parsed = parseFailedBatch(doc, source);
    if ('kind' in parsed) batches.push(parsed);
    else problems.push(parsed);
  });
  return { batches, problems };
}

/** Compares decimal sequence numbers (Kinesis: up to 128 digits; Kafka offsets). */
export function compareSequence(a: string, b: string): number {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether a record's transport falls inside a failed batch's range. */
export function inBatchRange(range: BatchRange, t: { stream: string; shard: string; sequence: string }): boolean {
  if (range.stream !== null && t.stream !== range.stream) return false;
  if (t.shard !== range.shard) return false;
  return compareSequence(t.sequence, range.startSequence) >= 0 && compareSequence(t.sequence, range.endSequence) <= 0;
}
