/**
 * Aurora DSQL change data capture records, which Aurora DSQL writes straight to a Kinesis data
 * stream (Aurora DSQL user guide: "Understanding CDC records", "Change data capture streams").
 *
 * `{type: "full", op: "c"|"u"|"d", before, after, source: {version, ts_ms, ts_ns, txId, schema,
 * table, db, cluster}, ts_ms, ts_ns}`. Delivery is at least once and UNORDERED, on a randomized
 * partition key: one key's changes spread over every shard. Each transaction's write set is
 * compacted to at most one record per row, and one stream carries every Region's commits.
 *
 * - Table: `<source.schema>.<source.table>`. Key: the configured columns of `after` (inserts,
 *   updates) or `before` (deletes: it holds the primary key only). The Kinesis partition key is
 *   random and never read.
 * - Op: `c`, `u`, `d`. Before GA, updates arrived as `c`; and the preview guidance was to treat any
 *   op it did not define as an upsert of `after`: both are a full-row write here, so they converge
 *   alike.
 * - Position: [`source.ts_ns`, txId as an integer]. The docs define `source.ts_ns`, the commit time,
 *   as the field to "establish a total order of transactions" and to drop duplicates by; with write
 *   set compaction it orders one key's versions. The txId only breaks a tie of two transactions at
 *   one nanosecond, which the docs rule out: deterministically (every delivery picks the same
 *   winner), not by commit order. {@link txIdRank} maps it to an integer without collisions.
 * - commitTs: `source.ts_ms` (the top-level `ts_ms` is when CDC processed the record).
 * - `type: "chunked"` (a main record whose image was split) and `type: "fragment"` (a piece of
 *   it) are control events `chunked` and `fragment`, reassembled by aurora-dsql-fragments.ts.
 *
 * Example: the docs' UPDATE record (`op: "u"`, `after: {order_id: 1001, item_id: 42, quantity: 10,
 * …}`, `ts_ns: 1705318300000000000`, `txId: "qvtiesgmd55cvlfukm3dfuotji"`) is an update of
 * `public.order_items` key (1001, 42) at [1705318300000000000, 0x01 ‖ "qvtiesgmd55cvlfukm3dfuotji"].
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { type Position, sourcePosition } from '../position.js';
import type { ChangeEvent, ControlEvent, DecodeContext, FormatDecoder, InboundMessage, NormalizedEvent, RowOp } from '../types.js';
import { chunkRefs, fragmentPart, isFragmentRecord } from './aurora-dsql-fragments.js';
import { changeEvent, controlEvent, decodeError, describe, epochMsOrNull, keyFromImages, readUnsigned, requireString, rowOrNull } from './kit.js';

const FORMAT = 'aurora-dsql';
/** The longest txId read (in UTF-8 bytes); limits.ts bounds the integer to match. Aurora DSQL's are 26 base32 characters. */
export const MAX_TXID_BYTES = 64;

/**
 * A txId as an integer: the big-endian value of a 0x01 byte followed by its UTF-8 bytes. One-to-one
 * (the leading byte keeps `"a"` and `"\0a"` apart), and it orders ids by length, then byte by byte.
 * `"ab"` → 0x016162. That order means nothing about commit order; it only makes ties deterministic.
 */
export function txIdRank(txId: string): bigint {
  const bytes = txId.length > MAX_TXID_BYTES ? null : Buffer.from(txId, 'utf8');
  if (bytes === null || bytes.length === 0 || bytes.length > MAX_TXID_BYTES) {
    throw decodeError('bad-position', `expected source.txId to be a transaction id of 1 to ${MAX_TXID_BYTES} bytes (e.g. "ffthunp5stx6ffs2vyfqoatmfu"), got ${describe(txId)}`);
  }
  return BigInt(`0x01${bytes.toString('hex')}`);
}

/** True for a full or chunked record: an `op` and a `source` with `cluster` and `txId`, and no Debezium `connector`. */
function isChangeRecord(value: JsonValue | null): value is JsonObject {
  if (!isJsonObject(value) || !isJsonObject(value.source)) return false;
  if (value.type !== undefined && value.type !== 'full' && value.type !== 'chunked') return false;
  const source = value.source;
  return typeof value.op === 'string' && !('connector' in source) && 'cluster' in source && 'txId' in source;
}

/** The op of a record: `c`, `u`, `d`; any other op with an `after` image is an upsert, as the preview guidance says. */
function opOf(op: string, after: JsonObject | null): RowOp {
  if (op === 'c' || op === 'u' || op === 'd') return op;
  if (after !== null) return 'u';
  throw decodeError('bad-op', `expected op "c", "u" or "d" (or another op with an after image, applied as an upsert), got ${describe(op)} without an after image`);
}

interface Envelope {
  readonly table: string;
  readonly position: Position;
  readonly txid: string;
  readonly commitTs: number | null;
}

function envelopeOf(source: JsonObject): Envelope {
  const table = `${requireString(source, 'schema', 'source', '"public"')}.${requireString(source, 'table', 'source', '"order_items"')}`;
  if (source.ts_ns === undefined || source.ts_ns === null) {
    throw decodeError('missing-field', 'expected source.ts_ns, the commit time in nanoseconds (e.g. 1705318200000000000), on an Aurora DSQL record, found none');
  }
  const txid = requireString(source, 'txId', 'source', '"ffthunp5stx6ffs2vyfqoatmfu"');
  const position = sourcePosition(readUnsigned(source.ts_ns, 'source.ts_ns', '1705318200000000000'), txIdRank(txid));
  return { table, position, txid, commitTs: epochMsOrNull(source.ts_ms) };
}

function decodeFull(value: JsonObject, source: JsonObject, op: string, ctx: DecodeContext): ChangeEvent {
  const { table, position, txid, commitTs } = envelopeOf(source);
  const before = rowOrNull(value.before, 'before');
  const after = rowOrNull(value.after, 'after');
  const rowOp = opOf(op, after);
  if (rowOp !== 'd' && after === null) throw decodeError('missing-field', `expected after to hold the row on an Aurora DSQL "${op}" record for ${table}, got ${describe(value.after)}`);
  return changeEvent({ format: FORMAT, op: rowOp, table, key: keyFromImages(table, ctx, [after, before]), before, after, position, txid, commitTs, snapshot: false });
}

/** A main record whose image was split: a `chunked` control event naming its chunks, at the record's position. */
function decodeChunked(value: JsonObject, source: JsonObject, op: string): ControlEvent {
  const { table, position, txid, commitTs } = envelopeOf(source);
  const chunks = chunkRefs(value).map((r) => ({ image: r.image, chunkId: r.chunkId, totalFragments: r.totalFragments, crc32c: String(r.crc32c) }));
  return controlEvent({ format: FORMAT, control: 'chunked', table, position, txid, commitTs, detail: { op, chunks } });
}

function decodeDsql(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[] {
  const value = message.value;
  if (isFragmentRecord(value)) {
    const part = fragmentPart(value);
    return [controlEvent({ format: FORMAT, control: 'fragment', detail: { chunkId: part.chunkId, index: part.index, data: part.data } })];
  }
  const shape = 'an Aurora DSQL record {type, op, before, after, source: {ts_ns, txId, schema, table, cluster, …}}';
  if (!isJsonObject(value)) throw decodeError('bad-shape', `expected ${shape}, got ${describe(value)}`);
  if (!isJsonObject(value.source)) throw decodeError('missing-field', `expected ${shape}: source is ${describe(value.source)}`);
  if (typeof value.op !== 'string') throw decodeError('missing-field', `expected op to be a string ("c", "u" or "d"), got ${describe(value.op)}`);
  if (value.type === 'chunked') return [decodeChunked(value, value.source, value.op)];
  if (value.type !== undefined && value.type !== 'full') throw decodeError('bad-field', `expected type "full", "chunked" or "fragment", got ${describe(value.type)}`);
  return [decodeFull(value, value.source, value.op, ctx)];
}

/** Aurora DSQL CDC records (full, chunked main records, fragments). */
export const auroraDsql: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape: '{type: full|chunked, op: c|u|d, before, after, source:{ts_ns, txId, schema, table, db, cluster}}, or {type: fragment, chunk_id, index, data}',
  detect(message: InboundMessage): boolean {
    return isChangeRecord(message.value) || isFragmentRecord(message.value);
  },
  decode: decodeDsql,
};
