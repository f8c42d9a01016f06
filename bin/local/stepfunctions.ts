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
 *     onProgress: (e) => console.error(e.type, e.state),
 *   });
 *
 * Nothing else is rewritten. Features the local engine does not implement (Distributed Map
 * `ItemReader`, `ResultWriter` and `ItemBatcher`, JSONata) are refused with a clear error instead of
 * being silently ignored; `ProcessorConfig`, `Label` and `ToleratedFailure*` are accepted and
 * ignored by the engine, so a Distributed Map whose items come from `ItemsPath` runs inline here.
 */
import { StateMachine } from 'aws-local-stepfunctions';
import type { JsonValue } from '../../functions/core/json.js';
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
  /** Handler per substitution name, e.g. `{ ReconcilePlanFunction: plan }`. Every name used must have one. */
  readonly handlers: Readonly<Record<string, LocalTaskHandler>>;
  /** Called for every execution event (state entered/exited/retried/caught, map iterations). */
  readonly onProgress?: (event: LocalProgressEvent) => void;
  /**
   * Pause before each retry, in milliseconds, instead of the definition's IntervalSeconds/BackoffRate
   * (which are sized for AWS). @default 50
   */
  readonly retryIntervalMs?: number;
  /** Aborts the execution. */
  readonly signal?: AbortSignal;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const SUBSTITUTION = /^\$\{([A-Za-z0-9_]+)\}$/;

/** Fields the local engine cannot run. Each entry: state field → why. */
export const UNSUPPORTED_FIELDS: Readonly<Record<string, string>> = {
  ItemReader: 'Distributed Map ItemReader (read items from S3): pass the items through ItemsPath',
  ResultWriter: 'Distributed Map ResultWriter: have the iterations write their own results',
  ItemBatcher: 'Distributed Map ItemBatcher: batch the items in the step that produces them',
  Arguments: 'JSONata Arguments',
  Output: 'JSONata Output',
  Assign: 'variables (Assign)',
};

/** The Task `Resource` a definition builder writes for a function: `"${Name}"`, a definition substitution. */
export const taskResource = (name: string): string => ['$', '{', name, '}'].join('');

/** The local ARN a substitution name resolves to. */
export const localFunctionArn = (name: string): string => `arn:aws:lambda:us-east-1:000000000000:function:${name}`;

export interface LocalizedDefinition {
  /** The definition with every `${Name}` Task resource replaced by {@link localFunctionArn}; nothing else changed. */
  readonly definition: Json;
  /** Task state name → substitution name. */
  readonly tasks: ReadonlyMap<string, string>;
}

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

/**
 * Prepares a definition for the local engine: substitutes Task resources, and refuses what the
 * engine does not implement. Throws LocalStateMachineError naming the state and field.
 */
export function localizeDefinition(definition: Json): LocalizedDefinition {
  if (definition.QueryLanguage === 'JSONata') throw new LocalStateMachineError('the local engine does not run JSONata state machines');
  const copy = structuredClone(definition);
  const tasks = new Map<string, string>();
  const problems: string[] = [];
  forEachState(copy, (name, state) => {
    for (const [field, why] of Object.entries(UNSUPPORTED_FIELDS)) {
      if (field in state) problems.push(`state "${name}": ${field} is not supported locally (${why})`);
    }
    if (state.QueryLanguage === 'JSONata') problems.push(`state "${name}": JSONata is not supported locally`);
    if (state.Type !== 'Task' || typeof state.Resource !== 'string') return;
    const m = SUBSTITUTION.exec(state.Resource);
    if (!m?.[1]) return;
    const previous = tasks.get(name);
    if (previous !== undefined && previous !== m[1]) problems.push(`state name "${name}" is used twice with different resources`);
    tasks.set(name, m[1]);
    state.Resource = localFunctionArn(m[1]);
  });
  if (problems.length > 0) throw new LocalStateMachineError(`definition cannot run locally:\n  - ${problems.join('\n  - ')}`);
  return { definition: copy, tasks };
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

/**
 * Runs a definition with in-process task handlers and returns the execution's output.
 * Throws LocalStateMachineError when the execution fails (with the ASL error name) or when a Task
 * names a function no handler is registered for.
 */
export async function runLocalStateMachine(definition: Json, input: JsonValue, options: LocalRunOptions): Promise<JsonValue> {
  ensureWithResolvers();
  const local = localizeDefinition(definition);
  const overrides: Record<string, (input: unknown) => Promise<unknown>> = {};
  const missing: string[] = [];
  for (const [state, name] of local.tasks) {
    const handler = options.handlers[name];
    if (!handler) {
      missing.push(`${state} → ${name}`);
      continue;
    }
    overrides[state] = async (taskInput) => handler(taskInput as JsonValue);
  }
  if (missing.length > 0) throw new LocalStateMachineError(`no local handler for: ${missing.join(', ')}`);
  const retryIntervalOverrides: Record<string, number> = {};
  forEachState(local.definition, (name, state) => {
    if (Array.isArray(state.Retry)) retryIntervalOverrides[name] = options.retryIntervalMs ?? 50;
  });

  // The engine's types describe the definition precisely; ours is checked by asl-validator in the constructor.
  const machine = new StateMachine(local.definition as unknown as ConstructorParameters<typeof StateMachine>[0], {
    validationOptions: { checkArn: true, checkPaths: true },
  });
  const execution = machine.run(input as never, {
    overrides: { taskResourceLocalHandlers: overrides as never, retryIntervalOverrides },
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
