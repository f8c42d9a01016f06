/** replay-select's output rows (functions/replay/bucket-merge.ts `ReplayRow`) built from a test history's events. */
import type { ReplayRow } from '../../functions/replay/bucket-merge.js';
import type { PgEvent } from './debezium.js';

/** Where and when a row's record landed: the Kinesis coordinates and the raw object. */
export interface RowLanding {
  readonly keyId: string;
  readonly arrival: number;
  readonly sequence: string;
  readonly rawObject: string;
  readonly stream?: string;
  readonly shard?: string;
  /** The key as JSON text (replay-select's `key_json`), where a test's rows carry it. */
  readonly keyJson?: string;
}

/** One Debezium PostgreSQL event of `public.<table>` as replay-select writes it. */
export function replayRowOf(e: PgEvent, at: RowLanding): ReplayRow & { key_json?: string } {
  return {
    source_table: e.table,
    key_id: at.keyId,
    ...(at.keyJson !== undefined ? { key_json: at.keyJson } : {}),
    position: e.position,
    op: e.op,
    arrival_ts: at.arrival,
    transport_kind: 'kinesis',
    stream: at.stream ?? 's',
    shard: at.shard ?? 'shardId-0',
    sequence: at.sequence,
    partition_key: e.partitionKey,
    topic: null,
    headers: {},
    message_key: e.partitionKey,
    message_key_base64: null,
    message: e.value,
    message_base64: null,
    raw_object: at.rawObject,
  };
}
