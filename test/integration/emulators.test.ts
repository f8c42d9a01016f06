/**
 * The integration target itself: provisioning (key schemas, TTL, stream, bucket, idempotence) and
 * the emulator behaviours the pipeline relies on. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/emulators.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ConditionalCheckFailedException, DescribeTableCommand, DescribeTimeToLiveCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamSummaryCommand, GetRecordsCommand, GetShardIteratorCommand, PutRecordCommand } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, HeadBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { endpointsFromEnv, envExports, isAlive } from '../../bin/local/emulators.js';
import { streamNameOf } from '../../bin/local/provision.js';
import { parseConfig } from '../../lib/config/config.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const config = uniqueConfig(
  parseConfig({
    name: 'it',
    tables: [
      { source: 'public.customers', target: 'it-customers', key: ['id'], keyTypes: { id: 'number' } },
      { source: 'public.order_lines', target: 'it-order-lines', key: ['order_id', 'line_no'], keyTypes: { order_id: 'number' } },
      { source: 'public.stock', target: 'it-stock', key: ['warehouse', 'sku', 'lot'] },
    ],
    raw: { bucket: 'it-raw' },
  }),
);

describe(`integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;

  before(async () => {
    const started = Date.now();
    target = await openTarget();
    console.log(`target ${target.name} opened in ${Date.now() - started} ms`);
    const report = await target.setup(config);
    assert.ok(report.resources.every((r) => r.action === 'created'), JSON.stringify(report.resources));
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('creates the target tables with the key layout and TTL on __expiresAt', async () => {
    const expected: Record<string, string> = {
      [config.tables[0]!.target]: 'id:HASH:N',
      [config.tables[1]!.target]: 'order_id:HASH:N,line_no:RANGE:S',
      [config.tables[2]!.target]: '__key:HASH:S',
      [config.statusTable]: 'pipeline:HASH:S,table:RANGE:S',
    };
    for (const [name, schema] of Object.entries(expected)) {
      const { Table: table } = await target.clients.dynamodb.send(new DescribeTableCommand({ TableName: name }));
      const types = new Map(table?.AttributeDefinitions?.map((a) => [a.AttributeName, a.AttributeType]));
      const actual = table?.KeySchema?.map((k) => `${k.AttributeName}:${k.KeyType}:${types.get(k.AttributeName)}`).join(',');
      assert.equal(actual, schema, name);
      assert.equal(table?.BillingModeSummary?.BillingMode, 'PAY_PER_REQUEST', name);
      // Every table has TTL on __expiresAt: tombstones, and the status table's per-hour rows.
      const ttl = await target.clients.dynamodb.send(new DescribeTimeToLiveCommand({ TableName: name }));
      assert.equal(ttl.TimeToLiveDescription?.AttributeName, '__expiresAt', name);
      assert.match(ttl.TimeToLiveDescription?.TimeToLiveStatus ?? '', /^ENABL(ED|ING)$/, name);
    }
  });

  it('creates an ACTIVE stream and the raw bucket', async () => {
    const { StreamDescriptionSummary: s } = await target.clients.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: streamNameOf(config) }));
    assert.equal(s?.StreamStatus, 'ACTIVE');
    assert.equal(s?.OpenShardCount, 1);
    await target.clients.s3.send(new HeadBucketCommand({ Bucket: config.raw.bucket }));
  });

  it('reports everything already present when provisioning again', async () => {
    const report = await target.setup(config);
    assert.equal(report.changed, false);
    assert.equal(report.resources.length, 6);
    assert.deepEqual(new Set(report.resources.map((r) => r.action)), new Set(['present']));
  });

  it('round-trips a record through Kinesis', async () => {
    const StreamName = streamNameOf(config);
    const data = Buffer.from(JSON.stringify({ op: 'c', id: 1 }));
    const put = await target.clients.kinesis.send(new PutRecordCommand({ StreamName, PartitionKey: 'k1', Data: data }));
    const { ShardIterator } = await target.clients.kinesis.send(
      new GetShardIteratorCommand({ StreamName, ShardId: put.ShardId, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: put.SequenceNumber }),
    );
    const { Records } = await target.clients.kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: 10 }));
    assert.equal(Records?.[0]?.SequenceNumber, put.SequenceNumber);
    assert.equal(Records?.[0]?.PartitionKey, 'k1');
    assert.deepEqual(Buffer.from(Records?.[0]?.Data ?? []), data);
  });

  it('round-trips a gzip object through S3 byte for byte', async () => {
    const body = gzipSync(Buffer.from(`${'{"op":"u","id":42}\n'.repeat(500)}`));
    const Key = 'raw/2024/01/01/part-0001.jsonl.gz';
    await target.clients.s3.send(
      new PutObjectCommand({ Bucket: config.raw.bucket, Key, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip', Metadata: { records: '500' } }),
    );
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key }));
    const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
    assert.ok(bytes.equals(body), `got ${bytes.length} bytes, sent ${body.length}`);
    assert.equal(got.Metadata?.records, '500');
    assert.equal(gunzipSync(bytes).toString().split('\n').length, 501);
  });

  it('returns the old item on a failed condition with ALL_OLD', async () => {
    const TableName = config.tables[0]!.target;
    await target.clients.dynamodb.send(new PutItemCommand({ TableName, Item: { id: { N: '7' }, __pos: { S: '0005' }, name: { S: 'old' } } }));
    const stale = new PutItemCommand({
      TableName,
      Item: { id: { N: '7' }, __pos: { S: '0003' }, name: { S: 'stale' } },
      ConditionExpression: 'attribute_not_exists(#pos) OR #pos < :pos',
      ExpressionAttributeNames: { '#pos': '__pos' },
      ExpressionAttributeValues: { ':pos': { S: '0003' } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    const err = await target.clients.dynamodb.send(stale).then(
      () => assert.fail('the stale write must fail its condition'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ConditionalCheckFailedException, String(err));
    assert.deepEqual(err.Item, { id: { N: '7' }, __pos: { S: '0005' }, name: { S: 'old' } });
  });

  it('stops every emulator process on close()', async () => {
    const pids = target.emulators ? Object.values(target.emulators.pids) : [];
    await target.teardown(config);
    await target.close();
    for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} is still running`);
  });
});

describe('envExports / endpointsFromEnv', () => {
  it('round-trips endpoints through shell exports', () => {
    const endpoints = {
      dynamodb: 'http://127.0.0.1:8000',
      kinesis: 'http://127.0.0.1:4567',
      s3: 'http://127.0.0.1:4569',
      region: 'eu-west-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: "se'cret",
    };
    const text = envExports(endpoints);
    const env: Record<string, string> = {};
    for (const line of text.trim().split('\n')) {
      const match = /^export ([A-Z0-9_]+)=(.*)$/.exec(line);
      assert.ok(match, line);
      const raw = match[2]!;
      env[match[1]!] = raw.startsWith("'") ? raw.slice(1, -1).replaceAll(`'\\''`, "'") : raw;
    }
    assert.equal(env.AWS_DEFAULT_REGION, 'eu-west-1');
    assert.deepEqual(endpointsFromEnv(env), endpoints);
    assert.equal(endpointsFromEnv({ AWS_ENDPOINT_URL_DYNAMODB: 'http://x' }), null);
  });
});
