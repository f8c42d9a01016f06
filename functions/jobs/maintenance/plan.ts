/**
 * Table maintenance (lib/jobs/definitions.ts `maintenanceDefinition`): the plan step stores, for
 * the query loop, `OPTIMIZE … REWRITE DATA USING BIN_PACK` then `VACUUM` of each Iceberg table
 * (functions/sql/statements/maintenance.ts), in that order: VACUUM then expires the snapshots that
 * still reference the files OPTIMIZE replaced, once they are older than the tables'
 * `vacuum_max_snapshot_age_seconds` (lib/history.ts, `history.maintenance.snapshotRetentionDays`).
 *
 *   const plan = await planMaintenance({}, deps);
 *   // { runId: 'maintain-2026-11-30T03-30-00-000Z', tables: ['history', …], statements: ['optimize-history', 'vacuum-history', …], queries: { queriesKey, count: 8 } }
 *
 * Neither statement changes a row. Locally the Parquet stand-in has nothing to run for either (its
 * dialect renders them as nothing, and it keeps no snapshots): the machine completes without work.
 */
import { jobRunPrefix, runFile } from '../../adapters/raw-layout.js';
import type { JobDeps } from '../deps.js';
import { JobInputError } from '../deps.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { configQueryRefs, type QueryRef } from '../sql-run.js';

/** The Iceberg tables, in the order they are maintained: the largest first. */
export const MAINTAINED_TABLES = ['history', 'expected_state', 'truncates', 'table_hours'] as const;
export type MaintainedTable = (typeof MAINTAINED_TABLES)[number];

export interface MaintenanceRequest {
  readonly runId?: string;
  /** Only these Iceberg tables. @default all four */
  readonly tables?: readonly string[];
  /** Evaluation time (epoch ms) for the run id. @default deps.now() */
  readonly now?: number;
}

export interface MaintenancePlan {
  readonly runId: string;
  readonly tables: readonly MaintainedTable[];
  /** The statements' names, in the order they run. */
  readonly statements: readonly string[];
  readonly queries: StoredQueries;
  [k: string]: unknown;
}

function tablesOf(request: MaintenanceRequest): MaintainedTable[] {
  if (request.tables === undefined) return [...MAINTAINED_TABLES];
  if (!Array.isArray(request.tables) || request.tables.length === 0) throw new JobInputError('tables must be a non-empty list of Iceberg tables');
  const unknown = request.tables.filter((t) => !(MAINTAINED_TABLES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new JobInputError(`not an Iceberg table of the history: ${unknown.join(', ')} (one of ${MAINTAINED_TABLES.join(', ')})`);
  return MAINTAINED_TABLES.filter((t) => request.tables?.includes(t));
}

/** Stores each table's OPTIMIZE and VACUUM for the query loop. */
export async function planMaintenance(request: MaintenanceRequest, deps: Pick<JobDeps, 'config' | 's3' | 'log' | 'now'>): Promise<MaintenancePlan> {
  const tables = tablesOf(request);
  const startedAt = request.now ?? deps.now();
  const runId = request.runId ?? `maintain-${new Date(startedAt).toISOString().replace(/[:.]/g, '-')}`;
  const queries: QueryRef[] = tables.flatMap((table) => [...configQueryRefs(deps.config, 'optimize', { table }), ...configQueryRefs(deps.config, 'vacuum', { table })]);
  const stored = await storeQueries(deps, runFile(jobRunPrefix(deps.config.replay.jobsPrefix, 'maintenance', runId), 'queries'), queries);
  deps.log.info('maintenance planned', { runId, tables, queries: queries.length });
  return { runId, tables, statements: queries.map((q) => `${q.statement.name}-${String(q.statement.args.table)}`), queries: stored };
}
