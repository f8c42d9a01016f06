/**
 * compact-hour: `INSERT INTO history` every line of one closed hour of raw (the batch layout), each
 * with the raw object it came from (`raw_object` = `"$path"`).
 *
 * Invariant: after it, history holds every line of every raw object of the hour exactly once. A raw
 * object already compacted for a table (its `(source_table, raw_object)` is in the hour's history)
 * is skipped, so a retried or repeated run adds nothing twice: a retried batch rewrites the same
 * object (its name carries its content digest), whose lines are then already there.
 *
 *   compactHour({ hour: Date.UTC(2026, 10, 30, 6) })
 *   // INSERT INTO history (source_table, …) SELECT COALESCE(r."table", ''), r.key_id, … FROM raw_lines r
 *   //   LEFT JOIN (SELECT DISTINCT source_table, raw_object FROM history WHERE dt = CAST(? AS DATE) AND hr = ?) done ON …
 *   //   WHERE r.dt = ? AND r.hr = ? AND done.raw_object IS NULL
 */
import { type ColumnName, HISTORY } from '../schemas.js';
import { call, join, raw, type Sql, sql } from '../sql.js';
import { insertStatement, type PartitionFilter, type Statement } from '../statement.js';
import { type Hour, hourOf } from '../time.js';
import { historyHours, rawHours } from './common.js';

export interface CompactHourArgs {
  /** The hour's start, epoch ms (UTC). */
  readonly hour: number;
}

type HistoryColumn = ColumnName<typeof HISTORY>;

/** Each history column from a raw line of the batch layout (alias `r`). */
export const FROM_RAW_LINE: Readonly<Record<HistoryColumn, Sql>> = {
  source_table: sql`COALESCE(r."table", '')`,
  key_id: sql`r.key_id`,
  key_json: sql`r."key"`,
  position: sql`r.position`,
  op: sql`r.op`,
  kind: sql`r.kind`,
  control: sql`r.control`,
  format: sql`r.format`,
  ordering: sql`r.ordering_strength`,
  hash: sql`r.hash`,
  commit_ts: sql`r.commit_ts`,
  arrival_ts: sql`COALESCE(r.arrival_ts, r.transport.arrivalTime)`,
  txid: sql`r.txid`,
  is_snapshot: sql`COALESCE(r.snapshot, FALSE)`,
  before_null: sql`COALESCE(r.before_null, FALSE)`,
  partial: sql`COALESCE(r.partial, FALSE)`,
  transport_kind: sql`r.transport.kind`,
  stream: sql`r.transport.stream`,
  shard: sql`r.transport.shard`,
  sequence: sql`r.transport.sequence`,
  partition_key: sql`r.transport.partitionKey`,
  topic: sql`r.topic`,
  headers: sql`r.headers`,
  message_key: sql`r.message_key`,
  message_key_base64: sql`r.message_key_base64`,
  message: sql`r.message`,
  message_base64: sql`r.message_base64`,
  message_ref: sql`COALESCE(r.message_ref, FALSE)`,
  raw_object: sql`r."$path"`,
  dt: sql`CAST(r.dt AS DATE)`,
  hr: sql`r.hr`,
};

export const HISTORY_COLUMNS: readonly HistoryColumn[] = HISTORY.columns.map((c) => c.name);

/** The SELECT list for `INSERT INTO history (HISTORY_COLUMNS)` from a per-column mapping. */
export const selectList = (mapping: Readonly<Record<HistoryColumn, Sql>>): Sql => join(HISTORY_COLUMNS.map((c) => sql`${mapping[c]} AS ${raw(c)}`));

/**
 * `LEFT JOIN` of what history already holds of the hours (`done`), matched on the line's table and
 * object; the caller keeps rows where `done.raw_object IS NULL`.
 */
export const alreadyCompacted = (range: { readonly from: Hour; readonly to: Hour }, table: Sql): Sql =>
  sql`LEFT JOIN (SELECT DISTINCT h.source_table, h.raw_object FROM ${call((d) => d.table('history'))} h WHERE ${historyHours(sql`h`, range)}) done ON done.source_table = ${table} AND done.raw_object = r."$path"`;

export function compactHour(args: CompactHourArgs): Statement {
  const hour = hourOf(args.hour);
  const range = { from: hour, to: hour };
  const query = sql`SELECT ${selectList(FROM_RAW_LINE)} FROM ${call((d) => d.table('raw_lines'))} r ${alreadyCompacted(range, FROM_RAW_LINE.source_table)} WHERE ${rawHours(sql`r`, range)} AND done.raw_object IS NULL`;
  const filter: PartitionFilter = { hours: { from: hour.start, to: hour.start } };
  return insertStatement('compact-hour', {
    into: 'history',
    columns: HISTORY_COLUMNS,
    query,
    filter: { days: { from: hour.dt, to: hour.dt } },
    reads: [
      { table: 'raw_lines', filter },
      { table: 'history', filter: { days: { from: hour.dt, to: hour.dt } } },
    ],
  });
}
