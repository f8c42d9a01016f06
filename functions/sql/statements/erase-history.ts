/**
 * erase-history: deletes from `history` every line of the records that carried a key being erased
 * (the run's keys, `erase_keys`): the key's own lines and the other rows of the same multi-row
 * messages (same raw object, stream, shard and sequence), whose message holds the key's values too,
 * as erase removes them from raw. A whole day's requests in one statement.
 *
 * `MERGE INTO … USING (…) … WHEN MATCHED THEN DELETE`, the Iceberg row-level delete Athena runs with
 * a subquery; values inlined (Athena takes no parameters in MERGE). On Iceberg the delete writes
 * delete files: OPTIMIZE then rewrites the files holding the lines and VACUUM expires the snapshots
 * that still reference the old files (maintenance.ts), so the lines are physically gone. The Parquet
 * stand-in rewrites the partitions and removes the old files with every version.
 *
 * Invariant: afterwards history holds no line of a requested (table, key), nor any other line of a
 * record that held one, in the run's tables; every other line is kept.
 *
 *   eraseHistory({ runId: 'erase-1', tables: ['public.orders'] })
 *   // MERGE INTO history t USING (SELECT DISTINCT h.source_table, h.raw_object, h.stream, h.shard, h.sequence FROM history h JOIN (…erase_keys…) k ON …) s
 *   //   ON t.source_table = s.source_table AND t.raw_object = s.raw_object AND … WHEN MATCHED THEN DELETE
 */
import { call, litList, sql } from '../sql.js';
import { mergeStatement, type Statement } from '../statement.js';
import { eraseRun, type EraseRunArgs, runKeys } from './erase-keys.js';

export function eraseHistory(args: EraseRunArgs): Statement {
  const { runId, tables } = eraseRun(args);
  const history = call((d) => d.table('history'));
  const inTables = litList(tables, 'tables');
  const keyLines = sql`FROM ${history} h JOIN ${runKeys(runId, true)} k ON h.source_table = k.source_table AND h.key_id = k.key_id WHERE h.source_table IN ${inTables}`;
  return mergeStatement('erase-history', {
    into: 'history',
    source: sql`SELECT DISTINCT h.source_table, h.raw_object, h.stream, h.shard, h.sequence ${keyLines}`,
    on: sql`t.source_table IN ${inTables} AND t.source_table = s.source_table AND t.raw_object = s.raw_object AND t.stream = s.stream AND t.shard = s.shard AND t.sequence = s.sequence`,
    clauses: sql`WHEN MATCHED THEN DELETE`,
    filter: { tables },
    // A record's lines share its raw object, so its day: the partitions of the key's own lines.
    affected: sql`SELECT DISTINCT h.source_table, h.dt ${keyLines}`,
    reads: [
      { table: 'history', filter: { tables } },
      { table: 'erase_keys', filter: { runId } },
    ],
  });
}
