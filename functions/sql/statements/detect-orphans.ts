/**
 * detect-orphans: per table, the live keys of expected state that the table's latest complete
 * snapshot did not read, and that last changed before the snapshot began: rows deleted upstream
 * while nothing captured the delete (a slot dropped, a connector offline over a delete).
 *
 * The snapshot: the table's reads (`op = 'r'`) in the lookback. It is complete when Debezium marked
 * its end (`source.snapshot` = `last` or `last_in_data_collection` on a read of the table), or when
 * a streamed change of the table arrived after its last read (Debezium marks `last` only on the
 * whole snapshot's last row, which may be another table's, and streams once the snapshot is done).
 * It starts at the latest read marked `first` / `first_in_data_collection` at or before its end
 * (else at its earliest read in the lookback). Arrival, not position: a PostgreSQL snapshot read
 * has no commit LSN, so its position sorts below every streamed change.
 *
 * Each table with a complete snapshot also gets one row with null key columns (its snapshot, with
 * or without orphans).
 *
 * Invariant: a key is reported only when it is live in expected state, was not read by the
 * snapshot, and its last change landed in an hour wholly before the snapshot's first read (the
 * `hour` expected state records), so a key changed during or after the snapshot is never one.
 *
 *   detectOrphans({ tables: ['public.orders'], since: now - 168 * HOUR, until: now })
 *   // rows { source_table, key_id, key_json, position, snapshot_start, snapshot_end_position, snapshot_keys }
 */
import { ORPHANS } from '../schemas.js';
import { bind, bindList, call, SqlArgumentError, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { dayRange, HOUR_MS } from '../time.js';
import { historyDays, tableList } from './common.js';

export interface DetectOrphansArgs {
  readonly tables: readonly string[];
  /** The lookback, arrival epoch ms: from `since` (inclusive) to `until` (exclusive). */
  readonly since: number;
  readonly until: number;
  readonly output?: string;
}

export function detectOrphans(args: DetectOrphansArgs): Statement {
  const tables = tableList(args.tables);
  if (args.until <= args.since) throw new SqlArgumentError('until must be after since');
  const days = dayRange(args.since, args.until);
  const marker = sql`COALESCE(${call((d) => d.jsonText(sql`h.message`, '$.source.snapshot'))}, ${call((d) => d.jsonText(sql`h.message`, '$.payload.source.snapshot'))})`;
  const lines = sql`lines AS (SELECT h.source_table, h.key_id, h.op, h.arrival_ts, h.position, CASE WHEN h.op = 'r' AND h.message IS NOT NULL THEN ${marker} END AS marker FROM ${call((d) => d.table('history'))} h WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyDays(sql`h`, days)} AND h.arrival_ts >= ${bind(args.since)} AND h.arrival_ts < ${bind(args.until)} AND h.kind = 'change' AND h.key_id IS NOT NULL)`;
  const reads = sql`reads AS (SELECT * FROM lines WHERE op = 'r')`;
  const lastRead = sql`last_read AS (SELECT source_table, max(arrival_ts) AS at FROM reads GROUP BY source_table)`;
  const lastStream = sql`last_stream AS (SELECT source_table, max(arrival_ts) AS at FROM lines WHERE op IN ('c', 'u', 'd') GROUP BY source_table)`;
  const marked = sql`marked_end AS (SELECT source_table, max(arrival_ts) AS at FROM reads WHERE marker IN ('last', 'last_in_data_collection') GROUP BY source_table)`;
  // The end: the latest marked end, else the last read when streaming followed it.
  const ends = sql`ends AS (SELECT r.source_table, COALESCE(m.at, CASE WHEN s.at > r.at THEN r.at END) AS end_at FROM last_read r LEFT JOIN marked_end m ON m.source_table = r.source_table LEFT JOIN last_stream s ON s.source_table = r.source_table)`;
  const starts = sql`starts AS (SELECT e.source_table, e.end_at, COALESCE(max(CASE WHEN r.marker IN ('first', 'first_in_data_collection') THEN r.arrival_ts END), min(r.arrival_ts)) AS start_at FROM ends e JOIN reads r ON r.source_table = e.source_table AND r.arrival_ts <= e.end_at WHERE e.end_at IS NOT NULL GROUP BY e.source_table, e.end_at)`;
  const snap = sql`snap AS (SELECT st.source_table, st.start_at, st.end_at, max(r.position) AS end_position, count(DISTINCT r.key_id) AS snapshot_keys FROM starts st JOIN reads r ON r.source_table = st.source_table AND r.arrival_ts >= st.start_at AND r.arrival_ts <= st.end_at GROUP BY st.source_table, st.start_at, st.end_at)`;
  const readKeys = sql`read_keys AS (SELECT DISTINCT r.source_table, r.key_id FROM reads r JOIN snap s ON s.source_table = r.source_table AND r.arrival_ts >= s.start_at AND r.arrival_ts <= s.end_at)`;
  const orphans = sql`SELECT x.source_table, x.key_id, x.key_json, x.position, s.start_at AS snapshot_start, s.end_position AS snapshot_end_position, s.snapshot_keys FROM ${call((d) => d.table('expected_state'))} x JOIN snap s ON s.source_table = x.source_table LEFT JOIN read_keys k ON k.source_table = x.source_table AND k.key_id = x.key_id WHERE x.source_table IN ${bindList(tables, 'tables')} AND NOT x.deleted AND k.key_id IS NULL AND x.hour + ${bind(HOUR_MS)} <= s.start_at`;
  // One row per table with a complete snapshot, key columns null: the snapshot is reported even without orphans.
  const snapshots = sql`SELECT s.source_table, CAST(NULL AS VARCHAR) AS key_id, CAST(NULL AS VARCHAR) AS key_json, CAST(NULL AS VARCHAR) AS position, s.start_at AS snapshot_start, s.end_position AS snapshot_end_position, s.snapshot_keys FROM snap s`;
  const query = sql`WITH ${lines}, ${reads}, ${lastRead}, ${lastStream}, ${marked}, ${ends}, ${starts}, ${snap}, ${readKeys} SELECT o.* FROM (${orphans} UNION ALL ${snapshots}) o ORDER BY o.source_table, o.key_id NULLS FIRST`;
  return selectStatement('detect-orphans', query, {
    reads: [
      { table: 'history', filter: { tables, days } },
      { table: 'expected_state', filter: { tables } },
    ],
    columns: ORPHANS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
