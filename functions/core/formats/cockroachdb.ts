/**
 * CockroachDB changefeeds (JSON format): `wrapped` (default), `bare`, `enriched` and `row`
 * envelopes, the webhook sink's `{payload: [...], length}` batches, the Pub/Sub sink's
 * `{Key, Value, Topic}` wrapper, and resolved timestamps.
 *
 * - `envelope=row`: the value is the row itself (no `after`, no timestamps), the key the JSON array
 *   of primary-key values. It has no field of its own, so it is claimed only as a fallback
 *   (FormatDecoder.fallback): an object with none of the other formats' fields and an array key.
 *   It is an upsert (op `u`) in transport order. Deletes are Kafka tombstones (`kafkaTombstones`).
 * - `envelope=key_only` carries no row and cannot tell a delete from an upsert: refused as
 *   `unsupported-envelope` (on Kafka its null values are tombstones; leave `kafkaTombstones` at
 *   `ignore` for such a feed).
 *
 * - Table: the value's `topic`, else `__crdb__.topic`, else the enriched `source.table_name`, else
 *   the Kafka topic. Nothing is stripped: configure the source table as the changefeed topic name
 *   (`orders`, or `db.public.orders` when the changefeed used `full_table_name`).
 * - Key: the JSON array of primary-key values (Kafka key, or `key` in the value) mapped in order onto
 *   the configured key columns; an enriched object key is used as is.
 * - Op: a delete is `after: null`. Without `diff` there is no `before`, so an insert cannot be told
 *   from an update: op `u` (a full-row upsert either way). With `diff`, `before: null` means insert (`c`).
 *   The enriched envelope carries `op`.
 * - Position: the HLC `updated` (else `mvcc_timestamp`, else enriched `source.ts_hlc`) as
 *   `(wall ns, logical)`, source ordering. Order holds per key for the first emission; duplicates may
 *   arrive later with older timestamps and are then stale. Without any timestamp option the
 *   message falls back to transport order (weak).
 * - commitTs: wall ms of `mvcc_timestamp` (the row version's own time), else of `updated`. During an
 *   initial scan `updated` is the scan time, so the row version time is the better event time.
 * - snapshot: always false. CockroachDB has no snapshot marker: initial-scan rows look like inserts.
 */
import { DecodeError, PositionError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from '../json.js';
import { parseHlc, sourcePosition } from '../position.js';
import { isQuarantineReason } from '../reasons.js';
import type { ChangeEvent, ControlEvent, DecodeContext, FormatDecoder, InboundMessage, Key, NormalizedEvent, RowOp } from '../types.js';
import { changeEvent, controlEvent, decodeError, describe, put, transportOrder } from './kit.js';

const FORMAT = 'cockroachdb';
const WRAPPED_KEYS = new Set(['after', 'before', 'key', 'topic', 'updated', 'mvcc_timestamp']);
const ENRICHED_KEYS = new Set(['after', 'before', 'op', 'ts_ns', 'key', 'source', 'updated', 'mvcc_timestamp']);

function hlc(text: JsonValue | undefined, field: string): [bigint, bigint] | null {
  if (text === undefined || text === null) return null;
  if (typeof text !== 'string') throw decodeError('bad-position', `cockroachdb "${field}" must be an HLC string "<wall ns>.<logical>", got ${typeof text}`);
  try {
    return parseHlc(text);
  } catch (err) {
    if (err instanceof PositionError) throw decodeError('bad-position', `cockroachdb "${field}": ${err.message}`, { cause: err });
    throw err;
  }
}

/** Wall time of an HLC in epoch milliseconds (integer division, no float on the nanoseconds). */
function wallMs(ts: [bigint, bigint]): number {
  return Number(ts[0] / 1_000_000n);
}

function resolvedEvent(text: JsonValue, table: string | null): ControlEvent {
  const ts = hlc(text, 'resolved');
  if (ts === null || typeof text !== 'string') throw decodeError('bad-position', `cockroachdb "resolved" must be an HLC string "<wall ns>.<logical>", got ${describe(text)}`);
  return controlEvent({ format: FORMAT, control: 'resolved', table, position: sourcePosition(ts[0], ts[1]), detail: { resolved: text } });
}

function mapKey(table: string, raw: JsonValue | undefined, ctx: DecodeContext): Key {
  if (raw === undefined || raw === null) return {};
  if (isJsonObject(raw)) return raw;
  if (!Array.isArray(raw)) throw decodeError('bad-key', `cockroachdb key for "${table}" must be a JSON array of primary-key values`);
  const cols = ctx.keyColumns(table);
  if (cols === undefined || cols.length !== raw.length) {
    const expected = cols === undefined ? 'no key columns (table not configured)' : `[${cols.join(', ')}]`;
    throw decodeError(
      'unmapped-key',
      `cockroachdb key ${JSON.stringify(raw.length)}-element array for table "${table}" cannot be mapped: configured key columns are ${expected}`,
    );
  }
  const key: Key = {};
  cols.forEach((col, i) => {
    const v = raw[i];
    if (v !== undefined) key[col] = v;
  });
  return key;
}

interface Parts {
  readonly after: JsonObject | null;
  /** undefined: no `before` field at all (no `diff`). */
  readonly before: JsonObject | null | undefined;
  readonly op: RowOp | null;
  readonly key: JsonValue | undefined;
  readonly topic: string | null;
  readonly updated: JsonValue | undefined;
  readonly mvcc: JsonValue | undefined;
}

function rowImage(v: JsonValue | undefined, field: string): JsonObject | null | undefined {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (!isJsonObject(v)) throw decodeError('bad-field', `cockroachdb "${field}" must be a row object or null`);
  return v;
}

function partsOf(value: JsonObject): Parts {
  const meta = value.__crdb__;
  return isJsonObject(meta) ? bareParts(value, meta) : wrappedParts(value);
}

/** envelope=bare: the columns at the top level, everything else under `__crdb__`. */
function bareParts(value: JsonObject, meta: JsonObject): Parts {
  const columns: JsonObject = {};
  for (const [k, v] of Object.entries(value)) if (k !== '__crdb__') put(columns, k, v);
  const empty = Object.keys(columns).length === 0;
  return {
    after: empty ? null : columns,
    before: rowImage(meta.before, '__crdb__.before'),
    op: null,
    key: meta.key,
    topic: typeof meta.topic === 'string' ? meta.topic : null,
    updated: meta.updated,
    mvcc: meta.mvcc_timestamp,
  };
}

/** envelope=wrapped or enriched: `after` (and `before` with `diff`), enriched adds `op` and `source`. */
function wrappedParts(value: JsonObject): Parts {
  if (!('after' in value)) {
    if ('key' in value) throw decodeError('unsupported-envelope', 'cockroachdb message carries a key and no row (envelope=key_only): it cannot tell a delete from an upsert; use envelope=wrapped');
    throw decodeError('missing-field', 'cockroachdb row message must have "after" (wrapped/enriched) or "__crdb__" (bare)');
  }
  const source = isJsonObject(value.source) ? value.source : null;
  const op = value.op;
  if (op !== undefined && op !== 'c' && op !== 'u' && op !== 'd') {
    throw decodeError('bad-op', `cockroachdb enriched "op" must be c, u or d; got ${JSON.stringify(op)}`);
  }
  return {
    after: rowImage(value.after, 'after') ?? null,
    before: rowImage(value.before, 'before'),
    op: op ?? null,
    key: value.key,
    topic: topicOf(value, source),
    updated: value.updated ?? source?.ts_hlc,
    mvcc: value.mvcc_timestamp,
  };
}

function topicOf(value: JsonObject, source: JsonObject | null): string | null {
  if (typeof value.topic === 'string') return value.topic;
  return typeof source?.table_name === 'string' ? source.table_name : null;
}

function rowEvent(message: InboundMessage, value: JsonObject, ctx: DecodeContext, index: number | null): ChangeEvent {
  const p = partsOf(value);
  const table = p.topic ?? message.topic;
  if (table === null || table === '') {
    throw decodeError('missing-field', 'cockroachdb message names no table: expected "topic" in the value, "__crdb__.topic", enriched "source.table_name", or a Kafka topic');
  }
  const op: RowOp = p.op ?? (p.after === null ? 'd' : p.before === null ? 'c' : 'u');
  const updated = hlc(p.updated, 'updated');
  const mvcc = hlc(p.mvcc, 'mvcc_timestamp');
  const order = updated ?? mvcc;
  const commit = mvcc ?? updated;
  return changeEvent({
    format: FORMAT,
    op,
    table,
    key: mapKey(table, p.key ?? message.key ?? undefined, ctx),
    before: p.before ?? null,
    after: p.after,
    position: order === null ? (index === null ? transportOrder(message) : transportOrder(message, BigInt(index))) : sourcePosition(order[0], order[1]),
    commitTs: commit === null ? null : wallMs(commit),
    snapshot: false,
  });
}

/** Fields of other formats' envelopes: a `row` envelope value never has them at the top level. */
const OTHER_FORMAT_FIELDS = ['op', 'source', 'after', 'before', 'payload', 'metadata', 'data', 'isDdl', '__crdb__', 'resolved', 'ddl', 'status', 'patch', 'filter', '__deleted', '__op', 'Key', 'Value'];

/** An `envelope=row` message: a plain row object keyed by a JSON array of scalar primary-key values. */
function isRowEnvelope(message: InboundMessage): boolean {
  const { value, key } = message;
  if (!isJsonObject(value) || Object.keys(value).length === 0 || OTHER_FORMAT_FIELDS.some((f) => f in value)) return false;
  return Array.isArray(key) && key.length > 0 && key.every((v) => v !== null && !isJsonObject(v) && !Array.isArray(v));
}

/** A row envelope on the topic of a configured table (or for the only table, when the format is configured explicitly). */
function claimsRowEnvelope(message: InboundMessage, ctx: DecodeContext): boolean {
  if (!isRowEnvelope(message)) return false;
  return (message.topic !== null && ctx.keyColumns(message.topic) !== undefined) || ctx.onlyTable !== undefined;
}

function rowEnvelopeEvent(message: InboundMessage, value: JsonObject, ctx: DecodeContext): ChangeEvent {
  const table = message.topic ?? ctx.onlyTable ?? null;
  if (table === null || table === '') {
    throw decodeError('missing-field', 'cockroachdb envelope=row message names no table: expected a Kafka topic, or a single configured table');
  }
  return changeEvent({ format: FORMAT, op: 'u', table, key: mapKey(table, message.key ?? undefined, ctx), after: value, position: transportOrder(message) });
}

/**
 * A sinkless changefeed's row (`CREATE CHANGEFEED FOR TABLE t` with no sink: the SQL result's
 * `table`, `key` and `value` columns, forwarded as one JSON object): `{"key":"[\"seattle\", …]",
 * "table":"users","value":"{\"after\": …}"}`, key and value as JSON text. With envelope=key_only
 * the value is empty.
 */
function isSinklessRow(value: JsonObject): boolean {
  const keys = Object.keys(value);
  return keys.length === 3 && typeof value.key === 'string' && typeof value.table === 'string' && typeof value.value === 'string';
}

/** The message inside a sinkless row, as if it had come from Kafka with the table as its topic. */
function unwrapSinkless(message: InboundMessage, value: JsonObject): InboundMessage {
  if (value.value === '') {
    throw decodeError('unsupported-envelope', 'cockroachdb sinkless row has an empty value (envelope=key_only): it cannot tell a delete from an upsert; use envelope=wrapped');
  }
  const inner = (field: 'key' | 'value'): JsonValue => {
    try {
      return parseJson(String(value[field]));
    } catch {
      throw decodeError('bad-field', `cockroachdb sinkless row "${field}" must be JSON text`);
    }
  };
  return { ...message, key: inner('key'), value: inner('value'), topic: String(value.table) };
}

/** The Pub/Sub sink's `{Key, Value, Topic}` wrapper (Topic optional). */
function isPubSubWrapper(value: JsonObject): boolean {
  const keys = Object.keys(value);
  return 'Key' in value && 'Value' in value && keys.every((k) => k === 'Key' || k === 'Value' || k === 'Topic');
}

/** The message inside a `{Key, Value, Topic}` wrapper, as if it had come from Kafka. */
function unwrapPubSub(message: InboundMessage, value: JsonObject): InboundMessage {
  const inner = value.Value ?? null;
  if (inner === null) {
    throw decodeError('unsupported-envelope', 'cockroachdb {Key, Value, Topic} message has a null Value (envelope=key_only): it cannot tell a delete from an upsert; use envelope=wrapped');
  }
  const topic = typeof value.Topic === 'string' && value.Topic !== '' ? value.Topic : message.topic;
  return { ...message, key: value.Key ?? null, value: inner, topic };
}

function isResolved(value: JsonObject): JsonValue | undefined {
  if (Object.keys(value).length === 1 && 'resolved' in value) return value.resolved;
  const meta = value.__crdb__;
  if (Object.keys(value).length === 1 && isJsonObject(meta) && 'resolved' in meta) return meta.resolved;
  return undefined;
}

/** Decoder for CockroachDB changefeed JSON messages (wrapped, bare, enriched, webhook batches, resolved). */
/** Decodes one message value: resolved, webhook batch, wrapped/bare/enriched row, or row envelope. */
function decodeValue(message: InboundMessage, value: JsonObject, ctx: DecodeContext): NormalizedEvent[] {
  const resolved = isResolved(value);
  if (resolved !== undefined) return [resolvedEvent(resolved, message.topic)];
  if (Array.isArray(value.payload)) {
    return value.payload.map((element, i) => {
      if (!isJsonObject(element)) throw decodeError('bad-shape', `cockroachdb webhook payload[${i}] must be a JSON object`);
      const r = isResolved(element);
      if (r !== undefined) return resolvedEvent(r, null);
      try {
        return rowEvent(message, element, ctx, i);
      } catch (err) {
        if (err instanceof DecodeError && isQuarantineReason(err.reason)) throw decodeError(err.reason, `webhook payload[${i}]: ${err.message}`, { cause: err });
        throw err;
      }
    });
  }
  if (!('after' in value) && !isJsonObject(value.__crdb__) && isRowEnvelope(message)) return [rowEnvelopeEvent(message, value, ctx)];
  return [rowEvent(message, value, ctx, null)];
}

/** Decoder for CockroachDB changefeed JSON messages (wrapped, bare, enriched, row, webhook batches, Pub/Sub wrapper, resolved). */
export const cockroachdb: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape:
    '{after, before?, key?, topic?, updated?, mvcc_timestamp?} | {<columns>, __crdb__:{…}} | {after, op, ts_ns, source} | {payload:[…], length} | {Key, Value, Topic} | {key, table, value} (sinkless) | {resolved} | a row keyed by a JSON array (envelope=row)',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    if (!isJsonObject(v)) return false;
    if (isJsonObject(v.__crdb__)) return true;
    if (isResolved(v) !== undefined) return true;
    if (Array.isArray(v.payload) && typeof v.length === 'number') return true;
    if (isPubSubWrapper(v) || isSinklessRow(v)) return true;
    const keys = Object.keys(v);
    if (!('after' in v)) return false;
    if (keys.every((k) => WRAPPED_KEYS.has(k))) return true;
    if (!('op' in v) || !('ts_ns' in v) || !keys.every((k) => ENRICHED_KEYS.has(k))) return false;
    return !isJsonObject(v.source) || v.source.origin === 'cockroachdb' || 'ts_hlc' in v.source;
  },
  fallback: claimsRowEnvelope,
  decode(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[] {
    const value = message.value;
    if (!isJsonObject(value)) throw decodeError('bad-shape', `cockroachdb message value must be a JSON object, got ${describe(value)}`);
    const sinkless = isSinklessRow(value);
    if (!sinkless && !isPubSubWrapper(value)) return decodeValue(message, value, ctx);
    const inner = sinkless ? unwrapSinkless(message, value) : unwrapPubSub(message, value);
    if (!isJsonObject(inner.value)) throw decodeError('bad-shape', `cockroachdb ${sinkless ? 'sinkless row value' : '{Key, Value, Topic} Value'} must be a JSON object, got ${describe(inner.value)}`);
    return decodeValue(inner, inner.value, ctx);
  },
};
