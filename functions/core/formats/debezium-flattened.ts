/**
 * Flattened Debezium records (the `ExtractNewRecordState` / "unwrap" transform): the value is the
 * row itself plus metadata columns starting with `__`: `__deleted` ("true"/"false" or boolean)
 * and, with `add.fields`, `__op`, `__lsn`, `__source_ts_ms`, `__table`, `__schema`, `__db`, ...
 *
 * Ordering: `__source_sequence` (PostgreSQL [lastCommitLsn, lsn]) when present; else `__lsn` alone
 * (a source LSN, but it interleaves across concurrent transactions); else MySQL
 * `__file`/`__pos`/`__row`; else the transport order (Kafka offset / Kinesis sequence), which is weak.
 */
import { DecodeError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { type Position, sourcePosition } from '../position.js';
import { transportOrder } from './shared.js';
import type { ChangeEvent, DecodeContext, FormatDecoder, InboundMessage, Row, RowOp } from '../types.js';
import { bestKey, describe, epochMsOrNull, idText, isSnapshotMarker } from './debezium-fields.js';
import { placeholderColumns } from './debezium-placeholders.js';
import { parsePgSequence, readUnsigned } from './debezium-positions.js';
import { decodeRow } from './debezium-types.js';

const FORMAT = 'debezium-flattened';
const FLAT_OPS: ReadonlySet<string> = new Set<RowOp>(['c', 'u', 'd', 'r']);

/** A metadata field, with or without the `source_` infix (`__table` or `__source_table`). */
function meta(value: JsonObject, name: string): JsonValue | undefined {
  return value[`__${name}`] ?? value[`__source_${name}`];
}

function isFlattened(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || !('__deleted' in value || '__op' in value)) return false;
  // A real Debezium envelope is never flattened, whatever else it holds.
  return !(typeof value.op === 'string' && isJsonObject(value.source));
}

function readDeleted(value: JsonValue | undefined): boolean {
  if (value === undefined || value === null || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  throw new DecodeError('bad-field', `expected __deleted to be "true", "false" or a boolean, got ${describe(value)}`);
}

function readOp(value: JsonObject): RowOp {
  const deleted = readDeleted(value.__deleted);
  const op = value.__op;
  if (op !== undefined && op !== null && (typeof op !== 'string' || !FLAT_OPS.has(op))) {
    throw new DecodeError('bad-op', `expected __op to be one of "c", "u", "d", "r", got ${describe(op)}`);
  }
  if (deleted || op === 'd') return 'd';
  // Without __op we cannot tell insert from update; both replace the whole row downstream.
  return (op as RowOp | null | undefined) ?? 'u';
}

/** Table from `__schema`/`__db` + `__table`, else the last two segments of `<prefix>.<schema>.<table>`. */
function tableOf(value: JsonObject, topic: string | null): string {
  const table = meta(value, 'table');
  const namespace = meta(value, 'schema') ?? meta(value, 'db');
  if (typeof table === 'string' && table !== '') {
    if (typeof namespace === 'string' && namespace !== '') return `${namespace}.${table}`;
    if (table.includes('.')) return table;
  }
  const parts = topic?.split('.') ?? [];
  if (parts.length >= 3) return parts.slice(-2).join('.');
  throw new DecodeError(
    'missing-field',
    `expected __schema (or __db) and __table fields, or a topic named <prefix>.<schema>.<table>, to name the table of a flattened Debezium record; topic is ${describe(topic)}`,
  );
}

function positionOf(value: JsonObject, message: InboundMessage): Position {
  const sequence = meta(value, 'sequence');
  if (typeof sequence === 'string') return sourcePosition(...parsePgSequence(sequence));
  const lsn = meta(value, 'lsn');
  if (lsn !== undefined && lsn !== null) return sourcePosition(readUnsigned(lsn, '__lsn', '33228232'));
  const file = meta(value, 'file');
  if (typeof file === 'string' && /\d$/.test(file)) {
    const fileNo = BigInt(/(\d+)$/.exec(file)![1]!);
    const row = meta(value, 'row');
    return sourcePosition(fileNo, readUnsigned(meta(value, 'pos'), '__pos', '154'), row === undefined || row === null ? 0n : readUnsigned(row, '__row', '0'));
  }
  return transportOrder(message);
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
  if (!isFlattened(value)) {
    throw new DecodeError('missing-field', `expected a flattened Debezium row with a __deleted or __op field, got ${describe(value)}`);
  }
  const op = readOp(value);
  const table = tableOf(value, message.topic);
  const { row, placeholders } = rowImage(value, message.valueSchema, ctx.placeholder);
  const before = op === 'd' ? row : null;
  const after = op === 'd' ? null : row;
  return [
    {
      kind: 'change',
      format: FORMAT,
      op,
      table,
      key: bestKey(message, ctx, table, [row]),
      before,
      after,
      patch: null,
      placeholders: op === 'd' ? [] : placeholders,
      position: positionOf(value, message),
      txid: idText(meta(value, 'txId') ?? meta(value, 'gtid')),
      // __source_ts_ms is the commit time; a bare __ts_ms is the connector's processing time.
      commitTs: epochMsOrNull(value.__source_ts_ms),
      snapshot: op === 'r' || isSnapshotMarker(meta(value, 'snapshot')),
    },
  ];
}

/** Flattened (`ExtractNewRecordState`) Debezium rows with `__deleted` / `__op` metadata columns. */
export const debeziumFlattened: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape: 'a flat row {<columns>..., __deleted: "true"|"false", __op?, __lsn?, __source_ts_ms?, __table?, __schema?|__db?}',
  detect(message: InboundMessage): boolean {
    return isFlattened(message.value);
  },
  decode: decodeFlattened,
};
