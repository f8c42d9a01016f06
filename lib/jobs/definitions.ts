/**
 * The jobs' state machines as ASL JSON, built once and used twice: the CDK constructs deploy them
 * (`DefinitionBody.fromString` with `definitionSubstitutions` naming each function's ARN) and
 * `bin/local/stepfunctions.ts` runs the very same JSON in-process. Plain data, no CDK imports.
 *
 * Reconcile:  Plan → ShuffleRaw (Distributed Map) → ScanTables (Distributed Map) → Reduce (Distributed Map) → Report
 * Snapshot:   Plan → DetectTables (Map) → Report
 * Every Task retries transient Lambda errors and task failures (not input errors) and is caught.
 */

/** Substitution names of the reconcile task functions. */
export const RECONCILE_TASKS = {
  plan: 'ReconcilePlanFunction',
  shuffleRaw: 'ReconcileShuffleRawFunction',
  scanTable: 'ReconcileScanTableFunction',
  reduce: 'ReconcileReduceFunction',
  report: 'ReconcileReportFunction',
} as const;

/** Substitution names of the snapshot-detection task functions. */
export const SNAPSHOT_TASKS = {
  plan: 'SnapshotPlanFunction',
  detect: 'SnapshotDetectFunction',
  report: 'SnapshotReportFunction',
} as const;

/** Errors a retry cannot fix (asl.ts, shared by every job definition). */
import { lambdaRetry } from './asl.js';
export { NON_RETRYABLE_ERRORS } from './asl.js';

export interface DefinitionOptions {
  /** Seconds a task may run (the function's timeout). @default 900 */
  readonly taskTimeoutSeconds?: number;
  /** Concurrent child executions of each Distributed Map. @default 40 */
  readonly mapConcurrency?: number;
}

type State = Record<string, unknown>;

const resource = (name: string): string => ['$', '{', name, '}'].join('');


const catchTo = (next: string) => [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: next }];
const fail = (): State => ({ Type: 'Fail', ErrorPath: '$.error.Error', CausePath: '$.error.Cause' });

function task(fn: string, timeout: number, fields: State): State {
  return { Type: 'Task', Resource: resource(fn), TimeoutSeconds: timeout, Retry: lambdaRetry(), ...fields };
}

/** A Map whose every item runs one Task; `distributed` runs each item as a child execution. */
function mapOver(itemsPath: string, taskState: string, fn: string, timeout: number, concurrency: number, distributed: boolean, next: string): State {
  return {
    Type: 'Map',
    ItemsPath: itemsPath,
    ItemSelector: { 'run.$': '$.plan.run', 'item.$': '$$.Map.Item.Value' },
    MaxConcurrency: concurrency,
    ItemProcessor: {
      ...(distributed ? { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' } } : { ProcessorConfig: { Mode: 'INLINE' } }),
      StartAt: taskState,
      States: {
        [taskState]: task(fn, timeout, { Catch: catchTo(`${taskState}Failed`), End: true }),
        [`${taskState}Failed`]: fail(),
      },
    },
    ...(distributed ? { Label: taskState, ToleratedFailurePercentage: 0 } : {}),
    ResultPath: null,
    Catch: catchTo('Failed'),
    Next: next,
  };
}

/** The reconcile state machine. Input: a `ReconcileRequest`; output: the `ReconcileReport`. */
export function reconcileDefinition(options: DefinitionOptions = {}): State {
  const timeout = options.taskTimeoutSeconds ?? 900;
  const concurrency = options.mapConcurrency ?? 40;
  return {
    Comment: 'tidemark reconcile: fold raw into the expected state per key and diff it against the current-state tables',
    StartAt: 'Plan',
    States: {
      Plan: task(RECONCILE_TASKS.plan, timeout, { ResultPath: '$.plan', Catch: catchTo('Failed'), Next: 'ShuffleRaw' }),
      ShuffleRaw: mapOver('$.plan.rawItems', 'ShuffleRawObjects', RECONCILE_TASKS.shuffleRaw, timeout, concurrency, true, 'ScanTables'),
      ScanTables: mapOver('$.plan.tableItems', 'ScanTableSegment', RECONCILE_TASKS.scanTable, timeout, concurrency, true, 'Reduce'),
      Reduce: mapOver('$.plan.partitionItems', 'ReducePartition', RECONCILE_TASKS.reduce, timeout, concurrency, true, 'Report'),
      Report: task(RECONCILE_TASKS.report, timeout, { Parameters: { 'run.$': '$.plan.run' }, Catch: catchTo('Failed'), End: true }),
      Failed: fail(),
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
      Plan: task(SNAPSHOT_TASKS.plan, timeout, { ResultPath: '$.plan', Catch: catchTo('Failed'), Next: 'DetectTables' }),
      DetectTables: mapOver('$.plan.tableItems', 'DetectTable', SNAPSHOT_TASKS.detect, timeout, options.mapConcurrency ?? 10, false, 'Report'),
      Report: task(SNAPSHOT_TASKS.report, timeout, { Parameters: { 'run.$': '$.plan.run' }, Catch: catchTo('Failed'), End: true }),
      Failed: fail(),
    },
  };
}

/** Every job: name → (definition, its task substitution names). */
export const JOB_DEFINITIONS = {
  reconcile: { build: reconcileDefinition, tasks: RECONCILE_TASKS },
  snapshot: { build: snapshotDefinition, tasks: SNAPSHOT_TASKS },
} as const;
