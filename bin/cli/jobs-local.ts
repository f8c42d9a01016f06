/**
 * The jobs' state machines run locally: the deployed ASL (lib/jobs/definitions.ts) through
 * bin/local/stepfunctions.ts, each Lambda task by its body in-process, each Athena task on DuckDB
 * (bin/local/duckdb-engine.ts over the emulator's objects, Parquet standing in for Iceberg), each
 * DynamoDB export as a parallel scan written in the export's format. The SQL engine is loaded
 * only here, by the commands that run a job.
 *
 *   const report = await runLocalJob(cfg, clients, 'reconcile', { mode: 'full' }, { onProgress });
 *
 * In the embedded default nothing waits for an hour to close: every job first compacts raw up to
 * now (`throughNow`), so reconcile and snapshot detection see what was just ingested.
 */
import type { RuntimeClients as Clients } from '../../functions/adapters/clients.js';
import { historyWarehousePrefix, tableSidePrefix } from '../../functions/adapters/raw-layout.js';
import type { TidemarkConfig } from '../../functions/config/types.js';
import type { JsonValue } from '../../functions/core/json.js';
import { jobDeps } from '../../functions/composition.js';
import type { JobDeps } from '../../functions/jobs/deps.js';
import { type CompactionRequest, type CompactionSummary, finishCompaction, planCompaction } from '../../functions/jobs/history/compaction.js';
import { planMaintenance } from '../../functions/jobs/maintenance/plan.js';
import { queryAt } from '../../functions/jobs/queries.js';
import { exportFiles, planReconcileRepair, planReconcileRun, reconcileRepair, reportReconcileRun } from '../../functions/jobs/reconcile/run.js';
import { exportToTableSide, windowToTableSide } from '../../functions/jobs/reconcile/table-side.js';
import { planSnapshotRun, reportSnapshotRun } from '../../functions/jobs/snapshot/run.js';
import { CollectingMetricSink, type Log, type MetricSink } from '../../functions/telemetry/sinks.js';
import {
  COMPACTION_TASKS,
  compactionDefinition,
  MAINTENANCE_TASKS,
  maintenanceDefinition,
  QUERY_AT_FUNCTION,
  RECONCILE_TASKS,
  reconcileDefinition,
  SNAPSHOT_TASKS,
  snapshotDefinition,
} from '../../lib/jobs/definitions.js';
import type { LocalProgressEvent, LocalTaskHandler } from '../local/stepfunctions.js';
import { cliLog } from './context.js';
import { localEngine, requireSqlEngine } from './dev-packages.js';

export interface LocalJobOptions {
  readonly onProgress?: (event: LocalProgressEvent) => void;
  readonly log?: Log;
  readonly metrics?: MetricSink;
  readonly now?: () => number;
  /** Compact raw up to now first. @default true (every job but compaction itself) */
  readonly compactFirst?: boolean;
}

type Body = (input: never, deps: JobDeps) => unknown;

const handlerOf =
  (body: Body, deps: JobDeps): LocalTaskHandler =>
  async (input) =>
    JSON.parse(JSON.stringify((await body(input as never, deps)) ?? null)) as JsonValue;

const JOBS = {
  compaction: {
    definition: compactionDefinition,
    tasks: { [COMPACTION_TASKS.plan]: planCompaction as Body, [COMPACTION_TASKS.finish]: finishCompaction as Body },
  },
  reconcile: {
    definition: reconcileDefinition,
    tasks: {
      [RECONCILE_TASKS.plan]: planReconcileRun as Body,
      [RECONCILE_TASKS.exportFiles]: exportFiles as Body,
      [RECONCILE_TASKS.tableSide]: exportToTableSide as Body,
      [RECONCILE_TASKS.windowSide]: windowToTableSide as Body,
      [RECONCILE_TASKS.repairPlan]: planReconcileRepair as Body,
      [RECONCILE_TASKS.repair]: reconcileRepair as Body,
      [RECONCILE_TASKS.report]: reportReconcileRun as Body,
    },
  },
  snapshot: {
    definition: snapshotDefinition,
    tasks: { [SNAPSHOT_TASKS.plan]: planSnapshotRun as Body, [SNAPSHOT_TASKS.report]: reportSnapshotRun as Body },
  },
  // On DuckDB OPTIMIZE and VACUUM have no form (the dialect renders them as nothing): the queries run as no-ops.
  maintenance: {
    definition: maintenanceDefinition,
    tasks: { [MAINTENANCE_TASKS.plan]: planMaintenance as Body },
  },
} as const;

export type LocalJobName = keyof typeof JOBS;

/** Runs one job's state machine locally; returns its output (the job's report or summary). */
export async function runLocalJob(cfg: TidemarkConfig, c: Pick<Clients, 's3' | 'dynamodb'>, job: LocalJobName, input: object, options: LocalJobOptions = {}): Promise<JsonValue> {
  const deps = jobDeps(cfg, c, { metrics: options.metrics ?? new CollectingMetricSink(), log: options.log ?? cliLog(), ...(options.now ? { now: options.now } : {}) });
  if (job !== 'compaction' && job !== 'maintenance' && options.compactFirst !== false) await runLocalJob(cfg, c, 'compaction', { throughNow: true } satisfies CompactionRequest, { ...options, compactFirst: false });
  // Loaded here: only the commands that run a job need DuckDB.
  const { runLocalStateMachine } = await localEngine(job);
  requireSqlEngine(job);
  const [{ DuckDbEngine }, { duckdbAthenaHandler }] = await Promise.all([import('../local/duckdb-engine.js'), import('../local/athena-local.js')]);
  const engine = new DuckDbEngine({
    s3: c.s3,
    bucket: cfg.raw.bucket,
    rawPrefix: cfg.raw.prefix,
    quarantinePrefix: cfg.raw.quarantinePrefix,
    warehousePrefix: historyWarehousePrefix(cfg.history.prefix),
    tableSidePrefix: tableSidePrefix(cfg.history.prefix),
  });
  const spec = JOBS[job];
  const handlers: Record<string, LocalTaskHandler> = { [QUERY_AT_FUNCTION]: handlerOf(queryAt as Body, deps) };
  for (const [name, body] of Object.entries(spec.tasks)) handlers[name] = handlerOf(body, deps);
  try {
    return await runLocalStateMachine(spec.definition(), JSON.parse(JSON.stringify(input)) as JsonValue, {
      handlers,
      s3: c.s3,
      dynamodb: c.dynamodb,
      athena: duckdbAthenaHandler(engine),
      // A local export is COMPLETED the first time it is described: the minute's poll is AWS's.
      waitMs: 0,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  } finally {
    await engine.close();
  }
}

/** Compaction locally: raw into history, expected state and the hour counts (`throughNow` by default). */
export async function compactLocally(cfg: TidemarkConfig, c: Pick<Clients, 's3' | 'dynamodb'>, request: CompactionRequest = { throughNow: true }, options: LocalJobOptions = {}): Promise<CompactionSummary> {
  return (await runLocalJob(cfg, c, 'compaction', request, { ...options, compactFirst: false })) as unknown as CompactionSummary;
}
