/**
 * count-table-hours: `MERGE INTO table_hours` per table and compacted hour the counters the anomaly
 * checks read (detect-anomalies), recounted from history and the hour's quarantine.
 *
 * Invariant: each (table, hour) row holds exactly the counts of the lines history and quarantine
 * hold for that hour now: a rerun (after compact-objects added a late object) recounts and replaces,
 * never adds. `hour` is the compacted hour (the raw objects' hour, their batch's first arrival).
 *
 *   countTableHours({ from: h, to: h })   // one hour; a range recounts several (a backfill after migration)
 *   // MERGE INTO table_hours t USING (SELECT c.source_table, c.hour, … sum(c.op_c) … GROUP BY …) s ON …
 */
import { call, join, raw, type Sql, sql } from '../sql.js';
import { mergeStatement, type Statement } from '../statement.js';
import { hourRange } from '../time.js';
import { historyHours, rawHours } from './common.js';

export interface CountTableHoursArgs {
  /** First and last hour to count, hour starts (epoch ms), inclusive. */
  readonly from: number;
  readonly to: number;
}

/** The counters, in table_hours' order after `source_table`, `hour`, `dt`. */
export const COUNTERS = ['events', 'op_c', 'op_u', 'op_d', 'op_r', 'op_t', 'snapshot_reads', 'before_null_updates', 'partial_events', 'quarantined', 'controls'] as const;
type Counter = (typeof COUNTERS)[number];

const when = (cond: Sql): Sql => sql`sum(CASE WHEN ${cond} THEN 1 ELSE 0 END)`;
const change = (more: Sql): Sql => when(sql`h.kind = 'change' AND ${more}`);

const FROM_HISTORY: Readonly<Record<Counter, Sql>> = {
  events: when(sql`h.kind = 'change'`),
  op_c: change(sql`h.op = 'c'`),
  op_u: change(sql`h.op = 'u'`),
  op_d: change(sql`h.op = 'd'`),
  op_r: change(sql`h.op = 'r'`),
  op_t: change(sql`h.op = 't'`),
  snapshot_reads: change(sql`h.is_snapshot`),
  before_null_updates: change(sql`h.op = 'u' AND h.before_null`),
  partial_events: change(sql`h.partial`),
  quarantined: sql`0`,
  controls: when(sql`h.kind = 'control'`),
};

const list = (f: (c: Counter) => Sql): Sql => join(COUNTERS.map(f));

export function countTableHours(args: CountTableHoursArgs): Statement {
  const range = hourRange(args.from, args.to);
  const hourStart = (dt: Sql, hr: Sql): Sql => sql`${call((d) => d.hourStart(dt, hr))}`;
  const fromHistory = sql`SELECT h.source_table, ${hourStart(sql`h.dt`, sql`h.hr`)} AS hour, h.dt, ${list((c) => sql`${FROM_HISTORY[c]} AS ${raw(c)}`)} FROM ${call((d) => d.table('history'))} h WHERE ${historyHours(sql`h`, range, true)} AND h.source_table <> '' GROUP BY h.source_table, h.dt, h.hr`;
  const quarantined = sql`SELECT q."table" AS source_table, ${hourStart(sql`CAST(q.dt AS DATE)`, sql`q.hr`)} AS hour, CAST(q.dt AS DATE) AS dt, ${list((c) => (c === 'quarantined' ? sql`count(*) AS quarantined` : sql`0 AS ${raw(c)}`))} FROM ${call((d) => d.table('quarantine_lines'))} q WHERE ${rawHours(sql`q`, range, true)} AND q."table" IS NOT NULL GROUP BY q."table", q.dt, q.hr`;
  const source = sql`SELECT c.source_table, c.hour, c.dt, ${list((k) => sql`sum(c.${raw(k)}) AS ${raw(k)}`)} FROM (${fromHistory} UNION ALL ${quarantined}) c GROUP BY c.source_table, c.hour, c.dt`;
  const days = { from: range.from.dt, to: range.to.dt };
  return mergeStatement('count-table-hours', {
    into: 'table_hours',
    source,
    on: sql`t.source_table = s.source_table AND t.hour = s.hour`,
    clauses: sql`WHEN MATCHED THEN UPDATE SET ${list((c) => sql`${raw(c)} = s.${raw(c)}`)} WHEN NOT MATCHED THEN INSERT (source_table, hour, dt, ${list((c) => raw(c))}) VALUES (s.source_table, s.hour, s.dt, ${list((c) => sql`s.${raw(c)}`)})`,
    filter: { days },
    affected: null,
    reads: [
      { table: 'history', filter: { days } },
      { table: 'quarantine_lines', filter: { hours: { from: range.from.start, to: range.to.start } } },
    ],
  });
}
