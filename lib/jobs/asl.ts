/**
 * ASL building blocks the jobs' state machines share (plain data, no CDK imports: the same JSON is
 * deployed by the constructs and run by bin/local/stepfunctions.ts).
 *
 * - `lambdaTask`: a Task of a job function, named by a definition substitution (`${Name}`), with the
 *   jobs' retry policy.
 * - `queryLoop`: runs the queries a step stored in S3 (functions/jobs/sql-run.ts, `QueryRef`), one at
 *   a time, in order, each on Athena (`athena:startQueryExecution.sync`): a Lambda fetches the next
 *   query, the Athena task runs `<ref>.athena.QueryString` in the jobs' workgroup. The local runner
 *   runs `<ref>.statement` on DuckDB instead. State carries an index and a count, never the list.
 * - `distributedMap`: a Distributed Map whose items an `ItemReader` reads from S3 (a JSON array,
 *   JSON Lines, or a listing), each item one child execution.
 */

export type State = Record<string, unknown>;

/** Errors a retry cannot fix: the request itself is wrong. */
export const NON_RETRYABLE_ERRORS = ['JobInputError', 'ConfigError'] as const;

/** Substitution names every job definition may use besides its functions. */
export const ATHENA_WORKGROUP = 'AthenaWorkGroup';
export const QUERY_AT_FUNCTION = 'JobQueryAtFunction';

/** `${Name}`: a definition substitution. */
export const substitution = (name: string): string => ['$', '{', name, '}'].join('');

/** The jobs' Lambda retry policy, built fresh on every call (validators and engines may annotate it). */
export const lambdaRetry = () => [
  { ErrorEquals: [...NON_RETRYABLE_ERRORS], MaxAttempts: 0 },
  {
    ErrorEquals: ['Lambda.ServiceException', 'Lambda.AWSLambdaException', 'Lambda.SdkClientException', 'Lambda.TooManyRequestsException'],
    IntervalSeconds: 2,
    MaxAttempts: 6,
    BackoffRate: 2,
    JitterStrategy: 'FULL',
  },
  { ErrorEquals: ['States.TaskFailed', 'States.Timeout'], IntervalSeconds: 5, MaxAttempts: 2, BackoffRate: 2 },
];

/** A throttled or briefly failing AWS service integration (Athena queue full, export limits). */
export const serviceRetry = () => [
  { ErrorEquals: [...NON_RETRYABLE_ERRORS], MaxAttempts: 0 },
  { ErrorEquals: ['States.TaskFailed'], IntervalSeconds: 10, MaxAttempts: 3, BackoffRate: 2, JitterStrategy: 'FULL' },
];

export const catchTo = (next: string, resultPath = '$.error') => [{ ErrorEquals: ['States.ALL'], ResultPath: resultPath, Next: next }];
export const failState = (): State => ({ Type: 'Fail', ErrorPath: '$.error.Error', CausePath: '$.error.Cause' });

/** A Task of a job function. */
export function lambdaTask(fn: string, timeoutSeconds: number, fields: State): State {
  return { Type: 'Task', Resource: substitution(fn), TimeoutSeconds: timeoutSeconds, Retry: lambdaRetry(), ...fields };
}

export interface QueryLoopOptions {
  /** JSONPath of `{ queriesKey, count }` (the step that stored the queries). */
  readonly from: string;
  /** Prefix of the loop's state names (unique within the definition). */
  readonly name: string;
  /** The state after the last query. */
  readonly next: string;
  /** Where a failure goes. */
  readonly onError: string;
  readonly timeoutSeconds: number;
}

/** The states of a query loop; enter at `<name>Start`. Leaves `$.<name>` as `{ index, count }`. */
export function queryLoop(o: QueryLoopOptions): Record<string, State> {
  const cursor = `$.${o.name}`;
  return {
    [`${o.name}Start`]: {
      Type: 'Pass',
      Parameters: { index: 0, 'count.$': `${o.from}.count` },
      ResultPath: cursor,
      Next: `${o.name}Any`,
    },
    [`${o.name}Any`]: { Type: 'Choice', Choices: [{ Variable: `${cursor}.count`, NumericGreaterThan: 0, Next: `${o.name}Fetch` }], Default: o.next },
    [`${o.name}Fetch`]: lambdaTask(QUERY_AT_FUNCTION, o.timeoutSeconds, {
      Parameters: { 'queriesKey.$': `${o.from}.queriesKey`, 'index.$': `${cursor}.index`, 'count.$': `${cursor}.count` },
      ResultPath: `${cursor}Query`,
      Catch: catchTo(o.onError),
      Next: `${o.name}Run`,
    }),
    [`${o.name}Run`]: {
      Type: 'Task',
      Resource: 'arn:aws:states:::athena:startQueryExecution.sync',
      Parameters: { 'QueryString.$': `${cursor}Query.query.athena.QueryString`, WorkGroup: substitution(ATHENA_WORKGROUP) },
      ResultPath: null,
      TimeoutSeconds: 3600,
      Retry: serviceRetry(),
      Catch: catchTo(o.onError),
      Next: `${o.name}Advance`,
    },
    [`${o.name}Advance`]: {
      Type: 'Pass',
      Parameters: { 'index.$': `${cursor}Query.next`, 'count.$': `${cursor}.count` },
      ResultPath: cursor,
      Next: `${o.name}More`,
    },
    [`${o.name}More`]: { Type: 'Choice', Choices: [{ Variable: `${cursor}Query.more`, BooleanEquals: true, Next: `${o.name}Fetch` }], Default: o.next },
  };
}

export interface ItemSource {
  /** JSONPath of the bucket and key (or prefix) in the state. */
  readonly bucketPath: string;
  readonly keyPath: string;
  /** `json`: one array; `jsonl`: one item a line; `list`: the objects under a prefix (ListObjectsV2). */
  readonly kind: 'json' | 'jsonl' | 'list';
}

/** A Distributed Map over items read from S3, each a child execution of `processor`. */
export function distributedMap(o: {
  readonly items: ItemSource;
  readonly itemSelector: Record<string, string>;
  readonly processor: { readonly StartAt: string; readonly States: Record<string, State> };
  readonly maxConcurrency: number;
  readonly toleratedFailurePercentage?: number;
  readonly label: string;
  readonly resultPath?: string | null;
  readonly next: string;
  readonly onError: string;
}): State {
  const reader =
    o.items.kind === 'list'
      ? { Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { 'Bucket.$': o.items.bucketPath, 'Prefix.$': o.items.keyPath } }
      : { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: o.items.kind === 'json' ? 'JSON' : 'JSONL' }, Parameters: { 'Bucket.$': o.items.bucketPath, 'Key.$': o.items.keyPath } };
  return {
    Type: 'Map',
    ItemReader: reader,
    ItemSelector: o.itemSelector,
    MaxConcurrency: o.maxConcurrency,
    ToleratedFailurePercentage: o.toleratedFailurePercentage ?? 0,
    Label: o.label,
    ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' }, ...o.processor },
    ResultPath: o.resultPath === undefined ? null : o.resultPath,
    Catch: catchTo(o.onError),
    Next: o.next,
  };
}
