/**
 * Debezium messages that are not row changes: transaction metadata (BEGIN/END on
 * `<prefix>.transaction`), heartbeats (`__debezium-heartbeat.<prefix>`, value `{ts_ms}`) and
 * PostgreSQL logical-decoding messages (`op:"m"`). They are kept in raw, never applied as rows.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import type { ControlEvent, InboundMessage } from '../types.js';
import { epochMsOrNull, idText } from './debezium-fields.js';
import { pgMessagePosition } from './debezium-positions.js';

/** Format name of control messages that do not say which connector wrote them. */
export const DEBEZIUM_CONTROL_FORMAT = 'debezium';

/** True for a transaction-metadata value `{status: BEGIN|END, id, event_count, data_collections, ts_ms}`. */
export function isTransactionMetadata(value: JsonValue | null): value is JsonObject {
  return (
    isJsonObject(value) &&
    (value.status === 'BEGIN' || value.status === 'END') &&
    typeof value.id === 'string' &&
    ('event_count' in value || 'data_collections' in value)
  );
}

/** True for a heartbeat: a message on a `__debezium-heartbeat*` topic, or a value that is exactly `{ts_ms}`. */
export function isHeartbeat(message: InboundMessage): boolean {
  const value = message.value;
  if (!isJsonObject(value)) return false;
  if (message.topic?.startsWith('__debezium-heartbeat')) return true;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'ts_ms';
}

/**
 * The transaction id used to group a transaction's events. PostgreSQL writes `"<txId>:<last LSN>"`
 * in transaction metadata, with an LSN that differs between BEGIN, data events and END, while its
 * data events carry `source.txId` alone: so `"769:33228600"` → `"769"`. Other connectors' ids
 * (MySQL GTID `uuid:n`, SQL Server `xxxxxxxx:xxxxxxxx:xxxx`, Oracle XID) are kept whole.
 */
export function transactionGroupId(id: string): string {
  const m = /^(\d+):\d+$/.exec(id);
  return m ? m[1]! : id;
}

/** Decodes a BEGIN/END transaction-metadata value into a `tx-begin`/`tx-end` control event. */
export function decodeTransaction(value: JsonObject): ControlEvent {
  const id = value.id as string;
  const detail: JsonObject = { status: value.status as string, id };
  if (value.event_count !== null && value.event_count !== undefined) detail.eventCount = value.event_count;
  if (Array.isArray(value.data_collections)) detail.dataCollections = value.data_collections;
  return {
    kind: 'control',
    format: DEBEZIUM_CONTROL_FORMAT,
    control: value.status === 'BEGIN' ? 'tx-begin' : 'tx-end',
    table: null,
    position: null,
    txid: transactionGroupId(id),
    commitTs: epochMsOrNull(value.ts_ms),
    detail,
  };
}

/**
 * Decodes a heartbeat. Its `ts_ms` is the connector's clock, not a commit time, so it goes in
 * `detail.tsMs` and `commitTs` stays null. A heartbeat carries no position.
 */
export function decodeHeartbeat(message: InboundMessage): ControlEvent {
  const value = isJsonObject(message.value) ? message.value : {};
  const detail: JsonObject = {};
  if (value.ts_ms !== undefined) detail.tsMs = value.ts_ms;
  if (isJsonObject(message.key)) detail.key = message.key;
  return {
    kind: 'control',
    format: DEBEZIUM_CONTROL_FORMAT,
    control: 'heartbeat',
    table: null,
    position: null,
    txid: null,
    commitTs: null,
    detail,
  };
}

/** Decodes an `op:"m"` logical-decoding message (`message:{prefix, content}`) into a `message` control event. */
export function decodeMessageEvent(format: string, value: JsonObject, source: JsonObject): ControlEvent {
  const message = isJsonObject(value.message) ? value.message : {};
  const detail: JsonObject = {};
  if (message.prefix !== undefined) detail.prefix = message.prefix;
  if (message.content !== undefined) detail.content = message.content;
  return {
    kind: 'control',
    format,
    control: 'message',
    table: null,
    position: source.connector === 'postgresql' ? pgMessagePosition(source) : null,
    txid: idText(source.txId),
    commitTs: epochMsOrNull(source.ts_ms),
    detail,
  };
}
