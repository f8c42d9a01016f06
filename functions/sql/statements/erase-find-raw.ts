/**
 * erase-find-raw: the raw objects still in S3 that hold a line of a key being erased (the run's
 * keys, `erase_keys`): the only raw objects erase must rewrite (conditionally, `If-Match`). Batch
 * objects are read over the hours raw still holds (`since` to `until`: compaction deletes older
 * hours past the grace, history keeps their lines, and erase-history deletes those); first-layout
 * objects (`legacy`), which compaction does not delete, over the hours their tables' objects span.
 *
 * Invariant: exactly the distinct objects (`"$path"`) of the hours read holding a keyed line of one
 * of the run's (table, key): no object without one, none with one left out. A first-layout line's
 * key id is rebuilt from its key JSON as compact-legacy-hour does.
 *
 *   eraseFindRaw({ runId: 'erase-1', tables: ['public.orders'], since, until, output: 's3://…/erase/erase-1/objects/' })
 *   // SELECT DISTINCT f.raw_object FROM (SELECT r."$path" AS raw_object FROM raw_lines r JOIN (SELECT … FROM erase_keys k WHERE k.run_id = ?) k ON … WHERE <hours>) f …
 */
import { ERASE_OBJECTS } from '../schemas.js';
import { bind, bindList, call, join, type Sql, sql } from '../sql.js';
import { type Read, selectStatement, type Statement } from '../statement.js';
import { HOUR_MS, hourRange } from '../time.js';
import { rawHours, tableList } from './common.js';
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
  readonly output?: string;
}

const hour = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

export function eraseFindRaw(args: EraseFindRawArgs): Statement {
  const { runId } = eraseRun(args);
  const range = hourRange(hour(args.since), hour(args.until));
  const keys = runKeys(runId);
  const branches: Sql[] = [
    sql`SELECT r."$path" AS raw_object FROM ${call((d) => d.table('raw_lines'))} r JOIN ${keys} k ON r."table" = k.source_table AND r.key_id = k.key_id WHERE ${rawHours(sql`r`, range)} AND r.key_id IS NOT NULL`,
  ];
  const reads: Read[] = [
    { table: 'raw_lines', filter: { hours: { from: range.from.start, to: range.to.start } } },
    { table: 'erase_keys', filter: { runId } },
  ];
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
