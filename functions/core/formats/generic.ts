/**
 * The generic "teaching" envelope, in two variants:
 *
 *   {operation: insert|update|delete|read, before, after,
 *    source: {table, lsn: "X/Y" | integer, txid, commit_ts: ISO text | epoch ms, snapshot}}
 *   {op: c|u|d|r, ts_ms, before, after, source: {table, lsn: integer, txid}}   (ts_ms = commit time)
 *
 * `source` has no `connector` field (that would be Debezium). Ordering: the LSN alone is the only
 * position this format has, so the position is [lsn] with source strength; it cannot break ties
 * between concurrent transactions whose change LSNs interleave.
 */
import { PositionError } from '../errors.js';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import { type Position, parsePgLsn, sourcePosition } from '../position.js';
import { type ChangeEvent, type DecodeContext, type FormatDecoder, type InboundMessage, isRowOp, type Key, type Row, type RowOp } from '../types.js';
import { changeEvent, decodeError, describe, epochMsOrNull, idText, keyFromImages, lookup, rowOrNull } from './kit.js';

const FORMAT = 'generic';
const OPERATIONS: Readonly<Record<string, RowOp>> = { insert: 'c', update: 'u', delete: 'd', read: 'r' };

function isGeneric(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || !isJsonObject(value.source) || 'connector' in value.source) return false;
  if (typeof value.operation === 'string') return true;
  return typeof value.op === 'string' && 'table' in value.source && 'lsn' in value.source;
}

function readOp(value: JsonObject): RowOp {
  if (typeof value.operation === 'string') {
    const op = lookup(OPERATIONS, value.operation.toLowerCase());
    if (op) return op;
    throw decodeError('bad-op', `expected operation to be insert, update, delete or read (any case), got ${describe(value.operation)}`);
  }
  if (isRowOp(value.op) && value.op !== 't') return value.op;
  throw decodeError('bad-op', `expected op to be one of "c", "u", "d", "r" (or an operation field), got ${describe(value.op)}`);
}

function readLsn(lsn: JsonValue | undefined): Position {
  if (lsn === undefined || lsn === null) {
    throw decodeError('missing-field', 'expected source.lsn ("X/Y" hex text such as "0/1A2F4C88", or an unsigned integer), got nothing');
  }
  let n: bigint | undefined;
  try {
    n = typeof lsn === 'string' && lsn.includes('/') ? parsePgLsn(lsn) : toBigInt(lsn);
  } catch (e) {
    if (!(e instanceof PositionError)) throw e;
  }
  if (n === undefined || n < 0n) {
    throw decodeError('bad-position', `expected source.lsn to be "X/Y" hex text (e.g. "0/1A2F4C88") or an unsigned integer, got ${describe(lsn)}`);
  }
  return sourcePosition(n);
}

function readCommitTs(value: JsonValue | undefined, what: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && !/^-?\d+$/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw decodeError('bad-field', `expected ${what} to be an ISO-8601 timestamp or epoch milliseconds, got ${describe(value)}`);
    return ms;
  }
  // Epoch milliseconds as a number or digit text: too many digits is a timestamp out of range.
  if (typeof value === 'string' || typeof value === 'number' || isLosslessNumber(value)) return epochMsOrNull(value);
  throw decodeError('bad-field', `expected ${what} to be an ISO-8601 timestamp or epoch milliseconds, got ${describe(value)}`);
}

function keyOf(message: InboundMessage, ctx: DecodeContext, table: string, rows: readonly (Row | null)[]): Key {
  return isJsonObject(message.key) ? message.key : keyFromImages(table, ctx, rows);
}

function decodeGeneric(message: InboundMessage, ctx: DecodeContext): ChangeEvent[] {
  const value = message.value;
  if (!isJsonObject(value) || !isJsonObject(value.source)) {
    throw decodeError('missing-field', `expected a generic envelope {operation, before, after, source:{table, lsn, txid, commit_ts}}, got source ${describe(isJsonObject(value) ? value.source : value)}`);
  }
  const source = value.source;
  const op = readOp(value);
  if (typeof source.table !== 'string' || source.table === '') {
    throw decodeError('missing-field', `expected source.table to name the table (e.g. "public.items"), got ${describe(source.table)}`);
  }
  const table = source.table;
  const before = rowOrNull(value.before, 'before');
  const after = rowOrNull(value.after, 'after');
  if (op !== 'd' && after === null) throw decodeError('missing-field', `expected after to hold the new row on a "${op}" event for ${table}, got ${describe(value.after)}`);
  const variantOp = typeof value.operation !== 'string';
  return [
    changeEvent({
      format: FORMAT,
      op,
      table,
      key: keyOf(message, ctx, table, [after, before]),
      before,
      after,
      position: readLsn(source.lsn),
      txid: idText(source.txid),
      commitTs: variantOp ? readCommitTs(value.ts_ms ?? source.commit_ts, 'ts_ms') : readCommitTs(source.commit_ts, 'source.commit_ts'),
      snapshot: op === 'r' || source.snapshot === true || source.snapshot === 'true',
    }),
  ];
}

/** The generic teaching envelope `{operation, before, after, source:{table, lsn, txid, commit_ts, snapshot}}` and its `{op, ts_ms, ...}` variant. */
export const generic: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape: '{operation: insert|update|delete|read, before, after, source:{table, lsn, txid, commit_ts, snapshot}} or {op: c|u|d|r, ts_ms, before, after, source:{table, lsn, txid}}',
  detect(message: InboundMessage): boolean {
    return isGeneric(message.value);
  },
  decode: decodeGeneric,
};
