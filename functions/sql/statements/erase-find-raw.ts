/**
 * erase-find-raw: the raw objects still inside the compaction grace that hold a line of any key
 * being erased: the only raw objects erase must rewrite (conditionally, `If-Match`).
 *
 * Invariant: exactly the distinct objects (`"$path"`) of the hours read holding a keyed line of a
 * requested (table, key): no object without one, none with one left out. Older raw has expired; its
 * lines live on only in history, which erase-history deletes.
 *
 *   eraseFindRaw({ keys: [{ table: 'public.orders', keyIds: ['["7"]'] }], since, until, output: 's3://…/erase/run/objects/' })
 *   // SELECT DISTINCT r."$path" AS raw_object FROM raw_lines r WHERE <hours> AND ((r."table" = ? AND r.key_id IN (?)))
 */
import { ERASE_OBJECTS } from '../schemas.js';
import { call, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { HOUR_MS, hourRange } from '../time.js';
import { keyPredicate, rawHours, type TableKeys } from './common.js';

export interface EraseFindRawArgs {
  readonly keys: readonly TableKeys[];
  /** The grace: raw that arrived from `since` to `until` (epoch ms; the hours holding them are read). */
  readonly since: number;
  readonly until: number;
  readonly output?: string;
}

export function eraseFindRaw(args: EraseFindRawArgs): Statement {
  const hour = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;
  const range = hourRange(hour(args.since), hour(args.until));
  const query = sql`SELECT DISTINCT r."$path" AS raw_object FROM ${call((d) => d.table('raw_lines'))} r WHERE ${rawHours(sql`r`, range)} AND r.key_id IS NOT NULL AND ${keyPredicate(args.keys, sql`r."table"`, sql`r.key_id`)} ORDER BY raw_object`;
  return selectStatement('erase-find-raw', query, {
    reads: [{ table: 'raw_lines', filter: { hours: { from: range.from.start, to: range.to.start } } }],
    columns: ERASE_OBJECTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
