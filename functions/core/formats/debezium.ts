/**
 * Debezium change events from the PostgreSQL, MySQL, SQL Server and Oracle connectors
 * (cdc-formats.md §2–§4, §6), plus the Debezium control messages around them. MongoDB has its own
 * decoder; flattened (`ExtractNewRecordState`) records are {@link debeziumFlattened}.
 *
 * The caller has already unwrapped JsonConverter `{schema, payload}` wrapping: `message.value` is
 * the envelope and `message.valueSchema` its schema (used to decode decimals and time types).
 */
import { DecodeError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import type { ChangeEvent, DecodeContext, FormatDecoder, InboundMessage, NormalizedEvent, RowOp } from '../types.js';
import { decodeHeartbeat, decodeMessageEvent, decodeTransaction, isHeartbeat, isTransactionMetadata } from './debezium-control.js';
import { bestKey, describe, epochMsOrNull, idText, isSnapshotMarker, requireString, rowOrNull } from './debezium-fields.js';
import { placeholderColumns } from './debezium-placeholders.js';
import { type Connector, debeziumPosition } from './debezium-positions.js';
import { decodeRow, envelopeFieldSchema } from './debezium-types.js';

export { debeziumFlattened } from './debezium-flattened.js';

const CONNECTORS: ReadonlySet<string> = new Set<Connector>(['postgresql', 'mysql', 'sqlserver', 'oracle']);
const ROW_OPS: ReadonlySet<string> = new Set<RowOp>(['c', 'u', 'd', 'r', 't']);

/** True for a Debezium envelope `{op, source:{connector}}` of one of the connectors handled here. */
function isEnvelope(value: JsonValue | null): value is JsonObject {
  return (
    isJsonObject(value) &&
    typeof value.op === 'string' &&
    isJsonObject(value.source) &&
    typeof value.source.connector === 'string' &&
    CONNECTORS.has(value.source.connector)
  );
}

/** Source table name: `<schema>.<table>` (PostgreSQL, SQL Server, Oracle), `<db>.<table>` (MySQL). */
function tableName(connector: Connector, source: JsonObject): string {
  const table = requireString(source, 'table', 'source', '"customers"');
  if (connector === 'mysql') return `${requireString(source, 'db', 'source', '"inventory"')}.${table}`;
  return `${requireString(source, 'schema', 'source', connector === 'oracle' ? '"DEBEZIUM"' : '"public"')}.${table}`;
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

/** Reads and checks `source.connector` and `op` of a message the decoder was asked to decode. */
function envelopeParts(value: JsonValue | null): { envelope: JsonObject; source: JsonObject; connector: Connector; op: string } {
  const shape = 'a Debezium envelope {before, after, source:{connector, ...}, op}';
  if (!isJsonObject(value)) throw new DecodeError('missing-field', `expected ${shape}, got ${describe(value)}`);
  if (!isJsonObject(value.source)) throw new DecodeError('missing-field', `expected ${shape}: source is ${describe(value.source)}`);
  const connector = value.source.connector;
  if (typeof connector !== 'string' || !CONNECTORS.has(connector)) {
    throw new DecodeError(
      'missing-field',
      `expected source.connector to be one of postgresql, mysql, sqlserver, oracle (mongodb has its own decoder), got ${describe(connector)}`,
    );
  }
  if (typeof value.op !== 'string') throw new DecodeError('missing-field', `expected op to be a string ("c", "u", "d", "r", "t" or "m"), got ${describe(value.op)}`);
  return { envelope: value, source: value.source, connector: connector as Connector, op: value.op };
}

/** Decodes one data event (op c/u/d/r/t) of a Debezium envelope. */
function decodeChange(message: InboundMessage, ctx: DecodeContext, value: JsonObject, source: JsonObject, connector: Connector, op: RowOp): ChangeEvent {
  const table = tableName(connector, source);
  const rawBefore = op === 't' ? null : rowOrNull(value.before, 'before');
  const rawAfter = op === 't' ? null : rowOrNull(value.after, 'after');
  if ((op === 'c' || op === 'u' || op === 'r') && rawAfter === null) {
    throw new DecodeError('missing-field', `expected after to hold the new row on a Debezium "${op}" event for ${table}, got ${describe(value.after)}`);
  }
  const placeholders = placeholderColumns(rawAfter, ctx.placeholder);
  const beforeSchema = envelopeFieldSchema(message.valueSchema, 'before');
  const afterSchema = envelopeFieldSchema(message.valueSchema, 'after');
  // Placeholder markers are not values of the column's type: never decode them.
  const before = rawBefore && beforeSchema ? decodeRow(rawBefore, beforeSchema, placeholderColumns(rawBefore, ctx.placeholder)) : rawBefore;
  const after = rawAfter && afterSchema ? decodeRow(rawAfter, afterSchema, placeholders) : rawAfter;
  return {
    kind: 'change',
    format: `debezium-${connector}`,
    op,
    table,
    key: op === 't' ? {} : bestKey(message, ctx, table, [after, before]),
    before,
    after,
    patch: null,
    placeholders,
    position: debeziumPosition(connector, source, value.transaction),
    txid: txidOf(connector, source),
    commitTs: epochMsOrNull(source.ts_ms),
    snapshot: op === 'r' || isSnapshotMarker(source.snapshot),
  };
}

/**
 * Decodes a Debezium message (bare or schema-unwrapped) into one normalized event.
 * Positions per connector are described in `debezium-positions.ts`; `commitTs` is always
 * `source.ts_ms` (the top-level `ts_ms` is the connector's processing time).
 */
function decodeDebezium(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[] {
  const value = message.value;
  if (isTransactionMetadata(value)) return [decodeTransaction(value)];
  if (!isEnvelope(value) && isHeartbeat(message)) return [decodeHeartbeat(message)];
  const { envelope, source, connector, op } = envelopeParts(value);
  if (op === 'm') return [decodeMessageEvent(`debezium-${connector}`, envelope, source)];
  if (!ROW_OPS.has(op)) throw new DecodeError('bad-op', `expected op to be one of "c", "u", "d", "r", "t" or "m", got ${describe(op)}`);
  return [decodeChange(message, ctx, envelope, source, connector, op as RowOp)];
}

/** Debezium envelopes (PostgreSQL, MySQL, SQL Server, Oracle), transaction metadata, heartbeats. */
export const debezium: FormatDecoder = {
  name: 'debezium',
  ordering: 'source',
  shape: '{before, after, source:{connector: postgresql|mysql|sqlserver|oracle, ...}, op: c|u|d|r|t|m}, or {status: BEGIN|END, id}, or heartbeat {ts_ms}',
  detect(message: InboundMessage): boolean {
    const value = message.value;
    return isEnvelope(value) || isTransactionMetadata(value) || isHeartbeat(message);
  },
  decode: decodeDebezium,
};
