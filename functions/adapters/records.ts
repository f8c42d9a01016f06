/**
 * Lambda event shapes → RawRecord. Kinesis: one shard per batch, data base64, partition key as the
 * message key. MSK: records grouped by topic-partition, base64 key and value, headers as byte arrays.
 */
import type { KinesisStreamEvent, MSKEvent } from 'aws-lambda';
import type { RawRecord } from '../core/normalize.js';

const fromBase64 = (s: string | null | undefined): Uint8Array | null => (s === null || s === undefined ? null : Buffer.from(s, 'base64'));

export function recordsFromKinesis(event: KinesisStreamEvent): RawRecord[] {
  return event.Records.map((r) => ({
    value: fromBase64(r.kinesis.data),
    key: r.kinesis.partitionKey ? Buffer.from(r.kinesis.partitionKey, 'utf8') : null,
    topic: null,
    headers: {},
    transport: {
      kind: 'kinesis',
      stream: r.eventSourceARN.split('/').pop() ?? r.eventSourceARN,
      shard: r.eventID.split(':')[0] ?? 'shard',
      sequence: r.kinesis.sequenceNumber,
      partitionKey: r.kinesis.partitionKey,
      arrivalTime: Math.round(r.kinesis.approximateArrivalTimestamp * 1000),
    },
  }));
}

function mskHeaders(headers: MSKEvent['records'][string][number]['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of headers ?? []) for (const [k, v] of Object.entries(h)) out[k] = Buffer.from(v as number[]).toString('utf8');
  return out;
}

/** One topic-partition of an MSK batch: its key in the event's `records` map (`<topic>-<partition>`) and its records. */
export interface MskPartition {
  readonly key: string;
  readonly records: RawRecord[];
}

/** MSK batches span partitions; each partition is returned as its own group, in offset order. */
export function mskPartitions(event: MSKEvent): MskPartition[] {
  return Object.entries(event.records).map(([key, records]) => ({
    key,
    records: records.map((r) => ({
      value: fromBase64(r.value),
      key: fromBase64((r as { key?: string }).key),
      topic: r.topic,
      headers: mskHeaders(r.headers),
      transport: {
        kind: 'kafka' as const,
        stream: r.topic,
        shard: String(r.partition),
        sequence: String(r.offset),
        partitionKey: null,
        arrivalTime: r.timestamp,
      },
    })),
  }));
}

/** The records of each partition of an MSK batch. */
export function recordsFromMsk(event: MSKEvent): RawRecord[][] {
  return mskPartitions(event).map((p) => p.records);
}
