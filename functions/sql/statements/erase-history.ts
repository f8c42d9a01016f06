/**
 * erase-history: `DELETE FROM history` every line of the keys being erased (the day's requests in
 * one statement). Snapshot expiry (`VACUUM`, maintenance.ts) must follow on Iceberg, so the old data
 * files holding the lines are gone; the Parquet stand-in removes them as it rewrites.
 *
 * Invariant: afterwards history holds no line of a requested (table, key); every other line is kept.
 * Values are inlined (Athena takes no parameters in DELETE), escaped (sql.ts `literal`).
 *
 *   eraseHistory({ keys: [{ table: 'public.orders', keyIds: ['["7"]'] }] })
 *   // DELETE FROM history WHERE ((source_table = 'public.orders' AND key_id IN ('["7"]')))
 */
import { call, sql } from '../sql.js';
import { deleteStatement, type Statement } from '../statement.js';
import { keyLists, keyPredicate, type TableKeys } from './common.js';

export interface EraseKeysArgs {
  readonly keys: readonly TableKeys[];
}

export function eraseHistory(args: EraseKeysArgs): Statement {
  const keys = keyLists(args.keys);
  const tables = [...new Set(keys.map((k) => k.table))];
  const where = keyPredicate(keys, sql`source_table`, sql`key_id`, true);
  return deleteStatement('erase-history', {
    from: 'history',
    where,
    filter: { tables },
    affected: sql`SELECT DISTINCT h.source_table, h.dt FROM ${call((d) => d.table('history'))} h WHERE ${keyPredicate(keys, sql`h.source_table`, sql`h.key_id`, true)}`,
    reads: [{ table: 'history', filter: { tables } }],
  });
}
