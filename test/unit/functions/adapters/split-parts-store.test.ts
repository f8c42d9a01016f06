/**
 * DynamoSplitPartsStore's requests over mocked clients (test/integration/split-records.test.ts runs
 * it on DynamoDB Local and s3rver): each part's text goes to S3 under a content-addressed key first,
 * then one conditional UpdateItem per part that admits only the same text for its slot; the item is
 * read back into a ChunkState; expired sets are one partition's Query, paged and limited.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoSplitPartsStore, MAX_SPLIT_FRAGMENTS } from '../../../../functions/adapters/split-parts-store.js';

function setup() {
  const credentials = { accessKeyId: 'x', secretAccessKey: 'y' };
  const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials });
  const s3 = new S3Client({ region: 'us-east-1', credentials });
  const ddb = mockClient(dynamodb);
  const s3m = mockClient(s3);
  s3m.on(PutObjectCommand).resolves({});
  const store = new DynamoSplitPartsStore(dynamodb, s3, 'shop-status', 'shop', 'shop-raw', 'raw/dsql-parts/');
  return { ddb, s3m, store };
}

const origin = { shard: 'shardId-000000000001', sequence: '42', nowMs: 1_000, deadlineMs: 601_000 };
const part = (k: string, n: number, s = 'shardId-000000000001', q = '42') => ({ M: { k: { S: k }, n: { N: String(n) }, s: { S: s }, q: { S: q } } });

describe('DynamoSplitPartsStore', () => {
  it('stores a fragment text in S3, then claims its slot with one conditional write, and reads the set back', async () => {
    const { ddb, s3m, store } = setup();
    ddb.on(UpdateItemCommand).callsFake((input) => ({
      Attributes: { firstSeenMs: { N: '500' }, deadlineMs: { N: '600500' }, p1: input.ExpressionAttributeValues[':part'], p0: part('raw/dsql-parts/x/p0-a.json', 3), main: { M: { ...part('raw/dsql-parts/x/main-b.json', 9).M, t: { S: 'public.order_items' } } } },
    }));
    const put = await store.putFragment('chunk-1', 1, 'abc', origin);
    const s3Put = s3m.commandCalls(PutObjectCommand)[0]?.args[0].input;
    assert.match(String(s3Put?.Key), /^raw\/dsql-parts\/[\w-]{22}\/p1-[\w-]{22}\.json$/);
    assert.equal(Buffer.from(s3Put?.Body as Uint8Array).toString('utf8'), 'abc');
    const update = ddb.commandCalls(UpdateItemCommand)[0]?.args[0].input;
    assert.deepEqual(update?.Key, { pipeline: { S: 'shop#dsql-parts' }, table: { S: 'chunk#chunk-1' } });
    assert.equal(update?.ConditionExpression, 'attribute_not_exists(#p) OR #p.#k = :k');
    assert.equal(update?.ExpressionAttributeNames?.['#p'], 'p1');
    assert.equal(update?.ExpressionAttributeValues?.[':k']?.S, s3Put?.Key);
    assert.equal(update?.ExpressionAttributeValues?.[':x']?.N, String(601 + 7 * 86_400), 'TTL 7 days past the deadline');
    assert.ok(put.ok);
    if (!put.ok) return;
    assert.equal(put.state.firstSeenMs, 500, 'the first part opened the wait');
    assert.deepEqual([...put.state.parts.keys()].sort(), [0, 1]);
    assert.equal(put.state.parts.get(1)?.bytes, 3);
    assert.equal(put.state.main?.table, 'public.order_items');
    assert.equal(put.state.doneMs, null);
  });

  it('a different text for a held fragment slot is a conflict, not an overwrite; the main slot keeps its first record', async () => {
    const { ddb, store } = setup();
    ddb.on(UpdateItemCommand).rejects(new ConditionalCheckFailedException({ message: 'held', $metadata: {} }));
    assert.deepEqual(await store.putFragment('chunk-1', 0, 'other', origin), { ok: false, conflict: true });
    await assert.rejects(store.putFragment('chunk-1', MAX_SPLIT_FRAGMENTS, 'x', origin), RangeError);
    ddb.reset();
    ddb.on(UpdateItemCommand).resolves({ Attributes: { firstSeenMs: { N: '1' }, deadlineMs: { N: '2' } } });
    assert.ok((await store.putMain('chunk-1', '{}', null, origin)).ok);
    const main = ddb.commandCalls(UpdateItemCommand)[0]?.args[0].input;
    assert.equal(main?.ConditionExpression, undefined, 'if_not_exists keeps the first main record');
    assert.match(String(main?.UpdateExpression), /#p = if_not_exists\(#p, :part\)/);
  });

  it('rethrows other errors', async () => {
    const { ddb, store } = setup();
    ddb.on(UpdateItemCommand).rejects(new Error('throttled'));
    await assert.rejects(store.putFragment('chunk-1', 0, 'x', origin), /throttled/);
    await assert.rejects(store.claim('chunk-1', 1, 1), /throttled/);
  });

  it('gets a set consistently, reads a text, and says when there is none', async () => {
    const { ddb, s3m, store } = setup();
    ddb.on(GetItemCommand).resolvesOnce({}).resolves({ Item: { deadlineMs: { N: '9' }, doneMs: { N: '7' } } });
    assert.equal(await store.get('none'), null);
    const state = await store.get('done');
    assert.equal(state?.doneMs, 7);
    assert.equal(state?.main, null);
    assert.equal(ddb.commandCalls(GetItemCommand)[0]?.args[0].input.ConsistentRead, true);
    s3m.on(GetObjectCommand).resolvesOnce({ Body: { transformToString: async () => 'text' } as never }).resolves({});
    assert.equal(await store.read('raw/dsql-parts/x/p0-a.json'), 'text');
    await assert.rejects(store.read('raw/dsql-parts/x/p1-a.json'), /has no body/);
  });

  it('lists expired sets from the one partition, page by page, up to the limit', async () => {
    const { ddb, store } = setup();
    const item = (id: string) => ({ pipeline: { S: 'shop#dsql-parts' }, table: { S: `chunk#${id}` }, firstSeenMs: { N: '1' }, deadlineMs: { N: '2' }, p0: part('k', 1) });
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [item('a')], LastEvaluatedKey: { pipeline: { S: 'shop#dsql-parts' }, table: { S: 'chunk#a' } } })
      .resolves({ Items: [item('b'), item('c')] });
    const expired = await store.expired(10, 2);
    assert.deepEqual(
      expired.map((s) => s.chunkId),
      ['a', 'b'],
    );
    const q = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    assert.equal(q?.ExpressionAttributeValues?.[':pk']?.S, 'shop#dsql-parts');
    assert.match(String(q?.FilterExpression), /attribute_not_exists\(#done\)/);
  });

  it('claims a set once, and marks it done', async () => {
    const { ddb, store } = setup();
    ddb.on(UpdateItemCommand).resolvesOnce({}).rejectsOnce(new ConditionalCheckFailedException({ message: 'claimed', $metadata: {} })).resolves({});
    assert.equal(await store.claim('a', 10, 100), true);
    assert.equal(await store.claim('a', 20, 100), false);
    await store.markDone('a', 30);
    const done = ddb.commandCalls(UpdateItemCommand)[2]?.args[0].input;
    assert.equal(done?.UpdateExpression, 'SET #done = if_not_exists(#done, :now)');
  });
});
