/**
 * A statement: its SQL once (a function of the dialect, which fills in the few entries that
 * differ), what kind it is, and what it reads and writes, so that the embedded engine downloads
 * only the partitions it needs and knows which it must write back.
 *
 *   const s = selectStatement('window-keys', query, { reads: [{ table: 'history', filter: { days } }], columns: WINDOW_KEYS.columns });
 *   render(s, athena('tidemark_shop')).sql        // the Athena text
 *
 * MERGE and DELETE take no `?` parameters on Athena, so their builders refuse bound values: their
 * values are inlined as escaped literals (sql.ts `lit`).
 */
import { type Dialect, duckdb, type Output } from './dialect.js';
import type { Column, TableName } from './schemas.js';
import { call, raw, renderSql, type Sql, SqlArgumentError, sql } from './sql.js';
import type { DayRange } from './time.js';

export type StatementKind = 'select' | 'insert' | 'merge' | 'delete' | 'unload' | 'optimize' | 'vacuum';

/** Which partitions of a table a statement touches; an absent field does not narrow. */
export interface PartitionFilter {
  /** `source_table` values (history, expected_state, table_side). */
  readonly tables?: readonly string[];
  /** First-layout table segments (raw_events' `source_table`). */
  readonly segments?: readonly string[];
  /** `dt`, inclusive (history, table_hours, raw and quarantine days). */
  readonly days?: DayRange;
  /** Hour starts, epoch ms, inclusive (raw and quarantine `dt`/`hr`). */
  readonly hours?: { readonly from: number; readonly to: number };
  /** Raw object URIs, `s3://bucket/key` (raw_lines). */
  readonly objects?: readonly string[];
  /** The reconcile run whose table side is read. */
  readonly runId?: string;
}

export interface Read {
  readonly table: TableName;
  readonly filter: PartitionFilter;
}

/**
 * What a statement writes. `insert`: new rows (new files). `rewrite`: rows of existing partitions
 * change (MERGE, DELETE): the partitions matching `filter`, narrowed by `affected` (a SELECT of the
 * partition columns the statement can touch, for engines that rewrite whole partitions).
 */
export interface Write {
  readonly table: TableName;
  readonly mode: 'insert' | 'rewrite';
  readonly filter: PartitionFilter;
  readonly affected: Sql | null;
}

export interface Statement {
  /** `compact-hour`, or `fold-expected/merge-winners` for a step of a statement file. */
  readonly name: string;
  readonly kind: StatementKind;
  /** The SQL for a dialect; null when that engine has nothing to run (DuckDB OPTIMIZE). */
  body(dialect: Dialect): Sql | null;
  /** The SELECTs inside it (a MERGE's source, an UNLOAD's query): what a Trino parser can check. */
  readonly queries: readonly Sql[];
  readonly reads: readonly Read[];
  readonly writes: Write | null;
  /** Where an UNLOAD writes. */
  readonly output: Output | null;
  /** The columns a SELECT or UNLOAD yields, in order. */
  readonly columns: readonly Column[] | null;
}

interface Common {
  readonly reads: readonly Read[];
}

/** A SELECT, or with `output` an UNLOAD of it. */
export function selectStatement(name: string, query: Sql, o: Common & { readonly columns: readonly Column[]; readonly output?: Output }): Statement {
  const output = o.output ?? null;
  return {
    name,
    kind: output ? 'unload' : 'select',
    body: (d) => (output ? d.unload(query, output) : query),
    queries: [query],
    reads: o.reads,
    writes: null,
    output,
    columns: o.columns,
  };
}

/** `INSERT INTO <table> (<columns>) <query>`. */
export function insertStatement(name: string, o: Common & { readonly into: TableName; readonly columns: readonly string[]; readonly query: Sql; readonly filter: PartitionFilter }): Statement {
  const cols = o.columns.join(', ');
  return {
    name,
    kind: 'insert',
    body: (d) => sql`INSERT INTO ${d.into(o.into, 'insert')} (${raw(cols)}) ${o.query}`,
    queries: [o.query],
    reads: o.reads,
    writes: { table: o.into, mode: 'insert', filter: o.filter, affected: null },
    output: null,
    columns: null,
  };
}

function noParams(name: string, parts: readonly Sql[]): void {
  for (const p of parts) if (renderSql(p, duckdb).params.length > 0) throw new SqlArgumentError(`${name}: Athena takes no parameters in MERGE or DELETE; inline the values`);
}

/** `MERGE INTO <table> t USING (<source>) s ON <on> <clauses>`. */
export function mergeStatement(name: string, o: Common & { readonly into: TableName; readonly source: Sql; readonly on: Sql; readonly clauses: Sql; readonly filter: PartitionFilter; readonly affected: Sql | null }): Statement {
  noParams(name, [o.source, o.on, o.clauses, ...(o.affected ? [o.affected] : [])]);
  return {
    name,
    kind: 'merge',
    body: (d) => sql`MERGE INTO ${d.into(o.into, 'merge')} t USING (${o.source}) s ON ${o.on} ${o.clauses}`,
    // The MERGE's join, as a query a Trino parser can check (it cannot parse MERGE itself).
    queries: [sql`SELECT s.* FROM ${call((d) => d.table(o.into))} t JOIN (${o.source}) s ON ${o.on}`],
    reads: o.reads,
    writes: { table: o.into, mode: 'rewrite', filter: o.filter, affected: o.affected },
    output: null,
    columns: null,
  };
}

/** `DELETE FROM <table> WHERE <where>`. */
export function deleteStatement(name: string, o: Common & { readonly from: TableName; readonly where: Sql; readonly filter: PartitionFilter; readonly affected: Sql | null }): Statement {
  noParams(name, [o.where, ...(o.affected ? [o.affected] : [])]);
  return {
    name,
    kind: 'delete',
    body: (d) => sql`DELETE FROM ${d.into(o.from, 'delete')} WHERE ${o.where}`,
    queries: [],
    reads: o.reads,
    writes: { table: o.from, mode: 'rewrite', filter: o.filter, affected: o.affected },
    output: null,
    columns: null,
  };
}

/** `OPTIMIZE` (optionally of some `source_table` partitions) or `VACUUM` of an Iceberg table (nothing on DuckDB). */
export function maintenanceStatement(kind: 'optimize' | 'vacuum', table: TableName, tables?: readonly string[]): Statement {
  return { name: `${kind}-${table}`, kind, body: (d) => (kind === 'optimize' ? d.optimize(table, tables) : d.vacuum(table)), queries: [], reads: [], writes: null, output: null, columns: null };
}

