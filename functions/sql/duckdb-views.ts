/**
 * The DuckDB side of dialect entries `source` and `rawPath`: the views the embedded engine creates
 * so that statements read `raw_lines`, `history`, … by the same names and columns as the Glue
 * tables. JSON sources are read with `read_json` over local copies of their objects, each column
 * from its JSON field; partition columns (`dt`, `hr`, `source_table`, `run_id`) come from the
 * object's path, as Athena's projection takes them; `"$path"` is the object's `s3://` URI, mapped
 * back from the local file name. Iceberg tables are read with `read_parquet`.
 *
 *   jsonView(RAW_LINES, { files: '/tmp/x/raw/**\/*.gz', localRoot: '/tmp/x/raw/', uriRoot: 's3://bucket/' })
 *   // CREATE OR REPLACE VIEW raw_lines AS SELECT "v" AS v, …, 's3://bucket/' || substr(filename, 12) AS "$path", … FROM read_json(…)
 */
import { duckdbType, type TableSchema } from './schemas.js';
import { literal } from './sql.js';

/** Where a source's objects sit locally: a glob of the files (null: none), the directory that mirrors `uriRoot`. */
export interface LocalFiles {
  readonly files: string | null;
  /** Local directory (ending in `/`) whose layout below is the objects' keys below `uriRoot`. */
  readonly localRoot: string;
  /** `s3://bucket/` the keys are relative to. */
  readonly uriRoot: string;
}

const q = (name: string): string => `"${name.split('"').join('""')}"`;

/** A view with the schema's columns and no rows: a source with no objects in the range read. */
export function emptyView(schema: TableSchema, extra: readonly string[] = []): string {
  const cols = [...schema.columns, ...(schema.partitionKeys ?? [])].map((c) => `CAST(NULL AS ${duckdbType(c.type)}) AS ${q(c.name)}`);
  return `CREATE OR REPLACE VIEW ${q(schema.name)} AS SELECT ${[...cols, ...extra.map((e) => `CAST(NULL AS VARCHAR) AS ${q(e)}`)].join(', ')} WHERE FALSE`;
}

/** A JSON Lines source (raw_lines, raw_events, quarantine_lines, table_side) as a view. */
export function jsonView(schema: TableSchema, local: LocalFiles): string {
  if (local.files === null) return emptyView(schema, ['$path']);
  const columns = schema.columns.map((c) => `${literal(c.field ?? c.name)}: ${literal(duckdbType(c.type))}`).join(', ');
  const read = `read_json(${literal(local.files)}, format = 'newline_delimited', filename = true, hive_partitioning = false, columns = {${columns}})`;
  const path = `${literal(local.uriRoot)} || substr(filename, ${local.localRoot.length + 1})`;
  const data = schema.columns.map((c) => `${q(c.field ?? c.name)} AS ${q(c.name)}`);
  const parts = (schema.partitionKeys ?? []).map((p) => `CAST(NULLIF(regexp_extract(${path}, ${literal(`/${p.segment ?? p.name}=([^/]*)/`)}, 1), '') AS ${duckdbType(p.type)}) AS ${q(p.name)}`);
  return `CREATE OR REPLACE VIEW ${q(schema.name)} AS SELECT ${[...data, ...parts, `${path} AS "$path"`].join(', ')} FROM ${read}`;
}

/** An Iceberg table's Parquet stand-in as a view (files hold every column, partition columns included). */
export function parquetView(schema: TableSchema, files: string | null): string {
  if (files === null) return emptyView(schema);
  return `CREATE OR REPLACE VIEW ${q(schema.name)} AS SELECT ${schema.columns.map((c) => `CAST(${q(c.name)} AS ${duckdbType(c.type)}) AS ${q(c.name)}`).join(', ')} FROM read_parquet(${literal(files)}, hive_partitioning = false, union_by_name = true)`;
}

/** An empty table with the schema's columns: what an INSERT stages into, or a table with no partitions yet. */
export function emptyTable(schema: TableSchema, name: string = schema.name): string {
  return `CREATE OR REPLACE TABLE ${q(name)} (${schema.columns.map((c) => `${q(c.name)} ${duckdbType(c.type)}`).join(', ')})`;
}

/** A table loaded from Parquet files (the partitions a MERGE or DELETE rewrites). */
export function loadedTable(schema: TableSchema, files: string): string {
  return `CREATE OR REPLACE TABLE ${q(schema.name)} AS SELECT ${schema.columns.map((c) => `CAST(${q(c.name)} AS ${duckdbType(c.type)}) AS ${q(c.name)}`).join(', ')} FROM read_parquet(${literal(files)}, hive_partitioning = false, union_by_name = true)`;
}
