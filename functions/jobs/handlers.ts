/**
 * The jobs' Lambda handlers, one export per state-machine task; each deployed function names its
 * export as `handler`. Config and clients are built once per cold start; the bodies are the same
 * functions the local runner calls in-process.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntimeClients } from '../adapters/clients.js';
import { loadRuntimeConfig } from '../config/runtime.js';
import { logFromPowertools, PowertoolsMetricSink } from '../telemetry/sinks.js';
import type { JobDeps } from './deps.js';
import { jobDeps, ledgerKeyRef } from '../composition.js';
import { type CompactionPlan, type CompactionRequest, finishCompaction, planCompaction } from './history/compaction.js';
import { type MaintenanceRequest, planMaintenance } from './maintenance/plan.js';
import { queryAt } from './queries.js';
import { type ExportItem, exportFiles, planReconcileRepair, planReconcileRun, type ReconcileRun, reconcileRepair as repairKeys, reportReconcileRun } from './reconcile/run.js';
import type { RepairOutcome, RepairPlan } from './reconcile/repair.js';
import { exportToTableSide, windowToTableSide } from './reconcile/table-side.js';
import type { ReconcileRequest } from './reconcile/types.js';
import { planSnapshotRun, reportSnapshotRun, type SnapshotRequest, type SnapshotRunContext } from './snapshot/run.js';

const logger = new Logger({ serviceName: 'tidemark-jobs' });
let deps: Promise<JobDeps> | undefined;

async function coldStart(): Promise<JobDeps> {
  const config = loadRuntimeConfig();
  const clients = createRuntimeClients({ maxAttempts: config.apply.maxRetries + 1 });
  const log = logFromPowertools(logger);
  return jobDeps(config, clients, { metrics: new PowertoolsMetricSink(config.name), log, keyRef: await ledgerKeyRef(config, log) });
}

const withDeps =
  <I, O>(body: (input: I, deps: JobDeps) => Promise<O> | O) =>
  async (input: I): Promise<O> => {
    deps ??= coldStart().catch((err: unknown) => {
      deps = undefined;
      throw err;
    });
    return body(input, await deps);
  };

export const jobQueryAt = withDeps((input: { queriesKey: string; index: number; count: number }, d) => queryAt(input, d));
export const compactionPlan = withDeps((input: CompactionRequest, d) => planCompaction(input, d));
export const maintenancePlan = withDeps((input: MaintenanceRequest, d) => planMaintenance(input, d));
export const compactionFinish = withDeps((input: { plan: CompactionPlan }, d) => finishCompaction(input, d));
export const reconcilePlan = withDeps((input: ReconcileRequest, d) => planReconcileRun(input, d));
export const reconcileExportFiles = withDeps((input: { item: ExportItem; export: { manifest: string } }) => exportFiles(input));
export const reconcileTableSide = withDeps((input: { runId: string; table: string; bucket: string; file: string }, d) => exportToTableSide(input, d));
export const reconcileWindowSide = withDeps((input: { runId: string; bucket: string; file: string }, d) => windowToTableSide(input, d));
export const reconcileRepairPlan = withDeps((input: { run: ReconcileRun }, d) => planReconcileRepair(input, d));
export const reconcileRepair = withDeps((input: { run: ReconcileRun; repairPlan: RepairPlan }, d) => repairKeys(input, d));
export const reconcileReport = withDeps((input: { run: ReconcileRun; repaired?: RepairOutcome }, d) => reportReconcileRun(input, d));
export const snapshotPlan = withDeps((input: SnapshotRequest, d) => planSnapshotRun(input, d));
export const snapshotReport = withDeps((input: { run: SnapshotRunContext }, d) => reportSnapshotRun(input, d));
