/**
 * The Lambda's own clients (`createRuntimeClients`, trimmed by `lean`: no user-agent, logger or
 * recursion-detection middleware, middleware resolved once per command, one reused signer, S3
 * checksums only when required) against the integration target: guarded PutItem and UpdateItem,
 * BatchGetItem across tables, Query, and S3 PutObject / GetObject, concurrently where the Lambda
 * is concurrent. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/sdk-clients.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { BatchGetItemCommand, ConditionalCheckFailedException, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { parseConfig } from '../../lib/config/config.js';
import { createRuntimeClients, type RuntimeClients } from '../../functions/adapters/clients.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const config = uniqueConfig(
  parseConfig({
    name: 'sdk',
    tables: [
      { source: 'public.customers', target: 'sdk-customers', key: ['id'], keyTypes: { id: 'number' } },
      { source: 'public.order_lines', target: 'sdk-order-lines', key: ['order_id', 'line_no'], keyTypes: { order_id: 'number' } },
    ],
    raw: { bucket: 'sdk-raw' },
  }),
);
const customers = config.tables[0]?.target ?? '';
const lines = config.tables[1]?.target ?? '';

/** The guarded write: lands only if the row is new or its stored position is older. */
const guardedPut = (table: string, item: Record<string, { S: string } | { N: string }>, pos: string) =>
  new PutItemCommand({
    TableName: table,
    Item: { ...item, __pos: { S: pos } },
    ConditionExpression: 'attribute_not_exists(#pos) OR #pos < :pos',
    ExpressionAttributeNames: { '#pos': '__pos' },
    ExpressionAttributeValues: { ':pos': { S: pos } },
  });

describe(`lean runtime clients (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let clients: RuntimeClients;

  before(async () => {
    target = await openTarget();
    await target.setup(config);
    const e = target.endpoints;
    // The Lambda's clients read where and who from the environment (as on LocalStack); this file
    // runs in its own process.
    if (e !== null) {
      Object.assign(process.env, {
        AWS_ENDPOINT_URL_DYNAMODB: e.dynamodb,
        AWS_ENDPOINT_URL_S3: e.s3,
        AWS_REGION: e.region,
        AWS_ACCESS_KEY_ID: e.accessKeyId,
        AWS_SECRET_ACCESS_KEY: e.secretAccessKey,
      });
    }
    clients = createRuntimeClients({}, process.env);
  });

  after(async () => {
    clients?.dynamodb.destroy();
    clients?.s3.destroy();
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('guarded PutItem and UpdateItem: newer positions land, older ones fail the condition', async () => {
    const { dynamodb } = clients;
    await dynamodb.send(guardedPut(customers, { id: { N: '1' }, name: { S: 'Ada' } }, 'p0002'));
    await assert.rejects(dynamodb.send(guardedPut(customers, { id: { N: '1' }, name: { S: 'stale' } }, 'p0001')), ConditionalCheckFailedException);
    const update = (pos: string, name: string) =>
      new UpdateItemCommand({
        TableName: customers,
        Key: { id: { N: '1' } },
        UpdateExpression: 'SET #name = :name, #pos = :pos',
        ConditionExpression: 'attribute_not_exists(#pos) OR #pos < :pos',
        ExpressionAttributeNames: { '#name': 'name', '#pos': '__pos' },
        ExpressionAttributeValues: { ':name': { S: name }, ':pos': { S: pos } },
        ReturnValues: 'ALL_NEW',
      });
    const updated = await dynamodb.send(update('p0003', 'Ada L.'));
    assert.deepEqual(updated.Attributes, { id: { N: '1' }, name: { S: 'Ada L.' }, __pos: { S: 'p0003' } });
    await assert.rejects(dynamodb.send(update('p0002', 'older')), ConditionalCheckFailedException);
  });

  it('40 concurrent guarded writes to two tables, read back with BatchGetItem and Query', async () => {
    const { dynamodb } = clients;
    const writes = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0
        ? guardedPut(customers, { id: { N: String(100 + i) }, name: { S: `c${i}` } }, `p${i}`)
        : guardedPut(lines, { order_id: { N: '7' }, line_no: { S: String(i).padStart(3, '0') }, sku: { S: `sku-${i}` } }, `p${i}`),
    );
    await Promise.all(writes.map((w) => dynamodb.send(w)));

    const got = await dynamodb.send(
      new BatchGetItemCommand({
        RequestItems: {
          [customers]: { Keys: Array.from({ length: 20 }, (_, k) => ({ id: { N: String(100 + 2 * k) } })) },
          [lines]: { Keys: [{ order_id: { N: '7' }, line_no: { S: '001' } }, { order_id: { N: '7' }, line_no: { S: '039' } }] },
        },
      }),
    );
    assert.deepEqual(got.UnprocessedKeys ?? {}, {});
    const names = (got.Responses?.[customers] ?? []).map((item) => item.name?.S).sort();
    assert.deepEqual(names, Array.from({ length: 20 }, (_, k) => `c${2 * k}`).sort());
    assert.deepEqual((got.Responses?.[lines] ?? []).map((item) => item.sku?.S).sort(), ['sku-1', 'sku-39']);

    const query = await dynamodb.send(
      new QueryCommand({ TableName: lines, KeyConditionExpression: 'order_id = :o AND line_no BETWEEN :a AND :b', ExpressionAttributeValues: { ':o': { N: '7' }, ':a': { S: '010' }, ':b': { S: '019' } } }),
    );
    assert.deepEqual(
      query.Items?.map((item) => item.line_no?.S),
      ['011', '013', '015', '017', '019'],
    );
  });

  it('S3 PutObject and GetObject of gzip raw batches, concurrently, come back byte for byte', async () => {
    const { s3 } = clients;
    const bucket = config.raw.bucket;
    const bodies = Array.from({ length: 8 }, (_, i) => gzipSync(Buffer.from(`${JSON.stringify({ batch: i, rows: Array.from({ length: 200 }, (_, r) => ({ r, v: `value-${i}-${r}` })) })}\n`)));
    await Promise.all(bodies.map((body, i) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: `raw/sdk/${i}.jsonl.gz`, Body: body, ContentType: 'application/x-ndjson' }))));
    const back = await Promise.all(bodies.map(async (_, i) => (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `raw/sdk/${i}.jsonl.gz` }))).Body?.transformToByteArray()));
    back.forEach((bytes, i) => {
      assert.ok(bytes);
      assert.deepEqual(Buffer.from(bytes), bodies[i]);
      assert.equal(JSON.parse(gunzipSync(bytes).toString('utf8')).batch, i);
    });
  });
});
