/**
 * The replay and erase state machines as plain ASL JSON. The CDK construct deploys exactly this
 * (with `${ReplayFunction}` / `${EraseFunction}` and, for replay, the query loop's
 * `${JobQueryAtFunction}` and `${AthenaWorkGroup}` as definition substitutions) and the CLI runs the
 * same JSON locally with bin/local/stepfunctions.ts, mapping those names to in-process handlers.
 *
 * Replay:  Plan → Select (one selection query, Athena; DuckDB locally) → Buckets → Distributed Map
 *          over the key buckets (MaxConcurrency and ToleratedFailurePercentage from config; each
 *          bucket writes its result to S3) → Summarize (adds the results up into summary.json) →
 *          Verify (fresh tables only) → done, or Incomplete when the Map failed past its tolerance.
 * Erase:   Begin (ledger, item) → Find (HEAD + key filter) → Distributed Map rewriting the
 *          candidate objects → Finish (ledger position, quarantine, summary).
 *
 * Map items are bucket or batch numbers (replay reads its items from S3 with an ItemReader; erase's
 * object keys stay in the manifest in S3), so no state carries more than a few kilobytes, whatever
 * the size of raw.
 */
import { distributedMap as mapOverItems, queryLoop } from '../jobs/asl.js';

export interface JobMachineOptions {
  readonly maxConcurrency: number;
  readonly toleratedFailurePercentage: number;
}

type State = Record<string, unknown>;

/** A Task resource written as a definition substitution, `${Name}`. */
export const substitution = (name: string): string => ['$', '{', name, '}'].join('');

export const REPLAY_FUNCTION = 'ReplayFunction';
export const ERASE_FUNCTION = 'EraseFunction';

const lambdaRetry = [
  {
    ErrorEquals: ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.TooManyRequestsException'],
    IntervalSeconds: 2,
    MaxAttempts: 6,
    BackoffRate: 2,
  },
];
/** A batch that failed writes (throttling outlasting the SDK's retries) is tried again: it is idempotent. */
const batchRetry = [...lambdaRetry, { ErrorEquals: ['States.TaskFailed', 'States.Timeout'], IntervalSeconds: 10, MaxAttempts: 2, BackoffRate: 3 }];

function task(fn: string, step: string, parameters: Record<string, unknown>, resultPath: string | null, next: string | null, retry = lambdaRetry): State {
  return {
    Type: 'Task',
    Resource: substitution(fn),
    Parameters: { step, ...parameters },
    TimeoutSeconds: 900,
    ResultPath: resultPath,
    Retry: retry,
    ...(next === null ? { End: true } : { Next: next }),
  };
}

function distributedMap(opts: JobMachineOptions, fn: string, step: string, itemsPath: string, selector: Record<string, unknown>, next: string): State {
  return {
    Type: 'Map',
    Label: step,
    ItemsPath: itemsPath,
    ItemSelector: { 'batch.$': '$$.Map.Item.Value', ...selector },
    MaxConcurrency: opts.maxConcurrency,
    ToleratedFailurePercentage: opts.toleratedFailurePercentage,
    ItemProcessor: {
      ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
      StartAt: 'Batch',
      States: {
        Batch: {
          Type: 'Task',
          Resource: substitution(fn),
          Parameters: { step, 'batch.$': '$.batch', ...Object.fromEntries(Object.keys(selector).map((k) => [k, `$.${k.replace(/\.\$$/, '')}`])) },
          TimeoutSeconds: 900,
          // Each batch's full result is in S3; the Map keeps only the batch number.
          ResultSelector: { 'batch.$': '$.batch' },
          Retry: batchRetry,
          End: true,
        },
      },
    },
    ResultPath: null,
    Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.mapError', Next: next }],
    Next: next,
  };
}

const failed: State = { Type: 'Fail', ErrorPath: '$.error.Error', CausePath: '$.error.Cause' };
const catchAll = [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Failed' }];
const incompleteIfMapFailed = (name: string): State => ({
  Type: 'Choice',
  Choices: [{ Variable: '$.mapError', IsPresent: true, Next: 'Incomplete' }],
  Default: name,
});

/**
 * The replay state machine on SQL (functions/replay/sql-job.ts). Input: a ReplayRequest.
 *
 *   Plan → Select (query loop: replay-select UNLOADs the events by key bucket; Athena on AWS, DuckDB
 *   locally) → Buckets (the buckets written, as a JSON array in S3) → Replay (Distributed Map, its
 *   items read by an ItemReader: one child per bucket, which merges the bucket's files by key and
 *   position and applies them) → Summarize → Verify (fresh only) → done, or Incomplete.
 *
 * Needs the definition substitutions `${ReplayFunction}`, `${JobQueryAtFunction}` (the query loop's
 * fetch) and `${AthenaWorkGroup}`.
 */
export function replaySqlDefinition(opts: JobMachineOptions): Record<string, unknown> {
  const manifest = { 'manifestKey.$': '$.plan.manifestKey' };
  const onError = 'Failed';
  return {
    Comment: 'tidemark replay: one selection query over history and raw, each key bucket applied in key and position order through the guarded writer',
    StartAt: 'Plan',
    States: {
      Plan: { ...task(REPLAY_FUNCTION, 'plan-sql', { 'request.$': '$' }, '$.plan', 'SelectStart'), Catch: catchAll },
      ...queryLoop({ from: '$.plan.queries', name: 'Select', next: 'Buckets', onError, timeoutSeconds: 60 }),
      Buckets: { ...task(REPLAY_FUNCTION, 'buckets', manifest, '$.buckets', 'Replay'), Catch: catchAll },
      Replay: {
        ...mapOverItems({
          items: { bucketPath: '$.plan.bucket', keyPath: '$.buckets.itemsKey', kind: 'json' },
          itemSelector: { 'bucket.$': '$$.Map.Item.Value.bucket', 'manifestKey.$': '$.plan.manifestKey' },
          processor: {
            StartAt: 'Bucket',
            States: {
              Bucket: {
                Type: 'Task',
                Resource: substitution(REPLAY_FUNCTION),
                Parameters: { step: 'bucket', 'bucket.$': '$.bucket', 'manifestKey.$': '$.manifestKey' },
                TimeoutSeconds: 900,
                // The bucket's full result is in S3; the Map keeps only its number.
                ResultSelector: { 'batch.$': '$.batch' },
                Retry: batchRetry,
                End: true,
              },
            },
          },
          maxConcurrency: opts.maxConcurrency,
          toleratedFailurePercentage: opts.toleratedFailurePercentage,
          label: 'bucket',
          next: 'Summarize',
          onError: 'Summarize',
        }),
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.mapError', Next: 'Summarize' }],
      },
      Summarize: { ...task(REPLAY_FUNCTION, 'summarize', manifest, '$.summary', 'IsFresh'), Catch: catchAll },
      IsFresh: { Type: 'Choice', Choices: [{ Variable: '$.plan.freshTable', IsNull: true, Next: 'CheckFailures' }], Default: 'Verify' },
      Verify: { ...task(REPLAY_FUNCTION, 'verify', manifest, '$.verify', 'CheckFailures'), Catch: catchAll },
      CheckFailures: incompleteIfMapFailed('Done'),
      Done: { Type: 'Succeed' },
      Incomplete: { Type: 'Fail', Error: 'ReplayIncomplete', Cause: 'buckets failed past the tolerated percentage; their results are in S3 next to the summary' },
      Failed: failed,
    },
  };
}

/**
 * The erase state machine. Input: `{runId, requestKey}`. The request object is the only place the
 * key is written: Finish deletes it when the run completes, and every path that fails goes through
 * Abandon first, which deletes it too (the jobs prefix also expires what a crash could leave).
 */
export function eraseDefinition(opts: JobMachineOptions): Record<string, unknown> {
  const ids = { 'runId.$': '$.runId', 'requestKey.$': '$.requestKey' };
  const abandonOnError = [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Abandon' }];
  return {
    Comment: 'tidemark erase: one key out of current state, raw, quarantine; recorded in the ledger',
    StartAt: 'Begin',
    States: {
      Begin: { ...task(ERASE_FUNCTION, 'begin', ids, '$.begin', 'Find'), Catch: abandonOnError },
      Find: { ...task(ERASE_FUNCTION, 'find', ids, '$.find', 'Rewrite'), Catch: abandonOnError },
      Rewrite: distributedMap(opts, ERASE_FUNCTION, 'rewrite', '$.find.batches', { ...ids, 'manifestKey.$': '$.find.manifestKey' }, 'Finish'),
      Finish: { ...task(ERASE_FUNCTION, 'finish', { ...ids, 'begin.$': '$.begin', 'find.$': '$.find' }, '$.summary', 'CheckFailures'), Catch: abandonOnError },
      CheckFailures: incompleteIfMapFailed('Done'),
      Done: { Type: 'Succeed' },
      Incomplete: { Type: 'Fail', Error: 'EraseIncomplete', Cause: 'some raw objects could not be rewritten; run the erase again' },
      Abandon: { ...task(ERASE_FUNCTION, 'abandon', { 'requestKey.$': '$.requestKey' }, '$.abandoned', 'Failed'), Catch: catchAll },
      Failed: failed,
    },
  };
}
