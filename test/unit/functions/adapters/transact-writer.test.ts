/**
 * TransactWriter over the in-memory fake DynamoDB (test/helpers/fake-dynamodb.ts), which takes a
 * TransactWriteItems all or nothing and names a reason per item when it cancels: one transaction
 * per unit, a cancelled transaction resolved row by row (stale, duplicate and conflict settled,
 * the rest sent again together), patches merged with the row read, and what goes per key instead.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { parseConfig } from '../../../../lib/config/config.js';
import { keyId } from '../../../../functions/core/keys.js';
import { type PlannedWrite, planBatch } from '../../../../functions/core/plan.js';
import type { ChangeEvent, Row } from '../../../../functions/core/types.js';
import { DynamoWriter } from '../../../../functions/adapters/dynamo-writer.js';
import { decodeItem } from '../../../../functions/adapters/item-codec.js';
import { TransactWriter } from '../../../../functions/adapters/transact-writer.js';
import { change, pos } from '../../../helpers/events.js';
import { FakeDynamoDB, type FakeOptions } from '../../../helpers/fake-dynamodb.js';

const config = parseConfig({
  name: 'tw',
  tables: [
    { source: 'public.orders', target: 'tw-orders', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.lines', target: 'tw-lines', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'tw-raw' },
});
const NOW = 1_700_000_000_000;

function setup(options: FakeOptions & { maxBytes?: number; maxItemBytes?: number } = {}) {
  const fake = new FakeDynamoDB(config.tables, options);
  const perKey = new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: options.maxItemBytes ?? 350_000, now: () => NOW });
  const sleeps: number[] = [];
  const tw = new TransactWriter({
    client: fake.client,
    tables: config.tables,
    maxItemBytes: options.maxItemBytes ?? 350_000,
    maxBytes: options.maxBytes ?? 4_000_000,
    perKey,
    now: () => NOW,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { fake, perKey, tw, sleeps };
}

const tableOf = (source: string) => config.tables.find((t) => t.source === source) ?? (config.tables[0] as (typeof config.tables)[number]);
const writesOf = (...events: ChangeEvent[]): PlannedWrite[] => [...planBatch(events, (e) => keyId(tableOf(e.table), e.key)).writes];
const row = (table: string, id: number, at: number, cols: Row = {}) => change({ op: 'u', table, key: { id }, after: { id, ...cols }, position: pos(at) });
const stored = (fake: FakeDynamoDB, table: string, id: number) => {
  const t = tableOf(table);
  const item = fake.get(t.target, { id: { N: String(id) } });
  return item ? decodeItem(t, item) : undefined;
};

describe('TransactWriter', () => {
  it('applies a unit as one TransactWriteItems at 2 write units per KB per row, and raises the high-water marks', async () => {
    const { fake, tw, perKey } = setup();
    const out = await tw.applyUnit(writesOf(row('public.orders', 1, 10, { total: 5 }), row('public.lines', 7, 11, { qty: 2 })), 'never');
    assert.equal(out.mode, 'transaction');
    assert.deepEqual(out.results.map((r) => r.outcome), ['applied', 'applied']);
    assert.equal(fake.count('TransactWriteItems'), 1);
    assert.equal(fake.count('PutItem'), 0);
    assert.equal(out.results.reduce((n, r) => n + r.writeUnits, 0), 4);
    assert.equal(stored(fake, 'public.lines', 7)?.row.qty, 2);
    assert.ok(perKey.highWaterOf('public.orders'));
  });

  it('settles a row whose stored copy is newer as stale and sends the rest again as one transaction', async () => {
    const { fake, tw } = setup();
    // public.orders/1 already holds a newer change.
    await new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000 }).write(writesOf(row('public.orders', 1, 50, { total: 'newer' }))[0] as PlannedWrite);
    const out = await tw.applyUnit(writesOf(row('public.orders', 1, 10, { total: 5 }), row('public.lines', 7, 11), row('public.lines', 8, 12)), 'never');
    assert.deepEqual(out.results.map((r) => r.outcome), ['stale', 'applied', 'applied']);
    assert.equal(fake.count('TransactWriteItems'), 2, 'cancelled once, then the two other rows together');
    assert.equal(stored(fake, 'public.orders', 1)?.row.total, 'newer');
    assert.ok(out.results[0] && out.results[0].writeUnits > 0, 'the cancelled attempt is charged');
  });

  it('settles duplicates and sends a last row alone through the per-key writer', async () => {
    const { fake, tw } = setup();
    const writes = writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11));
    await tw.applyUnit(writes, 'never');
    const again = await tw.applyUnit(writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11), row('public.lines', 9, 12)), 'never');
    assert.deepEqual(again.results.map((r) => r.outcome), ['duplicate', 'duplicate', 'applied']);
    assert.equal(fake.count('PutItem'), 1, 'one row left: one guarded PutItem');
  });

  it('with the auto pre-read, settles a redelivered unit from stored positions without writing', async () => {
    const { fake, tw } = setup();
    const writes = writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11));
    await tw.applyUnit(writes, 'auto');
    const before = fake.calls.length;
    const again = await tw.applyUnit(writes, 'auto');
    assert.deepEqual(again.results.map((r) => r.outcome), ['duplicate', 'duplicate']);
    assert.deepEqual(fake.calls.slice(before).map((c) => c.name), ['BatchGetItem', 'BatchGetItem']);
    assert.equal(again.readRequests, 2);
  });

  it('merges a patch with the row it read, and keeps __missing exact', async () => {
    const { fake, tw } = setup();
    await tw.applyUnit(writesOf(row('public.orders', 1, 10, { a: 1, b: 'long' }), row('public.lines', 7, 11)), 'never');
    const patch = change({ op: 'u', table: 'public.orders', key: { id: 1 }, after: { id: 1, a: 2, b: '__debezium_unavailable_value' }, placeholders: ['b'], position: pos(20) });
    const fresh = change({ op: 'u', table: 'public.lines', key: { id: 8 }, after: { id: 8, c: '__debezium_unavailable_value' }, placeholders: ['c'], position: pos(21) });
    const out = await tw.applyUnit(writesOf(patch, fresh), 'never');
    assert.deepEqual(out.results.map((r) => r.outcome), ['applied', 'applied']);
    assert.deepEqual(stored(fake, 'public.orders', 1)?.row, { id: 1, a: 2, b: 'long' }, 'the unchanged column kept');
    const started = stored(fake, 'public.lines', 8);
    assert.deepEqual([started?.partial, started?.missing], [true, ['c']], 'a patch on nothing starts a partial row');
    assert.equal(fake.count('GetItem'), 2, 'each patch read its row');
  });

  it('reads the rows back when a cancellation carries no items', async () => {
    const options: FakeOptions = {};
    const { fake, tw } = setup(options);
    await new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000 }).write(writesOf(row('public.orders', 1, 50))[0] as PlannedWrite);
    let first = true;
    options.fault = (name) => {
      if (name !== 'TransactWriteItems' || !first) return undefined;
      first = false;
      return new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }, { Code: 'None' }] });
    };
    const out = await tw.applyUnit(writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11), row('public.lines', 8, 12)), 'never');
    assert.deepEqual(out.results.map((r) => r.outcome), ['stale', 'applied', 'applied']);
    assert.equal(fake.count('GetItem'), 1);
  });

  it('retries a transaction conflict after a pause', async () => {
    const options: FakeOptions = {};
    const { fake, tw, sleeps } = setup(options);
    let conflicts = 2;
    options.fault = (name) =>
      name === 'TransactWriteItems' && conflicts-- > 0 ? new TransactionCanceledException({ message: 'conflict', $metadata: {}, CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] }) : undefined;
    const out = await tw.applyUnit(writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11)), 'never');
    assert.deepEqual(out.results.map((r) => r.outcome), ['applied', 'applied']);
    assert.equal(sleeps.length, 2);
    assert.equal(fake.count('TransactWriteItems'), 3);
  });

  it('falls back to per-key writes when DynamoDB refuses the transaction, and when it would be over maxBytes', async () => {
    const refusing: FakeOptions = {};
    const a = setup(refusing);
    refusing.fault = (name) => (name === 'TransactWriteItems' ? new TransactionCanceledException({ message: 'bad', $metadata: {}, CancellationReasons: [{ Code: 'ValidationError' }, { Code: 'None' }] }) : undefined);
    const refused = await a.tw.applyUnit(writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11)), 'never');
    assert.deepEqual([refused.mode, refused.reason, refused.results.map((r) => r.outcome)], ['per-key', 'refused', ['applied', 'applied']]);
    assert.equal(a.fake.count('PutItem'), 2);

    const b = setup({ maxBytes: 1024 });
    const big = await b.tw.applyUnit(writesOf(row('public.orders', 1, 10, { text: 'x'.repeat(800) }), row('public.lines', 7, 11, { text: 'y'.repeat(800) })), 'never');
    assert.deepEqual([big.mode, big.reason], ['per-key', 'too-large']);
    assert.equal(b.fake.count('TransactWriteItems'), 0);
  });

  it('fails every row when the transaction fails for another reason (the batch is retried), leaving nothing written', async () => {
    const { fake, tw } = setup({ fault: (name) => (name === 'TransactWriteItems' ? new Error('InternalServerError') : undefined) });
    const out = await tw.applyUnit(writesOf(row('public.orders', 1, 10), row('public.lines', 7, 11)), 'never');
    assert.deepEqual(out.results.map((r) => r.outcome), ['failed', 'failed']);
    assert.match(out.results[0]?.error?.message ?? '', /InternalServerError/);
    assert.equal(fake.items('tw-orders').length + fake.items('tw-lines').length, 0);
  });
});
