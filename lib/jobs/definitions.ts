/**
 * The jobs' state machines as ASL JSON, built once and used twice: the CDK constructs deploy them
 * (`DefinitionBody.fromString` with `definitionSubstitutions` naming each function's ARN and the
 * Athena workgroup) and `bin/local/stepfunctions.ts` runs the very same JSON in-process, with the
 * Athena tasks run on DuckDB. Plain data, no CDK imports. (docs/history.md §4)
 *
 * Compaction:  Plan → Queries (each on Athena, in order) → Finish
 * Reconcile:   Plan → full: Exports (Distributed Map over the tables: ExportTableToPointInTime, wait,
 *                       then a Distributed Map over the export's data files → table side)
 *                     window: WindowKeys (Athena) → WindowSide (Distributed Map over its files → table side)
 *              → Classify (Athena: findings, counts) → --repair: RepairPlan → RepairQueries (Athena:
 *                replay-select of the repairable keys) → Repair (guarded writes) → Report
 * Snapshot:    Plan → Queries (anomalies, re-snapshots, orphans) → Report
 * Maintenance: Plan → Queries (per Iceberg table: OPTIMIZE … BIN_PACK, then VACUUM) → Done
 * Every Lambda task retries transient errors (not input errors) and is caught; no list that grows
 * with the data is carried in the state: items are read from S3 by an ItemReader.
 */
import { catchTo, distributedMap, failState, lambdaTask, queryLoop, serviceRetry, type State } from './asl.js';

export { ATHENA_WORKGROUP, NON_RETRYABLE_ERRORS, QUERY_AT_FUNCTION } from './asl.js';

/** Substitution names of the compaction task functions. */
export const COMPACTION_TASKS = {
  plan: 'CompactionPlanFunction',
  finish: 'CompactionFinishFunction',
} as const;

/** Substitution names of the reconcile task functions. */
export const RECONCILE_TASKS = {
  plan: 'ReconcilePlanFunction',
  exportFiles: 'ReconcileExportFilesFunction',
  tableSide: 'ReconcileTableSideFunction',
  windowSide: 'ReconcileWindowSideFunction',
  repairPlan: 'ReconcileRepairPlanFunction',
  repair: 'ReconcileRepairFunction',
  report: 'ReconcileReportFunction',
} as const;

/** Substitution names of the table-maintenance task functions. */
export const MAINTENANCE_TASKS = {
  plan: 'MaintenancePlanFunction',
} as const;

/** Substitution names of the snapshot-detection task functions. */
export const SNAPSHOT_TASKS = {
  plan: 'SnapshotPlanFunction',
  report: 'SnapshotReportFunction',
} as const;

export interface DefinitionOptions {
  /** Seconds a Lambda task may run (the function's timeout). @default 900 */
  readonly taskTimeoutSeconds?: number;
  /** Concurrent child executions of each Distributed Map. @default 40 */
  readonly mapConcurrency?: number;
  /** Concurrent table exports of a full reconcile (DynamoDB runs a few hundred at once per account). @default 10 */
  readonly exportConcurrency?: number;
  /** Seconds between two looks at a running export. @default 60 */
  readonly exportPollSeconds?: number;
}

/** The compaction state machine. Input: a `CompactionRequest`; output: the `CompactionSummary`. */
export function compactionDefinition(options: DefinitionOptions = {}): State {
  const timeout = options.taskTimeoutSeconds ?? 900;
  return planThenQueries(
    'tidemark compaction: the closed hours of raw into the history table, folded into expected state and counted per table and hour',
    COMPACTION_TASKS.plan,
    timeout,
    'Finish',
    lambdaTask(COMPACTION_TASKS.finish, timeout, { Parameters: { 'plan.$': '$.plan' }, Catch: catchTo('Failed'), End: true }),
  );
}

/**
 * A job that is a plan step, its stored queries run one at a time, then the state `last` named
 * `lastName`: the plan's result at `$.plan`, every failure to `Failed`.
 */
function planThenQueries(comment: string, plan: string, timeout: number, lastName: string, last: State): State {
  return {
    Comment: comment,
    StartAt: 'Plan',
    States: {
      Plan: lambdaTask(plan, timeout, { ResultPath: '$.plan', Catch: catchTo('Failed'), Next: 'QueriesStart' }),
      ...queryLoop({ from: '$.plan.queries', name: 'Queries', next: lastName, onError: 'Failed', timeoutSeconds: timeout }),
      [lastName]: last,
      Failed: failState(),
    },
  };
}

/** Per table: a point-in-time export, then its data files into the table side (each file a child execution). */
function exportProcessor(timeout: number, concurrency: number, pollSeconds: number): { StartAt: string; States: Record<string, State> } {
  return {
    StartAt: 'Export',
    States: {
      Export: {
        Type: 'Task',
        Resource: 'arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime',
        Parameters: { 'TableArn.$': '$.item.tableArn', 'S3Bucket.$': '$.item.bucket', 'S3Prefix.$': '$.item.exportPrefix', ExportFormat: 'DYNAMODB_JSON', ExportType: 'FULL_EXPORT' },
        ResultSelector: { 'arn.$': '$.ExportDescription.ExportArn' },
        ResultPath: '$.export',
        TimeoutSeconds: 300,
        Retry: serviceRetry(),
        Catch: catchTo('ExportFailed'),
        Next: 'ExportWait',
      },
      ExportWait: { Type: 'Wait', Seconds: pollSeconds, Next: 'ExportStatus' },
      ExportStatus: {
        Type: 'Task',
        Resource: 'arn:aws:states:::aws-sdk:dynamodb:describeExport',
        Parameters: { 'ExportArn.$': '$.export.arn' },
        ResultPath: '$.described',
        TimeoutSeconds: 300,
        Retry: serviceRetry(),
        Catch: catchTo('ExportFailed'),
        Next: 'ExportDone',
      },
      ExportDone: {
        Type: 'Choice',
        Choices: [
          { Variable: '$.described.ExportDescription.ExportStatus', StringEquals: 'COMPLETED', Next: 'ExportFiles' },
          { Variable: '$.described.ExportDescription.ExportStatus', StringEquals: 'IN_PROGRESS', Next: 'ExportWait' },
        ],
        Default: 'ExportNotCompleted',
      },
      ExportNotCompleted: { Type: 'Fail', Error: 'ExportFailed', Cause: 'the DynamoDB export ended FAILED' },
      ExportFiles: lambdaTask(RECONCILE_TASKS.exportFiles, timeout, {
        Parameters: { 'item.$': '$.item', 'export': { 'manifest.$': '$.described.ExportDescription.ExportManifest' } },
        ResultPath: '$.files',
        Catch: catchTo('ExportFailed'),
        Next: 'ToTableSide',
      }),
      ToTableSide: distributedMap({
        items: { bucketPath: '$.files.bucket', keyPath: '$.files.key', kind: 'jsonl' },
        itemSelector: { 'runId.$': '$.item.runId', 'table.$': '$.item.table', 'bucket.$': '$.files.bucket', 'file.$': '$$.Map.Item.Value.dataFileS3Key' },
        processor: { StartAt: 'TableSide', States: { TableSide: lambdaTask(RECONCILE_TASKS.tableSide, timeout, { ResultPath: null, End: true }) } },
        maxConcurrency: concurrency,
        label: 'ExportFileToTableSide',
        next: 'Exported',
        onError: 'ExportFailed',
      }),
      Exported: { Type: 'Pass', Result: {}, End: true },
      ExportFailed: failState(),
    },
  };
}

/** The reconcile state machine. Input: a `ReconcileRequest`; output: the `ReconcileReport`. */
export function reconcileDefinition(options: DefinitionOptions = {}): State {
  const timeout = options.taskTimeoutSeconds ?? 900;
  const concurrency = options.mapConcurrency ?? 40;
  return {
    Comment: 'tidemark reconcile: expected state (kept by compaction) against a DynamoDB export of each table (full) or the items of the keys a window of compacted hours touched (window)',
    StartAt: 'Plan',
    States: {
      Plan: lambdaTask(RECONCILE_TASKS.plan, timeout, { ResultPath: '$.plan', Catch: catchTo('Failed'), Next: 'Mode' }),
      Mode: {
        Type: 'Choice',
        Choices: [
          { Variable: '$.plan.run.mode', StringEquals: 'full', Next: 'Exports' },
          { And: [{ Variable: '$.plan.windowKeys', IsPresent: true }, { Not: { Variable: '$.plan.windowKeys', IsNull: true } }], Next: 'WindowKeysStart' },
        ],
        Default: 'ClassifyStart',
      },
      Exports: distributedMap({
        items: { bucketPath: '$.plan.exports.bucket', keyPath: '$.plan.exports.key', kind: 'json' },
        itemSelector: { 'item.$': '$$.Map.Item.Value' },
        processor: exportProcessor(timeout, concurrency, options.exportPollSeconds ?? 60),
        maxConcurrency: options.exportConcurrency ?? 10,
        label: 'ExportTable',
        next: 'ClassifyStart',
        onError: 'Failed',
      }),
      ...queryLoop({ from: '$.plan.windowKeys', name: 'WindowKeys', next: 'WindowSide', onError: 'Failed', timeoutSeconds: timeout }),
      WindowSide: distributedMap({
        items: { bucketPath: '$.plan.windowKeys.bucket', keyPath: '$.plan.windowKeys.prefix', kind: 'list' },
        itemSelector: { 'runId.$': '$.plan.run.runId', 'bucket.$': '$.plan.windowKeys.bucket', 'file.$': '$$.Map.Item.Value.Key' },
        processor: { StartAt: 'WindowItems', States: { WindowItems: lambdaTask(RECONCILE_TASKS.windowSide, timeout, { ResultPath: null, End: true }) } },
        maxConcurrency: concurrency,
        label: 'WindowKeysToTableSide',
        next: 'ClassifyStart',
        onError: 'Failed',
      }),
      ...queryLoop({ from: '$.plan.classify', name: 'Classify', next: 'RepairOrReport', onError: 'Failed', timeoutSeconds: timeout }),
      RepairOrReport: { Type: 'Choice', Choices: [{ Variable: '$.plan.run.repair', BooleanEquals: true, Next: 'RepairPlan' }], Default: 'Report' },
      RepairPlan: lambdaTask(RECONCILE_TASKS.repairPlan, timeout, { Parameters: { 'run.$': '$.plan.run' }, ResultPath: '$.repairPlan', Catch: catchTo('Failed'), Next: 'RepairQueriesStart' }),
      ...queryLoop({ from: '$.repairPlan', name: 'RepairQueries', next: 'Repair', onError: 'Failed', timeoutSeconds: timeout }),
      Repair: lambdaTask(RECONCILE_TASKS.repair, timeout, { Parameters: { 'run.$': '$.plan.run', 'repairPlan.$': '$.repairPlan' }, ResultPath: '$.repaired', Catch: catchTo('Failed'), Next: 'ReportRepaired' }),
      ReportRepaired: lambdaTask(RECONCILE_TASKS.report, timeout, { Parameters: { 'run.$': '$.plan.run', 'repaired.$': '$.repaired' }, Catch: catchTo('Failed'), End: true }),
      Report: lambdaTask(RECONCILE_TASKS.report, timeout, { Parameters: { 'run.$': '$.plan.run' }, Catch: catchTo('Failed'), End: true }),
      Failed: failState(),
    },
  };
}

/** The snapshot and anomaly detection state machine. Input: a `SnapshotRequest`; output: the `SnapshotReport`. */
export function snapshotDefinition(options: DefinitionOptions = {}): State {
  const timeout = options.taskTimeoutSeconds ?? 900;
  return {
    Comment: 'tidemark snapshot detection: re-snapshots, orphans after a complete snapshot, anomalies against history',
    StartAt: 'Plan',
    States: {
      Plan: lambdaTask(SNAPSHOT_TASKS.plan, timeout, { ResultPath: '$.plan', Catch: catchTo('Failed'), Next: 'QueriesStart' }),
      ...queryLoop({ from: '$.plan.queries', name: 'Queries', next: 'Report', onError: 'Failed', timeoutSeconds: timeout }),
      Report: lambdaTask(SNAPSHOT_TASKS.report, timeout, { Parameters: { 'run.$': '$.plan.run' }, Catch: catchTo('Failed'), End: true }),
      Failed: failState(),
    },
  };
}

/**
 * The table maintenance state machine. Input: a `MaintenanceRequest` (functions/jobs/maintenance/plan.ts,
 * `{}` from the schedule); output: the plan (run id, tables, the statements run). On Athena each
 * table's OPTIMIZE then VACUUM; locally the Parquet stand-in has nothing to run for either, so the
 * same machine completes without work (the CLI says so).
 */
export function maintenanceDefinition(options: DefinitionOptions = {}): State {
  return planThenQueries(
    'tidemark table maintenance: OPTIMIZE (BIN_PACK) then VACUUM of each Iceberg table of the history',
    MAINTENANCE_TASKS.plan,
    options.taskTimeoutSeconds ?? 900,
    'Done',
    { Type: 'Pass', Parameters: { 'runId.$': '$.plan.runId', 'tables.$': '$.plan.tables', 'statements.$': '$.plan.statements', 'queries.$': '$.plan.queries' }, End: true },
  );
}

/** Every job: name → (definition, its task substitution names). */
export const JOB_DEFINITIONS = {
  compaction: { build: compactionDefinition, tasks: COMPACTION_TASKS },
  reconcile: { build: reconcileDefinition, tasks: RECONCILE_TASKS },
  snapshot: { build: snapshotDefinition, tasks: SNAPSHOT_TASKS },
  maintenance: { build: maintenanceDefinition, tasks: MAINTENANCE_TASKS },
} as const;
