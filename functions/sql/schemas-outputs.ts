/**
 * What the statements return or unload: reconcile's findings and counts, replay's events with their
 * key bucket, erase's raw objects, window reconcile's keys, and snapshot detection's anomalies and
 * re-snapshots. A SELECT's columns are exactly these, in this order (a test checks each statement).
 *
 *   RECONCILE_COUNTS.columns.map((c) => c.name)   // ['source_table', 'class', 'keys']
 */
import type { ColumnType, TableSchema } from './schema-types.js';

const col = <N extends string>(name: N, type: ColumnType, comment: string) => ({ name, type, comment }) as const;

/** One key reconcile reports: its class (classify.ts) and both sides. */
export const RECONCILE_FINDINGS = {
  name: 'reconcile_findings',
  format: 'output',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', 'canonical key text'),
    col('key_json', 'string', 'the key, JSON (from expected state, else the item)'),
    col('class', 'string', 'missing, deleted-live, stale, mismatch, ahead or extra'),
    col('expected_position', 'string', "raw's settled winner (null: none)"),
    col('expected_op', 'string', "the winner's op"),
    col('expected_hash', 'string', "the winner's content hash"),
    col('expected_deleted', 'boolean', 'the winner is a delete or below the truncate watermark'),
    col('expected_conflict', 'boolean', 'two events at the winning position with different hashes'),
    col('max_position', 'string', 'the highest position of the key in all raw, settled or not'),
    col('actual_position', 'string', "the item's __pos (null: no item)"),
    col('actual_deleted', 'boolean', "the item's __deleted"),
    col('actual_hash', 'string', "the item's __hash"),
    col('actual_applied_at', 'bigint', "the item's __appliedAt, epoch ms"),
    col('actual_erased', 'boolean', 'the item carries __erased'),
    col('watermark', 'string', "the table's truncate watermark"),
  ],
} as const satisfies TableSchema;

/** Keys per table and class, findings and non-findings (`ok`, `in-flight`, `unverifiable`, `erased`). */
export const RECONCILE_COUNTS = {
  name: 'reconcile_counts',
  format: 'output',
  columns: [col('source_table', 'string', 'source table'), col('class', 'string', 'a finding class or ok, in-flight, unverifiable, erased'), col('keys', 'bigint', 'keys of that class')],
} as const satisfies TableSchema;

/** One event to re-apply, with what rebuilds its record, in its key's bucket (the last column: UNLOAD's partition). */
export const REPLAY_EVENTS = {
  name: 'replay_events',
  format: 'output',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', 'canonical key text; null for a truncate'),
    col('key_json', 'string', 'the normalized key, JSON; null for a truncate'),
    col('position', 'string', 'encoded position'),
    col('op', 'string', 'c, u, d, r or t'),
    col('format', 'string', 'the decoder'),
    col('ordering', 'string', 'source, transport or none'),
    col('hash', 'string', 'content hash'),
    col('commit_ts', 'bigint', 'commit time, epoch ms'),
    col('arrival_ts', 'bigint', 'arrival, epoch ms'),
    col('txid', 'string', 'transaction id'),
    col('is_snapshot', 'boolean', 'a snapshot read'),
    col('transport_kind', 'string', 'kinesis, kafka or file'),
    col('stream', 'string', 'stream or topic'),
    col('shard', 'string', 'shard or partition'),
    col('sequence', 'string', 'sequence number or offset'),
    col('partition_key', 'string', 'partition key'),
    col('topic', 'string', 'Kafka topic'),
    col('headers', { map: 'string' }, 'Kafka headers'),
    col('message_key', 'string', 'the delivered key as text'),
    col('message_key_base64', 'string', 'the delivered key, base64'),
    col('message', 'string', "the record's message as text (a messageRef line's resolved from its record's first line)"),
    col('message_base64', 'string', "the record's message, base64"),
    col('raw_object', 'string', 'the raw object the line came from'),
    col('bucket', 'int', 'key bucket: first 32 bits of md5(key_id) mod buckets; 0 for a truncate'),
  ],
} as const satisfies TableSchema;

/** A raw object still in S3 (either layout) holding lines of a key to erase. */
export const ERASE_OBJECTS = {
  name: 'erase_objects',
  format: 'output',
  columns: [col('raw_object', 'string', 's3://bucket/key of the raw object')],
} as const satisfies TableSchema;

/** What history holds of each key of an erase run, by request: found or not, and up to which position. */
export const ERASE_FOUND = {
  name: 'erase_found',
  format: 'output',
  columns: [
    col('request', 'string', 'the erase request (erase_keys.request)'),
    col('key_hash', 'string', "the key's keyed hash (erase_keys.key_hash)"),
    col('lines', 'bigint', "history lines of the request's key"),
    col('max_position', 'string', 'the highest position among them'),
  ],
} as const satisfies TableSchema;

/** A key whose events arrived in a window of hours. */
export const WINDOW_KEYS = {
  name: 'window_keys',
  format: 'output',
  columns: [col('source_table', 'string', 'source table'), col('key_id', 'string', 'canonical key text'), col('key_json', 'string', 'the key, JSON')],
} as const satisfies TableSchema;

/** One anomaly of a table's recent hours against its history; what `recent` and `history` measure depends on the kind. */
export const ANOMALIES = {
  name: 'anomalies',
  format: 'output',
  columns: [
    col('source_table', 'string', 'source table'),
    col('kind', 'string', 'no-deletes, only-deletes, update-storm, quarantine-spike, before-null-rate, placeholder-rate or silent'),
    col('recent', 'double', 'the recent measure (see detect-anomalies.ts)'),
    col('history', 'double', 'the historical measure'),
  ],
} as const satisfies TableSchema;

/**
 * A live key of expected state that the table's latest complete snapshot did not read, and that
 * last changed before the snapshot began: deleted upstream while nothing captured the delete.
 */
export const ORPHANS = {
  name: 'orphans',
  format: 'output',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', 'canonical key text'),
    col('key_json', 'string', 'the key, JSON'),
    col('position', 'string', "expected state's winning position of the key"),
    col('snapshot_start', 'bigint', 'arrival of the snapshot\'s first read, epoch ms'),
    col('snapshot_end_position', 'string', "the position of the snapshot's last read: a tombstone goes there"),
    col('snapshot_keys', 'bigint', 'keys the snapshot read'),
  ],
} as const satisfies TableSchema;

/** A table whose snapshot reads arrived after its streamed changes. */
export const RESNAPSHOTS = {
  name: 'resnapshots',
  format: 'output',
  columns: [
    col('source_table', 'string', 'source table'),
    col('streaming_since', 'bigint', 'arrival of the first streamed change in the lookback, epoch ms'),
    col('resnapshot_reads', 'bigint', 'snapshot reads delivered after it'),
    col('first_read_at', 'bigint', 'arrival of the first of them, epoch ms'),
  ],
} as const satisfies TableSchema;
