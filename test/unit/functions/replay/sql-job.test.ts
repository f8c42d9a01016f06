/**
 * The replay job on SQL, its Lambda steps on an in-memory S3 and DynamoDB: plan stores one
 * replay-select query (history before compaction's frontier, raw from it; the run's keys and
 * positions; UNLOAD by key bucket under the run) and the manifest, after the safety check;
 * buckets lists the buckets the query wrote as the Map's items; bucket merges a bucket's files and
 * applies them in key and position order, its result stored next to the run.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { BatchGetItemCommand, type DynamoDBClient, GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { parseConfig } from '../../../../lib/config/config.js';
import { replayContext } from '../../../../functions/composition.js';
import { compactionFrontierKey } from '../../../../functions/adapters/raw-layout.js';
import { encodePosition } from '../../../../functions/core/position.js';
import { replayStep, UnknownStepError } from '../../../../functions/replay/handler.js';
import { type ReplayRequest, summarizeReplay } from '../../../../functions/replay/job.js';
import { ReplayRefusedError } from '../../../../functions/replay/safety.js';
import { CHUNK_ROWS, eventsPrefix, listReplayBuckets, planReplaySql, replayBucket } from '../../../../functions/replay/sql-job.js';
import type { QueryRef } from '../../../../functions/jobs/sql-run.js';
import { bucketOf } from '../../../../functions/sql/bucket.js';
import { replayRowOf } from '../../../helpers/replay-rows.js';
import type { Log } from '../../../../functions/telemetry/sinks.js';
import { PgHistory } from '../../../helpers/debezium.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';
import { type FakeS3, fakeS3 } from '../../../helpers/fake-s3.js';
import { batchOf, v2Line } from '../../../helpers/raw-v2.js';

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 30, 12);
const config = parseConfig({
  name: 'sqlj',
  tables: [{ source: 'public.customers', target: 'sqlj-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'sqlj-raw' },
});
const BUCKETS = config.history.replayBuckets;

describe('replay on SQL (the job steps)', () => {
  let s3: FakeS3;
  let fake: FakeDynamoDB;
  let dynamodb: DynamoDBClient;
  const ctx = () => replayContext(config, { s3: s3.client, dynamodb }, quiet);
  const request = (over: Partial<ReplayRequest> = {}): ReplayRequest => ({ runId: 'replay-1', tables: ['public.customers'], into: 'live', now: NOW, ...over });
  const json = <T>(key: string): T => JSON.parse(Buffer.from(s3.get(key) ?? []).toString('utf8')) as T;

  beforeEach(() => {
    s3 = fakeS3();
    fake = new FakeDynamoDB(config.tables);
    // The status table: an empty erase ledger and no truncate watermarks.
    dynamodb = {
      send: async (cmd: unknown) => {
        if (cmd instanceof QueryCommand) return { Items: [] };
        if (cmd instanceof BatchGetItemCommand && Object.keys(cmd.input.RequestItems ?? {}).includes(config.statusTable)) return { Responses: { [config.statusTable]: [] } };
        return fake.send(cmd);
      },
    } as unknown as DynamoDBClient;
    const raw = batchOf(config.raw.prefix, [v2Line({ table: 'public.customers', key: { id: 1 }, arrivalTs: NOW - 3 * HOUR })]);
    s3.put(raw.key, raw.body);
  });
  afterEach(() => s3.restore());

  it('plans one replay-select query: raw from its oldest hour while nothing is compacted, the run\'s keys and positions', async () => {
    s3.put('jobs/replay/replay-1/keys.json', JSON.stringify({ 'public.customers': ['["7"]'] }));
    const plan = await planReplaySql(ctx(), request({ since: NOW - HOUR, fromPosition: 'a11', keysKey: 'jobs/replay/replay-1/keys.json' }));
    assert.deepEqual(plan.queries, { queriesKey: 'jobs/replay/replay-1/queries.json', count: 1 });
    assert.equal(plan.bucket, config.raw.bucket);
    const [query] = json<QueryRef[]>(plan.queries.queriesKey);
    assert.equal(query?.statement.name, 'replay-select');
    assert.deepEqual(query?.statement.args, {
      tables: ['public.customers'],
      since: NOW - HOUR,
      until: NOW + 1,
      buckets: BUCKETS,
      uncompactedFrom: NOW - 3 * HOUR,
      output: `s3://${config.raw.bucket}/${eventsPrefix(config, 'replay-1')}`,
      fromPosition: 'a11',
      keys: [{ table: 'public.customers', keyIds: ['["7"]'] }],
    });
    assert.match(query?.athena.QueryString ?? '', /^UNLOAD \(WITH sel AS/);
    assert.deepEqual(json<{ sql: unknown }>(plan.manifestKey).sql, { eventsPrefix: 'jobs/replay/replay-1/events/', buckets: BUCKETS, uncompactedFrom: NOW - 3 * HOUR });
  });

  it('reads history before compaction\'s frontier; once compacted, an unbounded live replay must be forced', async () => {
    s3.put(compactionFrontierKey(config.history.prefix), JSON.stringify({ compactedThrough: NOW - 2 * HOUR, cleanedThrough: null }));
    await assert.rejects(planReplaySql(ctx(), request()), ReplayRefusedError);
    await assert.rejects(planReplaySql(ctx(), request({ since: NOW - 30 * DAY })), ReplayRefusedError);
    const plan = await planReplaySql(ctx(), request({ force: true }));
    const [query] = json<QueryRef[]>(plan.queries.queriesKey);
    assert.equal(query?.statement.args.uncompactedFrom, NOW - HOUR);
    assert.equal(query?.statement.args.since, 0);
  });

  it('lists the buckets written as the Map\'s items, and applies a bucket\'s files merged by key and position', async () => {
    const plan = await planReplaySql(ctx(), request({ since: NOW - HOUR }));
    const history = new PgHistory();
    // Key 3's full image, then its update; written to two files of one bucket, each sorted.
    const events = [history.emit('customers', 'c', { id: 3 }, { name: 'a' }), history.emit('customers', 'u', { id: 3 }, { name: 'b' })];
    const row = (e: (typeof events)[number], i: number) =>
      replayRowOf(e, { keyId: '["3"]', keyJson: '{"id":3}', arrival: NOW - HOUR + i, sequence: String(100 + i), rawObject: 's3://sqlj-raw/raw/x.jsonl.gz' });
    const bucket = bucketOf('["3"]', BUCKETS);
    const prefix = `${eventsPrefix(config, 'replay-1')}bucket=${bucket}/`;
    s3.put(`${prefix}b.json.gz`, gzipSync(`${JSON.stringify(row(events[0] as never, 0))}\n`));
    s3.put(`${prefix}a.json.gz`, gzipSync(`${JSON.stringify(row(events[1] as never, 1))}\n`));
    s3.put(`${eventsPrefix(config, 'replay-1')}manifest-not-a-bucket.json`, '{}');
    const listed = (await replayStep({ step: 'buckets', manifestKey: plan.manifestKey }, ctx())) as { itemsKey: string; buckets: number; files: number };
    assert.deepEqual(listed, { itemsKey: 'jobs/replay/replay-1/buckets.json', buckets: 1, files: 2 });
    assert.deepEqual(json(listed.itemsKey), [{ bucket }]);

    const out = (await replayStep({ step: 'bucket', manifestKey: plan.manifestKey, bucket }, ctx())) as { batch: number; tally: { applied: number; selected: number } };
    assert.equal(out.batch, bucket);
    assert.equal(out.tally.selected, 2);
    assert.equal(fake.get('sqlj-customers', { id: { N: '3' } })?.name?.S, 'b');
    assert.equal(json<{ rows: number; files: number }>(`jobs/replay/replay-1/results/${String(bucket).padStart(6, '0')}.json`).rows, 2);
    const summary = await summarizeReplay(ctx(), { manifestKey: plan.manifestKey });
    assert.equal(summary.batches, 1);
    assert.equal(summary.batchesDone, 1);
    // A second run of the bucket writes nothing: the pre-read settles the key.
    const again = await replayBucket(ctx(), { manifestKey: plan.manifestKey, bucket });
    assert.equal(again.tally.writeRequests, 0);
    await assert.rejects(replayBucket(ctx(), { manifestKey: plan.manifestKey, bucket: BUCKETS }), /has no bucket/);
    await assert.rejects(listReplayBuckets(ctx(), { manifestKey: 'jobs/replay/none/manifest.json' }), /NoSuchKey|not the manifest/);
    assert.ok(CHUNK_ROWS >= 1000);
  });

  it('refuses an inverted or malformed range in the plan step, the state machine\'s first, before writing anything (issue 20, item 19)', async () => {
    const before = s3.keys();
    const inverted = [
      [{ since: NOW - HOUR, until: NOW - 2 * HOUR }, /since \(.*\) must be before until/],
      [{ fromPosition: encodePosition([9n]), toPosition: encodePosition([5n]) }, /fromPosition \S+ is above toPosition \S+: the range selects nothing/],
      [{ since: Number.NaN }, /since must be a time/],
      [{ runId: 'a/b' }, /runId must be/],
    ] as const;
    for (const [over, message] of inverted) {
      await assert.rejects(planReplaySql(ctx(), request(over)), message);
      await assert.rejects(replayStep({ step: 'plan-sql', request: request(over) }, ctx()), message);
    }
    assert.deepEqual(s3.keys(), before, 'no query, no manifest');
  });

  it('with erasures in the ledger, refuses to plan without the ledger key, naming it as erase does, or with a wrong one (issue 20, items 5 and 16)', async () => {
    const entry = { pipeline: { S: `${config.name}#erased` }, table: { S: 'public.customers#h' }, source: { S: 'public.customers' }, keyHash: { S: 'h' }, keyId: { S: 'k1' }, position: { S: '05' }, erasedAt: { N: '1' }, reason: { S: 'unit' } };
    const ledgerDb = (fingerprint: string | undefined) =>
      ({
        send: async (cmd: unknown) => {
          if (cmd instanceof QueryCommand) return { Items: [entry] };
          if (cmd instanceof GetItemCommand) return fingerprint === undefined ? {} : { Item: { fingerprint: { S: fingerprint } } };
          throw new Error(`unexpected ${String((cmd as object).constructor.name)}`);
        },
      }) as unknown as DynamoDBClient;
    const before = s3.keys();
    const noKey = replayContext(config, { s3: s3.client, dynamodb: ledgerDb(undefined) }, quiet, {});
    await assert.rejects(planReplaySql(noKey, request()), /Environment variable TIDEMARK_ERASE_KEY is required: it holds the erase ledger key \(replay\.erase\.ledgerKeySecret\)/);
    const wrongKey = replayContext(config, { s3: s3.client, dynamodb: ledgerDb('another-fingerprint') }, quiet, { TIDEMARK_ERASE_KEY: 'a-wrong-key-of-more-than-sixteen-bytes' });
    await assert.rejects(planReplaySql(wrongKey, request()), /erase ledger key with id k1 is not the key the ledger was written with/);
    assert.deepEqual(s3.keys(), before, 'nothing written');
  });

  it('runs plan-sql through the Lambda step, and refuses it without a request', async () => {
    const out = (await replayStep({ step: 'plan-sql', request: request({ since: NOW - HOUR }) }, ctx())) as { queries: { count: number } };
    assert.equal(out.queries.count, 1);
    await assert.rejects(replayStep({ step: 'plan-sql' }, ctx()), /without a request/);
  });

  it('refuses the steps of the object-batch machine, which is no longer deployed', async () => {
    for (const step of ['plan', 'batch']) await assert.rejects(replayStep({ step, request: request() } as never, ctx()), UnknownStepError);
  });

  it('a bucket in dry-run mode says per key what a run would do, and writes neither the table nor a result', async () => {
    const plan = await planReplaySql(ctx(), request({ since: NOW - HOUR }));
    const history = new PgHistory();
    const rows = [history.emit('customers', 'c', { id: 4 }, { name: 'a' }), history.emit('customers', 'u', { id: 4 }, { name: 'b' })].map((e, i) =>
      replayRowOf(e, { keyId: '["4"]', keyJson: '{"id":4}', arrival: NOW - HOUR + i, sequence: String(200 + i), rawObject: 's3://sqlj-raw/raw/y.jsonl.gz' }),
    );
    const bucket = bucketOf('["4"]', BUCKETS);
    s3.put(`${eventsPrefix(config, 'replay-1')}bucket=${bucket}/a.json.gz`, gzipSync(rows.map((r) => JSON.stringify(r)).join('\n')));
    const out = await replayBucket(ctx(), { manifestKey: plan.manifestKey, bucket }, { dryRun: true });
    assert.equal(out.rows, 2);
    assert.deepEqual(
      out.result.dryRun.map((l) => [l.table, l.key, l.stored, l.winner, l.action]),
      [['public.customers', '["4"]', null, rows[1]?.position, 'write']],
    );
    assert.equal(fake.get('sqlj-customers', { id: { N: '4' } }), undefined, 'nothing written');
    assert.equal(s3.keys().some((k) => k.includes('/results/')), false, 'no result object');
  });
});
