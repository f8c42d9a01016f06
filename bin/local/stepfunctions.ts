/**
 * Runs a Step Functions state machine locally, in this process, with aws-local-stepfunctions.
 *
 * The definition is the very ASL JSON the CDK stack deploys: a builder returns it with each Lambda
 * Task's `Resource` written as a definition substitution, `"${ReconcilePlanFunction}"`, and the
 * construct passes `definitionSubstitutions` mapping each name to a function ARN. Here every
 * `${Name}` becomes a local ARN and each Task state whose resource names it runs the in-process
 * handler registered under that name instead of invoking Lambda:
 *
 *   const output = await runLocalStateMachine(definition, { runId: 'r1' }, {
 *     handlers: { ReconcilePlanFunction: (input) => plan(input, deps) },
 *     s3, dynamodb, athena: duckdbAthenaHandler(engine),
 *     onProgress: (e) => console.error(e.type, e.state),
 *   });
 *
 * The AWS-native tasks the jobs use run against the emulators, each in its own module:
 * - a Distributed Map's `ItemReader` (S3 listObjectsV2, getObject of JSON or JSON Lines) and
 *   `ItemBatcher` (map-item-reader.ts: the Map is preceded by a task reading its items, and followed
 *   by one removing them again from its output; those states are named `<Map> (items)`,
 *   `<Map> (output)`, `<Map> (caught → <target>)` and show in the progress events);
 * - `athena:startQueryExecution(.sync)` and `athena:getQueryExecution` (athena-local.ts: the task
 *   names its functions/sql statement next to its query, `options.athena` runs it);
 * - `aws-sdk:dynamodb:exportTableToPointInTime` and `:describeExport` (dynamodb-export.ts: a
 *   parallel Scan written in the export's own format to S3).
 * A handler registered under a Task's full `Resource` (`options.handlers['arn:aws:states:::aws-sdk:sqs:sendMessage']`)
 * runs that Task, and takes precedence over the built-in ones. Any other resource, and what the
 * engine does not implement (`ResultWriter`, JSONata, variables), is refused with a clear error
 * naming the state instead of being silently ignored or sent to AWS; `ProcessorConfig`, `Label` and
 * `ToleratedFailure*` are accepted and ignored by the engine.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { StateMachine } from 'aws-local-stepfunctions';
import type { JsonValue } from '../../functions/core/json.js';
import { ATHENA_GET_QUERY_EXECUTION, ATHENA_START_QUERY, ATHENA_START_QUERY_SYNC, type AthenaTaskKind, LocalAthena, type LocalAthenaHandler, localizeAthenaTask } from './athena-local.js';
import { checkExportTask, DYNAMODB_DESCRIBE_EXPORT, DYNAMODB_EXPORT_TABLE, type DynamoDbExportOptions, LocalDynamoDbExports } from './dynamodb-export.js';
import { readMapItems, withoutItems } from './map-item-reader.js';
import { localizeItemReaders, type MapTask } from './map-rewrite.js';
import { LocalStateMachineError } from './state-machine-error.js';

export { LocalStateMachineError };

/** An in-process task: receives the Task state's effective input, returns its result. */
export type LocalTaskHandler = (input: JsonValue) => Promise<JsonValue> | JsonValue;

/** One step of an execution, for progress bars and logs. */
export interface LocalProgressEvent {
  readonly type: string;
  /** State name, when the event is about a state. */
  readonly state?: string;
  /** Map iteration index, for map iteration events. */
  readonly index?: number;
  /** Error name and cause, for failures, retries and catches. */
  readonly error?: string;
  readonly cause?: string;
  readonly timestamp: number;
}

export interface LocalRunOptions {
  /**
   * Handler per substitution name, e.g. `{ ReconcilePlanFunction: plan }` (every name used must have
   * one), or per full Task resource, e.g. `{ 'arn:aws:states:::aws-sdk:sqs:sendMessage': send }`.
   */
  readonly handlers: Readonly<Record<string, LocalTaskHandler>>;
  /** S3 for Distributed Map item readers and DynamoDB exports (the emulator's). */
  readonly s3?: S3Client;
  /** DynamoDB for exports (DynamoDB Local). */
  readonly dynamodb?: DynamoDBClient;
  /** Runs the statement of each Athena task, e.g. `duckdbAthenaHandler(engine)` (athena-local.ts). */
  readonly athena?: LocalAthenaHandler;
  /** How exports are written (segments, items per data file). */
  readonly dynamodbExport?: DynamoDbExportOptions;
  /** Called for every execution event (state entered/exited/retried/caught, map iterations). */
  readonly onProgress?: (event: LocalProgressEvent) => void;
  /**
   * Pause before each retry, in milliseconds, instead of the definition's IntervalSeconds/BackoffRate
   * (which are sized for AWS). @default 50
   */
  readonly retryIntervalMs?: number;
  /**
   * Pause of every Wait state, in milliseconds, instead of its Seconds/Timestamp (sized for AWS: an
   * export poll waits a minute, and a local export is COMPLETED the first time it is described).
   * @default the definition's
   */
  readonly waitMs?: number;
  /** Aborts the execution. */
  readonly signal?: AbortSignal;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const SUBSTITUTION = /^\$\{([A-Za-z0-9_]+)\}$/;

/** Fields the local engine cannot run. Each entry: state field → why. */
export const UNSUPPORTED_FIELDS: Readonly<Record<string, string>> = {
  ResultWriter: 'Distributed Map ResultWriter (results written to S3): have the iterations write their own results',
  Arguments: 'JSONata Arguments',
  Output: 'JSONata Output',
  Assign: 'variables (Assign)',
};

/** The Task `Resource` a definition builder writes for a function: `"${Name}"`, a definition substitution. */
export const taskResource = (name: string): string => ['$', '{', name, '}'].join('');

/** The local ARN a substitution name resolves to. */
export const localFunctionArn = (name: string): string => `arn:aws:lambda:us-east-1:000000000000:function:${name}`;

/** What a Task state runs locally. */
export type LocalTask =
  | { readonly kind: 'handler'; readonly key: string }
  | { readonly kind: 'athena'; readonly mode: AthenaTaskKind }
  | { readonly kind: 'dynamodb-export' }
  | { readonly kind: 'dynamodb-describe-export' }
  | MapTask;

export interface LocalizedDefinition {
  /** The definition with every `${Name}` Task resource replaced by {@link localFunctionArn}, Maps with ItemReader/ItemBatcher rewritten, Athena tasks given their statement. */
  readonly definition: Json;
  /** Task state name → substitution name. */
  readonly tasks: ReadonlyMap<string, string>;
  /** Task state name → what it runs locally, for every Task state (generated ones included). */
  readonly local: ReadonlyMap<string, LocalTask>;
}

export interface LocalizeOptions {
  /** The handlers that will be registered: those keyed by a full resource run that resource's Tasks. */
  readonly handlers?: Readonly<Record<string, unknown>>;
}

/** The Resource of the states the runner generates (their behaviour is found by state name). */
const GENERATED_RESOURCE = localFunctionArn('tidemark-local-runner');
const SDK_INTEGRATION = /^arn:aws:states:::aws-sdk:/;

/** Calls `visit` for every state of a definition, nested Map processors and Parallel branches included. */
export function forEachState(definition: Json, visit: (name: string, state: Json) => void): void {
  const states = definition.States;
  if (!isObject(states)) return;
  for (const [name, state] of Object.entries(states)) {
    if (!isObject(state)) continue;
    visit(name, state);
    for (const inner of [state.ItemProcessor, state.Iterator]) if (isObject(inner)) forEachState(inner, visit);
    if (Array.isArray(state.Branches)) for (const b of state.Branches) if (isObject(b)) forEachState(b, visit);
  }
}

/** What a Task's resource runs locally, or null (and a problem) when nothing does. */
function taskOf(name: string, state: Json, resource: string, handlers: Readonly<Record<string, unknown>>, problems: string[]): LocalTask | null {
  if (Object.hasOwn(handlers, resource)) return { kind: 'handler', key: resource };
  if (resource === ATHENA_START_QUERY || resource === ATHENA_START_QUERY_SYNC || resource === ATHENA_GET_QUERY_EXECUTION) {
    const mode = localizeAthenaTask(name, state, problems);
    return mode ? { kind: 'athena', mode } : null;
  }
  if (resource === DYNAMODB_EXPORT_TABLE) {
    checkExportTask(name, state, problems);
    return { kind: 'dynamodb-export' };
  }
  if (resource === DYNAMODB_DESCRIBE_EXPORT) return { kind: 'dynamodb-describe-export' };
  const what = SDK_INTEGRATION.test(resource) ? 'AWS SDK integration' : 'resource';
  problems.push(`state "${name}": ${what} ${resource} is not run locally (register a handler under that resource in options.handlers)`);
  return null;
}

/**
 * Prepares a definition for the local engine: substitutes Task resources, rewrites what runs
 * through generated states, and refuses what does not run locally. Throws LocalStateMachineError
 * naming every state and field at once.
 */
export function localizeDefinition(definition: Json, options: LocalizeOptions = {}): LocalizedDefinition {
  if (definition.QueryLanguage === 'JSONata') throw new LocalStateMachineError('the local engine does not run JSONata state machines');
  const handlers = options.handlers ?? {};
  const copy = structuredClone(definition);
  const tasks = new Map<string, string>();
  const local = new Map<string, LocalTask>();
  const names = new Set<string>();
  const problems: string[] = [];
  forEachState(copy, (name, state) => {
    names.add(name);
    for (const [field, why] of Object.entries(UNSUPPORTED_FIELDS)) {
      if (field in state) problems.push(`state "${name}": ${field} is not supported locally (${why})`);
    }
    if (state.QueryLanguage === 'JSONata') problems.push(`state "${name}": JSONata is not supported locally`);
    if (state.Type !== 'Task') return;
    if (typeof state.Resource !== 'string') {
      problems.push(`state "${name}": a Task needs a literal Resource locally`);
      return;
    }
    const m = SUBSTITUTION.exec(state.Resource);
    const task = m?.[1] ? ({ kind: 'handler', key: m[1] } as const) : taskOf(name, state, state.Resource, handlers, problems);
    if (!task) return;
    const previous = local.get(name);
    if (previous !== undefined && JSON.stringify(previous) !== JSON.stringify(task)) problems.push(`state name "${name}" is used twice with different resources`);
    local.set(name, task);
    if (m?.[1]) {
      tasks.set(name, m[1]);
      state.Resource = localFunctionArn(m[1]);
    }
  });
  for (const [name, task] of localizeItemReaders(copy, names, GENERATED_RESOURCE, problems)) local.set(name, task);
  if (problems.length > 0) throw new LocalStateMachineError(`definition cannot run locally:\n  - ${problems.join('\n  - ')}`);
  return { definition: copy, tasks, local };
}

/** Node 20 lacks Promise.withResolvers, which the engine calls for task timeouts. */
function ensureWithResolvers(): void {
  const P = Promise as unknown as { withResolvers?: unknown };
  if (typeof P.withResolvers === 'function') return;
  P.withResolvers = <T>() => {
    let resolve: (v: T) => void = () => {};
    let reject: (e: unknown) => void = () => {};
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

function progressOf(event: Json): LocalProgressEvent {
  const state = isObject(event.state) ? event.state : isObject(event.parentState) ? event.parentState : undefined;
  return {
    type: String(event.type),
    timestamp: typeof event.timestamp === 'number' ? event.timestamp : Date.now(),
    ...(state && typeof state.name === 'string' ? { state: state.name } : {}),
    ...(typeof event.index === 'number' ? { index: event.index } : {}),
    ...(typeof event.Error === 'string' ? { error: event.Error } : {}),
    ...(event.Cause !== undefined ? { cause: typeof event.Cause === 'string' ? event.Cause : JSON.stringify(event.Cause) } : {}),
  };
}

/** The in-process function each Task state runs, or the reasons some cannot run. */
function overridesOf(local: LocalizedDefinition, options: LocalRunOptions): { overrides: Record<string, (input: unknown) => Promise<unknown>>; missing: string[]; needs: string[] } {
  const athena = new LocalAthena(options.athena);
  const exports = new LocalDynamoDbExports({ dynamodb: options.dynamodb, s3: options.s3 }, options.dynamodbExport);
  const overrides: Record<string, (input: unknown) => Promise<unknown>> = {};
  const missing: string[] = [];
  const needs = new Set<string>();
  const run = (state: string, fn: (input: JsonValue) => Promise<JsonValue> | JsonValue) => {
    overrides[state] = async (input) => fn(input as JsonValue);
  };
  for (const [state, task] of local.local) {
    switch (task.kind) {
      case 'handler': {
        const handler = options.handlers[task.key];
        if (handler) run(state, handler);
        else missing.push(`${state} → ${task.key}`);
        break;
      }
      case 'athena':
        if (task.mode !== 'get' && !options.athena) needs.add('Athena tasks run locally with options.athena (e.g. duckdbAthenaHandler(engine))');
        run(state, task.mode === 'get' ? (input) => athena.get(input) : (input) => athena.start(input, task.mode === 'start-sync'));
        break;
      case 'dynamodb-export':
        if (!options.dynamodb || !options.s3) needs.add('DynamoDB exports run locally with options.dynamodb and options.s3');
        run(state, (input) => exports.exportTable(input));
        break;
      case 'dynamodb-describe-export':
        run(state, (input) => exports.describe(input));
        break;
      case 'map-items':
        if (task.plan.source !== 'input' && !options.s3) needs.add(`Distributed Map item readers run locally with options.s3 (state "${task.map}")`);
        run(state, (input) => readMapItems(task.plan, input, options.s3));
        break;
      case 'map-output':
        run(state, withoutItems);
        break;
    }
  }
  return { overrides, missing, needs: [...needs] };
}

/**
 * Runs a definition with in-process task handlers and returns the execution's output.
 * Throws LocalStateMachineError when the execution fails (with the ASL error name), when a Task
 * names a function no handler is registered for, or when a built-in task lacks its client.
 */
export async function runLocalStateMachine(definition: Json, input: JsonValue, options: LocalRunOptions): Promise<JsonValue> {
  ensureWithResolvers();
  const local = localizeDefinition(definition, { handlers: options.handlers });
  const { overrides, missing, needs } = overridesOf(local, options);
  if (missing.length > 0) throw new LocalStateMachineError(`no local handler for: ${missing.join(', ')}`);
  if (needs.length > 0) throw new LocalStateMachineError(`definition cannot run locally: ${needs.join('; ')}`);
  const retryIntervalOverrides: Record<string, number> = {};
  const waitTimeOverrides: Record<string, number> = {};
  forEachState(local.definition, (name, state) => {
    if (Array.isArray(state.Retry)) retryIntervalOverrides[name] = options.retryIntervalMs ?? 50;
    if (state.Type === 'Wait' && options.waitMs !== undefined) waitTimeOverrides[name] = options.waitMs;
  });

  // The engine's types describe the definition precisely; ours is checked by asl-validator in the constructor.
  const machine = new StateMachine(local.definition as unknown as ConstructorParameters<typeof StateMachine>[0], {
    validationOptions: { checkArn: true, checkPaths: true },
  });
  const execution = machine.run(input as never, {
    overrides: { taskResourceLocalHandlers: overrides as never, retryIntervalOverrides, waitTimeOverrides },
  });
  const onAbort = () => execution.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const progress = options.onProgress
    ? (async () => {
        for await (const event of execution.eventLogs) options.onProgress?.(progressOf(event as unknown as Json));
      })()
    : Promise.resolve();
  try {
    const output = (await execution.result) as JsonValue;
    await progress;
    return output;
  } catch (err) {
    await progress.catch(() => undefined);
    const cause: unknown = err instanceof Error ? err.cause : undefined;
    const name = cause instanceof Error ? cause.name : err instanceof Error ? err.name : undefined;
    const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
    throw new LocalStateMachineError(`execution failed: ${name ?? 'Error'}: ${message}`, name, { cause: err });
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}
