/**
 * Readers specific to Debezium, shared by its decoders (envelope, flattened, control messages).
 * The readers every format uses are in kit.ts.
 */
import { isJsonObject, type JsonValue } from '../json.js';
import type { DecodeContext, InboundMessage, Key, Row } from '../types.js';
import { decodeRow } from './debezium-types.js';
import { keyFromImages } from './kit.js';

/** `source.snapshot` values that mean "this row was read by a snapshot" (string enum or boolean). */
const SNAPSHOT_MARKERS = new Set(['true', 'first', 'last', 'first_in_data_collection', 'last_in_data_collection', 'incremental']);

/** True when a `source.snapshot` value marks a snapshot read; accepts the string enum and the boolean. */
export function isSnapshotMarker(value: JsonValue | undefined): boolean {
  if (value === true) return true;
  return typeof value === 'string' && SNAPSHOT_MARKERS.has(value);
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
