/**
 * detect-anomalies: the checks of functions/jobs/snapshot/anomalies.ts over `table_hours`, with the
 * configured thresholds (`jobs.snapshot.anomalies`): each table's recent hours against its history.
 *
 * Invariant: for every table, exactly the anomalies `detectAnomalies` finds from the same hour rows,
 * with the same measures (the same double arithmetic in the same order), except `resnapshot`, which
 * comes from history (detect-resnapshots). "Recent" is the `recentHours` before `now`; history the
 * `historyHours` before that; silent the last `silentHours`, while another table had events.
 *
 *   detectAnomalies({ now, thresholds: config.jobs.snapshot.anomalies })
 *   // rows { source_table, kind, recent, history }; anomalyOf(row, thresholds) → { kind, table, detail }
 */
import type { AnomalyThresholds } from '../../config/types.js';
import { ANOMALIES } from '../schemas.js';
import { bind, bindList, call, join, raw, type Sql, SqlArgumentError, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { dayOf, HOUR_MS } from '../time.js';
import { int, num, tableList } from './common.js';

export interface DetectAnomaliesArgs {
  /** The run's start, epoch ms. */
  readonly now: number;
  readonly thresholds: AnomalyThresholds;
  /** Only these tables' anomalies (the others still count for `silent`). */
  readonly tables?: readonly string[];
  /** An `s3://` prefix to UNLOAD the rows to (gzip JSON Lines); absent: a plain SELECT. */
  readonly output?: string;
}

export const SQL_ANOMALY_KINDS = ['no-deletes', 'only-deletes', 'update-storm', 'quarantine-spike', 'before-null-rate', 'placeholder-rate', 'silent'] as const;
export type SqlAnomalyKind = (typeof SQL_ANOMALY_KINDS)[number];

const COUNTERS = ['op_c', 'op_u', 'op_d', 'op_r', 'partial_events', 'before_null_updates', 'quarantined'] as const;

const rate = (n: Sql, d: Sql): Sql => sql`(CASE WHEN ${d} > 0 THEN CAST(${n} AS DOUBLE) / ${d} ELSE 0 END)`;

function checks(th: AnomalyThresholds): Sql {
  const min = int(th.minEvents, 'minEvents');
  const share = rate(sql`h_op_d`, sql`h_streamed`);
  const jump = (kind: SqlAnomalyKind, part: string, whole: (p: 'r' | 'h') => Sql, by: Sql, ord: number): Sql => {
    const r = rate(sql`${raw(`r_${part}`)}`, whole('r'));
    const h = rate(sql`${raw(`h_${part}`)}`, whole('h'));
    return sql`SELECT source_table, ${raw(`'${kind}'`)} AS kind, ${r} AS recent, ${h} AS history, ${int(ord, 'ord')} AS ord FROM m WHERE ${whole('r')} >= ${min} AND ${whole('h')} >= ${min} AND ${r} - ${h} > ${by}`;
  };
  const rHourly = sql`CAST(r_op_u AS DOUBLE) / ${int(th.recentHours, 'recentHours')}`;
  const hHourly = sql`CAST(h_op_u AS DOUBLE) / ${int(th.historyHours, 'historyHours')}`;
  const hEvents = sql`CAST(h_events AS DOUBLE) / ${int(th.historyHours, 'historyHours')}`;
  const gate = sql`r_streamed >= ${min} AND h_streamed >= ${min}`;
  return sql`SELECT source_table, 'no-deletes' AS kind, CAST(r_streamed AS DOUBLE) AS recent, ${share} AS history, 1 AS ord FROM m WHERE ${gate} AND r_op_d = 0 AND ${share} >= ${num(th.deleteShare, 'deleteShare')}
 UNION ALL SELECT source_table, 'only-deletes' AS kind, CAST(r_streamed AS DOUBLE) AS recent, ${share} AS history, 2 AS ord FROM m WHERE ${gate} AND r_op_d = r_streamed AND ${share} < 0.5
 UNION ALL SELECT source_table, 'update-storm' AS kind, ${rHourly} AS recent, ${hHourly} AS history, 3 AS ord FROM m WHERE r_op_u >= ${min} AND h_op_u > 0 AND ${rHourly} > ${num(th.updateStormFactor, 'updateStormFactor')} * (${hHourly})
 UNION ALL ${jump('quarantine-spike', 'quarantined', (p) => sql`(${raw(`${p}_events + ${p}_quarantined`)})`, num(th.quarantineRateJump, 'quarantineRateJump'), 4)}
 UNION ALL ${jump('before-null-rate', 'before_null_updates', (p) => raw(`${p}_op_u`), num(th.beforeNullRateJump, 'beforeNullRateJump'), 5)}
 UNION ALL ${jump('placeholder-rate', 'partial_events', (p) => raw(`${p}_events`), num(th.placeholderRateJump, 'placeholderRateJump'), 6)}
 UNION ALL SELECT source_table, 'silent' AS kind, CAST(lately AS DOUBLE) AS recent, ${hEvents} AS history, 7 AS ord FROM m WHERE ${num(th.silentMinHourlyEvents, 'silentMinHourlyEvents')} > 0 AND ${hEvents} >= ${num(th.silentMinHourlyEvents, 'silentMinHourlyEvents')} AND lately = 0 AND all_lately - lately > 0`;
}

export function detectAnomalies(args: DetectAnomaliesArgs): Statement {
  const { now, thresholds: th } = args;
  if (!Number.isSafeInteger(now) || now < 0) throw new SqlArgumentError(`now must be epoch ms, got ${now}`);
  const recentFrom = now - th.recentHours * HOUR_MS;
  const historyFrom = recentFrom - th.historyHours * HOUR_MS;
  const silentFrom = now - th.silentHours * HOUR_MS;
  const readFrom = Math.floor(historyFrom / HOUR_MS) * HOUR_MS;
  const readTo = Math.floor(now / HOUR_MS) * HOUR_MS;
  const end = sql`hour + ${int(HOUR_MS, 'hour')}`;
  const recent = sql`${end} > ${int(recentFrom, 'recentFrom')} AND hour <= ${int(now, 'now')}`;
  const past = sql`${end} > ${int(historyFrom, 'historyFrom')} AND ${end} <= ${int(recentFrom, 'recentFrom')}`;
  const sums = COUNTERS.flatMap((c) => [sql`sum(CASE WHEN ${recent} THEN ${raw(c)} ELSE 0 END) AS ${raw(`r_${c}`)}`, sql`sum(CASE WHEN ${past} THEN ${raw(c)} ELSE 0 END) AS ${raw(`h_${c}`)}`]);
  const lately = sql`sum(CASE WHEN ${end} > ${int(silentFrom, 'silentFrom')} THEN op_c + op_u + op_d + op_r ELSE 0 END) AS lately`;
  const rowsCte = sql`hour_rows AS (SELECT th.source_table, th.hour, ${raw(COUNTERS.map((c) => `th.${c}`).join(', '))} FROM ${call((d) => d.table('table_hours'))} th WHERE th.dt BETWEEN CAST(${bind(dayOf(readFrom))} AS DATE) AND CAST(${bind(dayOf(readTo))} AS DATE) AND th.hour >= ${bind(readFrom)} AND th.hour <= ${bind(readTo)})`;
  const totals = sql`totals AS (SELECT source_table, ${join(sums)}, ${lately} FROM hour_rows GROUP BY source_table)`;
  const measures = sql`m AS (SELECT t.*, t.r_op_c + t.r_op_u + t.r_op_d AS r_streamed, t.h_op_c + t.h_op_u + t.h_op_d AS h_streamed, t.r_op_c + t.r_op_u + t.r_op_d + t.r_op_r AS r_events, t.h_op_c + t.h_op_u + t.h_op_d + t.h_op_r AS h_events, f.all_lately FROM totals t CROSS JOIN (SELECT sum(lately) AS all_lately FROM totals) f)`;
  const only = args.tables !== undefined ? sql`WHERE a.source_table IN ${bindList(tableList(args.tables), 'tables')} ` : sql``;
  const query = sql`WITH ${rowsCte}, ${totals}, ${measures} SELECT a.source_table, a.kind, a.recent, a.history FROM (${checks(th)}) a ${only}ORDER BY a.source_table, a.ord`;
  return selectStatement('detect-anomalies', query, {
    reads: [{ table: 'table_hours', filter: { days: { from: dayOf(readFrom), to: dayOf(readTo) } } }],
    columns: ANOMALIES.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}

export interface AnomalyRow {
  readonly source_table: string;
  readonly kind: string;
  readonly recent: number;
  readonly history: number;
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

/** A row as anomalies.ts reports it: `{ kind, table, detail }` with the same detail fields. */
export function anomalyOf(row: AnomalyRow, th: AnomalyThresholds): { kind: SqlAnomalyKind; table: string; detail: Record<string, number> } {
  const kind = SQL_ANOMALY_KINDS.find((k) => k === row.kind);
  if (kind === undefined) throw new SqlArgumentError(`unknown anomaly kind "${row.kind}"`);
  const table = row.source_table;
  if (kind === 'no-deletes' || kind === 'only-deletes') return { kind, table, detail: { recentEvents: row.recent, historyDeleteShare: round(row.history) } };
  if (kind === 'update-storm') return { kind, table, detail: { recentHourlyUpdates: round(row.recent), historyHourlyUpdates: round(row.history) } };
  if (kind === 'silent') return { kind, table, detail: { historyHourlyEvents: round(row.history), silentHours: th.silentHours } };
  return { kind, table, detail: { recent: round(row.recent), history: round(row.history) } };
}

