/**
 * Flattened Debezium records (the `ExtractNewRecordState` / "unwrap" transform): the value is the
 * row itself, plus metadata columns starting with `__` when the transform is told to add them:
 * `__deleted` ("true"/"false" or boolean, `delete.tombstone.handling.mode=rewrite`) and, with
 * `add.fields`, `__op`, `__lsn`, `__source_ts_ms`, `__table`, `__schema`, `__db`, ...
 *
 * The transform's default output has no metadata at all: a plain row, upserted by key. A delete
 * then reaches the topic only as a Kafka tombstone (a null value), which the Normalizer applies as
 * a delete under `kafkaTombstones: "delete"`, the default for this format. A plain row is claimed
 * only as a fallback (see {@link FormatDecoder.fallback}) and only when it carries a Debezium key
 * (a JSON object) or a `<prefix>.<schema>.<table>.Value` schema.
 *
 * Table: `__schema`/`__db` + `__table`; else the topic `<prefix>.<schema>.<table>`; else the value
 * schema name `<prefix>.<schema>.<table>.Value`; else the only configured table.
 *
 * Ordering: `__source_sequence` (PostgreSQL [lastCommitLsn, lsn]) when present; else `__lsn` alone
 * (a source LSN, but it interleaves across concurrent transactions); else MySQL
 * `__file`/`__pos`/`__row`; else the transport order (Kafka offset / Kinesis sequence), which is weak.
 * The same fields, sent as headers (`add.headers`), order a tombstone; see kafka-tombstones.ts.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { type Position, sourcePosition } from '../position.js';
import { type ChangeEvent, type DecodeContext, type FormatDecoder, type InboundMessage, isRowOp, type Row, type RowOp } from '../types.js';
import { bestKey, isSnapshotMarker } from './debezium-fields.js';
import { placeholderColumns } from './debezium-placeholders.js';
import { parsePgSequence } from './debezium-positions.js';
import { decodeRow } from './debezium-types.js';
import { binlogFileNo, changeEvent, decodeError, describe, epochMsOrNull, idText, readUnsigned, transportOrder } from './kit.js';

const FORMAT = 'debezium-flattened';

/** Reads one metadata field by name without the `__` prefix, from the value or from headers. */
export type MetaReader = (name: string) => JsonValue | undefined;

/** A metadata field of the value, with or without the `source_` infix (`__table` or `__source_table`). */
function valueMeta(value: JsonObject): MetaReader {
  return (name) => value[`__${name}`] ?? value[`__source_${name}`];
}

/** Fields that mark a message of another format: a plain row never has them at the top level. */
const OTHER_FORMAT_FIELDS = ['op', 'source', 'after', 'before', 'payload', 'metadata', 'data', 'isDdl', '__crdb__', 'resolved', 'ddl', 'status', 'patch', 'filter'];

function isFlattened(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || !('__deleted' in value || '__op' in value)) return false;
  // A real Debezium envelope is never flattened, whatever else it holds.
  return !(typeof value.op === 'string' && isJsonObject(value.source));
}

/** The `<prefix>.<schema>.<table>` name of a `….Value` schema, or null. */
function schemaTable(schema: JsonObject | null): string | null {
  const name = schema?.name;
  if (typeof name !== 'string' || !name.endsWith('.Value')) return null;
  const parts = name.slice(0, -'.Value'.length).split('.');
  return parts.length >= 3 ? parts.slice(-2).join('.') : null;
}

/** The default transform output: a plain row with a Debezium key or schema, and no field of another format. */
function isPlainRow(message: InboundMessage): boolean {
  const value = message.value;
  if (!isJsonObject(value) || Object.keys(value).length === 0) return false;
  if (OTHER_FORMAT_FIELDS.some((f) => f in value)) return false;
  return isJsonObject(message.key) || schemaTable(message.valueSchema) !== null;
}

/** The table the topic `<prefix>.<schema>.<table>` or the `….Value` schema name gives, or null. */
function namedTable(message: InboundMessage): string | null {
  const parts = message.topic?.split('.') ?? [];
  return parts.length >= 3 ? parts.slice(-2).join('.') : schemaTable(message.valueSchema);
}

/** A plain row of a configured table (or of the only table, when the format is configured explicitly). */
function claimsPlainRow(message: InboundMessage, ctx: DecodeContext): boolean {
  if (!isPlainRow(message)) return false;
  const table = namedTable(message);
  return (table !== null && ctx.keyColumns(table) !== undefined) || ctx.onlyTable !== undefined;
}

function readDeleted(value: JsonValue | undefined): boolean {
  if (value === undefined || value === null || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  throw decodeError('bad-field', `expected __deleted to be "true", "false" or a boolean, got ${describe(value)}`);
}

function readOp(value: JsonObject): RowOp {
  const deleted = readDeleted(value.__deleted);
  const op = value.__op;
  if (op !== undefined && op !== null && (!isRowOp(op) || op === 't')) {
    throw decodeError('bad-op', `expected __op to be one of "c", "u", "d", "r", got ${describe(op)}`);
  }
  if (deleted || op === 'd') return 'd';
  // Without __op we cannot tell insert from update; both replace the whole row downstream.
  return isRowOp(op) ? op : 'u';
}

/** Table from `__schema`/`__db` + `__table`, the topic, the value schema name, or the only configured table. */
function tableOf(meta: MetaReader, message: InboundMessage, ctx: DecodeContext): string {
  const table = meta('table');
  const namespace = meta('schema') ?? meta('db');
  if (typeof table === 'string' && table !== '') {
    if (typeof namespace === 'string' && namespace !== '') return `${namespace}.${table}`;
    if (table.includes('.')) return table;
  }
  const parts = message.topic?.split('.') ?? [];
  if (parts.length >= 3) return parts.slice(-2).join('.');
  const fromSchema = schemaTable(message.valueSchema);
  if (fromSchema !== null) return fromSchema;
  if (ctx.onlyTable !== undefined) return ctx.onlyTable;
  throw decodeError(
    'missing-field',
    `expected __schema (or __db) and __table fields, a topic named <prefix>.<schema>.<table>, or a single configured table, to name the table of a flattened Debezium record; topic is ${describe(message.topic)}`,
  );
}

/** The position the metadata fields give, or null when they carry none. */
export function flattenedPosition(meta: MetaReader): Position | null {
  const sequence = meta('sequence');
  if (typeof sequence === 'string') return sourcePosition(...parsePgSequence(sequence));
  const lsn = meta('lsn');
  if (lsn !== undefined && lsn !== null) return sourcePosition(readUnsigned(lsn, '__lsn', '33228232'));
  const file = meta('file');
  const fileNo = typeof file === 'string' ? binlogFileNo(file, '__file') : null;
  if (fileNo !== null) {
    const row = meta('row');
    return sourcePosition(fileNo, readUnsigned(meta('pos'), '__pos', '154'), row === undefined || row === null ? 0n : readUnsigned(row, '__row', '0'));
  }
  return null;
}

/** The row image without the `__` metadata columns, decoded by the value schema when present. */
function rowImage(value: JsonObject, schema: JsonObject | null, placeholder: string): { row: Row; placeholders: string[] } {
  const row: Row = {};
  for (const [column, v] of Object.entries(value)) if (!column.startsWith('__')) row[column] = v;
  const placeholders = placeholderColumns(row, placeholder);
  return { row: schema ? decodeRow(row, schema, placeholders) : row, placeholders };
}

function decodeFlattened(message: InboundMessage, ctx: DecodeContext): ChangeEvent[] {
  const value = message.value;
  if (!isFlattened(value) && !isPlainRow(message)) {
    throw decodeError('missing-field', `expected a flattened Debezium row (a row object, with a Debezium key or __deleted/__op fields), got ${describe(value)}`);
  }
  if (!isJsonObject(value)) throw decodeError('bad-shape', `expected a flattened Debezium row object, got ${describe(value)}`);
  const meta = valueMeta(value);
  const op = readOp(value);
  const table = tableOf(meta, message, ctx);
  const { row, placeholders } = rowImage(value, message.valueSchema, ctx.placeholder);
  return [
    changeEvent({
      format: FORMAT,
      op,
      table,
      key: bestKey(message, ctx, table, [row]),
      before: op === 'd' ? row : null,
      after: op === 'd' ? null : row,
      placeholders: op === 'd' ? [] : placeholders,
      position: flattenedPosition(meta) ?? transportOrder(message),
      txid: idText(meta('txId') ?? meta('gtid')),
      // __source_ts_ms is the commit time; a bare __ts_ms is the connector's processing time.
      commitTs: epochMsOrNull(value.__source_ts_ms),
      snapshot: op === 'r' || isSnapshotMarker(meta('snapshot')),
    }),
  ];
}

/** Flattened (`ExtractNewRecordState`) Debezium rows, with or without `__deleted` / `__op` metadata columns. */
export const debeziumFlattened: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape: 'a flat row {<columns>..., __deleted?: "true"|"false", __op?, __lsn?, __source_ts_ms?, __table?, __schema?|__db?} with a Debezium key',
  detect(message: InboundMessage): boolean {
    return isFlattened(message.value);
  },
  fallback: claimsPlainRow,
  decode: decodeFlattened,
};
