/**
 * replay-select: the events a replay re-applies (tables, an arrival-time range, a position range,
 * optionally keys), from history and from the raw of the hours not compacted yet, each with what
 * rebuilds its record and its key bucket, in key and position order.
 *
 * Invariant: every keyed change of the selection exactly once (history holds hours before
 * `uncompactedFrom`, raw the hours from it), and, unless keys are named, every truncate of the
 * selection (`op = 't'`, no key: `key_id` null) exactly once, in bucket 0; each row carrying its
 * record's message (a messageRef line's from the first line of the same record, stream, shard and
 * sequence, in the same raw object), and `bucket = first 32 bits of md5(key_id) mod buckets`,
 * computed identically on both engines (dialect entry `bucket`), so a key's events all land in one
 * bucket. Within a bucket, rows are in (source_table, key_id with a truncate's as '', position,
 * arrival_ts, sequence) order, text compared by code point as both engines do: Athena's UNLOAD
 * writes each file in that order but not the files relative to each other, so the apply step
 * merges a bucket's files by that order (functions/replay/bucket-merge.ts `compareRows`).
 *
 * A truncate is table-level: the bucket that meets it raises the table's watermark and sweeps the
 * rows below it, and every bucket rechecks the watermark after it writes (functions/replay/engine.ts),
 * so the rows below it end up removed whatever order the buckets run in. One bucket, not every
 * bucket, so the table is swept once.
 *
 *   replaySelect({ tables: ['public.orders'], since, until, buckets: 16, uncompactedFrom, output: 's3://…/replay/run/' })
 *   // UNLOAD (WITH sel AS (… history … UNION ALL … raw_lines …), firsts AS (…) SELECT …, bucket FROM sel LEFT JOIN firsts …
 *   //   ORDER BY source_table, key_id, position) TO … WITH (…, partitioned_by = ARRAY['bucket'])
 */
import { bucketCount } from '../dialect.js';
import { REPLAY_EVENTS } from '../schemas.js';
import { bind, bindList, call, type Sql, SqlArgumentError, sql } from '../sql.js';
import { type Read, selectStatement, type Statement } from '../statement.js';
import { DAY_MS, dayOf, HOUR_MS, hourOf, hourRange } from '../time.js';
import { historyDays, keyedChange, keyPredicate, positionArg, rawHours, type TableKeys, tableList, truncateLine } from './common.js';

export interface ReplaySelectArgs {
  readonly tables: readonly string[];
  /** Arrival time, epoch ms: from `since` (inclusive) to `until` (exclusive). */
  readonly since: number;
  readonly until: number;
  /** Encoded positions, inclusive. */
  readonly fromPosition?: string;
  readonly toPosition?: string;
  /** Only these keys (per table); absent: every key of the tables. */
  readonly keys?: readonly TableKeys[];
  /** Key buckets: 1 to 100 (UNLOAD writes at most 100 partitions). */
  readonly buckets: number;
  /** The first hour not compacted yet (hour start): its raw and later hours' are read instead of history. */
  readonly uncompactedFrom: number;
  /**
   * How long before a line's arrival its batch may have begun (a raw object's hour is its batch's
   * first arrival): the partitions read start this much before `since`. @default one day
   */
  readonly batchSpanMs?: number;
  /** An `s3://` prefix to UNLOAD to, partitioned by bucket; absent: a plain SELECT. */
  readonly output?: string;
}

/** The columns of a selected line, from history (alias h) or raw_lines (alias r). */
const FROM_HISTORY = sql`h.source_table, h.key_id, h.key_json, h.position, h.op, h.format, h.ordering, h.hash, h.commit_ts, h.arrival_ts, h.txid, h.is_snapshot, h.transport_kind, h.stream, h.shard, h.sequence, h.partition_key, h.topic, h.headers, h.message_key, h.message_key_base64, h.message, h.message_base64, h.message_ref, h.raw_object`;
const FROM_RAW = sql`r."table" AS source_table, r.key_id, r."key" AS key_json, r.position, r.op, r.format, r.ordering_strength AS ordering, r.hash, r.commit_ts, COALESCE(r.arrival_ts, r.transport.arrivalTime) AS arrival_ts, r.txid, COALESCE(r.snapshot, FALSE) AS is_snapshot, r.transport.kind AS transport_kind, r.transport.stream AS stream, r.transport.shard AS shard, r.transport.sequence AS sequence, r.transport.partitionKey AS partition_key, r.topic, r.headers, r.message_key, r.message_key_base64, r.message, r.message_base64, COALESCE(r.message_ref, FALSE) AS message_ref, r."$path" AS raw_object`;

/** A line's table and arrival columns, in history (h) or raw_lines (r). */
interface LineColumns {
  readonly alias: Sql;
  readonly table: Sql;
  readonly arrival: Sql;
}
const IN_HISTORY: LineColumns = { alias: sql`h`, table: sql`h.source_table`, arrival: sql`h.arrival_ts` };
const IN_RAW: LineColumns = { alias: sql`r`, table: sql`r."table"`, arrival: sql`COALESCE(r.arrival_ts, r.transport.arrivalTime)` };

/** The selection's own conditions on a line. */
function selection(args: ReplaySelectArgs, tables: readonly string[], { alias: a, table, arrival }: LineColumns): Sql {
  // Truncates are table-level: a selection of keys leaves them out, as the engine's `selects` does.
  const changes = args.keys !== undefined ? keyedChange(a) : sql`(${keyedChange(a)} OR ${truncateLine(a)})`;
  let where = sql`${table} IN ${bindList(tables, 'tables')} AND ${arrival} >= ${bind(args.since)} AND ${arrival} < ${bind(args.until)} AND ${changes}`;
  if (args.fromPosition !== undefined) where = sql`${where} AND ${a}.position >= ${bind(positionArg(args.fromPosition, 'fromPosition'))}`;
  if (args.toPosition !== undefined) where = sql`${where} AND ${a}.position <= ${bind(positionArg(args.toPosition, 'toPosition'))}`;
  if (args.keys !== undefined) where = sql`${where} AND ${keyPredicate(args.keys, table, sql`${a}.key_id`)}`;
  return where;
}

export function replaySelect(args: ReplaySelectArgs): Statement {
  const tables = tableList(args.tables);
  if (!Number.isSafeInteger(args.since) || !Number.isSafeInteger(args.until) || args.since < 0 || args.until <= args.since) {
    throw new SqlArgumentError(`since and until must be epoch ms with since before until, got ${args.since} and ${args.until}`);
  }
  const buckets = bucketCount(args.buckets);
  const frontier = hourOf(args.uncompactedFrom, 'uncompactedFrom');
  const span = args.batchSpanMs ?? DAY_MS;
  if (!Number.isSafeInteger(span) || span < 0) throw new SqlArgumentError(`batchSpanMs must be a non-negative integer, got ${span}`);
  const firstHour = Math.floor(Math.max(0, args.since - span) / HOUR_MS) * HOUR_MS;
  const lastHour = Math.floor((args.until - 1) / HOUR_MS) * HOUR_MS;
  const history = call((d) => d.table('history'));
  const rawLines = call((d) => d.table('raw_lines'));
  const branches: Sql[] = [];
  const firsts: Sql[] = [];
  const reads: Read[] = [];
  if (firstHour < frontier.start) {
    const days = { from: dayOf(firstHour), to: dayOf(Math.min(lastHour, frontier.start - HOUR_MS)) };
    const beforeFrontier = sql`(h.dt < CAST(${bind(frontier.dt)} AS DATE) OR (h.dt = CAST(${bind(frontier.dt)} AS DATE) AND h.hr < ${bind(frontier.hr)}))`;
    branches.push(sql`SELECT ${FROM_HISTORY} FROM ${history} h WHERE ${historyDays(sql`h`, days)} AND ${beforeFrontier} AND ${selection(args, tables, IN_HISTORY)}`);
    firsts.push(sql`SELECT h.raw_object, h.stream, h.shard, h.sequence, h.message, h.message_base64 FROM ${history} h WHERE ${historyDays(sql`h`, days)} AND NOT h.message_ref AND h.raw_object IN (SELECT s.raw_object FROM sel s WHERE s.message_ref)`);
    reads.push({ table: 'history', filter: { days } }); // every table of those days: a record's first line may be another table's
  }
  if (lastHour >= frontier.start) {
    const range = hourRange(Math.max(firstHour, frontier.start), lastHour);
    branches.push(sql`SELECT ${FROM_RAW} FROM ${rawLines} r WHERE ${rawHours(sql`r`, range)} AND ${selection(args, tables, IN_RAW)}`);
    firsts.push(sql`SELECT r."$path" AS raw_object, r.transport.stream AS stream, r.transport.shard AS shard, r.transport.sequence AS sequence, r.message, r.message_base64 FROM ${rawLines} r WHERE ${rawHours(sql`r`, range)} AND NOT COALESCE(r.message_ref, FALSE) AND r."$path" IN (SELECT s.raw_object FROM sel s WHERE s.message_ref)`);
    reads.push({ table: 'raw_lines', filter: { hours: { from: range.from.start, to: range.to.start } } });
  }
  const union = (parts: readonly Sql[]): Sql => parts.reduce((acc, p) => sql`${acc} UNION ALL ${p}`);
  const resolved = sql`CASE WHEN s.message_ref THEN f.message ELSE s.message END AS message, CASE WHEN s.message_ref THEN f.message_base64 ELSE s.message_base64 END AS message_base64`;
  // A truncate's line may carry a key id (the normalizer's, of no key): it names none, and goes to bucket 0.
  const bucket = sql`CASE WHEN s.op = 't' THEN 0 ELSE ${call((d) => d.bucket(sql`s.key_id`, buckets))} END`;
  const query = sql`WITH sel AS (${union(branches)}), firsts AS (SELECT f.raw_object, f.stream, f.shard, f.sequence, max(f.message) AS message, max(f.message_base64) AS message_base64 FROM (${union(firsts)}) f GROUP BY f.raw_object, f.stream, f.shard, f.sequence) SELECT s.source_table, CASE WHEN s.op = 't' THEN NULL ELSE s.key_id END AS key_id, CASE WHEN s.op = 't' THEN NULL ELSE s.key_json END AS key_json, s.position, s.op, s.format, s.ordering, s.hash, s.commit_ts, s.arrival_ts, s.txid, s.is_snapshot, s.transport_kind, s.stream, s.shard, s.sequence, s.partition_key, s.topic, s.headers, s.message_key, s.message_key_base64, ${resolved}, s.raw_object, ${bucket} AS bucket FROM sel s LEFT JOIN firsts f ON f.raw_object = s.raw_object AND f.stream = s.stream AND f.shard = s.shard AND f.sequence = s.sequence ORDER BY s.source_table, CASE WHEN s.op = 't' THEN '' ELSE s.key_id END, s.position, s.arrival_ts, s.sequence`;
  return selectStatement('replay-select', query, {
    reads,
    columns: REPLAY_EVENTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: ['bucket'] } } : {}),
  });
}
