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
import { planReconcile } from './reconcile/plan.js';
import { reducePartition } from './reconcile/reduce.js';
import { reportReconcile } from './reconcile/report.js';
import { scanTable } from './reconcile/scan-table.js';
import { shuffleRaw } from './reconcile/shuffle-raw.js';
import type { PlanOutput, RawItem, ReconcileRequest, TableItem, ManifestItem, TaskInput } from './reconcile/types.js';
import { detectTable, planSnapshot, reportSnapshot, type SnapshotRequest, type SnapshotTableInput, type SnapshotRunInput } from './snapshot/tasks.js';

const logger = new Logger({ serviceName: 'tidemark-jobs' });
let deps: Promise<JobDeps> | undefined;

async function coldStart(): Promise<JobDeps> {
  const config = loadRuntimeConfig();
  const clients = createRuntimeClients({ maxAttempts: config.apply.maxRetries + 1 });
  const log = logFromPowertools(logger);
  return jobDeps(config, clients, { metrics: new PowertoolsMetricSink(config.name), log, keyRef: await ledgerKeyRef(config, log) });
}

const withDeps =
  <I, O>(body: (input: I, deps: JobDeps) => Promise<O>) =>
  async (input: I): Promise<O> => {
    deps ??= coldStart().catch((err: unknown) => {
      deps = undefined;
      throw err;
    });
    return body(input, await deps);
  };

export const reconcilePlan = withDeps<ReconcileRequest, PlanOutput>(planReconcile);
export const reconcileShuffleRaw = withDeps((input: TaskInput<RawItem>, d) => shuffleRaw(input, d));
export const reconcileScanTable = withDeps((input: TaskInput<TableItem | ManifestItem>, d) => scanTable(input, d));
export const reconcileReduce = withDeps((input: TaskInput<number>, d) => reducePartition(input, d));
export const reconcileReport = withDeps(reportReconcile);
export const snapshotPlan = withDeps((input: SnapshotRequest, d) => planSnapshot(input, d));
export const snapshotDetect = withDeps((input: SnapshotTableInput, d) => detectTable(input, d));
export const snapshotReport = withDeps((input: SnapshotRunInput, d) => reportSnapshot(input, d));
