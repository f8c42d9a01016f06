/**
 * Debezium change events from the PostgreSQL, MySQL, SQL Server and Oracle connectors, plus the
 * Debezium messages around them: transaction metadata, heartbeats, logical-decoding messages and
 * schema-change records. MongoDB has its own decoder; flattened (`ExtractNewRecordState`) records
 * are {@link debeziumFlattened}. docs/formats.md, "Debezium", has the rules.
 *
 * The caller has already unwrapped JsonConverter `{schema, payload}` wrapping: `message.value` is
 * the envelope and `message.valueSchema` its schema (used to decode decimals and time types).
 *
 * Records of Debezium before 1.0 carry no `source.connector`: the connector is recognized by its
 * position fields (MySQL `file`/`pos`, PostgreSQL `lsn`, SQL Server `change_lsn`/`commit_lsn`,
 * Oracle `scn`) next to the logical server `name`, and decoded the same way.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { type ChangeEvent, type DecodeContext, type FormatDecoder, type InboundMessage, isRowOp, type NormalizedEvent, type RowOp } from '../types.js';
import { decodeHeartbeat, decodeMessageEvent, decodeSchemaChange, decodeTransaction, isHeartbeat, isSchemaChange, isTransactionMetadata } from './debezium-control.js';
import { bestKey, isSnapshotMarker } from './debezium-fields.js';
import { placeholderColumns } from './debezium-placeholders.js';
import { CONNECTORS, type Connector, connectorOf, debeziumPosition } from './debezium-positions.js';
import { decodeRow, envelopeFieldSchema } from './debezium-types.js';
import { changeEvent, decodeError, describe, epochMsOrNull, idText, requireString, rowOrNull } from './kit.js';

export { debeziumFlattened } from './debezium-flattened.js';

/** True for a Debezium envelope `{op, source}` of one of the connectors handled here (named or recognized). */
function isEnvelope(value: JsonValue | null): value is JsonObject {
  return isJsonObject(value) && typeof value.op === 'string' && isJsonObject(value.source) && connectorOf(value.source) !== null;
}

/**
 * Source table name: `<schema>.<table>` (PostgreSQL, SQL Server, Oracle), `<db>.<table>` (MySQL).
 * Records of Debezium before 1.0 may lack the schema or table: the topic `<prefix>.<schema>.<table>` names it then.
 */
function tableName(connector: Connector, source: JsonObject, topic: string | null): string {
  const namespaceField = connector === 'mysql' ? 'db' : 'schema';
  const parts = topic?.split('.') ?? [];
  if ((typeof source.table !== 'string' || typeof source[namespaceField] !== 'string') && parts.length >= 3) return parts.slice(-2).join('.');
  const table = requireString(source, 'table', 'source', '"customers"');
  const example = connector === 'mysql' ? '"inventory"' : connector === 'oracle' ? '"DEBEZIUM"' : '"public"';
  return `${requireString(source, namespaceField, 'source', example)}.${table}`;
}

/** Transaction id per connector: PG `txId`, MySQL `gtid` (or null), SQL Server `commit_lsn`, Oracle `txId`. */
function txidOf(connector: Connector, source: JsonObject): string | null {
  switch (connector) {
    case 'postgresql':
    case 'oracle':
      return idText(source.txId);
    case 'mysql':
      return typeof source.gtid === 'string' && source.gtid !== '' ? source.gtid : null;
    case 'sqlserver':
      return idText(source.commit_lsn);
  }
}

/**
 * Commit time: `source.ts_ms`. Records before Debezium 1.0 have `ts_sec` (MySQL) or `ts_usec`
 * (PostgreSQL) instead.
 */
function commitTsOf(source: JsonObject): number | null {
  const ms = epochMsOrNull(source.ts_ms);
  if (ms !== null) return ms;
  const sec = epochMsOrNull(source.ts_sec);
  if (sec !== null) return sec * 1000;
  const usec = epochMsOrNull(source.ts_usec);
  return usec === null ? null : Math.trunc(usec / 1000);
}

/** Reads and checks `source` and `op` of a message the decoder was asked to decode. */
function envelopeParts(value: JsonValue | null): { envelope: JsonObject; source: JsonObject; connector: Connector; op: string } {
  const shape = 'a Debezium envelope {before, after, source:{connector, ...}, op}';
  if (!isJsonObject(value)) throw decodeError('missing-field', `expected ${shape}, got ${describe(value)}`);
  if (!isJsonObject(value.source)) throw decodeError('missing-field', `expected ${shape}: source is ${describe(value.source)}`);
  const connector = connectorOf(value.source);
  if (connector === null) {
    throw decodeError(
      'missing-field',
      `expected source.connector to be one of ${CONNECTORS.join(', ')} (mongodb has its own decoder), got ${describe(value.source.connector)}`,
    );
  }
  if (typeof value.op !== 'string') throw decodeError('missing-field', `expected op to be a string ("c", "u", "d", "r", "t" or "m"), got ${describe(value.op)}`);
  return { envelope: value, source: value.source, connector, op: value.op };
}

/** Decodes one data event (op c/u/d/r/t) of a Debezium envelope. */
function decodeChange(message: InboundMessage, ctx: DecodeContext, value: JsonObject, source: JsonObject, connector: Connector, op: RowOp): ChangeEvent {
  const table = tableName(connector, source, message.topic);
  const rawBefore = op === 't' ? null : rowOrNull(value.before, 'before');
  const rawAfter = op === 't' ? null : rowOrNull(value.after, 'after');
  if ((op === 'c' || op === 'u' || op === 'r') && rawAfter === null) {
    throw decodeError('missing-field', `expected after to hold the new row on a Debezium "${op}" event for ${table}, got ${describe(value.after)}`);
  }
  const placeholders = placeholderColumns(rawAfter, ctx.placeholder);
  const beforeSchema = envelopeFieldSchema(message.valueSchema, 'before');
  const afterSchema = envelopeFieldSchema(message.valueSchema, 'after');
  // Placeholder markers are not values of the column's type: never decode them.
  const before = rawBefore && beforeSchema ? decodeRow(rawBefore, beforeSchema, placeholderColumns(rawBefore, ctx.placeholder)) : rawBefore;
  const after = rawAfter && afterSchema ? decodeRow(rawAfter, afterSchema, placeholders) : rawAfter;
  return changeEvent({
    format: `debezium-${connector}`,
    op,
    table,
    key: op === 't' ? {} : bestKey(message, ctx, table, [after, before]),
    before,
    after,
    placeholders,
    position: debeziumPosition(connector, source, value.transaction),
    txid: txidOf(connector, source),
    commitTs: commitTsOf(source),
    snapshot: op === 'r' || isSnapshotMarker(source.snapshot),
  });
}

/**
 * Decodes a Debezium message (bare or schema-unwrapped) into normalized events.
 * Positions per connector are described in `debezium-positions.ts`; `commitTs` is always
 * `source.ts_ms` (the top-level `ts_ms` is the connector's processing time).
 */
function decodeDebezium(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[] {
  const value = message.value;
  if (isTransactionMetadata(value)) return [decodeTransaction(value)];
  if (isSchemaChange(value)) return decodeSchemaChange(value);
  if (!isEnvelope(value) && isHeartbeat(message)) return [decodeHeartbeat(message)];
  const { envelope, source, connector, op } = envelopeParts(value);
  if (op === 'm') return [decodeMessageEvent(`debezium-${connector}`, envelope, source)];
  if (!isRowOp(op)) throw decodeError('bad-op', `expected op to be one of "c", "u", "d", "r", "t" or "m", got ${describe(op)}`);
  return [decodeChange(message, ctx, envelope, source, connector, op)];
}

/** Debezium envelopes (PostgreSQL, MySQL, SQL Server, Oracle), transaction metadata, heartbeats, schema changes. */
export const debezium: FormatDecoder = {
  name: 'debezium',
  ordering: 'source',
  shape:
    '{before, after, source:{connector: postgresql|mysql|sqlserver|oracle, ...}, op: c|u|d|r|t|m}, or {status: BEGIN|END, id}, or heartbeat {ts_ms}, or a schema change {source, databaseName, ddl, tableChanges}',
  detect(message: InboundMessage): boolean {
    const value = message.value;
    return isEnvelope(value) || isTransactionMetadata(value) || isSchemaChange(value) || isHeartbeat(message);
  },
  decode: decodeDebezium,
};
