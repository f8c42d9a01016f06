/** The replay and erase state machines: valid ASL, runnable by the local runner, sized from config. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forEachState, localizeDefinition, runLocalStateMachine } from '../../../../bin/local/stepfunctions.js';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { QUERY_AT_FUNCTION } from '../../../../lib/jobs/asl.js';
import { ERASE_FUNCTION, eraseDefinition, REPLAY_FUNCTION, replaySqlDefinition } from '../../../../lib/replay/definitions.js';
import type { JsonValue } from '../../../../functions/core/json.js';
import { validateAsl } from '../../../helpers/asl.js';

const opts = { maxConcurrency: 7, toleratedFailurePercentage: 5 };

describe('replay and erase definitions', () => {
  it('are valid ASL that the local runner accepts, with MaxConcurrency and the tolerance from config', () => {
    for (const d of [replaySqlDefinition(opts), eraseDefinition(opts)]) {
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

  /** The SQL machine's tasks in-process: plan-sql (one stored query), the fetch, the Athena task, the buckets in S3. */
  function sqlRun(steps: string[], options: { fresh: string | null; buckets: number[]; failBucket?: number }) {
    const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    mockClient(client)
      .on(GetObjectCommand)
      .callsFake((input) => {
        steps.push(`items ${input.Bucket}/${input.Key}`);
        return { Body: { transformToByteArray: async () => new Uint8Array(Buffer.from(JSON.stringify(options.buckets.map((bucket) => ({ bucket }))))) } };
      });
    return {
      s3: client,
      retryIntervalMs: 1,
      athena: (ref: { name: string }) => {
        steps.push(`athena ${ref.name}`);
        return { dataScannedInBytes: 0 };
      },
      handlers: {
        [QUERY_AT_FUNCTION]: (input: JsonValue): JsonValue => {
          const i = input as { queriesKey: string; index: number };
          steps.push(`fetch ${i.queriesKey}#${i.index}`);
          return { query: { statement: { name: 'replay-select', args: {}, index: 0 }, athena: { QueryString: 'UNLOAD …' } }, next: i.index + 1, more: false };
        },
        [REPLAY_FUNCTION]: (input: JsonValue): JsonValue => {
          const i = input as { step: string; bucket?: number; manifestKey?: string };
          steps.push(i.bucket === undefined ? i.step : `${i.step}:${i.bucket}:${i.manifestKey}`);
          if (i.step === 'plan-sql') return { runId: 'r', manifestKey: 'm', bucket: 'raw', queries: { queriesKey: 'q', count: 1 }, freshTable: options.fresh };
          if (i.step === 'buckets') return { itemsKey: 'r/buckets.json', buckets: options.buckets.length, files: options.buckets.length };
          if (i.step === 'bucket') {
            if (i.bucket === options.failBucket) throw new Error('writes failed');
            return { batch: i.bucket ?? -1, tally: { applied: 1 } };
          }
          return { ok: true };
        },
      },
    };
  }

  it('on SQL runs plan → the selection query → buckets → one apply per bucket read from S3 → summarize, and verify only for a fresh table', async () => {
    for (const fresh of [null, 'created']) {
      const steps: string[] = [];
      const out = (await runLocalStateMachine(replaySqlDefinition(opts), { runId: 'r' }, sqlRun(steps, { fresh, buckets: [0, 3, 5] }))) as Record<string, unknown>;
      const serial = steps.filter((s) => !s.startsWith('bucket:'));
      assert.deepEqual(serial, ['plan-sql', 'fetch q#0', 'athena replay-select', 'buckets', 'items raw/r/buckets.json', 'summarize', ...(fresh ? ['verify'] : [])]);
      assert.deepEqual(steps.filter((s) => s.startsWith('bucket:')).sort(), ['bucket:0:m', 'bucket:3:m', 'bucket:5:m']);
      assert.deepEqual(out.summary, { ok: true });
    }
  });

  it('on SQL fails as ReplayIncomplete when a bucket fails past the tolerance, after summarizing what was done', async () => {
    const steps: string[] = [];
    await assert.rejects(
      runLocalStateMachine(replaySqlDefinition({ maxConcurrency: 1, toleratedFailurePercentage: 0 }), { runId: 'r' }, sqlRun(steps, { fresh: null, buckets: [0, 1], failBucket: 1 })),
      /ReplayIncomplete/,
    );
    assert.ok(steps.includes('summarize'));
    assert.ok(steps.includes('bucket:0:m'));
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
