/**
 * The local Step Functions runner executes the deployed definition unchanged, with in-process task
 * handlers: `${Name}` Task resources are substituted, handlers can be registered by full resource,
 * and whatever has no local implementation is refused. The AWS-native tasks have their own tests
 * (map-item-reader, athena-local, dynamodb-export).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateAsl } from '../../../helpers/asl.js';
import {
  forEachState,
  type LocalProgressEvent,
  LocalStateMachineError,
  localFunctionArn,
  localizeDefinition,
  runLocalStateMachine,
  taskResource,
} from '../../../../bin/local/stepfunctions.js';

const retry = [{ ErrorEquals: ['States.TaskFailed'], IntervalSeconds: 2, MaxAttempts: 2, BackoffRate: 2 }];
const catchAll = [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Failed' }];

/** A small machine in the shape of the jobs: plan, a Distributed Map over inline items, a report. */
function definition(): Record<string, unknown> {
  return {
    Comment: 'runner test',
    StartAt: 'Plan',
    States: {
      Plan: { Type: 'Task', Resource: taskResource('PlanFunction'), TimeoutSeconds: 30, ResultPath: '$.plan', Retry: retry, Catch: catchAll, Next: 'Work' },
      Work: {
        Type: 'Map',
        ItemsPath: '$.plan.items',
        MaxConcurrency: 2,
        ItemSelector: { 'item.$': '$$.Map.Item.Value', 'runId.$': '$.runId' },
        ItemProcessor: {
          ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
          StartAt: 'Item',
          States: { Item: { Type: 'Task', Resource: taskResource('ItemFunction'), TimeoutSeconds: 30, Retry: retry, End: true } },
        },
        Label: 'Work',
        ToleratedFailurePercentage: 0,
        ResultPath: '$.work',
        Catch: catchAll,
        Next: 'Report',
      },
      Report: { Type: 'Task', Resource: taskResource('ReportFunction'), TimeoutSeconds: 30, Retry: retry, Catch: catchAll, End: true },
      Failed: { Type: 'Fail', ErrorPath: '$.error.Error', CausePath: '$.error.Cause' },
    },
  };
}

describe('local Step Functions runner', () => {
  it('the test definition is valid ASL', () => {
    assert.deepEqual(validateAsl(definition()), []);
    const broken = definition();
    (broken.States as Record<string, Record<string, unknown>>).Plan = { Type: 'Task', Resource: taskResource('PlanFunction'), Next: 'Nowhere' };
    assert.notDeepEqual(validateAsl(broken), []);
  });

  it('runs every Task through its in-process handler, Map iterations included, and reports progress', async () => {
    const seen: unknown[] = [];
    const events: LocalProgressEvent[] = [];
    const output = await runLocalStateMachine(definition(), { runId: 'r1' }, {
      handlers: {
        PlanFunction: () => ({ items: [1, 2, 3] }),
        ItemFunction: (input) => {
          seen.push(input);
          return { done: (input as { item: number }).item * 10 };
        },
        ReportFunction: (input) => ({ total: (input as { work: { done: number }[] }).work.reduce((n, w) => n + w.done, 0) }),
      },
      onProgress: (e) => events.push(e),
    });
    assert.deepEqual(output, { total: 60 });
    assert.deepEqual(
      seen.sort((a, b) => (a as { item: number }).item - (b as { item: number }).item),
      [1, 2, 3].map((item) => ({ item, runId: 'r1' })),
    );
    assert.equal(events.filter((e) => e.type === 'MapIterationSucceeded').length, 3);
    assert.ok(events.some((e) => e.type === 'StateEntered' && e.state === 'Report'));
    assert.equal(events.at(-1)?.type, 'ExecutionSucceeded');
  });

  it('retries a failed task as the definition says, then succeeds', async () => {
    let calls = 0;
    const events: LocalProgressEvent[] = [];
    await runLocalStateMachine(definition(), { runId: 'r2' }, {
      handlers: {
        PlanFunction: () => {
          calls++;
          if (calls === 1) throw new Error('transient');
          return { items: [] };
        },
        ItemFunction: () => ({}),
        ReportFunction: () => ({ ok: true }),
      },
      onProgress: (e) => events.push(e),
      retryIntervalMs: 1,
    });
    assert.equal(calls, 2);
    assert.equal(events.filter((e) => e.type === 'StateRetried' && e.state === 'Plan').length, 1);
  });

  it('a task that keeps failing is caught and the execution fails with its error name', async () => {
    class PlanBrokeError extends Error {
      override name = 'PlanBrokeError';
    }
    await assert.rejects(
      runLocalStateMachine(definition(), { runId: 'r3' }, {
        handlers: {
          PlanFunction: () => {
            throw new PlanBrokeError('no raw bucket');
          },
          ItemFunction: () => ({}),
          ReportFunction: () => ({}),
        },
        retryIntervalMs: 1,
      }),
      (err: unknown) => err instanceof LocalStateMachineError && err.error === 'PlanBrokeError' && /no raw bucket/.test(err.message),
    );
  });

  it('localizing substitutes Task resources and touches nothing else, without mutating its input', () => {
    const original = definition();
    const before = structuredClone(original);
    const local = localizeDefinition(original);
    assert.deepEqual(original, before);
    assert.deepEqual([...local.tasks.entries()].sort(), [
      ['Item', 'ItemFunction'],
      ['Plan', 'PlanFunction'],
      ['Report', 'ReportFunction'],
    ]);
    // Put the placeholders back: the rest must be identical.
    const restored = structuredClone(local.definition);
    forEachState(restored, (name, state) => {
      const fn = local.tasks.get(name);
      if (fn) {
        assert.equal(state.Resource, localFunctionArn(fn));
        state.Resource = taskResource(fn);
      }
    });
    assert.deepEqual(restored, original);
  });

  it('refuses what the local engine cannot run, naming the state and field', () => {
    const def = definition();
    const states = def.States as Record<string, Record<string, unknown>>;
    (states.Work as Record<string, unknown>).ResultWriter = { Resource: 'arn:aws:states:::s3:putObject', Parameters: { Bucket: 'b', Prefix: 'results' } };
    (states.Report as Record<string, unknown>).Resource = 'arn:aws:states:::aws-sdk:sqs:sendMessage';
    (states.Plan as Record<string, unknown>).Resource = 'arn:aws:lambda:us-east-1:123456789012:function:plan';
    assert.deepEqual(validateAsl(def), []);
    assert.throws(() => localizeDefinition(def), (err: Error) => {
      assert.match(err.message, /state "Work": ResultWriter is not supported locally/);
      assert.match(err.message, /state "Report": AWS SDK integration arn:aws:states:::aws-sdk:sqs:sendMessage is not run locally \(register a handler under that resource in options.handlers\)/);
      assert.match(err.message, /state "Plan": resource arn:aws:lambda:us-east-1:123456789012:function:plan is not run locally/);
      return true;
    });
    assert.throws(() => localizeDefinition({ ...definition(), QueryLanguage: 'JSONata' }), /JSONata/);
  });

  it('runs a Task through a handler registered under its full resource, before any built-in one', async () => {
    const def = definition();
    const states = def.States as Record<string, Record<string, unknown>>;
    states.Report = { Type: 'Task', Resource: 'arn:aws:states:::aws-sdk:sqs:sendMessage', Parameters: { QueueUrl: 'q', 'MessageBody.$': '$.work' }, End: true };
    states.Plan = { ...states.Plan, Resource: 'arn:aws:states:::athena:startQueryExecution.sync', Parameters: { QueryString: 'SELECT 1' } };
    assert.deepEqual(validateAsl(def), []);
    const sent: unknown[] = [];
    const output = await runLocalStateMachine(def, { runId: 'r5' }, {
      handlers: {
        'arn:aws:states:::athena:startQueryExecution.sync': () => ({ items: [1] }),
        ItemFunction: (input) => ({ done: (input as { item: number }).item }),
        'arn:aws:states:::aws-sdk:sqs:sendMessage': (input) => {
          sent.push(input);
          return { MessageId: 'm1' };
        },
      },
    });
    assert.deepEqual(output, { MessageId: 'm1' });
    assert.deepEqual(sent, [{ QueueUrl: 'q', MessageBody: [{ done: 1 }] }]);
  });

  it('refuses to start when a task has no handler', async () => {
    await assert.rejects(
      runLocalStateMachine(definition(), {}, { handlers: { PlanFunction: () => ({ items: [] }), ReportFunction: () => ({}) } }),
      /no local handler for: Item → ItemFunction/,
    );
  });
});
