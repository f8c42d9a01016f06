/**
 * Failed batches with their whole records, in the shape Lambda writes to an Amazon S3 on-failure
 * destination of a Kinesis event source mapping: invocation metadata (`requestContext`,
 * `responseContext`, `KinesisBatchInfo`) plus `payload`, the invocation event itself as JSON text,
 * which holds every record's data. `tidemark run` appends one such object per line to
 * `.tidemark/on-failure/<stream>.jsonl`, so one reader (`parseFailedBatch` in
 * functions/replay/dlq.ts, which `replay --from-dlq` uses) handles both the local file and the
 * objects Lambda puts in S3, and the records can be applied again.
 */
import { randomUUID } from 'node:crypto';
import type { KinesisStreamEvent } from 'aws-lambda';
import { TidemarkError } from '../../functions/core/errors.js';
import { type OnFailureRecord, parseFailedBatch } from '../../functions/replay/dlq.js';

const iso = (epochSeconds: number | undefined) => new Date(Math.round((epochSeconds ?? 0) * 1000)).toISOString();

/** The on-failure record of a Kinesis event that kept failing. */
export function onFailureRecord(event: KinesisStreamEvent, attempts: number, functionError: string | undefined, now = new Date()): OnFailureRecord {
  const records = event.Records;
  const first = records[0];
  const last = records[records.length - 1];
  return {
    requestContext: {
      requestId: randomUUID(),
      functionArn: 'arn:aws:lambda:local:000000000000:function:tidemark-run',
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: attempts,
    },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', ...(functionError !== undefined ? { functionError } : {}) },
    version: '1.0',
    timestamp: now.toISOString(),
    KinesisBatchInfo: {
      shardId: first?.eventID.split(':')[0] ?? '',
      startSequenceNumber: first?.kinesis.sequenceNumber ?? '',
      endSequenceNumber: last?.kinesis.sequenceNumber ?? '',
      approximateArrivalOfFirstRecord: iso(first?.kinesis.approximateArrivalTimestamp),
      approximateArrivalOfLastRecord: iso(last?.kinesis.approximateArrivalTimestamp),
      batchSize: records.length,
      streamArn: first?.eventSourceARN ?? '',
    },
    payload: JSON.stringify(event),
  };
}

/**
 * Reads one on-failure record of a Kinesis batch (a line of the local file, or an object from the S3
 * destination) with the runtime's reader, `parseFailedBatch` of `replay --from-dlq`: what this
 * accepts, the replay accepts. Throws, naming why, on anything without the batch info and the records.
 */
export function parseOnFailureRecord(text: string): { record: OnFailureRecord; event: KinesisStreamEvent } {
  const doc: unknown = JSON.parse(text);
  const parsed = parseFailedBatch(doc, 'on-failure record');
  if (!('kind' in parsed)) throw new TidemarkError(`not an on-failure record: ${parsed.detail}`);
  const context = parsed.range ? { shard: parsed.range.shard, sequence: parsed.range.startSequence } : {};
  if (parsed.kind !== 'records') throw new TidemarkError('not an on-failure record with its records: no "payload" (the invocation event)', { context });
  if (parsed.range === null) throw new TidemarkError('not an on-failure record of a Kinesis batch: no "KinesisBatchInfo"');
  if (parsed.event.source !== 'kinesis') throw new TidemarkError('the on-failure payload is not a Kinesis event', { context });
  return { record: doc as OnFailureRecord, event: parsed.event.event };
}
