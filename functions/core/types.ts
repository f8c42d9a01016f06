/**
 * The normalized change event: every wire format is turned into this shape before anything else
 * touches it. docs/formats.md describes how each format maps onto it.
 */
import type { JsonObject, JsonValue } from './json.js';
import type { FormatName } from './formats/names.js';
import type { OrderingStrength, Position } from './position.js';

/** `c` insert, `u` update, `d` delete, `r` snapshot read, `t` truncate: the row ops, listed once. */
export const ROW_OPS = ['c', 'u', 'd', 'r', 't'] as const;
export type RowOp = (typeof ROW_OPS)[number];

/** Narrows a string to a row op without a cast: `isRowOp(value.op) ? value.op : …`. */
export function isRowOp(value: unknown): value is RowOp {
  return typeof value === 'string' && (ROW_OPS as readonly string[]).includes(value);
}

/**
 * Non-row messages: kept in raw, never applied as rows. `chunked` and `fragment` are the two halves
 * of a split Aurora DSQL record (the main record, and one piece of an image): they become a row only
 * once reassembled (formats/aurora-dsql-fragments.ts).
 */
export const CONTROL_KINDS = ['tx-begin', 'tx-end', 'heartbeat', 'resolved', 'schema', 'message', 'kafka-tombstone', 'control', 'chunked', 'fragment'] as const;
export type ControlKind = (typeof CONTROL_KINDS)[number];

export type Row = JsonObject;
export type Key = JsonObject;

/** Only the changed columns: MongoDB `updateDescription`, changed-columns-only sources. */
export interface Patch {
  readonly set: Row;
  readonly unset: readonly string[];
}

export interface ChangeEvent {
  readonly kind: 'change';
  /** The format that decoded it, e.g. `debezium-postgresql`, `cockroachdb`. */
  readonly format: string;
  readonly op: RowOp;
  /** Source table as configured, e.g. `public.orders`. */
  readonly table: string;
  /** Primary-key columns and values. Always present for deletes. `{}` for truncate. */
  readonly key: Key;
  /** Row images exactly as delivered (placeholder markers included), or null. */
  readonly before: Row | null;
  readonly after: Row | null;
  /** Set when the event carries only changed columns; `after` is then null or a partial image. */
  readonly patch: Patch | null;
  /**
   * Columns of `after` (or `patch.set`) holding a decimal with more than 38 significant digits,
   * which DynamoDB numbers cannot hold exactly: the value is its exact decimal text (a string).
   * Absent or empty when there are none. See docs/formats.md, "Decimals".
   */
  readonly decimalText?: readonly string[];
  /** Columns of `after` whose value is an "unchanged, not carried" marker. They are not nulls. */
  readonly placeholders: readonly string[];
  readonly position: Position;
  readonly txid: string | null;
  /** Source commit time in epoch milliseconds; never the arrival or processing time. */
  readonly commitTs: number | null;
  /** True for bootstrap or re-snapshot reads. */
  readonly snapshot: boolean;
  /**
   * The event's place in its source transaction, when the format says it: Debezium's `transaction`
   * block (`provide.transaction.metadata`), DMS's transaction details. Absent otherwise.
   * core/transactions.ts reads it to apply a complete transaction whole.
   */
  readonly tx?: TxMember;
  /**
   * The schema of the `after` image as the message declares it (Debezium's JsonConverter
   * `{schema, payload}`: the `after` struct, with its `fields`), by reference. Absent when the
   * message carries no schema; schema drift then reads the row's shape (core/schema-drift.ts).
   */
  readonly rowSchema?: JsonObject;
}

/**
 * One event's membership in a source transaction.
 *
 *   Debezium: `transaction: {id: "769:33228700", total_order: 1, data_collection_order: 1}`
 *     → { id: "769", order: 1, collectionOrder: 1 }
 *   DMS:      `transaction-id: 1140, transaction-record-id: 1, prev-transaction-id: 1139,
 *              prev-transaction-record-id: 4` → { id: "1140", order: 1, collectionOrder: null,
 *              previous: { id: "1139", lastOrder: 4 } }
 */
export interface TxMember {
  /** The transaction id, as its transaction markers name it (PostgreSQL's LSN suffix dropped). */
  readonly id: string;
  /** 1-based place among all the transaction's events (`total_order`, DMS `transaction-record-id`). */
  readonly order: number | null;
  /** 1-based place among the transaction's events of this table (`data_collection_order`). */
  readonly collectionOrder: number | null;
  /** DMS: the transaction before this one, and the record id of its last record: it is complete. */
  readonly previous?: { readonly id: string; readonly lastOrder: number };
}

export interface ControlEvent {
  readonly kind: 'control';
  readonly format: string;
  readonly control: ControlKind;
  readonly table: string | null;
  readonly position: Position | null;
  readonly txid: string | null;
  readonly commitTs: number | null;
  /** Small structured facts, e.g. `{ resolved: "1735…" }` or `{ status: "END", eventCount: 3 }`. */
  readonly detail: JsonObject;
}

export type NormalizedEvent = ChangeEvent | ControlEvent;

/** Where a record came from on the transport. Kept in raw next to every message. */
export interface TransportMeta {
  readonly kind: 'kinesis' | 'kafka' | 'file';
  /** Kinesis stream name or Kafka topic. */
  readonly stream: string;
  /** Kinesis shard id or Kafka partition. */
  readonly shard: string;
  /** Kinesis sequence number or Kafka offset, as a decimal string. */
  readonly sequence: string;
  readonly partitionKey: string | null;
  /** Arrival time at the transport, epoch ms. */
  readonly arrivalTime: number;
}

/**
 * One delivered record, parsed but not yet interpreted. A Kafka message's key and value are
 * parsed JSON; `value === null` is a Kafka tombstone. Schema-wrapped (`{schema, payload}`)
 * messages are unwrapped before a decoder sees them; the schema is kept alongside.
 */
export interface InboundMessage {
  readonly key: JsonValue | null;
  readonly keySchema: JsonObject | null;
  readonly value: JsonValue | null;
  readonly valueSchema: JsonObject | null;
  /** Kafka topic, or the topic a record says it came from; null on plain Kinesis records. */
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly transport: TransportMeta;
}

export interface DecodeContext {
  /** Configured primary-key columns of a source table, or undefined if the table is not configured. */
  keyColumns(table: string): readonly string[] | undefined;
  /** The unchanged-value placeholder, default `__debezium_unavailable_value`. */
  readonly placeholder: string;
  /** The field name DMS uses for its before image (BeforeImageSettings.FieldName). */
  readonly dmsBeforeImageField: string;
  /** The only configured table, when exactly one is configured: names rows whose message does not. */
  readonly onlyTable?: string;
}

/**
 * One wire format. `detect` must be cheap and must not throw; `decode` throws `DecodeError`
 * (with a specific reason) for a message it recognizes but cannot use.
 */
export interface FormatDecoder {
  readonly name: FormatName;
  /** The ordering strength this format normally gives; events carry their own. */
  readonly ordering: OrderingStrength;
  /** One line for docs and error messages: what a message of this format looks like. */
  readonly shape: string;
  detect(message: InboundMessage): boolean;
  /**
   * Claims, as a last resort, a message no decoder's `detect` claimed: the plain-row envelopes
   * (Debezium `ExtractNewRecordState` default output, CockroachDB `envelope=row`), which have no
   * field of their own and are told apart by their key. A plain row is claimed only when it names
   * a configured table (by its topic or schema), or, when `ctx.onlyTable` is given, for that one
   * table: the Normalizer passes `onlyTable` only when the format is configured explicitly, so
   * that under `auto` an unknown object with a JSON key is `unknown-format`, not a row.
   * Cheap and never throws.
   */
  fallback?(message: InboundMessage, ctx: DecodeContext): boolean;
  decode(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[];
}
