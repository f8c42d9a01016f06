/** The truncate sweep: conditional deletes below the watermark, page by page, keeping rows rewritten meanwhile. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConditionalCheckFailedException, DeleteItemCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../lib/config/config.js';
import { TruncateSweeper } from '../../../../functions/adapters/truncate-sweep.js';

const config = parseConfig({
  name: 'shop',
  tables: [{ source: 'public.lines', target: 'shop-lines', key: ['order_id', 'line_no'], keyTypes: { order_id: 'number', line_no: 'number' } }],
  raw: { bucket: 'shop-raw' },
});
const table = config.tables[0] as (typeof config.tables)[number];
const item = (o: number, l: number) => ({ order_id: { N: String(o) }, line_no: { N: String(l) }, name: { S: 'x' }, __pos: { S: '0001' } });

describe('truncate-sweep', () => {
  it('scans every page below the watermark and deletes each row under the same condition', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const mock = mockClient(client);
    mock
      .on(ScanCommand)
      .resolvesOnce({ Items: [item(1, 1), item(1, 2)], LastEvaluatedKey: { order_id: { N: '1' }, line_no: { N: '2' } } })
      .resolves({ Items: [item(2, 1)] });
    // The second row was rewritten by a newer event after the scan: its conditional delete fails and it stays.
    mock.on(DeleteItemCommand).resolvesOnce({}).rejectsOnce(new ConditionalCheckFailedException({ message: 'newer', $metadata: {} })).resolves({});
    const removed = await new TruncateSweeper(client).sweep(table, '0005');
    assert.equal(removed, 2);
    const scans = mock.commandCalls(ScanCommand).map((c) => c.args[0].input);
    assert.equal(scans.length, 2);
    assert.equal(scans[0]?.FilterExpression, '#pos < :wm');
    assert.deepEqual(scans[1]?.ExclusiveStartKey, { order_id: { N: '1' }, line_no: { N: '2' } });
    const deletes = mock.commandCalls(DeleteItemCommand).map((c) => c.args[0].input);
    assert.deepEqual(deletes[0]?.Key, { order_id: { N: '1' }, line_no: { N: '1' } }, 'only key attributes');
    assert.equal(deletes[0]?.ConditionExpression, '#pos < :wm');
    assert.deepEqual(deletes[0]?.ExpressionAttributeValues, { ':wm': { S: '0005' } });
  });

  it('fails on errors other than a lost condition', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const mock = mockClient(client);
    mock.on(ScanCommand).resolves({ Items: [item(1, 1)] });
    mock.on(DeleteItemCommand).rejects(new Error('throttled'));
    await assert.rejects(new TruncateSweeper(client).sweep(table, '0005'), /throttled/);
  });
});
