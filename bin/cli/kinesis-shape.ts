/** Builds Lambda-shaped Kinesis and MSK events, so local runs go through the handler's own code path. */
import type { KinesisStreamEvent, KinesisStreamRecord, MSKEvent } from 'aws-lambda';

export interface ShapedRecord {
  readonly data: Uint8Array;
  readonly partitionKey: string;
  readonly sequenceNumber: string;
  readonly arrival: Date;
}

export function kinesisEvent(stream: string, shardId: string, records: readonly ShapedRecord[], region = 'us-east-1'): KinesisStreamEvent {
  return {
    Records: records.map(
      (r): KinesisStreamRecord => ({
        awsRegion: region,
        eventID: `${shardId}:${r.sequenceNumber}`,
        eventName: 'aws:kinesis:record',
        eventSource: 'aws:kinesis',
        eventSourceARN: `arn:aws:kinesis:${region}:000000000000:stream/${stream}`,
        eventVersion: '1.0',
        invokeIdentityArn: 'arn:aws:iam::000000000000:role/tidemark-local',
        kinesis: {
          approximateArrivalTimestamp: r.arrival.getTime() / 1000,
          data: Buffer.from(r.data).toString('base64'),
          kinesisSchemaVersion: '1.0',
          partitionKey: r.partitionKey,
          sequenceNumber: r.sequenceNumber,
        },
      }),
    ),
  };
}

export interface KafkaRecordIn {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly timestamp: number;
}

export function mskEvent(records: readonly KafkaRecordIn[]): MSKEvent {
  const grouped: MSKEvent['records'] = {};
  for (const r of records) {
    const id = `${r.topic}-${r.partition}`;
    const list = grouped[id] ?? [];
    grouped[id] = list;
    list.push({
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      timestampType: 'CREATE_TIME',
      key: r.key ? Buffer.from(r.key).toString('base64') : (undefined as unknown as string),
      value: r.value ? Buffer.from(r.value).toString('base64') : '',
      headers: [],
    });
  }
  return { eventSource: 'aws:kafka', eventSourceArn: 'arn:aws:kafka:us-east-1:000000000000:cluster/local/0', bootstrapServers: 'local', records: grouped };
}
