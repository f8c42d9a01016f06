/**
 * Records as the ingest gets them from one Kinesis shard, for the integration tests that call
 * `processBatch` directly: sequence numbers 1, 2, … in the order the records are made (20 digits),
 * each arriving a second before it is made.
 *
 *   const feed = new KinesisFeed('life');
 *   await processBatch(feed.records(history.events), deps);
 */
import type { RawRecord } from '../../functions/core/normalize.js';
import type { PgEvent } from './debezium.js';

export class KinesisFeed {
  private sequence = 1;

  constructor(private readonly stream: string) {}

  /** The records of `events`, each keyed by its partition key. */
  records(events: readonly PgEvent[]): RawRecord[] {
    return events.map((e) => this.record(e.value, Buffer.from(e.partitionKey), e.partitionKey));
  }

  /** Records of raw message texts with no key, partition key `x` (control messages: heartbeats, resolved timestamps). */
  unkeyed(values: readonly string[]): RawRecord[] {
    return values.map((v) => this.record(v, null, 'x'));
  }

  private record(value: string, key: Buffer | null, partitionKey: string): RawRecord {
    return {
      value: Buffer.from(value),
      key,
      topic: null,
      headers: {},
      transport: { kind: 'kinesis', stream: this.stream, shard: 'shardId-000000000000', sequence: String(this.sequence++).padStart(20, '0'), partitionKey, arrivalTime: Date.now() - 1000 },
    };
  }
}
