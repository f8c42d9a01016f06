/**
 * The columns of every table the jobs' SQL reads or writes, once: the statements name their columns
 * from here, the DuckDB engine builds its views and Parquet files from here, and the CDK builds the
 * Glue and Iceberg tables from here (`hiveType`, `serdeMappings`). Names are snake_case and lowercase,
 * as Athena shows them; a JSON source's column keeps the line's field name in `field`
 * (`key_id` ← `keyId`), mapped by the JSON SerDe.
 *
 *   HISTORY.columns.map((c) => c.name)   // ['source_table', 'key_id', 'key_json', 'position', …]
 *   hiveType(RAW_LINES.columns[…transport…].type)  // 'struct<kind:string,stream:string,…>'
 *
 * docs/history.md §1 (raw lines), §2 (history), §3 (expected state), "SQL" (the rest).
 */
import { ERASE_KEYS, RAW_LINES, RAW_EVENTS, QUARANTINE_LINES, TABLE_SIDE } from './schemas-sources.js';
import { ANOMALIES, ERASE_FOUND, ERASE_OBJECTS, RECONCILE_COUNTS, RECONCILE_FINDINGS, REPLAY_EVENTS, RESNAPSHOTS, ORPHANS, WINDOW_KEYS } from './schemas-outputs.js';
import type { ColumnType, TableSchema } from './schema-types.js';

export type { Column, ColumnType, Field, TableSchema, TableFormat } from './schema-types.js';
export { ERASE_KEYS, RAW_LINES, RAW_EVENTS, QUARANTINE_LINES, TABLE_SIDE } from './schemas-sources.js';
export { ANOMALIES, ERASE_FOUND, ERASE_OBJECTS, RECONCILE_COUNTS, RECONCILE_FINDINGS, REPLAY_EVENTS, RESNAPSHOTS, ORPHANS, WINDOW_KEYS } from './schemas-outputs.js';

const col = <N extends string>(name: N, type: ColumnType, comment: string) => ({ name, type, comment }) as const;

/** Every delivered line, compacted from raw (Iceberg, partitioned by `source_table` and `dt`). */
export const HISTORY = {
  name: 'history',
  format: 'iceberg',
  columns: [
    col('source_table', 'string', "the line's source table; '' for a control message that names none"),
    col('key_id', 'string', 'canonical key text (functions/core/keys.ts keyId): the join key of every job'),
    col('key_json', 'string', 'the normalized key, JSON'),
    col('position', 'string', 'encoded position: sorts as text exactly as positions order'),
    col('op', 'string', 'c, u, d, r or t (changes)'),
    col('kind', 'string', 'change or control'),
    col('control', 'string', 'the control kind (controls)'),
    col('format', 'string', 'the decoder, e.g. debezium-postgresql'),
    col('ordering', 'string', 'source, transport or none'),
    col('hash', 'string', 'content hash of the event (as __hash on items); null in the first layout'),
    col('commit_ts', 'bigint', 'source commit time, epoch ms'),
    col('arrival_ts', 'bigint', 'arrival at the stream, epoch ms'),
    col('txid', 'string', 'source transaction id'),
    col('is_snapshot', 'boolean', 'a snapshot read'),
    col('before_null', 'boolean', 'an update delivered without a before image'),
    col('partial', 'boolean', 'carries placeholders or is a patch'),
    col('transport_kind', 'string', 'kinesis, kafka or file'),
    col('stream', 'string', 'Kinesis stream or Kafka topic'),
    col('shard', 'string', 'Kinesis shard or Kafka partition'),
    col('sequence', 'string', 'Kinesis sequence number or Kafka offset'),
    col('partition_key', 'string', 'Kinesis partition key'),
    col('topic', 'string', 'Kafka topic'),
    col('headers', { map: 'string' }, 'Kafka headers'),
    col('message_key', 'string', 'the delivered key, as text'),
    col('message_key_base64', 'string', 'the delivered key, base64, when it is not UTF-8'),
    col('message', 'string', 'the delivered value, as text'),
    col('message_base64', 'string', 'the delivered value, base64, when it is not UTF-8'),
    col('message_ref', 'boolean', 'the message is on the first line of the same record in raw_object'),
    col('raw_object', 'string', 'the raw object the line came from: s3://bucket/key'),
    col('dt', 'date', "the raw object's day (its batch's first arrival, UTC)"),
    col('hr', 'int', "the raw object's hour, 0-23"),
  ],
  partitionedBy: ['source_table', 'dt'],
} as const satisfies TableSchema;

/** What raw says each key must be: its winning event (Iceberg, partitioned by `source_table`). */
export const EXPECTED_STATE = {
  name: 'expected_state',
  format: 'iceberg',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', 'canonical key text'),
    col('key_json', 'string', 'the normalized key, JSON'),
    col('position', 'string', "the winner's encoded position: the highest of the key"),
    col('op', 'string', "the winner's op"),
    col('hash', 'string', "the winner's content hash (the greatest, when several share the position)"),
    col('commit_ts', 'bigint', "the winner's commit time, epoch ms"),
    col('deleted', 'boolean', "the winner is a delete, or below the table's truncate watermark"),
    col('conflict', 'boolean', 'two events at the winning position with different hashes'),
    col('hour', 'bigint', 'the compacted hour that last changed the row, epoch ms'),
  ],
  partitionedBy: ['source_table'],
} as const satisfies TableSchema;

/** Each table's truncate watermark: the highest position of a truncate seen in history. */
export const TRUNCATES = {
  name: 'truncates',
  format: 'iceberg',
  columns: [col('source_table', 'string', 'source table'), col('position', 'string', 'the highest truncate position: rows below it are deleted')],
  partitionedBy: [],
} as const satisfies TableSchema;

/** Per table and hour, the counters the anomaly checks read (Iceberg, partitioned by `dt`). */
export const TABLE_HOURS = {
  name: 'table_hours',
  format: 'iceberg',
  columns: [
    col('source_table', 'string', 'source table'),
    col('hour', 'bigint', 'start of the hour, epoch ms'),
    col('dt', 'date', 'the day of the hour'),
    col('events', 'bigint', 'change lines'),
    col('op_c', 'bigint', 'inserts'),
    col('op_u', 'bigint', 'updates'),
    col('op_d', 'bigint', 'deletes'),
    col('op_r', 'bigint', 'snapshot reads (op r)'),
    col('op_t', 'bigint', 'truncates'),
    col('snapshot_reads', 'bigint', 'changes flagged as snapshot reads'),
    col('before_null_updates', 'bigint', 'updates without a before image'),
    col('partial_events', 'bigint', 'changes with placeholders or patches'),
    col('quarantined', 'bigint', 'records quarantined that named this table'),
    col('controls', 'bigint', 'control messages of this table'),
  ],
  partitionedBy: ['dt'],
} as const satisfies TableSchema;

/** Every table a statement can read or write, by name. */
export const TABLES = {
  raw_lines: RAW_LINES,
  raw_events: RAW_EVENTS,
  quarantine_lines: QUARANTINE_LINES,
  history: HISTORY,
  expected_state: EXPECTED_STATE,
  truncates: TRUNCATES,
  table_hours: TABLE_HOURS,
  table_side: TABLE_SIDE,
  erase_keys: ERASE_KEYS,
} as const;
export type TableName = keyof typeof TABLES;

/** Every output a statement produces, by name (UNLOAD / COPY files, or query results). */
export const OUTPUTS = {
  reconcile_findings: RECONCILE_FINDINGS,
  reconcile_counts: RECONCILE_COUNTS,
  replay_events: REPLAY_EVENTS,
  erase_objects: ERASE_OBJECTS,
  erase_found: ERASE_FOUND,
  window_keys: WINDOW_KEYS,
  anomalies: ANOMALIES,
  resnapshots: RESNAPSHOTS,
  orphans: ORPHANS,
} as const;

export type ColumnName<S extends { readonly columns: readonly { readonly name: string }[] }> = S['columns'][number]['name'];

/** The Hive / Glue type of a column (`string`, `bigint`, `struct<…>`, `map<string,string>`). */
export function hiveType(t: ColumnType): string {
  if (typeof t === 'string') return t;
  if ('map' in t) return `map<string,${t.map}>`;
  return `struct<${t.struct.map((f) => `${f.name}:${hiveType(f.type)}`).join(',')}>`;
}

const DUCKDB_TYPES = { string: 'VARCHAR', bigint: 'BIGINT', int: 'INTEGER', boolean: 'BOOLEAN', double: 'DOUBLE', date: 'DATE' } as const;

/** The DuckDB type of a column (`VARCHAR`, `STRUCT(kind VARCHAR, …)`, `MAP(VARCHAR, VARCHAR)`). */
export function duckdbType(t: ColumnType): string {
  if (typeof t === 'string') return DUCKDB_TYPES[t];
  if ('map' in t) return `MAP(VARCHAR, ${duckdbType(t.map)})`;
  return `STRUCT(${t.struct.map((f) => `"${f.name}" ${duckdbType(f.type)}`).join(', ')})`;
}

/**
 * The OpenX JSON SerDe properties that map a snake_case column to its JSON field
 * (`mapping.key_id` = `keyid`): with `case.insensitive` (the SerDe's default) the SerDe lowercases
 * the line's keys before it maps them, so the mapped names are lowercase too.
 */
export function serdeMappings(schema: TableSchema): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of schema.columns) if (c.field !== undefined && c.field.toLowerCase() !== c.name) out[`mapping.${c.name}`] = c.field.toLowerCase();
  return out;
}
