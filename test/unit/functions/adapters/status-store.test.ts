/**
 * Status rows in their table's partition: one UpdateItem per batch, the open hour closed into an
 * hour row once per hour, the registry row on a table's first write, and (property) every batch's
 * counters added exactly once to the totals and to one hour however concurrent writers interleave.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchGetItemCommand, ConditionalCheckFailedException, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import type { TableConfig } from '../../../../lib/config/config.js';
import { StatusStore, type StatusUpdate } from '../../../../functions/adapters/status-store.js';
import { HOUR_COUNTERS, tableRegistryPartition } from '../../../../functions/telemetry/status-layout.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 30, 6, 15, 0);
const statusTableConfig = { source: '_status', target: 'shop-status', key: ['pipeline', 'table'], keyTypes: {} } as unknown as TableConfig;

function fakeStore() {
  const fake = new FakeDynamoDB([statusTableConfig]);
  return { fake, status: new StatusStore(fake.client, 'shop-status', 'shop') };
}

const item = (fake: FakeDynamoDB, partition: string, row: string) => {
  const got = fake.get('shop-status', { pipeline: { S: partition }, table: { S: row } });
  return got ? (unmarshall(got) as Record<string, unknown>) : undefined;
};

const update = (now: number, counters: StatusUpdate['counters']): StatusUpdate => ({ counters, state: 'RUNNING', phase: 'streaming', lastPosition: '0005', now });

describe('status-store', () => {
  it('adds a batch in one UpdateItem to the totals and the open hour, in the table partition, and returns the row as it was', async () => {
    const { fake, status } = fakeStore();
    const first = await status.record('public.orders', update(NOW, { received: 3, applied: 2, stale: 1, writeUnits: 2 }));
    assert.equal(first.before, undefined, 'a new row');
    assert.equal(first.requests, 2, 'the update, and the registry row of a new table');
    const updatesBefore = fake.count('UpdateItem');
    const second = await status.record('public.orders', update(NOW + 60_000, { received: 1, applied: 1 }));
    assert.equal(second.requests, 1);
    assert.equal(fake.count('UpdateItem') - updatesBefore, 1, 'one status write per table per batch');
    assert.equal(second.before?.applied, 2);
    assert.equal(second.before?.table, 'public.orders');
    const row = item(fake, 'shop/public.orders', 'status');
    assert.deepEqual(
      { received: row?.received, applied: row?.applied, stale: row?.stale, writeUnits: row?.writeUnits, hour: row?.hour, hourBatches: row?.hourBatches, h_applied: row?.h_applied, h_received: row?.h_received, h_writeUnits: row?.h_writeUnits },
      { received: 4, applied: 3, stale: 1, writeUnits: 2, hour: '2026-11-30T06', hourBatches: 2, h_applied: 3, h_received: 4, h_writeUnits: undefined },
    );
    const registry = tableRegistryPartition('shop', 'public.orders');
    assert.match(registry, /^shop#tables#\d{2}$/);
    assert.deepEqual(item(fake, registry, 'public.orders'), { pipeline: registry, table: 'public.orders' }, 'registered once, on its first write');
    assert.equal(fake.calls.filter((c) => c.name === 'PutItem').length, 1);
  });

  it('closes the previous hour into its own row on the first batch of a new hour, and starts the open hour afresh', async () => {
    const { fake, status } = fakeStore();
    await status.record('public.orders', update(NOW, { received: 5, applied: 4, opU: 4, quarantined: 1 }));
    const next = await status.record('public.orders', update(NOW + HOUR, { received: 2, applied: 2, opC: 2 }));
    assert.equal(next.requests, 3, 'the failed update, the closed hour, the update again');
    assert.deepEqual(item(fake, 'shop/public.orders', 'hour#2026-11-30T06'), {
      pipeline: 'shop/public.orders',
      table: 'hour#2026-11-30T06',
      batches: 1,
      received: 5,
      applied: 4,
      opU: 4,
      quarantined: 1,
      __expiresAt: Math.floor((NOW + HOUR) / 1000) + 35 * 86_400,
    });
    const row = item(fake, 'shop/public.orders', 'status');
    assert.deepEqual(
      { hour: row?.hour, hourBatches: row?.hourBatches, h_received: row?.h_received, h_applied: row?.h_applied, h_opC: row?.h_opC, h_opU: row?.h_opU, h_quarantined: row?.h_quarantined, applied: row?.applied },
      { hour: '2026-11-30T07', hourBatches: 1, h_received: 2, h_applied: 2, h_opC: 2, h_opU: undefined, h_quarantined: undefined, applied: 6 },
    );
  });

  it('keeps the lag histogram with the open hour, closes it into the hour row, and starts it afresh', async () => {
    const { fake, status } = fakeStore();
    await status.record('public.orders', { ...update(NOW, { received: 3 }), lagHistogram: [2, 0, 1] });
    await status.record('public.orders', { ...update(NOW + 60_000, { received: 1 }), lagHistogram: [1] });
    const open = item(fake, 'shop/public.orders', 'status');
    assert.deepEqual([open?.h_lag0, open?.h_lag1, open?.h_lag2], [3, undefined, 1]);
    await status.record('public.orders', { ...update(NOW + HOUR, { received: 1 }), lagHistogram: [0, 4] });
    const closed = item(fake, 'shop/public.orders', 'hour#2026-11-30T06');
    assert.deepEqual([closed?.lag0, closed?.lag1, closed?.lag2], [3, undefined, 1]);
    const next = item(fake, 'shop/public.orders', 'status');
    assert.deepEqual([next?.h_lag0, next?.h_lag1, next?.h_lag2], [undefined, 4, undefined], 'the new hour holds only its own lags');
  });

  it('adds a batch whose clock is behind the row to the row’s hour', async () => {
    const { fake, status } = fakeStore();
    await status.record('public.orders', update(NOW + HOUR, { received: 1 }));
    await status.record('public.orders', update(NOW, { received: 2 }));
    const row = item(fake, 'shop/public.orders', 'status');
    assert.deepEqual([row?.hour, row?.h_received, row?.received], ['2026-11-30T07', 3, 3]);
    assert.equal(item(fake, 'shop/public.orders', 'hour#2026-11-30T06'), undefined);
  });

  it('adds nothing when it throws, so it may be retried', async () => {
    const { fake, status } = fakeStore();
    await status.record('public.orders', update(NOW, { received: 5 }));
    const failing = new StatusStore(
      {
        send: (cmd: unknown) => (cmd instanceof PutItemCommand ? Promise.reject(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })) : fake.send(cmd)),
      } as unknown as DynamoDBClient,
      'shop-status',
      'shop',
    );
    await assert.rejects(failing.record('public.orders', update(NOW + HOUR, { received: 7 })), /throttled/);
    assert.equal(item(fake, 'shop/public.orders', 'status')?.received, 5);
    await status.record('public.orders', update(NOW + HOUR, { received: 7 }));
    assert.equal(item(fake, 'shop/public.orders', 'status')?.received, 12);
    assert.equal(item(fake, 'shop/public.orders', 'hour#2026-11-30T06')?.received, 5);
  });

  it('adds every batch exactly once to the totals and to one hour, however writers of several containers interleave (property)', async () => {
    const batch = fc.record({ hourOffset: fc.integer({ min: 0, max: 3 }), skew: fc.constantFrom(0, 0, 0, -HOUR), received: fc.integer({ min: 1, max: 50 }), applied: fc.integer({ min: 0, max: 50 }) });
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(batch, { minLength: 1, maxLength: 14 }), async (s, batches) => {
        const fake = new FakeDynamoDB([statusTableConfig]);
        // Every request reaches the table at a moment the scheduler picks: any interleaving of concurrent writers.
        const client = { send: (cmd: unknown) => s.schedule(Promise.resolve()).then(() => fake.send(cmd)) } as unknown as DynamoDBClient;
        const store = new StatusStore(client, 'shop-status', 'shop');
        const sorted = [...batches].sort((a, b) => a.hourOffset - b.hourOffset);
        const done = Promise.all(sorted.map((b) => store.record('t', update(NOW + b.hourOffset * HOUR + b.skew, { received: b.received, applied: b.applied }))));
        await s.waitFor(done);
        const status = item(fake, 'shop/t', 'status');
        const sum = (c: 'received' | 'applied') => batches.reduce((n, b) => n + b[c], 0);
        assert.equal(status?.received, sum('received'));
        assert.equal(Number(status?.applied ?? 0), sum('applied'));
        const hours = fake.items('shop-status').filter((i) => i.pipeline?.S === 'shop/t' && i.table?.S?.startsWith('hour#')).map((i) => unmarshall(i));
        const inHours = (c: string) => hours.reduce((n, h) => n + Number(h[c] ?? 0), Number(status?.[`h_${c}`] ?? 0));
        assert.equal(inHours('received'), sum('received'), `every batch in exactly one hour: ${JSON.stringify({ hours, status })}`);
        assert.equal(inHours('applied'), sum('applied'));
        assert.equal(hours.reduce((n, h) => n + Number(h.batches), Number(status?.hourBatches)), batches.length);
        assert.ok(hours.every((h) => String(h.table) < `hour#${status?.hour}`), 'closed hours are before the open one');
      }),
      { numRuns: 80 },
    );
  });

  it('keeps only the counters the hour checks read in the open hour', () => {
    assert.ok(HOUR_COUNTERS.includes('received') && HOUR_COUNTERS.includes('opD') && !HOUR_COUNTERS.includes('writeUnits' as never));
  });

  it('loads rows eventually consistent unless told otherwise, and follows unprocessed keys', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const mock = mockClient(client);
    const status = new StatusStore(client, 'shop-status', 'shop');
    mock
      .on(BatchGetItemCommand)
      .resolvesOnce({
        Responses: { 'shop-status': [marshall({ pipeline: 'shop/a', table: 'status', phase: 'streaming' })] },
        UnprocessedKeys: { 'shop-status': { Keys: [{ pipeline: { S: 'shop/b' }, table: { S: 'status' } }] } },
      })
      .resolves({ Responses: { 'shop-status': [marshall({ pipeline: 'shop/b', table: 'status' })] } });
    const rows = await status.load(['a', 'b']);
    assert.deepEqual([...rows.keys()], ['a', 'b']);
    assert.deepEqual(rows.get('a'), { pipeline: 'shop', table: 'a', phase: 'streaming' });
    const first = mock.commandCalls(BatchGetItemCommand)[0]?.args[0].input.RequestItems?.['shop-status'];
    assert.equal(first?.ConsistentRead, false);
    assert.deepEqual(first?.Keys?.[0], { pipeline: { S: 'shop/a' }, table: { S: 'status' } });
    await status.load(['a'], { consistent: true });
    assert.equal(mock.commandCalls(BatchGetItemCommand).at(-1)?.args[0].input.RequestItems?.['shop-status']?.ConsistentRead, true);
  });

  it('raises the truncate watermark only upwards', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const mock = mockClient(client);
    const status = new StatusStore(client, 'shop-status', 'shop');
    mock.on(UpdateItemCommand).resolvesOnce({}).rejects(new ConditionalCheckFailedException({ message: 'newer', $metadata: {} }));
    assert.equal(await status.raiseTruncateWatermark('t', '0009'), true);
    assert.equal(await status.raiseTruncateWatermark('t', '0001'), false);
    const input = mock.commandCalls(UpdateItemCommand)[0]?.args[0].input;
    assert.equal(input?.ConditionExpression, 'attribute_not_exists(#w) OR #w < :w');
    assert.deepEqual(input?.Key, { pipeline: { S: 'shop/t' }, table: { S: 'status' } });
    mock.on(UpdateItemCommand).rejects(new Error('throttled'));
    await assert.rejects(status.raiseTruncateWatermark('t', '0010'), /throttled/);
  });
});
