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
 * Erase:   Begin (ledger, items, the run's keys) → Find (query loop over Athena: the raw objects
 *          holding the keys, what history holds) → Distributed Map rewriting those objects →
 *          History (query loop: the keys out of history and expected state, OPTIMIZE, VACUUM) →
 *          Finish (ledger positions, the copies outside raw, one result per key).
 *
 * Map items are read from S3 with an ItemReader (replay's key buckets, erase's objects), so no state
 * carries more than a few kilobytes, whatever the size of raw.
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

/**
 * A Distributed Map child that runs one step on its item: the item's full result is in S3, so the
 * Map keeps only its number; a failed item is tried again (the steps are idempotent).
 */
function oneStepChild(fn: string, name: string, step: string, parameters: Record<string, unknown>): { StartAt: string; States: Record<string, State> } {
  return {
    StartAt: name,
    States: {
      [name]: {
        Type: 'Task',
        Resource: substitution(fn),
        Parameters: { step, ...parameters },
        TimeoutSeconds: 900,
        ResultSelector: { 'batch.$': '$.batch' },
        Retry: batchRetry,
        End: true,
      },
    },
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
          processor: oneStepChild(REPLAY_FUNCTION, 'Bucket', 'bucket', { 'bucket.$': '$.bucket', 'manifestKey.$': '$.manifestKey' }),
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
          processor: oneStepChild(ERASE_FUNCTION, 'Batch', 'rewrite', { 'batch.$': '$.batch', 'objects.$': '$.objects', ...ids }),
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
