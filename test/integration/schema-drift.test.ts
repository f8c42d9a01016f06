/**
 * Schema drift on the integration target: Debezium PostgreSQL messages in which a column is added,
 * then removed, then a number column starts carrying text, through processBatch (one ingest
 * container: the same deps across batches, as a Lambda container keeps them), read back from the
 * status table the way `tidemark status --schema` reads it. Each change is named at the position
 * of the first event that showed it; the text value is written as delivered, never coerced. Run
 * with `node bin/with-loopback.mjs node --import tsx --test test/integration/schema-drift.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { localDeps } from '../../bin/cli/context.js';
import { renderSchemas, schemaStates } from '../../bin/cli/schema-status.js';
import { getRow, statusRows } from '../../bin/cli/state.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { JsonObject } from '../../functions/core/json.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { type BatchSummary, type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import { identityGap } from '../../functions/telemetry/contract.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { pgMessage, pgPosition } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'drift',
  tables: [{ source: 'public.orders', target: 'drift-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
  raw: { bucket: 'drift-raw' },
});
const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

describe(`schema drift on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let deps: IngestDeps;
  let sequence = 1;
  let lsn = 50_000_000;

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    deps = { ...localDeps(config, target.clients), log: quiet };
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  /** One batch of updates of order 1 with these after images; returns the batch summary and the position of each. */
  async function apply(images: readonly JsonObject[]): Promise<{ summary: BatchSummary; positions: string[] }> {
    const positions: string[] = [];
    const records: RawRecord[] = images.map((row) => {
      lsn += 8;
      positions.push(pgPosition(lsn - 4, lsn));
      const value = pgMessage({ table: 'orders', op: 'u', after: { order_id: 1, ...row }, lsn, lastCommitLsn: lsn - 4 });
      return {
        value: Buffer.from(JSON.stringify(value)),
        key: null,
        topic: null,
        headers: {},
        transport: { kind: 'kinesis', stream: 'drift-cdc', shard: 'shardId-000000000000', sequence: String(sequence++).padStart(20, '0'), partitionKey: '1', arrivalTime: Date.now() - 1000 },
      };
    });
    const result = await processBatch(records, deps);
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(identityGap(result.summary), 0, JSON.stringify(result.summary));
    return { summary: result.summary, positions };
  }

  it('names a column added, then removed, then a number column carrying text, each at its position; the text is stored as delivered', async () => {
    const first = await apply([
      { status: 'new', total: 10 },
      { status: 'paid', total: 10 },
    ]);
    const added = await apply([{ status: 'paid', total: 10, coupon: 'SPRING' }]);
    const removed = await apply([{ status: 'shipped', total: 10 }]);
    const changed = await apply([{ status: 'shipped', total: 'ten' }, { status: 'done', total: 'ten' }]);
    assert.equal(changed.summary.schemaChanges, 1);
    assert.equal(changed.summary.schemaIncompatible, 1);
    const unchanged = await apply([{ status: 'done', total: 'eleven' }]);
    assert.equal(unchanged.summary.schemaChanges, 0);

    const rows = await statusRows(target.clients.dynamodb, config);
    const state = schemaStates(rows).get('public.orders');
    assert.ok(state, JSON.stringify(rows.map((r) => r.table)));
    assert.equal(state.since, first.positions[0]);
    assert.deepEqual(
      state.changes.map((c) => [c.kind, c.column, c.position, c.holds]),
      [
        ['added', 'coupon', added.positions[0], true],
        ['removed', 'coupon', removed.positions[0], true],
        ['type-changed', 'total', changed.positions[0], false],
      ],
    );
    const text = renderSchemas(rows);
    assert.match(text, /^public\.orders: 3 columns \(1 removed\), 3 changes, 1 the target cannot hold/);
    assert.match(text, /type-changed\s+total\s+number\s+string\s+the target cannot hold it as before/);
    const table = config.tables[0];
    assert.ok(table);
    const stored = await getRow(target.clients.dynamodb, table, { order_id: 1 });
    assert.equal(stored?.total, 'eleven', 'the value is written as delivered, not coerced');
  });
});
