/**
 * Athena tasks (`arn:aws:states:::athena:startQueryExecution.sync`, its non-.sync form and
 * `athena:getQueryExecution`) run locally: the statement the task's query was rendered from runs on
 * the embedded engine, and the task returns what Step Functions' Athena integration returns.
 *
 * The convention (enforced when the definition is localized): the Task takes its query from an
 * object that also names the functions/sql statement it was rendered from,
 *
 *   "Compact": { "Type": "Task", "Resource": "arn:aws:states:::athena:startQueryExecution.sync",
 *     "Parameters": { "QueryString.$": "$.compact.athena.QueryString", "ExecutionParameters.$": "$.compact.athena.ExecutionParameters",
 *                     "WorkGroup": "tidemark", "QueryExecutionContext": { "Database": "tidemark_shop" } },
 *     "ResultPath": "$.q", … }
 *
 * with the state input holding `compact: { athena: athenaQuery(s, db), statement: { name: 'compact-hour', args: { hour } } }`
 * (`index` picks one of the statements `buildStatements(name, args)` gives, e.g. one of
 * fold-expected's three MERGEs; without it all run in order). A literal `QueryString`, or one
 * built otherwise, is refused: locally there is no Athena to run the text. The runner passes
 * `<path>.statement` to `options.athena(statement, query)`, e.g. `duckdbAthenaHandler(engine)`.
 *
 * The `.sync` result is GetQueryExecution's output, as the integration returns it (times as epoch
 * milliseconds, as in AWS's step-functions-workflows-collection sample "ingest and analyze historical
 * storm events"; field names from the Athena API reference, GetQueryExecution):
 *
 *   { QueryExecution: { QueryExecutionId, Query, StatementType: 'DML', QueryExecutionContext, WorkGroup,
 *       Status: { State: 'SUCCEEDED', SubmissionDateTime, CompletionDateTime },
 *       Statistics: { DataScannedInBytes, EngineExecutionTimeInMillis, TotalExecutionTimeInMillis, … },
 *       ResultConfiguration: { OutputLocation: '<OutputLocation>/<id>.csv' }, EngineVersion } }
 *
 * A statement that fails fails the task with `States.TaskFailed` (how the .sync pattern reports a
 * FAILED query), its Cause that JSON with `Status.State: 'FAILED'` and the error as
 * `StateChangeReason`. The non-.sync form returns `{ QueryExecutionId }` (the query has already run)
 * and `getQueryExecution` of that id returns the same QueryExecution, FAILED included.
 */
import { randomUUID } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import { buildStatements, STATEMENTS, type StatementName } from '../../functions/sql/index.js';
import type { DuckDbEngine } from './duckdb-engine.js';
import { invalidInput, LocalTaskError } from './task-error.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const ATHENA_START_QUERY = 'arn:aws:states:::athena:startQueryExecution';
export const ATHENA_START_QUERY_SYNC = `${ATHENA_START_QUERY}.sync`;
export const ATHENA_GET_QUERY_EXECUTION = 'arn:aws:states:::athena:getQueryExecution';
/** The Parameters key the runner adds locally: the statement reference next to the query. */
export const STATEMENT_KEY = '__tidemarkStatement';
const QUERY_SUFFIX = '.athena.QueryString';
const REFERENCE_PATH = /^\$((\.[A-Za-z_$][\w$-]*)|(\[\d+\])|(\['[^']*'\]))*$/;

/** The functions/sql statement a task's query was rendered from. */
export interface AthenaStatementRef {
  readonly name: string;
  readonly args: JsonObject;
  /** One of the statements `buildStatements(name, args)` gives; all of them, in order, without it. */
  readonly index?: number;
}

/** StartQueryExecution's input, as the Task's Parameters give it. */
export interface AthenaQuery {
  readonly QueryString: string;
  readonly ExecutionParameters?: readonly string[];
  readonly WorkGroup?: string;
  readonly QueryExecutionContext?: JsonObject;
  readonly ResultConfiguration?: JsonObject;
}

/** What a local run reports back; every field optional. */
export interface AthenaRunSummary {
  readonly dataScannedInBytes?: number;
}

/** Runs the statement of an Athena task; throws when it fails. */
export type LocalAthenaHandler = (statement: AthenaStatementRef, query: AthenaQuery) => Promise<AthenaRunSummary | undefined> | AthenaRunSummary | undefined;

export type AthenaTaskKind = 'start-sync' | 'start' | 'get';

/**
 * Checks an Athena Task against the convention and adds the statement reference to its
 * Parameters (`"__tidemarkStatement.$": "<path>.statement"`). Returns the task's kind, or null
 * with problems appended.
 */
export function localizeAthenaTask(name: string, state: Json, problems: string[]): AthenaTaskKind | null {
  const at = (what: string) => problems.push(`state "${name}": ${what}`);
  const p = state.Parameters;
  if (state.Resource === ATHENA_GET_QUERY_EXECUTION) {
    if (isObject(p) && (p.QueryExecutionId !== undefined || p['QueryExecutionId.$'] !== undefined)) return 'get';
    at('athena:getQueryExecution needs Parameters.QueryExecutionId');
    return null;
  }
  const convention = `an Athena task takes "QueryString.$": "<path>${QUERY_SUFFIX}" locally, with <path>.statement naming the functions/sql statement ({ name, args }) it was rendered from`;
  const path = isObject(p) ? p['QueryString.$'] : undefined;
  if (!isObject(p) || typeof path !== 'string' || !path.endsWith(QUERY_SUFFIX) || !REFERENCE_PATH.test(path.slice(0, -QUERY_SUFFIX.length))) {
    at(`${convention}; got ${JSON.stringify(isObject(p) ? (p.QueryString ?? path ?? null) : null)}`);
    return null;
  }
  p[`${STATEMENT_KEY}.$`] = `${path.slice(0, -QUERY_SUFFIX.length)}.statement`;
  return state.Resource === ATHENA_START_QUERY_SYNC ? 'start-sync' : 'start';
}

/** Athena's StatementType of a query, by its first keyword. */
export function statementType(query: string): 'DDL' | 'DML' | 'UTILITY' {
  const word = /^[\s(]*(?:(?:--[^\n]*\n|\/\*[\s\S]*?\*\/)[\s(]*)*([A-Za-z]+)/.exec(query)?.[1]?.toUpperCase() ?? '';
  if (['CREATE', 'ALTER', 'DROP', 'MSCK'].includes(word)) return 'DDL';
  if (['SHOW', 'DESCRIBE', 'EXPLAIN'].includes(word)) return 'UTILITY';
  return 'DML';
}

function statementRef(v: unknown): AthenaStatementRef {
  const ok = isObject(v) && typeof v.name === 'string' && isObject(v.args) && (v.index === undefined || (typeof v.index === 'number' && Number.isInteger(v.index) && v.index >= 0));
  if (!ok) throw invalidInput(`the Athena task's input must hold statement: { name, args, index? } next to athena.QueryString, got ${JSON.stringify(v)}`);
  return v as unknown as AthenaStatementRef;
}

function queryOf(input: Json): AthenaQuery {
  if (typeof input.QueryString !== 'string' || input.QueryString === '') throw invalidInput('the Athena task has no QueryString');
  const q: Record<string, unknown> = { QueryString: input.QueryString };
  for (const k of ['ExecutionParameters', 'WorkGroup', 'QueryExecutionContext', 'ResultConfiguration']) if (input[k] !== undefined) q[k] = input[k];
  return q as unknown as AthenaQuery;
}

/** The Athena of one local run: runs the statements and keeps their executions for getQueryExecution. */
export class LocalAthena {
  private readonly executions = new Map<string, JsonObject>();
  constructor(
    private readonly handler: LocalAthenaHandler | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Runs the statement; `.sync` returns the QueryExecution (or fails), otherwise its id. */
  async start(input: JsonValue, sync: boolean): Promise<JsonValue> {
    if (!isObject(input)) throw invalidInput('the Athena task received no parameters');
    const ref = statementRef(input[STATEMENT_KEY]);
    const query = queryOf(input);
    if (!this.handler) throw invalidInput(`an Athena task ran without a local engine (pass options.athena, e.g. duckdbAthenaHandler(engine)) for ${ref.name}`);
    const id = randomUUID();
    const submitted = this.now();
    let execution: JsonObject;
    try {
      const summary = await this.handler(ref, query);
      execution = this.execution(id, query, submitted, { State: 'SUCCEEDED' }, summary?.dataScannedInBytes ?? 0);
    } catch (err) {
      const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      execution = this.execution(id, query, submitted, { State: 'FAILED', StateChangeReason: reason }, 0);
      this.executions.set(id, execution);
      if (sync) throw new LocalTaskError('States.TaskFailed', JSON.stringify({ QueryExecution: execution }), { cause: err });
      return { QueryExecutionId: id };
    }
    this.executions.set(id, execution);
    return sync ? { QueryExecution: execution } : { QueryExecutionId: id };
  }

  /** getQueryExecution of an execution this run started. */
  get(input: JsonValue): JsonValue {
    const id = isObject(input) ? input.QueryExecutionId : undefined;
    const execution = typeof id === 'string' ? this.executions.get(id) : undefined;
    if (!execution) throw new LocalTaskError('Athena.InvalidRequestException', `QueryExecution ${String(id)} was not found`);
    return { QueryExecution: execution };
  }

  private execution(id: string, query: AthenaQuery, submitted: number, status: JsonObject, scanned: number): JsonObject {
    const completed = this.now();
    const type = statementType(query.QueryString);
    const location = query.ResultConfiguration?.OutputLocation;
    const elapsed = Math.max(0, completed - submitted);
    return {
      QueryExecutionId: id,
      Query: query.QueryString,
      StatementType: type,
      ResultConfiguration: typeof location === 'string' ? { OutputLocation: `${location.replace(/\/?$/, '/')}${id}.${type === 'DML' ? 'csv' : 'txt'}` } : {},
      QueryExecutionContext: query.QueryExecutionContext ?? {},
      Status: { ...status, SubmissionDateTime: submitted, CompletionDateTime: completed },
      Statistics: {
        DataScannedInBytes: scanned,
        EngineExecutionTimeInMillis: elapsed,
        TotalExecutionTimeInMillis: elapsed,
        QueryQueueTimeInMillis: 0,
        QueryPlanningTimeInMillis: 0,
        ServiceProcessingTimeInMillis: 0,
      },
      WorkGroup: query.WorkGroup ?? 'primary',
      EngineVersion: { SelectedEngineVersion: 'AUTO', EffectiveEngineVersion: 'Athena engine version 3' },
    };
  }
}

/**
 * The Athena handler of the embedded default: the named statement's steps run on DuckDB.
 *
 *   runLocalStateMachine(definition, input, { …, athena: duckdbAthenaHandler(new DuckDbEngine({ s3, bucket, … })) })
 */
export function duckdbAthenaHandler(engine: Pick<DuckDbEngine, 'runAll'>): LocalAthenaHandler {
  return async (ref) => {
    if (!Object.hasOwn(STATEMENTS, ref.name)) throw new LocalTaskError('States.TaskFailed', `no functions/sql statement is named ${ref.name}`);
    const all = buildStatements(ref.name as StatementName, ref.args as never);
    const chosen = ref.index === undefined ? all : all.slice(ref.index, ref.index + 1);
    if (chosen.length === 0) throw new LocalTaskError('States.TaskFailed', `${ref.name} has ${all.length} statements; there is no index ${ref.index}`);
    await engine.runAll(chosen);
    return { dataScannedInBytes: 0 };
  };
}
