/**
 * The shape of a table schema (schemas.ts): columns with a portable type, and how the table is
 * stored. Kept apart so that the source and output schemas can be declared in their own files.
 *
 *   { name: 'truncates', format: 'iceberg', columns: [{ name: 'source_table', type: 'string', comment: '…' }, …], partitionedBy: [] }
 */

/** One field of a struct column. */
export interface Field {
  readonly name: string;
  readonly type: ColumnType;
}

/** A portable column type: Hive names; rendered for Glue (`hiveType`) and DuckDB (`duckdbType`). */
export type ColumnType = 'string' | 'bigint' | 'int' | 'boolean' | 'double' | 'date' | { readonly struct: readonly Field[] } | { readonly map: 'string' };

export interface Column {
  readonly name: string;
  readonly type: ColumnType;
  readonly comment: string;
  /** A JSON source's field name, when it is not the column name (`keyId` for `key_id`). */
  readonly field?: string;
  /** A path partition's key in the object's path, when it is not the column name (`table` for raw_events' `source_table`). */
  readonly segment?: string;
}

/**
 * `json`: gzip JSON Lines under a Glue table (raw, quarantine, the table side); `iceberg`: an
 * Iceberg table (Parquet files on the embedded default); `output`: what a statement returns or unloads.
 */
export type TableFormat = 'json' | 'iceberg' | 'output';

export interface TableSchema {
  readonly name: string;
  readonly format: TableFormat;
  /** Data columns, in order. */
  readonly columns: readonly Column[];
  /** Partition keys that are path segments, not data (the JSON sources' `dt` and `hr`). */
  readonly partitionKeys?: readonly Column[];
  /** Data columns an Iceberg table is partitioned by (identity transforms). */
  readonly partitionedBy?: readonly string[];
}
