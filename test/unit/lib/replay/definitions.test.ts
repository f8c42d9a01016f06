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
import { type FakeS3, fakeS3 } from '../../../helpers/fake-s3.js';

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

  /** The erase machine run locally with stubbed steps: the query loops' fetch, Athena, and the items object in a fake S3. */
  async function runErase(o: { failing?: string; batches?: number; s3: FakeS3 }): Promise<{ steps: string[]; statements: string[]; output: Promise<unknown> }> {
    const steps: string[] = [];
    const statements: string[] = [];
    const queries: Record<string, string[]> = { 'q/find': ['erase-find-raw', 'erase-find-history'], 'q/history': ['erase-history', 'erase-expected', 'optimize', 'optimize', 'vacuum', 'vacuum'] };
    const batches = o.batches ?? 2;
    o.s3.put('jobs/erase/e/objects.jsonl', Array.from({ length: batches }, (_, b) => JSON.stringify({ batch: b, objects: [`s3://raw/raw/o${b}.jsonl.gz`] })).join('\n'));
    const fail = (step: string) => {
      if (step === o.failing) throw new Error(`${step} failed`);
    };
    const output = runLocalStateMachine(eraseDefinition(opts), { runId: 'e', requestKey: 'jobs/erase/e/request.json' }, {
      retryIntervalMs: 1,
      s3: o.s3.client,
      athena: (statement) => {
        fail(statement.name);
        statements.push(statement.name);
        return { dataScannedInBytes: 0 };
      },
      handlers: {
        [QUERY_AT_FUNCTION]: (input): JsonValue => {
          const i = input as { queriesKey: string; index: number };
          const names = queries[i.queriesKey] ?? [];
          const name = names[i.index] ?? 'none';
          return { query: { statement: { name, args: {} }, athena: { QueryString: `-- ${name}` } }, next: i.index + 1, more: i.index + 1 < names.length };
        },
        [ERASE_FUNCTION]: (input): JsonValue => {
          const i = input as { step: string; runId: string; requestKey: string; batch?: number; objects?: string[] };
          assert.equal(i.runId, 'e');
          steps.push(i.batch === undefined ? i.step : `${i.step}:${i.batch}:${i.objects?.join(',')}`);
          fail(i.step);
          if (i.step === 'begin') return { bucket: 'raw', keys: 3, queries: { find: { queriesKey: 'q/find', count: 2 }, history: { queriesKey: 'q/history', count: 6 } } };
          if (i.step === 'objects') return { bucket: 'raw', itemsKey: 'jobs/erase/e/objects.jsonl', objects: batches, batches };
          if (i.step === 'rewrite') return { batch: i.batch ?? -1, linesRemoved: 1 };
          return { ok: true };
        },
      },
    });
    return { steps, statements, output };
  }

  it('erase on SQL: begin → find queries → objects → one rewrite per item the ItemReader reads → history queries → finish', async () => {
    const s3 = fakeS3();
    try {
      const run = await runErase({ s3 });
      const out = (await run.output) as Record<string, unknown>;
      assert.deepEqual(run.steps.filter((s) => !s.startsWith('rewrite')), ['begin', 'objects', 'finish']);
      assert.deepEqual(run.steps.filter((s) => s.startsWith('rewrite')).sort(), ['rewrite:0:s3://raw/raw/o0.jsonl.gz', 'rewrite:1:s3://raw/raw/o1.jsonl.gz']);
      assert.deepEqual(run.statements, ['erase-find-raw', 'erase-find-history', 'erase-history', 'erase-expected', 'optimize', 'optimize', 'vacuum', 'vacuum']);
      assert.deepEqual(out.summary, { ok: true });
      // Nothing found in raw: no Map, history still erased.
      const none = await runErase({ s3, batches: 0 });
      await none.output;
      assert.deepEqual(none.steps, ['begin', 'objects', 'finish']);
      assert.equal(none.statements.length, 8);
    } finally {
      s3.restore();
    }
  });

  it('erase on SQL: its queries run in the Athena workgroup, the Map reads its items from S3, and no state carries a key or the objects list', () => {
    const d = eraseDefinition(opts);
    const states = d.States as Record<string, Record<string, unknown>>;
    for (const loop of ['Find', 'History']) {
      assert.equal(states[`${loop}Run`]?.Resource, 'arn:aws:states:::athena:startQueryExecution.sync');
      assert.equal((states[`${loop}Run`]?.Parameters as Record<string, unknown> | undefined)?.WorkGroup, ["$", "{AthenaWorkGroup}"].join(""));
      assert.equal(states[`${loop}Fetch`]?.Resource, ['$', '{JobQueryAtFunction}'].join(''));
    }
    const map = states.Rewrite as Record<string, unknown>;
    assert.equal(map.ItemsPath, undefined, 'items never inline in the state');
    assert.deepEqual(map.ItemReader, { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSONL' }, Parameters: { 'Bucket.$': '$.objects.bucket', 'Key.$': '$.objects.itemsKey' } });
    assert.equal(map.ResultPath, null, 'the batches\' results stay in S3');
    assert.equal(JSON.stringify(d).includes('$.request.'), false);
  });

  it('erase: a failing step or query goes through Abandon, which deletes the request and the run\'s keys, before the run fails (issue 20, item 6)', async () => {
    for (const failing of ['begin', 'erase-find-raw', 'objects', 'erase-history', 'vacuum', 'finish']) {
      const s3 = fakeS3();
      try {
        const run = await runErase({ s3, failing });
        await assert.rejects(run.output);
        assert.equal(run.steps.at(-1), 'abandon', `${failing}: ${run.steps.join(' → ')}`);
        assert.equal(run.steps.filter((s) => s === 'abandon').length, 1);
      } finally {
        s3.restore();
      }
    }
  });

  it('erase: objects that could not be rewritten still leave history erased and the run finished, then fail it as EraseIncomplete', async () => {
    const s3 = fakeS3();
    try {
      const run = await runErase({ s3, failing: 'rewrite' });
      await assert.rejects(run.output, /EraseIncomplete/);
      assert.ok(run.statements.includes('erase-history'));
      assert.equal(run.steps.at(-1), 'finish');
      assert.ok(!run.steps.includes('abandon'), 'finish deleted the keys itself');
    } finally {
      s3.restore();
    }
  });
});
