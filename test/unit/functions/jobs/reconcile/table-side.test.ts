/**
 * Reconcile's table side (functions/jobs/reconcile/table-side.ts) over an in-memory S3 and a mocked
 * DynamoDB: an export data file (DynamoDB JSON) and a window keys file become table side lines,
 * keys and metadata only, never row values; BatchGetItem is chunked and its unprocessed keys sent
 * again.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { BatchGetItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../../lib/config/config.js';
import { keyId, normalizeKey } from '../../../../../functions/core/keys.js';
import { type JobDeps, JobInputError } from '../../../../../functions/jobs/deps.js';
import { attributeValue, exportToTableSide, fetchItems, type TableSideLine, windowToTableSide } from '../../../../../functions/jobs/reconcile/table-side.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';

const config = parseConfig({
  name: 'shop',
  tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
  raw: { bucket: 'shop-raw' },
});
const table = config.tables[0] as (typeof config.tables)[number];
const idOf = (n: number) => keyId(table, normalizeKey(table, { order_id: n }));
const gz = (lines: readonly object[]) => gzipSync(Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), 'utf8'));
const stored = (n: number, extra: Record<string, unknown> = {}) => ({ order_id: { N: String(n) }, __pos: { S: `a${n}` }, __deleted: { BOOL: false }, __hash: { S: `h${n}` }, __appliedAt: { N: '1700' }, ...extra });

describe('reconcile table side', () => {
  let s3: FakeS3;
  let ddb: AwsClientStub<DynamoDBClient>;
  let deps: JobDeps;
  const linesUnder = (prefix: string): TableSideLine[] =>
    s3
      .keys()
      .filter((k) => k.startsWith(prefix))
      .flatMap((k) =>
        gunzipSync(Buffer.from(s3.get(k) ?? []))
          .toString('utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as TableSideLine),
      );

  beforeEach(() => {
    s3 = fakeS3();
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    ddb = mockClient(dynamodb);
    deps = { config, s3: s3.client, dynamodb } as unknown as JobDeps;
  });
  afterEach(() => {
    s3.restore();
    ddb.restore();
  });

  it('turns an export data file into lines of keys and metadata: never the row values', async () => {
    const file = 'history/unload/reconcile/r1/export/public.orders/AWSDynamoDB/e1/data/abc.json.gz';
    s3.put(
      file,
      gz([
        { Item: { ...stored(1), name: { S: 'secret' }, blob: { B: Buffer.from('bytes').toString('base64') }, tags: { L: [{ S: 'x' }, { M: { k: { BS: [Buffer.from('y').toString('base64')] } } }] } } },
        { Item: stored(2, { __deleted: { BOOL: true } }) },
        { Item: stored(3, { __erased: { BOOL: true }, __deleted: { BOOL: true } }) },
      ]),
    );
    const out = await exportToTableSide({ runId: 'r1', table: 'public.orders', bucket: 'shop-raw', file }, deps);
    assert.deepEqual(out, { items: 3, files: 1 });
    const lines = linesUnder('history/table_side/run_id=r1/');
    assert.deepEqual(
      lines.map((l) => [l.key_id, l.key_json, l.position, l.deleted, l.erased, l.hash, l.applied_at]),
      [
        [idOf(1), '{"order_id":1}', 'a1', false, false, 'h1', 1700],
        [idOf(2), '{"order_id":2}', 'a2', true, false, 'h2', 1700],
        [idOf(3), '{"order_id":3}', 'a3', true, true, 'h3', 1700],
      ],
    );
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('secret') && !text.includes('bytes'), 'no row value leaves the export');
  });

  it('refuses an export line without an Item, and an attribute value that is not an object', async () => {
    s3.put('bad.json.gz', gz([{ Other: {} }]));
    await assert.rejects(exportToTableSide({ runId: 'r1', table: 'public.orders', bucket: 'shop-raw', file: 'bad.json.gz' }, deps), JobInputError);
    assert.throws(() => attributeValue('N'), JobInputError);
    assert.deepEqual(attributeValue({ B: Buffer.from('z').toString('base64') }), { B: Buffer.from('z') });
    await assert.rejects(exportToTableSide({ runId: 'r1', table: 'public.nope', bucket: 'shop-raw', file: 'bad.json.gz' }, deps), JobInputError);
  });

  it('reads a window keys file with BatchGetItem: a key without an item writes no line; unprocessed keys are sent again', async () => {
    const file = 'history/unload/reconcile/w1/window-keys/bucket=0/k.json.gz';
    s3.put(file, gz([1, 2, 3].map((n) => ({ source_table: 'public.orders', key_id: idOf(n), key_json: JSON.stringify({ order_id: n }) }))));
    ddb
      .on(BatchGetItemCommand)
      .resolvesOnce({ Responses: { 'shop-orders': [stored(1)] }, UnprocessedKeys: { 'shop-orders': { Keys: [{ order_id: { N: '2' } }] } }, ConsumedCapacity: [{ CapacityUnits: 1.5 }] })
      .resolvesOnce({ Responses: { 'shop-orders': [stored(2)] }, ConsumedCapacity: [{ CapacityUnits: 0.5 }] });
    const out = await windowToTableSide({ runId: 'w1', bucket: 'shop-raw', file }, deps);
    assert.deepEqual(out, { items: 2, files: 1, keys: 3, readUnits: 2 });
    const calls = ddb.commandCalls(BatchGetItemCommand).map((c) => c.args[0].input.RequestItems?.['shop-orders']);
    assert.deepEqual(
      calls.map((r) => r?.Keys?.map((k) => k.order_id?.N)),
      [['1', '2', '3'], ['2']],
    );
    assert.ok(calls.every((r) => r?.ConsistentRead === true));
    assert.deepEqual(
      linesUnder('history/table_side/run_id=w1/').map((l) => l.key_id),
      [idOf(1), idOf(2)],
    );
  });

  it('writes nothing for a window file whose keys have no items; asks at most 100 keys a request', async () => {
    const file = 'history/unload/reconcile/w2/window-keys/bucket=0/k.json.gz';
    s3.put(file, gz([{ source_table: 'public.orders', key_id: idOf(9), key_json: '{"order_id":9}' }]));
    ddb.on(BatchGetItemCommand).resolves({});
    assert.deepEqual(await windowToTableSide({ runId: 'w2', bucket: 'shop-raw', file }, deps), { items: 0, files: 0, keys: 1, readUnits: 0 });
    assert.deepEqual(linesUnder('history/table_side/run_id=w2/'), []);
    ddb.reset();
    ddb.on(BatchGetItemCommand).resolves({ Responses: {} });
    const keys = Array.from({ length: 250 }, (_, i) => ({ source_table: 'public.orders', key_id: idOf(i), key_json: JSON.stringify({ order_id: i }) }));
    await fetchItems(deps, table, keys);
    assert.deepEqual(
      ddb.commandCalls(BatchGetItemCommand).map((c) => c.args[0].input.RequestItems?.['shop-orders']?.Keys?.length),
      [100, 100, 50],
    );
  });
});
