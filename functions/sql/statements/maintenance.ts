/**
 * Table maintenance on Iceberg: `OPTIMIZE … REWRITE DATA USING BIN_PACK` (large files from the
 * hourly inserts) and `VACUUM` (expire old snapshots, so the files of deleted rows, an erasure's
 * among them, are gone). Nothing to run on the Parquet stand-in (dialect entries `optimize`, `vacuum`).
 *
 * Invariant: neither changes a row; VACUUM leaves no data file only an expired snapshot references.
 *
 *   optimize('history')   // OPTIMIZE "tidemark_shop"."history" REWRITE DATA USING BIN_PACK
 *   vacuum('history')     // VACUUM "tidemark_shop"."history"
 */
import type { TableName } from '../schemas.js';
import { maintenanceStatement, type Statement } from '../statement.js';

type IcebergTable = Extract<TableName, 'history' | 'expected_state' | 'truncates' | 'table_hours'>;

export const optimize = (table: IcebergTable): Statement => maintenanceStatement('optimize', table);
export const vacuum = (table: IcebergTable): Statement => maintenanceStatement('vacuum', table);
