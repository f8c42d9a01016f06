/**
 * erase-find-history: what history holds of each key of an erase run, per request: how many lines
 * and the highest position among them. Erase runs it before erase-history deletes them, so a key
 * whose raw has expired is still "found", and its ledger entry is raised to every position history
 * held (nothing below it can come back through a replay of an older copy).
 *
 * Invariant: one row per request whose key history holds, with the count of the key's lines and
 * their greatest position; none for a request whose key history does not hold. The output names
 * requests and keyed hashes, never keys.
 *
 *   eraseFindHistory({ runId: 'erase-1', tables: ['public.orders'] })
 *   // SELECT k.request, count(*) AS lines, max(h.position) AS max_position FROM history h JOIN (…erase_keys…) k ON … GROUP BY k.request
 */
import { ERASE_FOUND } from '../schemas.js';
import { bindList, call, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { eraseRun, type EraseRunArgs, runKeys } from './erase-keys.js';

export interface EraseFindHistoryArgs extends EraseRunArgs {
  readonly output?: string;
}

export function eraseFindHistory(args: EraseFindHistoryArgs): Statement {
  const { runId, tables } = eraseRun(args);
  const query = sql`SELECT k.request, k.key_hash, count(*) AS lines, max(h.position) AS max_position FROM ${call((d) => d.table('history'))} h JOIN ${runKeys(runId)} k ON h.source_table = k.source_table AND h.key_id = k.key_id WHERE h.source_table IN ${bindList(tables, 'tables')} GROUP BY k.request, k.key_hash ORDER BY k.request`;
  return selectStatement('erase-find-history', query, {
    reads: [
      { table: 'history', filter: { tables } },
      { table: 'erase_keys', filter: { runId } },
    ],
    columns: ERASE_FOUND.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
