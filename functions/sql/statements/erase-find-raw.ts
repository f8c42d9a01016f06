/**
 * erase-find-raw: the raw objects still in S3 that hold a line of a key being erased (the run's
 * keys, `erase_keys`): the only raw objects erase must rewrite (conditionally, `If-Match`). Batch
 * objects of the hours raw still holds (`since` to `until`: compaction deletes older hours past the
 * grace, history keeps their lines, and erase-history deletes those); first-layout objects
 * (`legacy`), which compaction does not delete, over the hours their tables' objects span.
 *
 * With `compacted`, the hours from `compacted.from` through `compacted.through` are found in history, whose
 * `raw_object` names the object every line came from: only the key's rows of the run's tables over
 * those days are read (history's columns, pruned on `source_table` and `dt`), not the hours' raw
 * JSON whole. Raw is read for the hours after `through`, for each hour of `compacted.late`
 * (compacted hours holding objects that landed, or were rewritten, after the hour was compacted, or
 * with no marker, whose lines history may not hold yet) and for the hours before `from` (past the
 * grace: compaction deleted their objects but the late ones, so history would name objects gone).
 *
 * Invariant: exactly the distinct objects (`"$path"`) of the hours read holding a keyed line of one
 * of the run's (table, key): no object without one, none with one left out. A first-layout line's
 * key id is rebuilt from its key JSON as compact-legacy-hour does. For a compacted hour that holds
 * no late object, history holds every line of every object of it (compact-hour's invariant), so
 * its `raw_object` values are those objects.
 *
 *   eraseFindRaw({ runId: 'erase-1', tables: ['public.orders'], since, until, compacted: { through, late: [] }, output: 's3://…/erase/erase-1/objects/' })
 *   // SELECT DISTINCT f.raw_object FROM (SELECT h.raw_object FROM history h JOIN (…erase_keys…) k ON … WHERE <days> AND <hours>
 *   //   UNION ALL SELECT r."$path" AS raw_object FROM raw_lines r JOIN … WHERE <hours after through>) f …
 */
import { ERASE_OBJECTS } from '../schemas.js';
import { bind, bindList, call, join, type Sql, sql } from '../sql.js';
import { type Read, selectStatement, type Statement } from '../statement.js';
import { dayRange, HOUR_MS, hourRange } from '../time.js';
import { historyHours, rawHours, tableList } from './common.js';
import { eraseRun, type EraseRunArgs, runKeys } from './erase-keys.js';

/** A table whose first-layout objects may hold the keys: its path segments (both encodings) and key columns. */
export interface LegacyTable {
  readonly table: string;
  readonly segments: readonly string[];
  readonly key: readonly string[];
}

export interface EraseFindRawArgs extends EraseRunArgs {
  /** Batch objects of the hours holding arrivals from `since` to `until` (epoch ms). */
  readonly since: number;
  readonly until: number;
  /** First-layout objects of these tables, of the hours from `since` to `until`. */
  readonly legacy?: { readonly tables: readonly LegacyTable[]; readonly since: number; readonly until: number };
  /**
   * Every hour from `from` through `through` is compacted into history (the compaction frontier),
   * except those of `late` (hour starts), whose raw is still read; so is the raw of the hours before
   * `from` (compaction's cleaned hours, which hold only late objects). Absent: raw is read for every hour.
   */
  readonly compacted?: { readonly from: number; readonly through: number; readonly late: readonly number[] };
  readonly output?: string;
}

const hour = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** The hours from `since` to `until` that `keep` says, as runs of consecutive hours (inclusive). */
function runsOfHours(since: number, until: number, keep: (hour: number) => boolean): { from: number; to: number }[] {
  const runs: { from: number; to: number }[] = [];
  for (let h = since; h <= until; h += HOUR_MS) {
    if (!keep(h)) continue;
    const last = runs[runs.length - 1];
    if (last && last.to === h - HOUR_MS) last.to = h;
    else runs.push({ from: h, to: h });
  }
  return runs;
}

export function eraseFindRaw(args: EraseFindRawArgs): Statement {
  const { runId, tables } = eraseRun(args);
  const since = hour(args.since);
  const until = hour(args.until);
  hourRange(since, until);
  const keys = runKeys(runId);
  const branches: Sql[] = [];
  const reads: Read[] = [];
  const rawBranch = (hours: Sql) =>
    sql`SELECT r."$path" AS raw_object FROM ${call((d) => d.table('raw_lines'))} r JOIN ${keys} k ON r."table" = k.source_table AND r.key_id = k.key_id WHERE ${hours} AND r.key_id IS NOT NULL`;
  // History stands for the hours from `from` through `through` but the late ones; raw is read for every other hour, in runs of consecutive hours.
  const c = args.compacted;
  const from = c ? Math.max(hour(c.from), since) : until + HOUR_MS;
  const through = c ? Math.min(hour(c.through), until) : since - HOUR_MS;
  const late = new Set((c?.late ?? []).map(hour));
  if (through >= from) {
    branches.push(
      sql`SELECT h.raw_object FROM ${call((d) => d.table('history'))} h JOIN ${keys} k ON h.source_table = k.source_table AND h.key_id = k.key_id WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyHours(sql`h`, hourRange(from, through))} AND h.raw_object IS NOT NULL`,
    );
    reads.push({ table: 'history', filter: { tables, days: dayRange(from, through) } });
  }
  const rawRanges = runsOfHours(since, until, (h) => h < from || h > through || late.has(h));
  if (rawRanges.length > 0) {
    const predicates = rawRanges.map((r) => rawHours(sql`r`, hourRange(r.from, r.to)));
    branches.push(rawBranch(predicates.length === 1 ? (predicates[0] as Sql) : sql`(${join(predicates.map((p) => sql`(${p})`), ' OR ')})`));
    for (const r of rawRanges) reads.push({ table: 'raw_lines', filter: { hours: r } });
  }
  reads.push({ table: 'erase_keys', filter: { runId } });
  const legacy = args.legacy?.tables ?? [];
  if (args.legacy && legacy.length > 0) {
    const old = hourRange(hour(args.legacy.since), hour(args.legacy.until));
    for (const t of legacy) {
      tableList([t.table], 'legacy tables');
      const keyId = call((d) => d.keyIdOfJson(sql`e."key"`, t.key));
      branches.push(
        sql`SELECT e."$path" AS raw_object FROM ${call((d) => d.table('raw_events'))} e JOIN ${keys} k ON k.source_table = e."table" AND k.key_id = ${keyId} WHERE e.source_table IN ${bindList(t.segments, 'segments')} AND ${rawHours(sql`e`, old)} AND e."table" = ${bind(t.table)} AND e.kind = 'change' AND e."key" IS NOT NULL`,
      );
    }
    reads.push({ table: 'raw_events', filter: { segments: [...new Set(legacy.flatMap((t) => t.segments))], hours: { from: old.from.start, to: old.to.start } } });
  }
  const query = sql`SELECT DISTINCT f.raw_object FROM (${join(branches, ' UNION ALL ')}) f ORDER BY f.raw_object`;
  return selectStatement('erase-find-raw', query, {
    reads,
    columns: ERASE_OBJECTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
