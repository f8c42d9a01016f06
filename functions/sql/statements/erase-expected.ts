/**
 * erase-expected: `DELETE FROM expected_state` the rows of the keys being erased, so reconcile no
 * longer expects them (their items are bare `__erased` tombstones, reported as `erased`).
 *
 * Invariant: afterwards expected state holds no row of a requested (table, key); other rows are kept.
 *
 *   eraseExpected({ keys: [{ table: 'public.orders', keyIds: ['["7"]'] }] })
 *   // DELETE FROM expected_state WHERE ((source_table = 'public.orders' AND key_id IN ('["7"]')))
 */
import { sql } from '../sql.js';
import { deleteStatement, type Statement } from '../statement.js';
import { keyLists, keyPredicate } from './common.js';
import type { EraseKeysArgs } from './erase-history.js';

export function eraseExpected(args: EraseKeysArgs): Statement {
  const keys = keyLists(args.keys);
  const tables = [...new Set(keys.map((k) => k.table))];
  return deleteStatement('erase-expected', {
    from: 'expected_state',
    where: keyPredicate(keys, sql`source_table`, sql`key_id`, true),
    filter: { tables },
    affected: null,
    reads: [],
  });
}
