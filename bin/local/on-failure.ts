/**
 * Failed batches with their whole records, in the shape Lambda writes to an Amazon S3 on-failure
 * destination of a Kinesis event source mapping: invocation metadata (`requestContext`,
 * `responseContext`, `KinesisBatchInfo`) plus `payload`, the invocation event itself as JSON text,
 * which holds every record's data. `tidemark run` appends one such object per line to
 * `.tidemark/on-failure/<stream>.jsonl`, so one reader ({@link parseOnFailureRecord}) handles both the
 * local file and the objects Lambda puts in S3, and the records can be applied again.
 */
import { randomUUID } from 'node:crypto';
import type { KinesisStreamEvent } from 'aws-lambda';

export interface KinesisBatchInfo {
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly approximateArrivalOfFirstRecord: string;
  readonly approximateArrivalOfLastRecord: string;
  readonly batchSize: number;
  readonly streamArn: string;
}

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

/** Reads one on-failure record (a line of the local file, or an object from the S3 destination). */
export function parseOnFailureRecord(text: string): { record: OnFailureRecord; event: KinesisStreamEvent } {
  const record = JSON.parse(text) as OnFailureRecord;
  if (typeof record.payload !== 'string' || typeof record.KinesisBatchInfo !== 'object') {
    throw new Error('not an on-failure record: expected "payload" (the invocation event) and "KinesisBatchInfo"');
  }
  const event = JSON.parse(record.payload) as KinesisStreamEvent;
  if (!Array.isArray(event.Records)) throw new Error('on-failure payload holds no "Records"');
  return { record, event };
}
