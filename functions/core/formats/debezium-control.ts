/**
 * Debezium messages that are not row changes: transaction metadata (BEGIN/END on
 * `<prefix>.transaction`), heartbeats (`__debezium-heartbeat.<prefix>`, value `{ts_ms}`),
 * PostgreSQL logical-decoding messages (`op:"m"`) and schema-change records (the MySQL, SQL Server,
 * Oracle and Db2 schema-change topic `<prefix>`, value `{source, databaseName, schemaName, ddl,
 * tableChanges}`). They are kept in raw, never applied as rows.
 */
import { isJsonObject, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import type { ControlEvent, InboundMessage, TxMember } from '../types.js';
import { pgMessagePosition } from './debezium-positions.js';
import { controlEvent, epochMsOrNull, idText } from './kit.js';

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
  return m?.[1] ?? id;
}

/** A 1-based order of transaction metadata (int64, quoted as a string in the docs' examples), or null. */
export function txOrder(value: JsonValue | undefined): number | null {
  const n = toBigInt(value);
  return n === undefined || n < 1n || n > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(n);
}

/**
 * A data event's `transaction` block `{id, total_order, data_collection_order}` (present with
 * `provide.transaction.metadata=true`), as the event's membership, grouped by the same id its
 * BEGIN/END markers carry ({@link transactionGroupId}). Null when the block is absent or has no id.
 *
 *   {id: "769:33228700", total_order: 1, data_collection_order: 1} → {id: "769", order: 1, collectionOrder: 1}
 */
export function transactionMember(transaction: JsonValue | undefined): TxMember | null {
  if (!isJsonObject(transaction) || typeof transaction.id !== 'string' || transaction.id === '') return null;
  return { id: transactionGroupId(transaction.id), order: txOrder(transaction.total_order), collectionOrder: txOrder(transaction.data_collection_order) };
}

/** Decodes a BEGIN/END transaction-metadata value into a `tx-begin`/`tx-end` control event. */
export function decodeTransaction(value: JsonObject): ControlEvent {
  const id = typeof value.id === 'string' ? value.id : '';
  const status = value.status === 'BEGIN' ? 'BEGIN' : 'END';
  const detail: JsonObject = { status, id };
  if (value.event_count !== null && value.event_count !== undefined) detail.eventCount = value.event_count;
  if (Array.isArray(value.data_collections)) detail.dataCollections = value.data_collections;
  return controlEvent({
    format: DEBEZIUM_CONTROL_FORMAT,
    control: status === 'BEGIN' ? 'tx-begin' : 'tx-end',
    txid: transactionGroupId(id),
    commitTs: epochMsOrNull(value.ts_ms),
    detail,
  });
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
  return controlEvent({ format: DEBEZIUM_CONTROL_FORMAT, control: 'heartbeat', detail });
}

/** Decodes an `op:"m"` logical-decoding message (`message:{prefix, content}`) into a `message` control event. */
export function decodeMessageEvent(format: string, value: JsonObject, source: JsonObject): ControlEvent {
  const message = isJsonObject(value.message) ? value.message : {};
  const detail: JsonObject = {};
  if (message.prefix !== undefined) detail.prefix = message.prefix;
  if (message.content !== undefined) detail.content = message.content;
  return controlEvent({
    format,
    control: 'message',
    position: source.connector === 'postgresql' ? pgMessagePosition(source) : null,
    txid: idText(source.txId),
    commitTs: epochMsOrNull(source.ts_ms),
    detail,
  });
}

/**
 * True for a schema-change record: `{source, ddl, databaseName | tableChanges, …}` with no `op`.
 * SQL Server writes `ddl: null` (it has no DDL text), MySQL and Oracle the statement.
 */
export function isSchemaChange(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || !isJsonObject(value.source) || 'op' in value) return false;
  return (typeof value.ddl === 'string' || value.ddl === null) && ('databaseName' in value || Array.isArray(value.tableChanges));
}

/**
 * A table id of `tableChanges[].id`: quoted parts joined by dots, `"inventory"."customers"` (MySQL
 * `<db>.<table>`), `"testDB"."dbo"."customers"` (SQL Server `<catalog>.<schema>.<table>`). The table
 * is the last two parts, as the row events name it.
 */
export function schemaChangeTable(id: string): string | null {
  const parts = [...id.matchAll(/"((?:[^"]|"")*)"|([^."]+)/g)].map((m) => (m[1] === undefined ? (m[2] ?? '') : m[1].replaceAll('""', '"')));
  return parts.length >= 2 ? parts.slice(-2).join('.') : null;
}

/**
 * Decodes a schema-change record into one `schema` control event per changed table (the DDL text
 * and the change type in `detail`), or one with no table when the record lists none (e.g.
 * `CREATE DATABASE`). The status row keeps the last DDL per table.
 */
export function decodeSchemaChange(value: JsonObject): ControlEvent[] {
  const source = isJsonObject(value.source) ? value.source : {};
  const base: JsonObject = { ddl: typeof value.ddl === 'string' ? value.ddl : '' };
  if (typeof value.databaseName === 'string') base.databaseName = value.databaseName;
  if (typeof value.schemaName === 'string') base.schemaName = value.schemaName;
  const format = typeof source.connector === 'string' ? `debezium-${source.connector}` : DEBEZIUM_CONTROL_FORMAT;
  const commitTs = epochMsOrNull(source.ts_ms);
  const changes = Array.isArray(value.tableChanges) ? value.tableChanges.filter(isJsonObject) : [];
  const events: ControlEvent[] = [];
  for (const change of changes) {
    const table = typeof change.id === 'string' ? schemaChangeTable(change.id) : null;
    if (table === null) continue;
    const detail: JsonObject = { ...base };
    if (typeof change.type === 'string') detail.type = change.type;
    events.push(controlEvent({ format, control: 'schema', table, commitTs, detail }));
  }
  if (events.length > 0) return events;
  const db = typeof source.db === 'string' ? source.db : null;
  const table = typeof source.table === 'string' && source.table !== '' && db !== null ? `${db}.${source.table}` : null;
  return [controlEvent({ format, control: 'schema', table, commitTs, detail: base })];
}
