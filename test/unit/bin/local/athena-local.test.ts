/**
 * Athena tasks run locally: a query loop built with lib/jobs/asl.ts runs, one at a time and in
 * order, the functions/sql statements its queries were rendered from, through `options.athena`;
 * the `.sync` task returns GetQueryExecution's output, a failed query is States.TaskFailed (retried
 * by the definition, then caught with the QueryExecution as Cause); the non-.sync form and
 * getQueryExecution; what cannot run locally is refused when the definition is localized.
 * test/integration/local-stepfunctions.test.ts runs the same loop on DuckDB over the S3 emulator.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AthenaStatementRef, duckdbAthenaHandler, STATEMENT_KEY, statementType } from '../../../../bin/local/athena-local.js';
import { localizeDefinition, runLocalStateMachine } from '../../../../bin/local/stepfunctions.js';
import type { JsonValue } from '../../../../functions/core/json.js';
import { athena, buildStatements, HOUR_MS, render, type Statement } from '../../../../functions/sql/index.js';
import { ATHENA_WORKGROUP, failState, queryLoop, substitution } from '../../../../lib/jobs/asl.js';
import { validateAsl } from '../../../helpers/asl.js';

type Json = Record<string, unknown>;
const H6 = Date.UTC(2026, 10, 30, 6);

/** QueryRefs as functions/jobs/sql-run.ts makes them: the statement and its Athena text. */
function refs(name: 'compact-hour' | 'fold-expected', args: Json): Json[] {
  return buildStatements(name, args as never).map((s, index) => ({ statement: { name, args, index }, athena: { QueryString: render(s, athena('tidemark_shop'), { inline: true }).sql } }));
}

/** Plan stores nothing: the queries are the test's, handed out by JobQueryAtFunction. */
function loopDefinition(): Json {
  return {
    StartAt: 'Plan',
    States: {
      Plan: { Type: 'Pass', Result: { queriesKey: 'runs/r1/queries.json', count: 4 }, ResultPath: '$.stored', Next: 'HourStart' },
      ...queryLoop({ from: '$.stored', name: 'Hour', next: 'Done', onError: 'Failed', timeoutSeconds: 30 }),
      Done: { Type: 'Succeed' },
      Failed: failState(),
    },
  };
}

/** queryAt over an in-memory list (functions/jobs/queries.ts reads the same from S3). */
const queryAtOver = (queries: readonly Json[]) => (input: JsonValue) => {
  const { index } = input as { index: number };
  return { query: queries[index] as JsonValue, next: index + 1, more: index + 1 < queries.length } as JsonValue;
};

describe('Athena tasks, run locally', () => {
  const queries = [...refs('compact-hour', { hour: H6 }), ...refs('fold-expected', { hour: H6 })];

  it('the query loop is valid ASL and its queries are the statements rendered for Athena', () => {
    assert.deepEqual(validateAsl(loopDefinition()), []);
    assert.equal(queries.length, 4, 'compact-hour builds one statement, fold-expected three');
    assert.match(String((queries[0]?.athena as Json | undefined)?.QueryString), /^INSERT INTO/);
  });

  it('runs every query of the loop in order, each as its statement, with the task Parameters as Athena gets them', async () => {
    const ran: { ref: AthenaStatementRef; query: Json }[] = [];
    const out = (await runLocalStateMachine(loopDefinition(), { runId: 'r1' }, {
      handlers: { JobQueryAtFunction: queryAtOver(queries) },
      athena: (ref, query) => {
        ran.push({ ref, query: query as unknown as Json });
        return { dataScannedInBytes: 10 };
      },
    })) as Json;
    assert.deepEqual(
      ran.map((r) => [r.ref.name, r.ref.index]),
      [
        ['compact-hour', 0],
        ['fold-expected', 0],
        ['fold-expected', 1],
        ['fold-expected', 2],
      ],
    );
    assert.deepEqual(ran[1]?.ref.args, { hour: H6 });
    assert.equal(ran[0]?.query.QueryString, (queries[0]?.athena as Json | undefined)?.QueryString);
    assert.equal(ran[0]?.query.WorkGroup, substitution(ATHENA_WORKGROUP), 'the definition substitution as the definition holds it');
    assert.ok(!(STATEMENT_KEY in (ran[0]?.query ?? {})), 'the statement reference is not part of the query');
    assert.deepEqual(out.Hour, { index: 4, count: 4 });
  });

  it('the .sync result is the QueryExecution, SUCCEEDED; a failed statement is States.TaskFailed, retried, then caught with the FAILED execution as Cause', async () => {
    const def = loopDefinition();
    const states = def.States as Record<string, Json>;
    (states.HourRun as Json).ResultPath = '$.last';
    const seen: Json[] = [];
    await runLocalStateMachine(def, {}, {
      handlers: {
        JobQueryAtFunction: (input) => {
          seen.push(input as Json);
          return queryAtOver(queries.slice(0, 1))(input);
        },
      },
      athena: () => ({ dataScannedInBytes: 42 }),
      onProgress: () => {},
    }).then((out) => {
      const execution = ((out as Json).last as Json).QueryExecution as Json;
      assert.equal((execution.Status as Json).State, 'SUCCEEDED');
      assert.equal(execution.StatementType, 'DML');
      assert.equal((execution.Statistics as Json).DataScannedInBytes, 42);
      assert.equal(typeof execution.QueryExecutionId, 'string');
    });
    let attempts = 0;
    const failed = runLocalStateMachine(loopDefinition(), {}, {
      handlers: { JobQueryAtFunction: queryAtOver(queries) },
      athena: () => {
        attempts++;
        throw new Error('Binder Error: column x not found');
      },
      retryIntervalMs: 1,
    });
    await assert.rejects(failed, (e: Error & { error?: string }) => {
      assert.equal(e.error, 'States.TaskFailed');
      const cause = JSON.parse(e.message.replace(/^execution failed: States.TaskFailed: /, '')) as Json;
      const status = (cause.QueryExecution as Json).Status as Json;
      assert.equal(status.State, 'FAILED');
      assert.match(String(status.StateChangeReason), /Binder Error: column x not found/);
      return true;
    });
    assert.equal(attempts, 4, 'serviceRetry: the first run and 3 retries');
  });

  it('the non-.sync start returns the id, and getQueryExecution describes that execution', async () => {
    const def: Json = {
      StartAt: 'Start',
      States: {
        Start: { Type: 'Task', Resource: 'arn:aws:states:::athena:startQueryExecution', Parameters: { 'QueryString.$': '$.q.athena.QueryString' }, ResultPath: '$.started', Next: 'Get' },
        Get: { Type: 'Task', Resource: 'arn:aws:states:::athena:getQueryExecution', Parameters: { 'QueryExecutionId.$': '$.started.QueryExecutionId' }, ResultPath: '$.got', End: true },
      },
    };
    assert.deepEqual(validateAsl(def), []);
    const out = (await runLocalStateMachine(def, { q: queries[0] as JsonValue }, {
      handlers: {},
      athena: () => {
        throw new Error('no');
      },
    })) as Json;
    const execution = (out.got as Json).QueryExecution as Json;
    assert.equal(execution.QueryExecutionId, (out.started as Json).QueryExecutionId);
    assert.equal((execution.Status as Json).State, 'FAILED');
  });

  it('refuses an Athena task whose query does not name its statement, and an Athena run without options.athena', async () => {
    const def: Json = { StartAt: 'Q', States: { Q: { Type: 'Task', Resource: 'arn:aws:states:::athena:startQueryExecution.sync', Parameters: { QueryString: 'SELECT 1' }, End: true } } };
    assert.throws(() => localizeDefinition(def), /state "Q": an Athena task takes "QueryString.\$": "<path>.athena.QueryString" locally/);
    await assert.rejects(runLocalStateMachine(loopDefinition(), {}, { handlers: { JobQueryAtFunction: queryAtOver(queries) } }), /Athena tasks run locally with options.athena/);
  });

  it('duckdbAthenaHandler runs the named step of the statement on the engine, or all of them without an index', async () => {
    const batches: Statement[][] = [];
    const handler = duckdbAthenaHandler({
      runAll: async (s: readonly Statement[]) => {
        batches.push([...s]);
        return [];
      },
    });
    await handler({ name: 'fold-expected', args: { hour: H6 + HOUR_MS }, index: 2 }, { QueryString: 'MERGE …' });
    await handler({ name: 'fold-expected', args: { hour: H6 + HOUR_MS } }, { QueryString: 'MERGE …' });
    const all = buildStatements('fold-expected', { hour: H6 + HOUR_MS });
    const text = (ss: readonly (Statement | undefined)[]) => ss.map((x) => (x ? `${x.name}: ${render(x, athena('db'), { inline: true }).sql}` : 'none'));
    assert.deepEqual(batches.map(text), [text([all[2]]), text(all)]);
    assert.equal(batches[1]?.length, 3);
    await assert.rejects(Promise.resolve(handler({ name: 'no-such-statement', args: {} }, { QueryString: 'x' })), (e: Error) => e.name === 'States.TaskFailed' && /no functions\/sql statement is named no-such-statement/.test(e.message));
    await assert.rejects(Promise.resolve(handler({ name: 'fold-expected', args: { hour: H6 }, index: 9 }, { QueryString: 'x' })), /there is no index 9/);
  });

  it('statementType reads the first keyword past comments', () => {
    assert.equal(statementType('-- c\n/* x */ (SELECT 1)'), 'DML');
    assert.equal(statementType('CREATE TABLE x (a int)'), 'DDL');
    assert.equal(statementType('SHOW TABLES'), 'UTILITY');
  });
});
