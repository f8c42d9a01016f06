/**
 * fold-expected: folds one compacted hour of history into `expected_state`, in three statements run
 * in order (each one `StartQueryExecution`):
 *
 *   1. raise-truncates  MERGE INTO truncates: each table's watermark rises to the hour's highest truncate;
 *   2. merge-winners    MERGE INTO expected_state the hour's winner per key (highest position, max_by);
 *   3. apply-truncates  MERGE INTO expected_state: rows of the tables truncated in the hour, below their
 *                       watermark, become deleted.
 *
 * Invariant: after folding hours in any split and any order, each key's row is the fold of its whole
 * history: `position` the highest of its events; `hash` the greatest hash among the events at that
 * position, and `op`, `commit_ts`, `key_json` those of that event; `conflict` when the events at that
 * position carry more than one hash; `deleted` when that event is a delete or its position is below
 * the table's watermark (the highest truncate position of all history). A winner replaces a row
 * only when it is newer (`s.position > t.position`), so late and redelivered events never move a
 * key back; an event below the watermark can still be the key's latest, but only as deleted, so
 * rows truncated away and events of the hour older than its truncate never come back as live,
 * while later inserts (above the watermark) stay live. Re-running an hour changes nothing.
 *
 *   foldExpected({ hour: Date.UTC(2026, 10, 30, 6) }).map((s) => s.name)
 *   // ['fold-expected/raise-truncates', 'fold-expected/merge-winners', 'fold-expected/apply-truncates']
 */
import { call, type Sql, sql } from '../sql.js';
import { mergeStatement, type Statement } from '../statement.js';
import { type Hour, hourOf } from '../time.js';
import { historyHours, int, keyedChange, truncateLine } from './common.js';

export interface FoldExpectedArgs {
  /** The compacted hour's start, epoch ms. */
  readonly hour: number;
}

const history = call((d) => d.table('history'));
const truncates = call((d) => d.table('truncates'));

const hourOfHistory = (hour: Hour): Sql => historyHours(sql`h`, { from: hour, to: hour }, true);

/** 1: each table's watermark rises to the highest truncate position of the hour. */
function raiseTruncates(hour: Hour): Statement {
  const source = sql`SELECT h.source_table, max(h.position) AS position FROM ${history} h WHERE ${hourOfHistory(hour)} AND ${truncateLine(sql`h`)} GROUP BY h.source_table`;
  return mergeStatement('fold-expected/raise-truncates', {
    into: 'truncates',
    source,
    on: sql`t.source_table = s.source_table`,
    clauses: sql`WHEN MATCHED AND s.position > t.position THEN UPDATE SET position = s.position WHEN NOT MATCHED THEN INSERT (source_table, position) VALUES (s.source_table, s.position)`,
    filter: {},
    affected: null,
    reads: [{ table: 'history', filter: { days: { from: hour.dt, to: hour.dt } } }],
  });
}

/**
 * The hour's winner per key. Among the key's events at its highest position (`top_position`), the
 * one with the greatest hash wins (a null hash sorts lowest); `conflict` when they carry more than
 * one hash. `deleted` against the watermark raised by step 1.
 */
function winners(hour: Hour): Sql {
  const ranked = sql`SELECT h.source_table, h.key_id, h.key_json, h.position, h.op, h.hash, h.commit_ts, max(h.position) OVER (PARTITION BY h.source_table, h.key_id) AS top_position FROM ${history} h WHERE ${hourOfHistory(hour)} AND ${keyedChange(sql`h`)}`;
  const order = sql`COALESCE(e.hash, '')`;
  const top = sql`SELECT e.source_table, e.key_id, e.position, max_by(e.key_json, ${order}) AS key_json, max_by(e.op, ${order}) AS op, max(e.hash) AS hash, max_by(e.commit_ts, ${order}) AS commit_ts, count(DISTINCT e.hash) > 1 AS conflict FROM (${ranked}) e WHERE e.position = e.top_position GROUP BY e.source_table, e.key_id, e.position`;
  return sql`SELECT w.source_table, w.key_id, w.key_json, w.position, w.op, w.hash, w.commit_ts, (w.op = 'd' OR (tr.position IS NOT NULL AND w.position < tr.position)) AS deleted, w.conflict FROM (${top}) w LEFT JOIN ${truncates} tr ON tr.source_table = w.source_table`;
}

/** 2: each key's row takes the hour's winner when it is newer, or the greater hash at the same position. */
function mergeWinners(hour: Hour): Statement {
  const h = int(hour.start, 'hour');
  const all = sql`key_json = s.key_json, position = s.position, op = s.op, hash = s.hash, commit_ts = s.commit_ts, deleted = s.deleted, hour = ${h}`;
  const same = sql`s.position = t.position`;
  const clauses = sql`WHEN MATCHED AND s.position > t.position THEN UPDATE SET ${all}, conflict = s.conflict
 WHEN MATCHED AND ${same} AND COALESCE(s.hash, '') > COALESCE(t.hash, '') THEN UPDATE SET ${all}, conflict = (s.conflict OR t.conflict OR t.hash IS NOT NULL)
 WHEN MATCHED AND ${same} AND NOT t.conflict AND (s.conflict OR (s.hash IS NOT NULL AND s.hash < COALESCE(t.hash, ''))) THEN UPDATE SET conflict = TRUE, hour = ${h}
 WHEN NOT MATCHED THEN INSERT (source_table, key_id, key_json, position, op, hash, commit_ts, deleted, conflict, hour) VALUES (s.source_table, s.key_id, s.key_json, s.position, s.op, s.hash, s.commit_ts, s.deleted, s.conflict, ${h})`;
  return mergeStatement('fold-expected/merge-winners', {
    into: 'expected_state',
    source: winners(hour),
    on: sql`t.source_table = s.source_table AND t.key_id = s.key_id`,
    clauses,
    filter: {},
    affected: sql`SELECT DISTINCT h.source_table FROM ${history} h WHERE ${hourOfHistory(hour)} AND ${keyedChange(sql`h`)}`,
    reads: [
      { table: 'history', filter: { days: { from: hour.dt, to: hour.dt } } },
      { table: 'truncates', filter: {} },
    ],
  });
}

/** 3: rows of the tables truncated in the hour that sit below the (raised) watermark become deleted. */
function applyTruncates(hour: Hour): Statement {
  const truncated = sql`SELECT DISTINCT h.source_table FROM ${history} h WHERE ${hourOfHistory(hour)} AND ${truncateLine(sql`h`)}`;
  return mergeStatement('fold-expected/apply-truncates', {
    into: 'expected_state',
    source: sql`SELECT tr.source_table, tr.position FROM ${truncates} tr WHERE tr.source_table IN (${truncated})`,
    on: sql`t.source_table = s.source_table AND t.position < s.position AND NOT t.deleted`,
    clauses: sql`WHEN MATCHED THEN UPDATE SET deleted = TRUE, hour = ${int(hour.start, 'hour')}`,
    filter: {},
    affected: truncated,
    reads: [
      { table: 'history', filter: { days: { from: hour.dt, to: hour.dt } } },
      { table: 'truncates', filter: {} },
    ],
  });
}

export function foldExpected(args: FoldExpectedArgs): Statement[] {
  const hour = hourOf(args.hour);
  return [raiseTruncates(hour), mergeWinners(hour), applyTruncates(hour)];
}

/** The three steps' names, in order. */
export const FOLD_STEPS = ['fold-expected/raise-truncates', 'fold-expected/merge-winners', 'fold-expected/apply-truncates'] as const;
