/**
 * Rows of the history table for the SQL tests, with every column filled (what compaction writes),
 * so a test names only what it is about: table, key, position, op, hash and hour.
 *
 *   historyRow({ key: 1, position: 'a15', op: 'u', hour: H6 })
 */
import { encodePosition } from '../../functions/core/position.js';

export interface HistorySpec {
  readonly table?: string;
  /** The key's single value (key id `["<key>"]`); null for a truncate or a control. */
  readonly key?: number | string | null;
  readonly position?: string | null;
  readonly op?: string;
  readonly kind?: 'change' | 'control';
  readonly hash?: string | null;
  /** The compacted hour (its start, epoch ms). */
  readonly hour: number;
  readonly arrival?: number;
  readonly snapshot?: boolean;
  readonly beforeNull?: boolean;
  readonly partial?: boolean;
  readonly rawObject?: string;
  readonly sequence?: string;
  /** @default 'shardId-000000000000' */
  readonly shard?: string;
  readonly message?: string | null;
  readonly messageRef?: boolean;
}

/** A position from small integers: `pos(15)` = encodePosition([15n]). */
export const pos = (...n: number[]): string => encodePosition(n.map((x) => BigInt(x)));

export function historyRow(s: HistorySpec): Record<string, unknown> {
  const iso = new Date(s.hour).toISOString();
  const key = s.key === undefined ? 1 : s.key;
  const op = s.op ?? 'c';
  return {
    source_table: s.table ?? 'public.orders',
    key_id: key === null ? null : JSON.stringify([String(key)]),
    key_json: key === null ? null : JSON.stringify({ id: key }),
    position: s.position === undefined ? pos(1) : s.position,
    op: (s.kind ?? 'change') === 'change' ? op : null,
    kind: s.kind ?? 'change',
    control: null,
    format: 'debezium-postgresql',
    ordering: 'source',
    hash: s.hash === undefined ? `${op}-hash` : s.hash,
    commit_ts: s.hour,
    arrival_ts: s.arrival ?? s.hour + 60_000,
    txid: null,
    is_snapshot: s.snapshot ?? op === 'r',
    before_null: s.beforeNull ?? false,
    partial: s.partial ?? false,
    transport_kind: 'kinesis',
    stream: 'orders-stream',
    shard: s.shard ?? 'shardId-000000000000',
    sequence: s.sequence ?? '1',
    partition_key: 'pk',
    topic: null,
    headers: {},
    message_key: 'pk',
    message_key_base64: null,
    message: s.messageRef ? null : s.message === undefined ? '{}' : s.message,
    message_base64: null,
    message_ref: s.messageRef ?? false,
    raw_object: s.rawObject ?? `s3://bench-bucket/raw/${iso.slice(0, 13)}.jsonl.gz`,
    dt: iso.slice(0, 10),
    hr: new Date(s.hour).getUTCHours(),
  };
}
