/** The replay and erase state machines: valid ASL, runnable by the local runner, sized from config. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forEachState, localizeDefinition, runLocalStateMachine } from '../../../../bin/local/stepfunctions.js';
import { ERASE_FUNCTION, eraseDefinition, REPLAY_FUNCTION, replayDefinition, replaySqlDefinition } from '../../../../lib/replay/definitions.js';
import type { JsonValue } from '../../../../functions/core/json.js';
import { validateAsl } from '../../../helpers/asl.js';

const opts = { maxConcurrency: 7, toleratedFailurePercentage: 5 };

describe('replay and erase definitions', () => {
  it('are valid ASL that the local runner accepts, with MaxConcurrency and the tolerance from config', () => {
    for (const d of [replayDefinition(opts), replaySqlDefinition(opts), eraseDefinition(opts)]) {
      assert.deepEqual(validateAsl(localizeDefinition(d).definition), []);
      let maps = 0;
      forEachState(d, (_n, s) => {
        if (s.Type !== 'Map') return;
        maps++;
        assert.equal(s.MaxConcurrency, 7);
        assert.equal(s.ToleratedFailurePercentage, 5);
        assert.deepEqual((s.ItemProcessor as { ProcessorConfig: unknown }).ProcessorConfig, { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' });
      });
      assert.equal(maps, 1);
    }
  });

  it('on SQL: one selection query (the query loop over Athena), then a Map whose ItemReader reads the buckets from S3', () => {
    const d = replaySqlDefinition(opts);
    const states = d.States as Record<string, Record<string, unknown>>;
    assert.equal(states.SelectRun?.Resource, 'arn:aws:states:::athena:startQueryExecution.sync');
    assert.deepEqual((states.Plan?.Parameters as Record<string, unknown> | undefined)?.step, 'plan-sql');
    const map = states.Replay as Record<string, unknown>;
    assert.equal(map.ItemsPath, undefined, 'items never inline in the state');
    assert.deepEqual(map.ItemReader, { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON' }, Parameters: { 'Bucket.$': '$.plan.bucket', 'Key.$': '$.buckets.itemsKey' } });
    const bucket = (map.ItemProcessor as { States: Record<string, Record<string, unknown>> }).States.Bucket;
    assert.deepEqual(bucket?.Parameters, { step: 'bucket', 'bucket.$': '$.bucket', 'manifestKey.$': '$.manifestKey' });
  });

  it('runs plan → one batch per item → summarize, and verify only for a fresh table', async () => {
    for (const fresh of [null, 'created']) {
      const steps: string[] = [];
      const out = (await runLocalStateMachine(replayDefinition(opts), { runId: 'r' }, {
        handlers: {
          [REPLAY_FUNCTION]: (input): JsonValue => {
            const i = input as { step: string; batch?: number; manifestKey?: string };
            steps.push(i.batch === undefined ? i.step : `${i.step}:${i.batch}:${i.manifestKey}`);
            if (i.step === 'plan') return { manifestKey: 'm', batches: [0, 1, 2], freshTable: fresh };
            if (i.step === 'batch') return { batch: i.batch ?? -1, tally: { applied: 1 } };
            return { ok: true };
          },
        },
      })) as Record<string, unknown>;
      assert.deepEqual(steps.filter((s) => !s.startsWith('batch')), fresh ? ['plan', 'summarize', 'verify'] : ['plan', 'summarize']);
      assert.deepEqual(steps.filter((s) => s.startsWith('batch')).sort(), ['batch:0:m', 'batch:1:m', 'batch:2:m']);
      assert.deepEqual(out.summary, { ok: true });
    }
  });

  it('fails as ReplayIncomplete when batches fail, after summarizing what was done', async () => {
    const steps: string[] = [];
    await assert.rejects(
      runLocalStateMachine(replayDefinition({ maxConcurrency: 1, toleratedFailurePercentage: 0 }), { runId: 'r' }, {
        retryIntervalMs: 1,
        handlers: {
          [REPLAY_FUNCTION]: (input): JsonValue => {
            const i = input as { step: string; batch?: number };
            steps.push(i.step);
            if (i.step === 'plan') return { manifestKey: 'm', batches: [0], freshTable: null };
            if (i.step === 'batch') throw new Error('writes failed');
            return {};
          },
        },
      }),
      /ReplayIncomplete/,
    );
    assert.ok(steps.includes('summarize'));
  });

  it('erase runs begin → find → rewrite per batch → finish', async () => {
    const steps: string[] = [];
    await runLocalStateMachine(eraseDefinition(opts), { runId: 'e', requestKey: 'k' }, {
      handlers: {
        [ERASE_FUNCTION]: (input): JsonValue => {
          const i = input as { step: string; runId: string; requestKey: string };
          assert.equal(i.runId, 'e');
          assert.equal(i.requestKey, 'k');
          steps.push(i.step);
          if (i.step === 'find') return { manifestKey: 'm', batches: [0, 1] };
          if (i.step === 'rewrite') return { batch: 0 };
          return {};
        },
      },
    });
    assert.deepEqual(steps, ['begin', 'find', 'rewrite', 'rewrite', 'finish']);
  });

  it('erase: a failing step goes through Abandon, which deletes the request object, before the run fails (issue 20, item 6)', async () => {
    for (const failing of ['begin', 'find', 'finish']) {
      const steps: string[] = [];
      const run = runLocalStateMachine(eraseDefinition(opts), { runId: 'e', requestKey: 'jobs/erase/e/request.json' }, {
        handlers: {
          [ERASE_FUNCTION]: (input): JsonValue => {
            const i = input as { step: string; requestKey?: string };
            steps.push(i.step);
            if (i.step === failing) throw new Error(`${failing} failed`);
            if (i.step === 'find') return { manifestKey: 'm', batches: [] };
            if (i.step === 'abandon') return { requestDeleted: true, requestKey: i.requestKey ?? null };
            return { ok: true };
          },
        },
      });
      await assert.rejects(run);
      assert.equal(steps.at(-1), 'abandon', `${failing}: ${steps.join(' → ')}`);
      assert.equal(steps.filter((s) => s === 'abandon').length, 1);
    }
  });
});
