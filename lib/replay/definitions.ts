/**
 * The replay and erase state machines as plain ASL JSON. The CDK construct deploys exactly this
 * (with `${ReplayFunction}` / `${EraseFunction}` as definition substitutions) and the CLI runs the
 * same JSON locally with bin/local/stepfunctions.ts, mapping those names to in-process handlers.
 *
 * Replay:  Plan → Distributed Map over batches of raw objects (MaxConcurrency and
 *          ToleratedFailurePercentage from config; each batch writes its result to S3) →
 *          Summarize (adds the results up into summary.json) → Verify (fresh tables only) → done,
 *          or Incomplete when the Map failed past its tolerance.
 * Erase:   Begin (ledger, items, the run's keys) → Find (query loop over Athena: the raw objects
 *          holding the keys, what history holds) → Distributed Map rewriting those objects →
 *          History (query loop: the keys out of history and expected state, OPTIMIZE, VACUUM) →
 *          Finish (ledger positions, the copies outside raw, one result per key).
 *
 * Map items are batch numbers: the object keys stay in the manifest in S3, so no state carries
 * more than a few kilobytes, whatever the size of raw.
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

/** The replay state machine. Input: a ReplayRequest (functions/replay/job.ts). */
export function replayDefinition(opts: JobMachineOptions): Record<string, unknown> {
  const manifest = { 'manifestKey.$': '$.plan.manifestKey' };
  return {
    Comment: 'tidemark replay: raw objects re-applied through the guarded writer',
    StartAt: 'Plan',
    States: {
      Plan: { ...task(REPLAY_FUNCTION, 'plan', { 'request.$': '$' }, '$.plan', 'Replay'), Catch: catchAll },
      Replay: distributedMap(opts, REPLAY_FUNCTION, 'batch', '$.plan.batches', manifest, 'Summarize'),
      Summarize: { ...task(REPLAY_FUNCTION, 'summarize', manifest, '$.summary', 'IsFresh'), Catch: catchAll },
      IsFresh: { Type: 'Choice', Choices: [{ Variable: '$.plan.freshTable', IsNull: true, Next: 'CheckFailures' }], Default: 'Verify' },
      Verify: { ...task(REPLAY_FUNCTION, 'verify', manifest, '$.verify', 'CheckFailures'), Catch: catchAll },
      CheckFailures: incompleteIfMapFailed('Done'),
      Done: { Type: 'Succeed' },
      Incomplete: { Type: 'Fail', Error: 'ReplayIncomplete', Cause: 'batches failed past the tolerated percentage; their results are in S3 next to the summary' },
      Failed: failed,
    },
  };
}

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
 * The erase state machine, on SQL (functions/erase/erase.ts, find.ts). Input: `{runId, requestKey}`,
 * the request object holding one key or many (a day's requests).
 *
 *   Begin (every request validated, ledger, items → tombstones, the run's keys into erase_keys, the
 *   queries stored) → Find (query loop: erase-find-raw, erase-find-history) → Objects (the objects
 *   found, in batches, as JSON Lines in S3) → Rewrite (Distributed Map, its items read by an
 *   ItemReader: conditional rewrites of the objects of one batch per child) → History (query loop:
 *   erase-history, erase-expected, OPTIMIZE, VACUUM) → Finish (ledger positions, copies, results,
 *   the keys and the request deleted) → done, or Incomplete when the Map failed past its tolerance.
 *
 * The request object and the run's erase_keys object are the only places the keys are written:
 * Finish deletes them when the run completes, and every path that fails goes through Abandon first,
 * which deletes them too (the jobs prefix also expires what a crash could leave). No state holds a
 * key: steps return counts and S3 keys, the queries name the run.
 *
 * Needs the definition substitutions `${EraseFunction}`, `${JobQueryAtFunction}` (the query loops'
 * fetch: the erase function answers it) and `${AthenaWorkGroup}`.
 */
export function eraseDefinition(opts: JobMachineOptions): Record<string, unknown> {
  const ids = { 'runId.$': '$.runId', 'requestKey.$': '$.requestKey' };
  const abandonOnError = [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Abandon' }];
  const onError = 'Abandon';
  return {
    Comment: 'tidemark erase: keys out of current state, raw, history, expected state and every copy; recorded in the ledger',
    StartAt: 'Begin',
    States: {
      Begin: { ...task(ERASE_FUNCTION, 'begin', ids, '$.begin', 'FindStart'), Catch: abandonOnError },
      ...queryLoop({ from: '$.begin.queries.find', name: 'Find', next: 'Objects', onError, timeoutSeconds: 60 }),
      Objects: { ...task(ERASE_FUNCTION, 'objects', { 'runId.$': '$.runId' }, '$.objects', 'AnyObjects'), Catch: abandonOnError },
      AnyObjects: { Type: 'Choice', Choices: [{ Variable: '$.objects.batches', NumericGreaterThan: 0, Next: 'Rewrite' }], Default: 'HistoryStart' },
      Rewrite: {
        ...mapOverItems({
          items: { bucketPath: '$.objects.bucket', keyPath: '$.objects.itemsKey', kind: 'jsonl' },
          itemSelector: { 'batch.$': '$$.Map.Item.Value.batch', 'objects.$': '$$.Map.Item.Value.objects', ...ids },
          processor: {
            StartAt: 'Batch',
            States: {
              Batch: {
                Type: 'Task',
                Resource: substitution(ERASE_FUNCTION),
                Parameters: { step: 'rewrite', 'batch.$': '$.batch', 'objects.$': '$.objects', ...ids },
                TimeoutSeconds: 900,
                // The batch's full result is in S3; the Map keeps only its number.
                ResultSelector: { 'batch.$': '$.batch' },
                Retry: batchRetry,
                End: true,
              },
            },
          },
          maxConcurrency: opts.maxConcurrency,
          toleratedFailurePercentage: opts.toleratedFailurePercentage,
          label: 'rewrite',
          next: 'HistoryStart',
          onError: 'HistoryStart',
        }),
        // Objects left unrewritten: history is still erased, Finish still runs, and the run ends Incomplete.
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.mapError', Next: 'HistoryStart' }],
      },
      ...queryLoop({ from: '$.begin.queries.history', name: 'History', next: 'Finish', onError, timeoutSeconds: 60 }),
      Finish: { ...task(ERASE_FUNCTION, 'finish', { ...ids, 'found.$': '$.objects.objects' }, '$.summary', 'CheckFailures'), Catch: abandonOnError },
      CheckFailures: incompleteIfMapFailed('Done'),
      Done: { Type: 'Succeed' },
      Incomplete: { Type: 'Fail', Error: 'EraseIncomplete', Cause: 'some raw objects could not be rewritten; run the erase again' },
      Abandon: { ...task(ERASE_FUNCTION, 'abandon', ids, '$.abandoned', 'Failed'), Catch: catchAll },
      Failed: failed,
    },
  };
}
