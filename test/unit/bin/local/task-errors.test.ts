/**
 * Local Task failures carry the error names Step Functions gives them on AWS, so the jobs'
 * Retry and Catch (lib/jobs/asl.ts) match them the same way: a job function's own error by its
 * name (JobInputError is never retried), any failure by States.TaskFailed, a failed Athena query
 * as States.TaskFailed with the QueryExecution as Cause, an SDK integration's as
 * `DynamoDb.<Exception>`, a timeout as States.Timeout; States.Runtime is neither retried nor caught.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LocalStateMachineError, runLocalStateMachine, taskResource } from '../../../../bin/local/stepfunctions.js';
import { LocalTaskError } from '../../../../bin/local/task-error.js';
import { JobInputError } from '../../../../functions/jobs/deps.js';
import { catchTo, failState, lambdaTask, serviceRetry } from '../../../../lib/jobs/asl.js';
import { validateAsl } from '../../../helpers/asl.js';

type Json = Record<string, unknown>;

/** One job-function Task with the jobs' retry policy, caught into `$.error`. */
const oneTask = (): Json => ({
  StartAt: 'Step',
  States: {
    Step: lambdaTask('StepFunction', 30, { ResultPath: '$.step', Catch: catchTo('Caught'), Next: 'Done' }),
    Caught: { Type: 'Pass', End: true },
    Done: { Type: 'Succeed' },
  },
});

/** A handler that fails `times` times with `error`, then returns `{ ok: true }`; counts its calls. */
function failing(error: () => Error, times = Number.POSITIVE_INFINITY) {
  const calls = { n: 0 };
  return {
    calls,
    handler: () => {
      calls.n++;
      if (calls.n <= times) throw error();
      return { ok: true };
    },
  };
}

describe('local Task errors, named as on AWS', () => {
  it('the test definitions are valid ASL', () => {
    assert.deepEqual(validateAsl(oneTask()), []);
  });

  it('a job function error keeps its name: JobInputError is caught at once, never retried', async () => {
    const f = failing(() => new JobInputError('no such table'));
    const out = (await runLocalStateMachine(oneTask(), {}, { handlers: { StepFunction: f.handler }, retryIntervalMs: 1 })) as Json;
    assert.equal(f.calls.n, 1);
    assert.deepEqual(out.error, { Error: 'JobInputError', Cause: 'no such table' });
  });

  it('any other failure is retried as States.TaskFailed (MaxAttempts 2) and then caught with its own name', async () => {
    const f = failing(() => new TypeError('boom'));
    const out = (await runLocalStateMachine(oneTask(), {}, { handlers: { StepFunction: f.handler }, retryIntervalMs: 1 })) as Json;
    assert.equal(f.calls.n, 3);
    assert.equal((out.error as Json).Error, 'TypeError');
    const throttled = failing(() => Object.assign(new Error('slow down'), { name: 'Lambda.TooManyRequestsException' }), 5);
    const ok = (await runLocalStateMachine(oneTask(), {}, { handlers: { StepFunction: throttled.handler }, retryIntervalMs: 1 })) as Json;
    assert.equal(throttled.calls.n, 6, 'a throttle is retried up to its own retrier (6 attempts)');
    assert.deepEqual(ok.step, { ok: true });
  });

  it('a Task past its TimeoutSeconds fails with States.Timeout, which States.TaskFailed does not match', async () => {
    const def: Json = {
      StartAt: 'Slow',
      States: {
        Slow: {
          Type: 'Task',
          Resource: taskResource('SlowFunction'),
          TimeoutSeconds: 1,
          Retry: [{ ErrorEquals: ['States.TaskFailed'], MaxAttempts: 3 }],
          Catch: [{ ErrorEquals: ['States.Timeout'], ResultPath: '$.error', Next: 'TimedOut' }],
          Next: 'Done',
        },
        TimedOut: { Type: 'Pass', End: true },
        Done: { Type: 'Succeed' },
      },
    };
    let calls = 0;
    const out = (await runLocalStateMachine(def, {}, {
      handlers: {
        SlowFunction: () => {
          calls++;
          return new Promise(() => {});
        },
      },
    })) as Json;
    assert.equal(calls, 1);
    assert.equal((out.error as Json).Error, 'States.Timeout');
  });

  it('States.Runtime is neither retried nor caught by States.ALL: the execution fails', async () => {
    const def: Json = {
      StartAt: 'Step',
      States: {
        Step: { Type: 'Task', Resource: taskResource('StepFunction'), Retry: [{ ErrorEquals: ['States.ALL'], MaxAttempts: 3 }], Catch: catchTo('Caught'), End: true },
        Caught: { Type: 'Succeed' },
      },
    };
    const f = failing(() => new LocalTaskError('States.Runtime', 'an unusable input'));
    await assert.rejects(runLocalStateMachine(def, {}, { handlers: { StepFunction: f.handler }, retryIntervalMs: 1 }), (e: unknown) => e instanceof LocalStateMachineError && e.error === 'States.Runtime');
    assert.equal(f.calls.n, 1);
  });

  it('an SDK integration error is ServiceName.Exception: a describeExport of an unknown export is DynamoDb.ExportNotFoundException', async () => {
    const def: Json = {
      StartAt: 'Status',
      States: {
        Status: {
          Type: 'Task',
          Resource: 'arn:aws:states:::aws-sdk:dynamodb:describeExport',
          Parameters: { 'ExportArn.$': '$.arn' },
          Retry: serviceRetry(),
          Catch: [{ ErrorEquals: ['DynamoDb.ExportNotFoundException'], ResultPath: '$.error', Next: 'Failed' }],
          End: true,
        },
        Failed: failState(),
      },
    };
    assert.deepEqual(validateAsl(def), []);
    await assert.rejects(
      runLocalStateMachine(def, { arn: 'arn:aws:dynamodb:us-east-1:000000000000:table/t/export/01764633600000-abcd1234' }, { handlers: {}, retryIntervalMs: 1 }),
      (e: unknown) => e instanceof LocalStateMachineError && e.error === 'DynamoDb.ExportNotFoundException',
    );
  });

  it('waitMs replaces every Wait state pause', async () => {
    const def: Json = { StartAt: 'Wait', States: { Wait: { Type: 'Wait', Seconds: 60, Next: 'Done' }, Done: { Type: 'Succeed' } } };
    const started = Date.now();
    assert.deepEqual(await runLocalStateMachine(def, { a: 1 }, { handlers: {}, waitMs: 0 }), { a: 1 });
    assert.ok(Date.now() - started < 30_000);
  });
});
