/**
 * detect-resnapshots: per table, the snapshot reads (`op = 'r'`) delivered after the table's first
 * streamed change in the lookback, by arrival: the connector read the table again after streaming
 * began. Arrival, not position: a Debezium PostgreSQL snapshot read has no commit LSN, so its
 * position sorts below every streamed change.
 *
 * Invariant: a read counts when its raw object's first line of the table arrived after the table's
 * first streamed change on the same shard (stream and shard: the stream orders only within one):
 * reads of the initial snapshot that share a delivery (a raw object) with the first streamed
 * changes, or that another shard delivered while this one was still reading the snapshot, are not
 * a re-snapshot. `streaming_since` is the earliest such start among the shards that read again.
 * Tables with none give no row.
 *
 *   detectResnapshots({ tables: ['public.orders'], since: now - 168 * HOUR, until: now })
 *   // rows { source_table, streaming_since, resnapshot_reads, first_read_at }
 */
import { RESNAPSHOTS } from '../schemas.js';
import { bind, bindList, call, SqlArgumentError, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { dayRange } from '../time.js';
import { historyDays, keyedChange, tableList } from './common.js';

export interface DetectResnapshotsArgs {
  readonly tables: readonly string[];
  /** The lookback, arrival epoch ms: from `since` (inclusive) to `until` (exclusive). */
  readonly since: number;
  readonly until: number;
  /** An `s3://` prefix to UNLOAD the rows to (gzip JSON Lines); absent: a plain SELECT. */
  readonly output?: string;
}

export function detectResnapshots(args: DetectResnapshotsArgs): Statement {
  const tables = tableList(args.tables);
  if (args.until <= args.since) throw new SqlArgumentError('until must be after since');
  const days = dayRange(args.since, args.until);
  const lines = sql`lines AS (SELECT h.source_table, h.op, h.arrival_ts, h.raw_object, COALESCE(h.stream, '') AS stream, COALESCE(h.shard, '') AS shard FROM ${call((d) => d.table('history'))} h WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyDays(sql`h`, days)} AND h.arrival_ts >= ${bind(args.since)} AND h.arrival_ts < ${bind(args.until)} AND ${keyedChange(sql`h`)})`;
  const streaming = sql`streaming AS (SELECT l.source_table, l.stream, l.shard, min(l.arrival_ts) AS streaming_since FROM lines l WHERE l.op <> 'r' GROUP BY l.source_table, l.stream, l.shard)`;
  const objects = sql`objects AS (SELECT l.source_table, l.raw_object, min(l.arrival_ts) AS object_arrival FROM lines l GROUP BY l.source_table, l.raw_object)`;
  const query = sql`WITH ${lines}, ${streaming}, ${objects} SELECT l.source_table, min(s.streaming_since) AS streaming_since, count(*) AS resnapshot_reads, min(l.arrival_ts) AS first_read_at FROM lines l JOIN streaming s ON s.source_table = l.source_table AND s.stream = l.stream AND s.shard = l.shard JOIN objects o ON o.source_table = l.source_table AND o.raw_object = l.raw_object WHERE l.op = 'r' AND o.object_arrival > s.streaming_since GROUP BY l.source_table ORDER BY l.source_table`;
  return selectStatement('detect-resnapshots', query, {
    reads: [{ table: 'history', filter: { tables, days } }],
    columns: RESNAPSHOTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
