/**
 * Debezium change events from the relational connectors (PostgreSQL, MySQL, MariaDB, SQL Server,
 * Oracle, Db2, Informix, Vitess, Spanner, CockroachDB, YashanDB: debezium-connectors.ts lists them
 * with what differs), plus the Debezium messages around them: transaction metadata, heartbeats,
 * logical-decoding messages and schema-change records. MongoDB has its own decoder; flattened
 * (`ExtractNewRecordState`) records are {@link debeziumFlattened}. An envelope from any other
 * connector (`source.connector: "cassandra"`) is refused as `unsupported-connector`, naming it.
 * docs/formats.md, "Debezium", has the rules.
 *
 * Example: `{op: "c", after: {ID: 1005, …}, source: {connector: "db2", schema: "MYSCHEMA",
 * table: "CUSTOMERS", commit_lsn: "00000027:00000758:0005", change_lsn: "00000027:00000758:0003"}}`
 * is an insert into `MYSCHEMA.CUSTOMERS` at position [commit LSN, change LSN].
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
import { decodeHeartbeat, decodeMessageEvent, decodeSchemaChange, decodeTransaction, isHeartbeat, isSchemaChange, isTransactionMetadata, transactionMember } from './debezium-control.js';
import { bestKey, isSnapshotMarker } from './debezium-fields.js';
import { placeholderColumns } from './debezium-placeholders.js';
import { CONNECTOR_RULES, CONNECTORS, type Connector, connectorOf, unsupportedConnector } from './debezium-connectors.js';
import { debeziumPosition } from './debezium-positions.js';
import { decodeRow, envelopeFieldSchema } from './debezium-types.js';
import { changeEvent, decodeError, describe, requireString, rowOrNull } from './kit.js';

export { debeziumFlattened } from './debezium-flattened.js';

/**
 * True for a Debezium envelope `{op, source}`: of a connector handled here (named or recognized), or
 * naming another connector in `source.connector` (claimed, to be refused as `unsupported-connector`),
 * MongoDB excepted: its decoder claims it.
 */
function isEnvelope(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || typeof value.op !== 'string' || !isJsonObject(value.source)) return false;
  const other = unsupportedConnector(value.source);
  return connectorOf(value.source) !== null || (other !== null && other !== 'mongodb');
}

/**
 * Source table name: `<namespace>.<table>`, the namespace being the connector's (CONNECTOR_RULES):
 * `schema` (PostgreSQL, SQL Server, Oracle, Db2, …), `db` (MySQL, MariaDB), `keyspace` (Vitess), or
 * none (Spanner: the table alone). Records of Debezium before 1.0 may lack the schema or table: the
 * topic `<prefix>.<schema>.<table>` names it then.
 */
function tableName(connector: Connector, source: JsonObject, topic: string | null): string {
  const { namespace, example } = CONNECTOR_RULES[connector];
  if (namespace === null) return requireString(source, 'table', 'source', '"Users"');
  const parts = topic?.split('.') ?? [];
  if ((typeof source.table !== 'string' || typeof source[namespace] !== 'string') && parts.length >= 3) return parts.slice(-2).join('.');
  const table = requireString(source, 'table', 'source', '"customers"');
  return `${requireString(source, namespace, 'source', example)}.${table}`;
}

/** Reads and checks `source` and `op` of a message the decoder was asked to decode. */
function envelopeParts(value: JsonValue | null): { envelope: JsonObject; source: JsonObject; connector: Connector; op: string } {
  const shape = 'a Debezium envelope {before, after, source:{connector, ...}, op}';
  if (!isJsonObject(value)) throw decodeError('missing-field', `expected ${shape}, got ${describe(value)}`);
  if (!isJsonObject(value.source)) throw decodeError('missing-field', `expected ${shape}: source is ${describe(value.source)}`);
  const connector = connectorOf(value.source);
  if (connector === null) {
    const other = unsupportedConnector(value.source);
    const supported = `tidemark decodes Debezium envelopes of ${CONNECTORS.join(', ')} (mongodb has its own decoder, format debezium-mongodb)`;
    if (other === 'mongodb') throw decodeError('unsupported-connector', 'Debezium MongoDB events have their own decoder: set format debezium-mongodb, or auto');
    if (other !== null) throw decodeError('unsupported-connector', `the Debezium ${describe(other)} connector is not supported: ${supported}`);
    throw decodeError('missing-field', `expected source.connector to name the connector: ${supported}; got ${describe(value.source.connector)}`);
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
    position: debeziumPosition(connector, source, value.transaction, message),
    txid: CONNECTOR_RULES[connector].txid(source, value.transaction),
    commitTs: CONNECTOR_RULES[connector].commitTs(source),
    snapshot: op === 'r' || isSnapshotMarker(source.snapshot),
    tx: transactionMember(value.transaction),
    rowSchema: afterSchema ?? null,
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

/** Debezium envelopes of the relational connectors, transaction metadata, heartbeats, schema changes. */
export const debezium: FormatDecoder = {
  name: 'debezium',
  ordering: 'source',
  shape:
    '{before, after, source:{connector: postgresql|mysql|mariadb|sqlserver|oracle|db2|informix|vitess|spanner|cockroachdb|yashandb, ...}, op: c|u|d|r|t|m}, or {status: BEGIN|END, id}, or heartbeat {ts_ms}, or a schema change {source, databaseName, ddl, tableChanges}',
  detect(message: InboundMessage): boolean {
    const value = message.value;
    return isEnvelope(value) || isTransactionMetadata(value) || isSchemaChange(value) || isHeartbeat(message);
  },
  decode: decodeDebezium,
};
