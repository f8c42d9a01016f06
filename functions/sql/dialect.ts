/**
 * The dialect map: every difference between the Athena (Trino, Iceberg in Glue) and the DuckDB
 * (Parquet standing in for Iceberg) form of the jobs' statements, each a named entry with its
 * reason. Statements are written once (statements/*.ts) in the subset both engines run; only these
 * entries render differently.
 *
 *   render(compactHour({ hour }), athena('tidemark_shop'))   // INSERT INTO "tidemark_shop"."history" (…) SELECT … FROM "tidemark_shop"."raw_lines" r WHERE …
 *   render(compactHour({ hour }), duckdb)                    // INSERT INTO history__insert (…) SELECT … FROM raw_lines r WHERE …
 *
 * Parameters: Athena's `ExecutionParameters` are SQL literals (`'2026-11-30'`, `6`), taken only in
 * the WHERE clauses of SELECT, INSERT and UNLOAD; DuckDB binds the same values to the same `?`.
 */
import type { TableName } from './schemas.js';
import { join, literal, litList, raw, renderSql, type Sql, SqlArgumentError, type SqlValue, sql } from './sql.js';
import type { Statement, StatementKind } from './statement.js';

/** Where an UNLOAD writes: an `s3://` prefix (Athena), and the columns it partitions the files by. */
export interface Output {
  readonly location: string;
  readonly partitionedBy: readonly string[];
}

export interface Dialect {
  readonly name: 'athena' | 'duckdb';
  /** A table a statement reads. */
  table(name: TableName): Sql;
  /** The table an INSERT, MERGE or DELETE writes. */
  into(name: TableName, kind: 'insert' | 'merge' | 'delete'): Sql;
  /** `bucket = first 32 bits of md5(key id) mod buckets`, the same integer on both engines. */
  bucket(keyId: Sql, buckets: number): Sql;
  /** Epoch ms of the start of hour `hr` of day `dt` (a DATE). */
  hourStart(dt: Sql, hr: Sql): Sql;
  /** A first-layout key's canonical key id (`["7","A"]`) from its JSON text and key columns. */
  keyIdOfJson(json: Sql, columns: readonly string[]): Sql;
  /** The text at a dotted path (`$.source.snapshot`) of JSON text; null when absent or not a scalar. */
  jsonText(json: Sql, path: string): Sql;
  /** A query's rows written as gzip JSON Lines. */
  unload(query: Sql, output: Output): Sql;
  /** Table maintenance; null when the engine has nothing to do. `tables` narrows OPTIMIZE to those `source_table` partitions. */
  optimize(name: TableName, tables?: readonly string[]): Sql | null;
  vacuum(name: TableName): Sql | null;
}

/** Every entry of the map, why it differs, and each engine's form. */
export const DIALECT_ENTRIES = {
  source: {
    reason: 'Athena reads Glue tables by their qualified names; DuckDB reads views the engine creates over the downloaded objects, named as the Glue tables are',
    athena: '"tidemark_shop"."history"',
    duckdb: 'history',
  },
  rawPath: {
    reason: "Athena's JSON tables have the hidden \"$path\" column; DuckDB's read_json(filename = true) gives the local file, which the raw_lines view maps back to s3://bucket/key as a column named \"$path\" (so statements write \"$path\" on both)",
    athena: '"$path"',
    duckdb: "'s3://bucket/' || substr(filename, …) AS \"$path\"",
  },
  bucket: {
    reason: 'no hash function exists in both with the same result (Trino: xxhash64, murmur3, crc32 on varbinary; DuckDB: hash, md5 on text); md5 is in both, as varbinary in Trino and as hex text in DuckDB, so the first 8 hex digits give the same integer',
    athena: 'CAST(from_base(substr(to_hex(md5(to_utf8(key_id))), 1, 8), 16) % 16 AS INTEGER)',
    duckdb: "CAST(CAST('0x' || substr(md5(key_id), 1, 8) AS BIGINT) % 16 AS INTEGER)",
  },
  hourStart: {
    reason: 'date functions: Trino has to_unixtime (seconds, double), DuckDB epoch_ms; every other time is epoch ms arithmetic or a date bound as text and cast, which both run',
    athena: 'CAST(to_unixtime(CAST(dt AS TIMESTAMP)) * 1000 AS BIGINT) + hr * 3600000',
    duckdb: 'epoch_ms(CAST(dt AS TIMESTAMP)) + hr * 3600000',
  },
  keyIdOfJson: {
    reason: "first-layout lines carry the key JSON but no key id: Trino's JSON functions are json_extract_scalar and json_format(CAST(ARRAY[…] AS JSON)), DuckDB's json_extract_string and json_array",
    athena: 'json_format(CAST(ARRAY[json_extract_scalar("key", \'$["id"]\')] AS JSON))',
    duckdb: 'json_array(json_extract_string("key", \'$."id"\'))',
  },
  jsonText: {
    reason: "a scalar at a JSON path of a delivered message (Debezium's source.snapshot marker): Trino's json_extract_scalar, DuckDB's json_extract_string; the same dotted path syntax in both",
    athena: "json_extract_scalar(message, '$.source.snapshot')",
    duckdb: "json_extract_string(message, '$.source.snapshot')",
  },
  insert: {
    reason: 'an Iceberg INSERT commits new data files; DuckDB inserts into a staging table the engine then writes as new Parquet files of the partitions it touched',
    athena: 'INSERT INTO "tidemark_shop"."history" …',
    duckdb: 'INSERT INTO history__insert …',
  },
  merge: {
    reason: "Iceberg MERGE runs on Athena (node-sql-parser's trino mode cannot parse MERGE); on DuckDB the same MERGE runs on a table the engine loads from the affected Parquet partitions and writes back",
    athena: 'MERGE INTO "tidemark_shop"."expected_state" t USING (…) s ON …',
    duckdb: 'MERGE INTO expected_state t USING (…) s ON …',
  },
  delete: {
    reason: 'Iceberg DELETE writes delete files that VACUUM then expires; DuckDB deletes from the loaded partitions, which the engine rewrites, removing every version of the old objects',
    athena: 'DELETE FROM "tidemark_shop"."history" WHERE …',
    duckdb: 'DELETE FROM history WHERE …',
  },
  unload: {
    reason: "Athena's UNLOAD (not parsed by node-sql-parser's trino mode) writes to an empty S3 prefix, in parallel files each in the query's order; DuckDB's JSON COPY has no PARTITION_BY, so the engine stages the rows and COPYs each partition value",
    athena: "UNLOAD (SELECT …) TO 's3://…/' WITH (format = 'JSON', compression = 'GZIP', partitioned_by = ARRAY['bucket'])",
    duckdb: 'CREATE TABLE unload_result AS SELECT …  then  COPY (SELECT … WHERE bucket = 3) TO \'…\' (FORMAT JSON, COMPRESSION GZIP)',
  },
  optimize: {
    reason: 'Iceberg OPTIMIZE rewrites small files into large ones, and files with delete files without the deleted rows (not parsed by node-sql-parser); the Parquet stand-in writes one file per partition per statement, rows already deleted, and has nothing to optimize',
    athena: 'OPTIMIZE "tidemark_shop"."history" REWRITE DATA USING BIN_PACK',
    duckdb: '(nothing)',
  },
  vacuum: {
    reason: "Iceberg VACUUM expires old snapshots so deleted rows' files are gone (not parsed by node-sql-parser); the stand-in already removed every version of a rewritten object",
    athena: 'VACUUM "tidemark_shop"."history"',
    duckdb: '(nothing)',
  },
} as const;
export type DialectEntry = keyof typeof DIALECT_ENTRIES;

/** The statement kinds node-sql-parser's trino mode cannot parse, and the entry that names each. */
export const UNPARSED_KINDS: Readonly<Partial<Record<StatementKind, DialectEntry>>> = { merge: 'merge', unload: 'unload', optimize: 'optimize', vacuum: 'vacuum' };

const SAFE_COLUMN = /^[A-Za-z0-9_$ .-]{1,128}$/;

function keyColumns(columns: readonly string[]): readonly string[] {
  if (columns.length === 0) throw new SqlArgumentError('a key needs at least one column');
  for (const c of columns) if (c.length > 128 || !SAFE_COLUMN.test(c)) throw new SqlArgumentError(`key column "${c.slice(0, 40)}" must be 1-128 characters of letters, digits, space, _ $ . -`);
  return columns;
}

const quoted = (name: string): Sql => raw(`"${name}"`);

/** A dotted JSON path of plain names (`$.source.snapshot`): the form both engines read alike. */
function jsonPath(path: string): string {
  if (!/^\$(\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,8}$/.test(path)) throw new SqlArgumentError(`JSON path "${path.slice(0, 80)}" must be $ followed by 1-8 .name parts`);
  return path;
}

/** Athena: Glue tables of `database`, Iceberg DML, UNLOAD to S3. */
export function athena(database: string): Dialect {
  if (database.length > 255 || !/^[a-z0-9_]{1,255}$/.test(database)) throw new SqlArgumentError(`Glue database "${database}" must be lowercase letters, digits and _`);
  const table = (name: TableName): Sql => raw(`"${database}"."${name}"`);
  return {
    name: 'athena',
    table,
    into: (name) => table(name),
    bucket: (keyId, buckets) => sql`CAST(from_base(substr(to_hex(md5(to_utf8(${keyId}))), 1, 8), 16) % ${raw(String(bucketCount(buckets)))} AS INTEGER)`,
    hourStart: (dt, hr) => sql`CAST(to_unixtime(CAST(${dt} AS TIMESTAMP)) * 1000 AS BIGINT) + ${hr} * 3600000`,
    keyIdOfJson: (json, columns) => sql`json_format(CAST(ARRAY[${join(keyColumns(columns).map((c) => sql`json_extract_scalar(${json}, ${raw(literal(`$["${c}"]`))})`))}] AS JSON))`,
    jsonText: (json, path) => sql`json_extract_scalar(${json}, ${raw(literal(jsonPath(path)))})`,
    unload: (query, output) => {
      const partitioned = output.partitionedBy.length > 0 ? `, partitioned_by = ARRAY[${output.partitionedBy.map(literal).join(', ')}]` : '';
      return sql`UNLOAD (${query}) TO ${raw(literal(output.location))} WITH (format = 'JSON', compression = 'GZIP'${raw(partitioned)})`;
    },
    optimize: (name, tables) => (tables && tables.length > 0 ? sql`OPTIMIZE ${table(name)} REWRITE DATA USING BIN_PACK WHERE source_table IN ${litList(tables, 'tables')}` : sql`OPTIMIZE ${table(name)} REWRITE DATA USING BIN_PACK`),
    vacuum: (name) => sql`VACUUM ${table(name)}`,
  };
}

/** The staging table DuckDB inserts into, and the table an unload stages its rows in. */
export const DUCKDB_INSERT_SUFFIX = '__insert';
export const DUCKDB_UNLOAD_TABLE = 'unload_result';

/** DuckDB (embedded default): views and loaded tables named as the Glue tables; the engine does the I/O. */
export const duckdb: Dialect = {
  name: 'duckdb',
  table: (name) => raw(name),
  into: (name, kind) => raw(kind === 'insert' ? `${name}${DUCKDB_INSERT_SUFFIX}` : name),
  bucket: (keyId, buckets) => sql`CAST(CAST('0x' || substr(md5(${keyId}), 1, 8) AS BIGINT) % ${raw(String(bucketCount(buckets)))} AS INTEGER)`,
  hourStart: (dt, hr) => sql`epoch_ms(CAST(${dt} AS TIMESTAMP)) + ${hr} * 3600000`,
  keyIdOfJson: (json, columns) => sql`json_array(${join(keyColumns(columns).map((c) => sql`json_extract_string(${json}, ${raw(literal(`$."${c}"`))})`))})`,
  jsonText: (json, path) => sql`json_extract_string(${json}, ${raw(literal(jsonPath(path)))})`,
  unload: (query) => sql`CREATE TABLE ${quoted(DUCKDB_UNLOAD_TABLE)} AS ${query}`,
  optimize: () => null,
  vacuum: () => null,
};

/** UNLOAD writes at most 100 partitions (Athena's limit), so a replay has 1 to 100 key buckets. */
export function bucketCount(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new SqlArgumentError(`buckets must be an integer from 1 to 100 (Athena UNLOAD writes at most 100 partitions), got ${n}`);
  return n;
}

/** A statement rendered for one engine: text with `?`, and the values in order. `sql` null: nothing to run there. */
export interface RenderedStatement {
  readonly name: string;
  readonly kind: StatementKind;
  readonly sql: string | null;
  readonly params: readonly SqlValue[];
}

/** Renders a statement for a dialect (with `inline`, values are literals instead of `?`). */
export function render(statement: Statement, dialect: Dialect, options: { readonly inline?: boolean } = {}): RenderedStatement {
  const body = statement.body(dialect);
  if (body === null) return { name: statement.name, kind: statement.kind, sql: null, params: [] };
  const { text, params } = renderSql(body, dialect, options.inline === true);
  return { name: statement.name, kind: statement.kind, sql: text, params };
}

/**
 * The `StartQueryExecution` input of a statement on Athena: `QueryString`, and `ExecutionParameters`
 * (each value as its SQL literal, as Athena requires) when it binds any.
 */
export function athenaQuery(statement: Statement, database: string): { QueryString: string; ExecutionParameters?: string[] } {
  const r = render(statement, athena(database));
  if (r.sql === null) throw new SqlArgumentError(`${statement.name} has no Athena form`);
  return r.params.length > 0 ? { QueryString: r.sql, ExecutionParameters: r.params.map(literal) } : { QueryString: r.sql };
}
