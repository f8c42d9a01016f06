/**
 * What a statement of functions/sql reads on Athena, taken from the statement itself so the cost
 * model follows the SQL as it changes: the tables and partitions its `reads` name, and the columns
 * of each table its Athena form references (a column counts as read when it appears qualified by
 * the table's alias, or by name when the table has none). Athena reads JSON sources (raw_lines,
 * table_side, quarantine_lines) whole; Parquet only in the columns read.
 *
 *   columnsRead(buildStatements('erase-history', { keys })[0], 'history')   // ['source_table', 'key_id']
 */
import { athena, render, type Statement, TABLES, type TableName } from '../../../functions/sql/index.js';

const DB = 'tidemark_scale';
const KEYWORDS = new Set(['where', 'on', 'left', 'right', 'full', 'inner', 'join', 'group', 'order', 'using', 'union', 'set', 'when', 'limit', 'cross', 'as']);
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The statement's Athena SQL, values inlined. */
export function athenaSql(statement: Statement): string {
  const sql = render(statement, athena(DB), { inline: true }).sql;
  if (sql === null) throw new Error(`${statement.name} has no Athena form`);
  return sql;
}

/** The columns of `table` the statement's Athena SQL references. */
export function columnsRead(statement: Statement, table: TableName): string[] {
  const sql = athenaSql(statement);
  if (!sql.includes(`"${DB}"."${table}"`)) return [];
  const ref = new RegExp(`"${DB}"\\."${table}"\\s+(?:AS\\s+)?([A-Za-z_][A-Za-z0-9_]*)`, 'g');
  const aliases = [...sql.matchAll(ref)].map((m) => m[1] ?? '').filter((a) => a !== '' && !KEYWORDS.has(a.toLowerCase()));
  const names = TABLES[table].columns.map((c) => c.name);
  if (aliases.length === 0) return names.filter((c) => new RegExp(`(?<![A-Za-z0-9_."])"?${escapeRegex(c)}"?(?![A-Za-z0-9_])`).test(sql));
  const qualified = `(?:${aliases.map(escapeRegex).join('|')})`;
  return names.filter((c) => new RegExp(`(?<![A-Za-z0-9_])${qualified}\\."?${escapeRegex(c)}"?(?![A-Za-z0-9_])`).test(sql));
}

/** The day partitions (inclusive) a read of `table` names, or null when it names none. */
export function daysRead(statement: Statement, table: TableName): number | null {
  const days = statement.reads.find((r) => r.table === table)?.filter.days;
  if (!days) return null;
  return Math.round((Date.parse(days.to) - Date.parse(days.from)) / 86_400_000) + 1;
}

/** The hours (inclusive) the reads of `table` name, added up, or null when they name none. */
export function hoursRead(statement: Statement, table: TableName): number | null {
  const ranges = statement.reads.filter((r) => r.table === table).flatMap((r) => (r.filter.hours ? [r.filter.hours] : []));
  if (ranges.length === 0) return null;
  return ranges.reduce((n, h) => n + Math.round((h.to - h.from) / 3_600_000) + 1, 0);
}
