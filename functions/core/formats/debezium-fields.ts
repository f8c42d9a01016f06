/**
 * Small readers shared by the Debezium decoders (envelope, flattened, control messages).
 */
import { DecodeError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import type { DecodeContext, InboundMessage, Key, Row } from '../types.js';
import { decodeRow } from './debezium-types.js';
import { keyFromImages } from './shared.js';

/** A short description of a JSON value for error messages (never the row contents). */
export function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return isJsonObject(value) ? 'an object' : String(value);
}

/** `source.snapshot` values that mean "this row was read by a snapshot" (string enum or boolean). */
const SNAPSHOT_MARKERS = new Set(['true', 'first', 'last', 'first_in_data_collection', 'last_in_data_collection', 'incremental']);

/** True when a `source.snapshot` value marks a snapshot read; accepts the string enum and the boolean. */
export function isSnapshotMarker(value: JsonValue | undefined): boolean {
  if (value === true) return true;
  return typeof value === 'string' && SNAPSHOT_MARKERS.has(value);
}

/** Epoch milliseconds from an integer JSON value, or null when absent or not an integer. */
export function epochMsOrNull(value: JsonValue | undefined): number | null {
  const n = toBigInt(value);
  return n === undefined ? null : Number(n);
}

/** A transaction id as text (numbers keep their exact digits), or null. */
export function idText(value: JsonValue | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  const n = toBigInt(value);
  return n === undefined ? null : n.toString();
}

/** Reads a required non-empty string field of `obj`, or throws `missing-field` naming what was expected. */
export function requireString(obj: JsonObject, field: string, where: string, example: string): string {
  const value = obj[field];
  if (typeof value !== 'string' || value === '') {
    throw new DecodeError('missing-field', `expected ${where}.${field} to be a non-empty string (e.g. ${example}), got ${describe(value)}`);
  }
  return value;
}

/** A row image: an object, or null when absent. Anything else throws `missing-field`. */
export function rowOrNull(value: JsonValue | undefined, what: string): Row | null {
  if (value === null || value === undefined) return null;
  if (!isJsonObject(value)) throw new DecodeError('missing-field', `expected ${what} to be a row object or null, got ${describe(value)}`);
  return value;
}

/**
 * The best key a message carries: the Kafka message key when it is an object (decoded by its key
 * schema when one came along), else the configured primary-key columns found in the row images.
 * The caller re-derives the final key from the configured columns; this is only the best guess.
 */
export function bestKey(message: InboundMessage, ctx: DecodeContext, table: string, rows: readonly (Row | null)[]): Key {
  if (isJsonObject(message.key)) return message.keySchema ? decodeRow(message.key, message.keySchema) : message.key;
  return keyFromImages(table, ctx, rows);
}
