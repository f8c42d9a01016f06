/**
 * Table maintenance on Iceberg: `OPTIMIZE … REWRITE DATA USING BIN_PACK` (large files from the
 * hourly inserts; and the files an erasure's delete files point into, rewritten without the deleted
 * rows: narrowed to the erased tables' partitions with `tables`) and `VACUUM` (expire old snapshots,
 * so the files of deleted rows, an erasure's among them, are gone once no retained snapshot
 * references them). Nothing to run on the Parquet stand-in (dialect entries `optimize`, `vacuum`).
 *
 * Invariant: neither changes a row; VACUUM leaves no data file only an expired snapshot references.
 *
 *   optimize('history')                       // OPTIMIZE "tidemark_shop"."history" REWRITE DATA USING BIN_PACK
 *   optimize('history', ['public.orders'])    // … REWRITE DATA USING BIN_PACK WHERE source_table IN ('public.orders')
 *   vacuum('history')                         // VACUUM "tidemark_shop"."history"
 */
import type { TableName } from '../schemas.js';
import { SqlArgumentError } from '../sql.js';
import { maintenanceStatement, type Statement } from '../statement.js';
import { tableList } from './common.js';

type IcebergTable = Extract<TableName, 'history' | 'expected_state' | 'truncates' | 'table_hours'>;

/** Tables partitioned by `source_table`, which an OPTIMIZE can narrow to some tables. */
const BY_SOURCE_TABLE: readonly IcebergTable[] = ['history', 'expected_state'];

export function optimize(table: IcebergTable, tables?: readonly string[]): Statement {
  if (tables !== undefined && !BY_SOURCE_TABLE.includes(table)) throw new SqlArgumentError(`${table} is not partitioned by source_table: optimize it whole`);
  return maintenanceStatement('optimize', table, tables === undefined ? undefined : tableList(tables));
}
export const vacuum = (table: IcebergTable): Statement => maintenanceStatement('vacuum', table);
