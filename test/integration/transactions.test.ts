/**
 * Transactions applied whole on the integration target (DynamoDB Local by default, which supports
 * TransactWriteItems and TransactGetItems): Debezium PostgreSQL transactions with BEGIN/END
 * markers (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-transaction-metadata)
 * through processBatch. A reader reading the rows with TransactGetItems while batches apply never
 * sees a transaction in part; a row already newer cancels the transaction and is settled stale
 * while the rest applies; incomplete and too-large transactions go per key, counted; a redelivered
 * batch writes nothing. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/transactions.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TransactGetItemsCommand } from '@aws-sdk/client-dynamodb';
import { localDeps } from '../../bin/cli/context.js';
import { getRow, statusRows } from '../../bin/cli/state.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { JsonObject } from '../../functions/core/json.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { keyAttributes } from '../../functions/adapters/item-codec.js';
import { type BatchSummary, processBatch } from '../../functions/ingest/process-batch.js';
import { identityGap } from '../../functions/telemetry/contract.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { type PgTxChange, pgMessage, pgTransaction } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'txn',
  tables: [
    { source: 'public.orders', target: 'txn-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
    { source: 'public.lines', target: 'txn-lines', key: ['line_id'], keyTypes: { line_id: 'number' } },
  ],
  raw: { bucket: 'txn-raw' },
  transactions: { groups: [{ name: 'orders', tables: ['public.orders', 'public.lines'] }], maxItems: 4 },
});
const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

describe(`transactions applied whole on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let sequence = 1;
  let lsn = 40_000_000;
  let txId = 900;

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  const recordsOf = (values: readonly JsonObject[]): RawRecord[] =>
    values.map((v, i) => ({
      value: Buffer.from(JSON.stringify(v)),
      key: null,
      topic: null,
      headers: {},
      transport: { kind: 'kinesis', stream: 'txn-cdc', shard: 'shardId-000000000000', sequence: String(sequence++).padStart(20, '0'), partitionKey: String(i), arrivalTime: Date.now() - 1000 },
    }));

  /** The next source transaction, as its BEGIN, events and END messages. */
  function tx(changes: readonly PgTxChange[]) {
    const t = pgTransaction(txId++, lsn, lsn + 8, changes);
    lsn = t.commitLsn;
    return t;
  }
  const whole = (t: ReturnType<typeof tx>) => [t.begin, ...t.events, t.end];

  async function apply(values: readonly JsonObject[]): Promise<BatchSummary> {
    const result = await processBatch(recordsOf(values), { ...localDeps(config, target.clients), log: quiet });
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(identityGap(result.summary), 0, JSON.stringify(result.summary));
    return result.summary;
  }

  const [orders, lines] = [() => config.tables[0]!, () => config.tables[1]!];

  it('never shows a reader (TransactGetItems) a transaction in part while batches of transactions on the same rows apply', async () => {
    const transactions = Array.from({ length: 12 }, (_, v) =>
      tx([
        { table: 'orders', op: v === 0 ? 'c' : 'u', key: { order_id: 1 }, row: { version: v } },
        { table: 'lines', op: v === 0 ? 'c' : 'u', key: { line_id: 1 }, row: { version: v } },
        { table: 'lines', op: v === 0 ? 'c' : 'u', key: { line_id: 2 }, row: { version: v } },
      ]),
    );
    const keys = [
      { TableName: orders().target, Key: keyAttributes(orders(), { order_id: 1 }) },
      { TableName: lines().target, Key: keyAttributes(lines(), { line_id: 1 }) },
      { TableName: lines().target, Key: keyAttributes(lines(), { line_id: 2 }) },
    ];
    const seen: string[] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const res = await target.clients.dynamodb.send(new TransactGetItemsCommand({ TransactItems: keys.map((Get) => ({ Get })) })).catch(() => null);
        if (res) seen.push((res.Responses ?? []).map((r) => r.Item?.version?.N ?? '-').join(','));
      }
    })();
    let summary: BatchSummary | undefined;
    try {
      // Three batches of four transactions: each batch holds its transactions whole.
      for (let b = 0; b < 3; b++) summary = await apply(transactions.slice(b * 4, b * 4 + 4).flatMap(whole));
    } finally {
      reading = false;
      await reader;
    }
    assert.equal(summary?.txWhole, 4);
    assert.ok(new Set(seen).size >= 2, `the reader read while batches applied: ${[...new Set(seen)].join(' ')}`);
    for (const s of seen) {
      const parts = s.split(',');
      assert.ok(parts.every((p) => p === parts[0]), `a reader saw rows of different transactions: ${s}`);
    }
    assert.equal((await getRow(target.clients.dynamodb, lines(), { line_id: 2 }))?.version, 11);
  });

  it('settles a row the table already holds newer as stale and applies the rest of the transaction together', async () => {
    const later = pgMessage({ table: 'orders', op: 'u', before: null, after: { order_id: 5, status: 'shipped' }, lsn: lsn + 1_000_000, lastCommitLsn: lsn + 999_000, txId: 5000 });
    await apply([later]);
    const t = tx([
      { table: 'orders', op: 'c', key: { order_id: 5 }, row: { status: 'new' } },
      { table: 'lines', op: 'c', key: { line_id: 50 }, row: { qty: 1 } },
      { table: 'lines', op: 'c', key: { line_id: 51 }, row: { qty: 2 } },
    ]);
    const summary = await apply(whole(t));
    assert.equal(summary.stale, 1);
    assert.equal(summary.applied, 2);
    assert.equal(summary.txWhole, 1);
    assert.equal((await getRow(target.clients.dynamodb, orders(), { order_id: 5 }))?.status, 'shipped', 'the newer row stays');
    assert.equal((await getRow(target.clients.dynamodb, lines(), { line_id: 51 }))?.qty, 2);
  });

  it('applies incomplete and too-large transactions per key, counted, and writes nothing for a redelivered batch', async () => {
    const open = tx([
      { table: 'orders', op: 'c', key: { order_id: 7 }, row: { status: 'open' } },
      { table: 'lines', op: 'c', key: { line_id: 70 }, row: { qty: 1 } },
    ]);
    const big = tx([1, 2, 3, 4, 5].map((i) => ({ table: 'lines', op: 'c' as const, key: { line_id: 80 + i }, row: { qty: i } })));
    const batch = [open.begin, ...open.events, ...whole(big)];
    const first = await apply(batch);
    assert.deepEqual([first.txIncomplete, first.txTooLarge, first.txWhole, first.applied], [1, 1, 0, 7]);
    const again = await apply(batch);
    assert.equal(again.applied, 0);
    assert.equal(again.writeUnits, 0, 'the pre-read settled every redelivered row');
    const rows = await statusRows(target.clients.dynamodb, config);
    const status = (table: string) => rows.find((r) => r.table === table) ?? {};
    // Counted per delivery, under the table of the transaction's first event.
    assert.equal(Number(status('public.lines').txTooLarge), 2);
    assert.equal(Number(status('public.orders').txIncomplete), 2);
    assert.ok(Number(status('public.orders').txWhole) >= 5);
    for (const r of rows) assert.equal(identityGap(r), 0, JSON.stringify(r));
  });
});
