/**
 * erase-expected: deletes from `expected_state` the rows of the keys being erased (the run's keys,
 * `erase_keys`), so reconcile no longer expects them (their items are bare `__erased` tombstones,
 * reported as `erased`). `MERGE … WHEN MATCHED THEN DELETE`, values inlined, as erase-history.
 *
 * Invariant: afterwards expected state holds no row of a requested (table, key); other rows are kept.
 *
 *   eraseExpected({ runId: 'erase-1', tables: ['public.orders'] })
 *   // MERGE INTO expected_state t USING (SELECT DISTINCT k.source_table, k.key_id FROM (…erase_keys…) k) s ON … WHEN MATCHED THEN DELETE
 */
import { litList, sql } from '../sql.js';
import { mergeStatement, type Statement } from '../statement.js';
import { eraseRun, type EraseRunArgs, runKeys } from './erase-keys.js';

export function eraseExpected(args: EraseRunArgs): Statement {
  const { runId, tables } = eraseRun(args);
  return mergeStatement('erase-expected', {
    into: 'expected_state',
    source: sql`SELECT DISTINCT k.source_table, k.key_id FROM ${runKeys(runId, true)} k`,
    on: sql`t.source_table IN ${litList(tables, 'tables')} AND t.source_table = s.source_table AND t.key_id = s.key_id`,
    clauses: sql`WHEN MATCHED THEN DELETE`,
    filter: { tables },
    affected: null,
    reads: [{ table: 'erase_keys', filter: { runId } }],
  });
}
