/**
 * The reconcile decision as SQL: expected state (what raw says each key must be) joined with the
 * table side (what DynamoDB holds), classified per key exactly as functions/jobs/reconcile/classify.ts
 * does, in its order, plus `erased` (issue 20, item 17). Shared by reconcile-full and reconcile-window.
 *
 *   held          the table is held (suspended or stopped) and a change of the key arrived at or after
 *                 its held-from time: landed in raw, not applied until resume (never a finding)
 *   in-flight     the item was applied after the cutoff
 *   erased        the item carries __erased and raw has no live winner for the key: never a finding
 *   (no raw)      no item (or below the watermark) → ok; window → unverifiable; tombstone → ahead; live → extra
 *   in-flight     raw holds the key only in hours not compacted yet (no settled winner)
 *   in-flight     the winner arrived after the cutoff (`recent`) and the table is behind it
 *   missing / ok  no item (or below the watermark): ok when raw's winner is deleted
 *   deleted-live / stale / missing / ok   the item is older than raw's winner
 *   mismatch / ok same position: ok on a conflict, an unknown hash, or equal hashes
 *   ok / ahead / unverifiable             the item is newer than the winner: ok when raw holds that position at all
 *
 * Sides: `expected_state` (settled: compacted) with `max_position` raised by the raw of hours not
 * compacted yet (`unsettled`), so that, as in classify.ts, `ahead` compares with all raw; the
 * truncate watermark from `truncates`; the items from `table_side` of one run.
 */
import type { ColumnName, RECONCILE_FINDINGS } from '../schemas.js';
import { bind, bindList, call, join, raw, type Sql, sql } from '../sql.js';
import type { Read } from '../statement.js';
import { DAY_MS, dayOf, type Hour, hourRange } from '../time.js';
import { historyDays, historyHours, int, keyedChange, rawHours, tableList } from './common.js';

/** The six finding classes (classify.ts FINDING_CLASSES), and what is counted but never reported. */
export const FINDING_CLASSES = ['missing', 'deleted-live', 'stale', 'mismatch', 'ahead', 'extra'] as const;
export const COUNTED_CLASSES = ['ok', 'in-flight', 'unverifiable', 'erased', 'held'] as const;
export type ReconcileClass = (typeof FINDING_CLASSES)[number] | (typeof COUNTED_CLASSES)[number];

export interface ReconcileArgs {
  readonly tables: readonly string[];
  /** The run whose table side (table_side `run_id`) is compared. */
  readonly runId: string;
  /** Epoch ms: items applied later are in flight. */
  readonly cutoff: number;
  /** Hours of raw not compacted yet (hour starts, inclusive): they raise each key's highest position. */
  readonly unsettled?: { readonly from: number; readonly to: number };
  /**
   * Compacted hours whose lines may have arrived after the cutoff (hour starts, inclusive): a winner
   * that arrived after it is not settled yet, so a table behind it is in flight, not a finding.
   */
  readonly recent?: { readonly from: number; readonly to: number };
  /**
   * Held tables (suspended or stopped in error): a key with a change that arrived at or after its
   * table's `since` (epoch ms) is `held`, whatever the sides say; older keys are classified as usual.
   * `until` (epoch ms, the run's start) bounds the days of history read.
   */
  readonly held?: { readonly tables: readonly { readonly table: string; readonly since: number }[]; readonly until: number };
}

const stored = sql`(j.has_actual AND NOT (w.watermark IS NOT NULL AND j.actual_position < w.watermark))`;
const expectDeleted = sql`(COALESCE(j.expected_deleted, FALSE) OR (w.watermark IS NOT NULL AND j.expected_position < w.watermark))`;
const actualDeleted = sql`COALESCE(j.actual_deleted, FALSE)`;

/** classify.ts, one CASE; `full` decides what cannot be judged without the whole table. */
function classCase(full: boolean, cutoff: number, held: boolean): Sql {
  const notJudged = full ? sql`'ahead'` : sql`'unverifiable'`;
  const withoutRaw = full ? sql`CASE WHEN ${actualDeleted} THEN 'ahead' ELSE 'extra' END` : sql`'unverifiable'`;
  const heldFirst = held ? sql`
 WHEN hk.key_id IS NOT NULL THEN 'held'` : sql``;
  return sql`CASE${heldFirst}
 WHEN j.has_actual AND COALESCE(j.actual_applied_at, 0) > ${int(cutoff, 'cutoff')} THEN 'in-flight'
 WHEN j.has_actual AND COALESCE(j.actual_erased, FALSE) AND NOT (j.has_winner AND NOT ${expectDeleted}) THEN 'erased'
 WHEN NOT j.has_expected THEN CASE WHEN NOT ${stored} THEN 'ok' ELSE ${withoutRaw} END
 WHEN NOT j.has_winner THEN 'in-flight'
 WHEN j.recent_position IS NOT NULL AND j.recent_position >= j.expected_position AND (NOT ${stored} OR j.actual_position < j.expected_position) THEN 'in-flight'
 WHEN NOT ${stored} THEN CASE WHEN ${expectDeleted} THEN 'ok' ELSE 'missing' END
 WHEN j.actual_position < j.expected_position THEN CASE WHEN ${expectDeleted} THEN CASE WHEN ${actualDeleted} THEN 'ok' ELSE 'deleted-live' END WHEN ${actualDeleted} THEN 'missing' ELSE 'stale' END
 WHEN j.actual_position = j.expected_position THEN CASE WHEN COALESCE(j.expected_conflict, FALSE) OR j.expected_hash IS NULL OR COALESCE(j.actual_hash, '') = j.expected_hash THEN 'ok' ELSE 'mismatch' END
 WHEN j.actual_position <= j.max_position THEN 'ok'
 ELSE ${notJudged}
END`;
}

/** The key universe of a window run: keys with changes in the window's compacted hours. */
export interface Window {
  readonly from: Hour;
  readonly to: Hour;
}

const t = (name: 'truncates' | 'expected_state' | 'raw_lines' | 'table_side' | 'history') => call((d) => d.table(name));

/** The CTEs and the classified rows `c` (every column of reconcile_findings, with `class`). */
export function classified(args: ReconcileArgs, window: Window | null): { readonly query: (select: Sql) => Sql; readonly reads: readonly Read[] } {
  const tables = tableList(args.tables);
  const ctes: Sql[] = [
    sql`w AS (SELECT tr.source_table, tr.position AS watermark FROM ${t('truncates')} tr WHERE tr.source_table IN ${bindList(tables, 'tables')})`,
    sql`e AS (SELECT x.source_table, x.key_id, x.key_json, x.position, x.op, x.hash, x.deleted, x.conflict FROM ${t('expected_state')} x WHERE x.source_table IN ${bindList(tables, 'tables')})`,
    sql`a AS (SELECT i.source_table, i.key_id, i.key_json, COALESCE(i.position, '') AS position, i.deleted, i.erased, i.hash, i.applied_at FROM ${t('table_side')} i WHERE i.run_id = ${bind(args.runId)} AND i.source_table IN ${bindList(tables, 'tables')})`,
  ];
  const reads: Read[] = [
    { table: 'truncates', filter: {} },
    { table: 'expected_state', filter: { tables } },
    { table: 'table_side', filter: { runId: args.runId, tables } },
  ];
  const recent = args.recent ? hourRange(args.recent.from, args.recent.to) : null;
  if (recent) {
    ctes.push(sql`rh AS (SELECT h.source_table, h.key_id, max(h.position) AS recent_position FROM ${t('history')} h WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyHours(sql`h`, recent)} AND h.arrival_ts > ${bind(args.cutoff)} AND ${keyedChange(sql`h`)} GROUP BY h.source_table, h.key_id)`);
    reads.push({ table: 'history', filter: { tables, days: { from: recent.from.dt, to: recent.to.dt } } });
  }
  const recentColumn = recent ? sql`rh.recent_position` : sql`CAST(NULL AS VARCHAR) AS recent_position`;
  const recentJoin = (table: Sql) => (recent ? sql` LEFT JOIN rh ON rh.source_table = ${table}.source_table AND rh.key_id = ${table}.key_id` : sql``);
  const unsettled = args.unsettled ? hourRange(args.unsettled.from, args.unsettled.to) : null;
  if (unsettled) {
    ctes.push(sql`u AS (SELECT r."table" AS source_table, r.key_id, max(r.position) AS max_position FROM ${t('raw_lines')} r WHERE ${rawHours(sql`r`, unsettled)} AND r."table" IN ${bindList(tables, 'tables')} AND ${keyedChange(sql`r`)} GROUP BY r."table", r.key_id)`);
    ctes.push(sql`x AS (SELECT COALESCE(e.source_table, u.source_table) AS source_table, COALESCE(e.key_id, u.key_id) AS key_id, e.key_json, e.position, e.op, e.hash, e.deleted, e.conflict, e.key_id IS NOT NULL AS has_winner, CASE WHEN u.max_position IS NULL OR u.max_position < e.position THEN e.position ELSE u.max_position END AS max_position, ${recentColumn} FROM e FULL OUTER JOIN u ON u.source_table = e.source_table AND u.key_id = e.key_id${recentJoin(sql`e`)})`);
    reads.push({ table: 'raw_lines', filter: { hours: { from: unsettled.from.start, to: unsettled.to.start } } });
  } else {
    ctes.push(sql`x AS (SELECT e.source_table, e.key_id, e.key_json, e.position, e.op, e.hash, e.deleted, e.conflict, TRUE AS has_winner, e.position AS max_position, ${recentColumn} FROM e${recentJoin(sql`e`)})`);
  }
  const columns = (key: Sql, universe: Sql): Sql =>
    sql`SELECT ${key}, COALESCE(x.key_json, a.key_json) AS key_json, x.position AS expected_position, x.op AS expected_op, x.hash AS expected_hash, x.deleted AS expected_deleted, x.conflict AS expected_conflict, x.max_position, x.recent_position, a.position AS actual_position, a.deleted AS actual_deleted, a.hash AS actual_hash, a.applied_at AS actual_applied_at, a.erased AS actual_erased, ${universe}, COALESCE(x.has_winner, FALSE) AS has_winner, a.key_id IS NOT NULL AS has_actual`;
  if (window) {
    ctes.push(sql`k AS (SELECT DISTINCT h.source_table, h.key_id FROM ${t('history')} h WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyHours(sql`h`, window)} AND ${keyedChange(sql`h`)})`);
    ctes.push(sql`j AS (${columns(sql`k.source_table, k.key_id`, sql`TRUE AS has_expected`)} FROM k LEFT JOIN x ON x.source_table = k.source_table AND x.key_id = k.key_id LEFT JOIN a ON a.source_table = k.source_table AND a.key_id = k.key_id)`);
    reads.push({ table: 'history', filter: { tables, days: { from: window.from.dt, to: window.to.dt } } });
  } else {
    ctes.push(sql`j AS (${columns(sql`COALESCE(x.source_table, a.source_table) AS source_table, COALESCE(x.key_id, a.key_id) AS key_id`, sql`x.key_id IS NOT NULL AS has_expected`)} FROM x FULL OUTER JOIN a ON a.source_table = x.source_table AND a.key_id = x.key_id)`);
  }
  const held = heldKeys(args, tables, unsettled);
  if (held) {
    ctes.push(held.cte);
    reads.push(...held.reads);
  }
  const heldJoin = held ? sql` LEFT JOIN hk ON hk.source_table = j.source_table AND hk.key_id = j.key_id` : sql``;
  ctes.push(sql`c AS (SELECT j.*, w.watermark, ${classCase(window === null, args.cutoff, held !== null)} AS class FROM j LEFT JOIN w ON w.source_table = j.source_table${heldJoin})`);
  return { query: (select) => sql`WITH ${join(ctes)} ${select}`, reads };
}

/**
 * `hk`: the keys of held tables with a change that arrived at or after the table's `since`, from
 * history (the days from a day before the earliest `since`: a raw object's hour is its batch's first
 * arrival) and the raw of hours not compacted yet. Null when no table is held.
 */
function heldKeys(args: ReconcileArgs, tables: readonly string[], unsettled: { from: Hour; to: Hour } | null): { cte: Sql; reads: Read[] } | null {
  const held = (args.held?.tables ?? []).filter((h) => tables.includes(h.table));
  if (held.length === 0 || args.held === undefined) return null;
  const since = (h: { since: number }) => Math.max(0, h.since);
  for (const h of held) int(h.since, 'held since');
  int(args.held.until, 'held until');
  const until = args.held.until;
  const from = Math.max(0, Math.min(...held.map(since)) - DAY_MS);
  const days = { from: dayOf(from), to: dayOf(Math.max(from, until)) };
  const arrivedAfter = (table: Sql, arrival: Sql) => sql`(${join(held.map((h) => sql`(${table} = ${bind(h.table)} AND ${arrival} >= ${bind(since(h))})`), ' OR ')})`;
  const heldTables = held.map((h) => h.table);
  const parts = [sql`SELECT h.source_table, h.key_id FROM ${t('history')} h WHERE ${historyDays(sql`h`, days)} AND ${arrivedAfter(sql`h.source_table`, sql`h.arrival_ts`)} AND ${keyedChange(sql`h`)}`];
  const reads: Read[] = [{ table: 'history', filter: { tables: heldTables, days } }];
  if (unsettled) {
    parts.push(sql`SELECT r."table" AS source_table, r.key_id FROM ${t('raw_lines')} r WHERE ${rawHours(sql`r`, unsettled)} AND ${arrivedAfter(sql`r."table"`, sql`COALESCE(r.arrival_ts, r.transport.arrivalTime)`)} AND ${keyedChange(sql`r`)}`);
    reads.push({ table: 'raw_lines', filter: { hours: { from: unsettled.from.start, to: unsettled.to.start } } });
  }
  return { cte: sql`hk AS (SELECT DISTINCT hl.source_table, hl.key_id FROM (${join(parts, ' UNION ALL ')}) hl)`, reads };
}

type FindingColumn = ColumnName<typeof RECONCILE_FINDINGS>;
const FINDING_COLUMNS: readonly FindingColumn[] = [
  'source_table', 'key_id', 'key_json', 'class', 'expected_position', 'expected_op', 'expected_hash', 'expected_deleted', 'expected_conflict',
  'max_position', 'actual_position', 'actual_deleted', 'actual_hash', 'actual_applied_at', 'actual_erased', 'watermark',
];

/** One row per finding (the six classes), in table and key order. */
export const findingsSelect = (): Sql =>
  sql`SELECT ${join(FINDING_COLUMNS.map((c) => sql`c.${raw(c)}`))} FROM c WHERE c.class IN (${join(FINDING_CLASSES.map((k) => raw(`'${k}'`)))}) ORDER BY c.source_table, c.key_id`;

/** Keys per table and class, every class present. */
export const countsSelect = (): Sql => sql`SELECT c.source_table, c.class, count(*) AS keys FROM c GROUP BY c.source_table, c.class ORDER BY c.source_table, c.class`;
