/**
 * Kafka tombstones: records with a key and a null value. A null value cannot say which format it
 * belongs to, so the config says what it means (`kafkaTombstones`, per table or per pipeline):
 *
 * - `ignore` (the default for every format but `debezium-flattened`): a compaction marker. Debezium
 *   sends one after each delete event, which has already deleted the row. It becomes a
 *   `kafka-tombstone` control event: landed in raw and counted, never applied.
 * - `delete` (the default for `debezium-flattened`, whose deletes reach the topic only as tombstones
 *   since Debezium 2.5): a delete of the record key, as Debezium's JDBC sink does with
 *   `delete.enabled`. It is ordered by the record's transport position (Kafka offset), so a later
 *   re-insert of the key still wins. When the transform also sends its position fields as headers
 *   (`add.headers=lsn` / `source.sequence` / …), they order it instead, like the rows they come with.
 *
 * The key is the record key: a JSON object, or (CockroachDB) the array of key values in the
 * configured column order. The table is the topic's `<prefix>.<schema>.<table>` (or the whole topic) when that is configured,
 * else the only configured table. When neither names a configured table the tombstone is
 * quarantined as `tombstone-table-unknown`: it is never dropped.
 */
import { isJsonObject } from '../json.js';
import type { ChangeEvent, ControlEvent, InboundMessage, Key } from '../types.js';
import { flattenedPosition } from './debezium-flattened.js';
import { decodeRow } from './debezium-types.js';
import { changeEvent, controlEvent, decodeError, describe, epochMsOrNull, transportOrder } from './kit.js';

export const KAFKA_TOMBSTONE_FORMAT = 'kafka-tombstone';

/** What a Kafka tombstone does: it is applied as a delete of its key, or ignored. */
export type TombstoneMode = 'ignore' | 'delete';

/**
 * The setting per table: `ignore`, `delete`, or `auto`: a delete once the table is known to carry
 * Debezium flattened records (seen in this container, or recorded in its status row), else ignored.
 */
export const TOMBSTONE_SETTINGS = ['ignore', 'delete', 'auto'] as const;
export type TombstoneSetting = (typeof TOMBSTONE_SETTINGS)[number];

/** The format name of flattened (`ExtractNewRecordState`) records, whose deletes arrive only as tombstones. */
export const FLATTENED_FORMAT = 'debezium-flattened';

/** The configured table a tombstone belongs to, or null: topic `<prefix>.<schema>.<table>`, the whole topic, or the only table. */
export function tombstoneTable(topic: string | null, isConfigured: (table: string) => boolean, onlyTable: string | undefined): string | null {
  if (topic !== null) {
    const parts = topic.split('.');
    const candidates = [parts.length >= 3 ? parts.slice(-2).join('.') : null, topic];
    for (const candidate of candidates) if (candidate !== null && isConfigured(candidate)) return candidate;
  }
  return onlyTable ?? null;
}

/** The control event of an ignored tombstone; it names the table when one can be told, and why it was not applied. */
export function ignoredTombstone(message: InboundMessage, table: string | null, why?: string): ControlEvent {
  const detail = { ...(isJsonObject(message.key) ? { key: message.key } : {}), ...(why !== undefined ? { ignored: why } : {}) };
  return controlEvent({ format: KAFKA_TOMBSTONE_FORMAT, control: 'kafka-tombstone', table, detail });
}

/** Throws `tombstone-table-unknown` with what was tried. */
export function unknownTombstoneTable(message: InboundMessage, configured: readonly string[]): never {
  throw decodeError(
    'tombstone-table-unknown',
    `a Kafka tombstone (null value) to apply as a delete must name its table: topic ${describe(message.topic)} is not <prefix>.<schema>.<table> of a configured table (configured: ${configured.join(', ')}), and more than one table is configured`,
  );
}

/** The key of a tombstone: a JSON object (Debezium), or an array of values in key-column order (CockroachDB). */
function tombstoneKey(message: InboundMessage, table: string, keyColumns: readonly string[]): Key {
  const raw = message.key;
  if (isJsonObject(raw)) return message.keySchema ? decodeRow(raw, message.keySchema) : raw;
  if (Array.isArray(raw) && raw.length === keyColumns.length && raw.length > 0) {
    const key: Key = {};
    keyColumns.forEach((column, i) => {
      const v = raw[i];
      if (v !== undefined) key[column] = v;
    });
    return key;
  }
  throw decodeError(
    'tombstone-key-missing',
    `a Kafka tombstone for "${table}" to apply as a delete needs a JSON object key (e.g. {"id": 1}) or an array of the ${keyColumns.length} key values, got ${describe(raw)}`,
  );
}

/** A tombstone applied as a delete of the record key at the record's position. */
export function tombstoneDelete(message: InboundMessage, table: string, keyColumns: readonly string[]): ChangeEvent {
  const key = tombstoneKey(message, table, keyColumns);
  const headers = message.headers;
  const meta = (name: string) => headers[`__${name}`] ?? headers[`__source_${name}`];
  return changeEvent({
    format: KAFKA_TOMBSTONE_FORMAT,
    op: 'd',
    table,
    key,
    position: flattenedPosition(meta) ?? transportOrder(message),
    // __source_ts_ms is the commit time; a bare __ts_ms is the connector's processing time.
    commitTs: epochMsOrNull(headers.__source_ts_ms),
  });
}
