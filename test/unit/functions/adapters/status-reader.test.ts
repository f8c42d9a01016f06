/** Listing a pipeline's tables and status rows, the jobs' rows, and one table's hours, on the in-memory DynamoDB. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../../../../lib/config/config.js';
import { StatusReader } from '../../../../functions/adapters/status-reader.js';
import { StatusStore } from '../../../../functions/adapters/status-store.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';
import { REGISTRY_SHARDS, tableRegistryPartition } from '../../../../functions/telemetry/status-layout.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 30, 6, 15, 0);

function setup() {
  const fake = new FakeDynamoDB([{ source: '_status', target: 'shop-status', key: ['pipeline', 'table'], keyTypes: {} } as unknown as TableConfig]);
  return { fake, store: new StatusStore(fake.client, 'shop-status', 'shop'), reader: new StatusReader(fake.client, 'shop-status', 'shop') };
}

const batch = (now: number, counters: Record<string, number>) => ({ counters, state: 'RUNNING' as const, now });

describe('status reader', () => {
  it('lists the registry’s tables, the configured ones and *, with one Query per registry partition and no scan of hour rows', async () => {
    const { fake, store, reader } = setup();
    await store.record('analytics.events', batch(NOW, { received: 1 }));
    await store.record('*', batch(NOW, { received: 2, quarantined: 2 }));
    await store.record('analytics.events', batch(NOW + HOUR, { received: 1 }));
    fake.calls.length = 0;
    const rows = await reader.list(['public.orders']);
    assert.deepEqual(
      rows.map((r) => [r.pipeline, r.table, r.received]),
      [
        ['shop', 'analytics.events', 2],
        ['shop', '*', 2],
      ],
      'a configured table without a row is left out; an unconfigured one is found through the registry',
    );
    assert.deepEqual(
      fake.calls.map((c) => c.name),
      [...Array.from({ length: REGISTRY_SHARDS + 1 }, () => 'Query'), 'BatchGetItem'],
      'the spread registry partitions and the legacy one, then the status rows',
    );
  });

  it('spreads the registry so a new pipeline of 1,000 tables puts at most 50 rows on any key, and still reads the legacy partition', async () => {
    const perKey = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const p = tableRegistryPartition('shop', `public.t${i}`);
      perKey.set(p, (perKey.get(p) ?? 0) + 1);
    }
    assert.equal(perKey.size, REGISTRY_SHARDS, 'every partition used');
    assert.ok(Math.max(...perKey.values()) <= 50, `at most 50 a key, got ${Math.max(...perKey.values())}`);
    assert.equal(tableRegistryPartition('shop', 'public.orders'), tableRegistryPartition('shop', 'public.orders'), 'stable');

    const { fake, reader } = setup();
    // A row written before the registry was spread (layout 2's first form, `shop#tables`).
    await fake.client.send(new PutItemCommand({ TableName: 'shop-status', Item: { pipeline: { S: 'shop#tables' }, table: { S: 'legacy.table' } } }));
    await fake.client.send(new PutItemCommand({ TableName: 'shop-status', Item: { pipeline: { S: tableRegistryPartition('shop', 'new.table') }, table: { S: 'new.table' } } }));
    assert.deepEqual(await reader.registeredTables(), ['legacy.table', 'new.table']);
  });

  it('reads a table’s hours: closed hour rows, layout-1 hours moved by the migration, and the open hour of its status row', async () => {
    const { store, reader, fake } = setup();
    await store.record('public.orders', batch(NOW - 2 * HOUR, { received: 4, opU: 4 }));
    await store.record('public.orders', batch(NOW - HOUR, { received: 3, opD: 3 }));
    await store.record('public.orders', batch(NOW, { received: 2, opC: 2 }));
    await store.record('public.other', batch(NOW, { received: 9, opC: 9 }));
    await fake.send(
      new PutItemCommand({
        TableName: 'shop-status',
        Item: { pipeline: { S: 'shop/public.orders' }, table: { S: 'hour#2026-11-30T04#v1' }, received: { N: '10' }, opU: { N: '10' } },
      }),
    );
    const hours = await reader.hourRows('public.orders', NOW - 2 * HOUR, NOW);
    assert.deepEqual(
      hours.map((h) => [new Date(h.hourStart).toISOString().slice(0, 13), h.table, h.counters.received, h.counters.opC, h.counters.opU, h.counters.opD]),
      [
        ['2026-11-30T04', 'public.orders', 14, 0, 14, 0],
        ['2026-11-30T05', 'public.orders', 3, 0, 0, 3],
        ['2026-11-30T06', 'public.orders', 2, 2, 0, 0],
      ],
    );
    assert.deepEqual(await reader.hourRows('public.orders', NOW - HOUR, NOW - HOUR), [
      { hourStart: Date.UTC(2026, 10, 30, 5), table: 'public.orders', counters: { received: 3, applied: 0, opC: 0, opU: 0, opD: 3, opR: 0, placeholders: 0, beforeNullUpdates: 0, snapshotEvents: 0, resnapshots: 0, quarantined: 0 } },
    ]);
  });

  it('reads the jobs’ last-run rows of the tables asked for', async () => {
    const { fake, reader } = setup();
    await fake.send(new PutItemCommand({ TableName: 'shop-status', Item: { pipeline: { S: 'shop/public.orders' }, table: { S: 'job#reconcile' }, mode: { S: 'window' } } }));
    await fake.send(new PutItemCommand({ TableName: 'shop-status', Item: { pipeline: { S: 'shop/public.other' }, table: { S: 'job#snapshot' }, orphans: { N: '0' } } }));
    const jobs = await reader.jobRows(['public.orders', 'public.none']);
    assert.deepEqual(jobs, [{ pipeline: 'shop/public.orders', table: 'public.orders', job: 'reconcile', mode: 'window' }]);
  });

  it('reads the schema, job and hour rows of many tables in the batches of tableRows, unprocessed keys followed, in the order asked', async () => {
    const { fake, reader } = setup();
    const tables = Array.from({ length: 150 }, (_, i) => `public.t${i}`);
    const hour = `hour#${new Date(NOW - HOUR).toISOString().slice(0, 13)}`;
    const put = (table: string, row: string, n: number) =>
      fake.send(new PutItemCommand({ TableName: 'shop-status', Item: { pipeline: { S: `shop/${table}` }, table: { S: row }, n: { N: String(n) } } }));
    for (const [i, t] of tables.entries()) {
      if (i % 3 === 0) await put(t, 'schema', i);
      if (i % 5 === 0) await put(t, 'job#snapshot', i);
      if (i % 7 === 0) await put(t, 'job#reconcile', i);
      if (i % 2 === 0) await put(t, hour, i);
    }
    const asked = [...tables].reverse();
    fake.calls.length = 0;
    fake.unprocessedBatchGets = 1;
    const schemas = await reader.schemaRows(asked);
    assert.deepEqual(schemas, asked.flatMap((t, j) => ((149 - j) % 3 === 0 ? [{ pipeline: `shop/${t}`, table: t, n: 149 - j }] : [])));
    assert.deepEqual(fake.calls.map((c) => c.name), ['BatchGetItem', 'BatchGetItem', 'BatchGetItem'], 'one per 100 tables, and one for the key left unprocessed');

    fake.calls.length = 0;
    const jobs = await reader.jobRows(asked);
    assert.deepEqual(
      jobs.map((r) => [r.table, r.job, r.n, r.pipeline]),
      asked.flatMap((t, j) => {
        const i = 149 - j;
        return [...(i % 7 === 0 ? [[t, 'reconcile', i, `shop/${t}`]] : []), ...(i % 5 === 0 ? [[t, 'snapshot', i, `shop/${t}`]] : [])];
      }),
    );
    assert.equal(fake.calls.length, 3, 'one per 50 tables (two keys a table)');

    fake.calls.length = 0;
    const hours = await reader.hourRowsAt(asked, NOW - HOUR);
    assert.deepEqual([...hours], asked.flatMap((t, j) => ((149 - j) % 2 === 0 ? [[t, { pipeline: `shop/${t}`, table: hour, n: 149 - j }]] : [])));
    assert.equal(fake.calls.length, 2, 'one per 100 tables');
    assert.deepEqual(await reader.hourRowsAt([], NOW), new Map());
    assert.deepEqual(await reader.schemaRows([]), []);
    assert.deepEqual(await reader.jobRows([]), []);
    assert.equal(fake.calls.length, 2, 'no request for no tables');
  });
});
