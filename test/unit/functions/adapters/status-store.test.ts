/** Status rows and per-hour counter rows, against a mocked DynamoDB client. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchGetItemCommand, ConditionalCheckFailedException, DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { StatusStore } from '../../../../functions/adapters/status-store.js';

const NOW = Date.UTC(2026, 10, 30, 6, 15, 0);

function store() {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  return { status: new StatusStore(client, 'shop-status', 'shop'), mock };
}

/** The attribute names and values of an update, resolved: `{ applied: 'ADD 3', state: 'SET RUNNING' }`. */
function resolved(input: { UpdateExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, { N?: string; S?: string }> }) {
  const out: Record<string, string> = {};
  const [setPart = '', addPart = ''] = (input.UpdateExpression ?? '').split(/ ?ADD /);
  for (const clause of setPart.replace(/^SET /, '').split(', ').filter(Boolean)) {
    const [n = '', v = ''] = clause.split(' = ');
    const value = input.ExpressionAttributeValues?.[v];
    out[input.ExpressionAttributeNames?.[n] ?? n] = `SET ${value?.S ?? value?.N}`;
  }
  for (const clause of addPart.split(', ').filter(Boolean)) {
    const [n = '', v = ''] = clause.split(' ');
    out[input.ExpressionAttributeNames?.[n] ?? n] = `ADD ${input.ExpressionAttributeValues?.[v]?.N}`;
  }
  return out;
}

describe('status-store', () => {
  it('adds counters to the status row and to the per-hour row, which expires 35 days out', async () => {
    const { status, mock } = store();
    mock.on(UpdateItemCommand).resolves({});
    await status.record('public.orders', { counters: { received: 3, applied: 2, stale: 1, quarantined: 0 }, state: 'RUNNING', phase: 'streaming', lastPosition: '0005', now: NOW });
    const calls = mock.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    assert.equal(calls.length, 2);
    const row = calls.find((c) => c.Key?.table?.S === 'public.orders');
    const hour = calls.find((c) => c.Key?.table?.S === 'hour#2026-11-30T06#public.orders');
    assert.ok(row && hour, JSON.stringify(calls.map((c) => c.Key)));
    assert.equal(row.Key?.pipeline?.S, 'shop');
    assert.deepEqual(resolved(row), {
      state: 'SET RUNNING',
      phase: 'SET streaming',
      lastPosition: 'SET 0005',
      lastAppliedAt: `SET ${NOW}`,
      received: 'ADD 3',
      applied: 'ADD 2',
      stale: 'ADD 1',
    });
    assert.deepEqual(resolved(hour), { __expiresAt: `SET ${Math.floor(NOW / 1000) + 35 * 86_400}`, received: 'ADD 3', applied: 'ADD 2', stale: 'ADD 1' });
  });

  it('writes no per-hour row when no counter moved, and records the last error with its time', async () => {
    const { status, mock } = store();
    mock.on(UpdateItemCommand).resolves({});
    await status.record('public.orders', { counters: {}, state: 'ERROR', lastError: 'boom', now: NOW });
    const calls = mock.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    assert.equal(calls.length, 1);
    assert.deepEqual(resolved(calls[0] ?? {}), { state: 'SET ERROR', lastAppliedAt: `SET ${NOW}`, lastError: 'SET boom', lastErrorAt: `SET ${NOW}` });
  });

  it('loads rows with consistent reads and follows unprocessed keys', async () => {
    const { status, mock } = store();
    mock
      .on(BatchGetItemCommand)
      .resolvesOnce({ Responses: { 'shop-status': [marshall({ pipeline: 'shop', table: 'a', phase: 'streaming' })] }, UnprocessedKeys: { 'shop-status': { Keys: [{ pipeline: { S: 'shop' }, table: { S: 'b' } }] } } })
      .resolves({ Responses: { 'shop-status': [marshall({ pipeline: 'shop', table: 'b' })] } });
    const rows = await status.load(['a', 'b']);
    assert.deepEqual([...rows.keys()], ['a', 'b']);
    assert.equal(mock.commandCalls(BatchGetItemCommand)[0]?.args[0].input.RequestItems?.['shop-status']?.ConsistentRead, true);
  });

  it('raises the truncate watermark only upwards', async () => {
    const { status, mock } = store();
    mock.on(UpdateItemCommand).resolvesOnce({}).rejects(new ConditionalCheckFailedException({ message: 'newer', $metadata: {} }));
    assert.equal(await status.raiseTruncateWatermark('t', '0009'), true);
    assert.equal(await status.raiseTruncateWatermark('t', '0001'), false);
    assert.equal(mock.commandCalls(UpdateItemCommand)[0]?.args[0].input.ConditionExpression, 'attribute_not_exists(#w) OR #w < :w');
    mock.on(UpdateItemCommand).rejects(new Error('throttled'));
    await assert.rejects(status.raiseTruncateWatermark('t', '0010'), /throttled/);
  });
});
