/**
 * Upgrading the status table from layout 1 to layout 2 on the integration target: counters move
 * exactly once however often `status-migrate` runs, also what the old version adds between runs;
 * facts the new version wrote are kept, watermarks keep the higher value (and a truncate the new
 * version did not hold its writes against is swept), hours and job rows move, the table gets its
 * registry row, and `--delete-old` removes only fully moved rows.
 *
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/status-migrate.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { migrateStatus } from '../../bin/cli/status-migrate.js';
import { statusRows } from '../../bin/cli/state.js';
import { StatusReader } from '../../functions/adapters/status-reader.js';
import { ingestDeps } from '../../functions/composition.js';
import { encodePosition } from '../../functions/core/position.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { pgMessage } from '../helpers/debezium.js';
import { records } from '../helpers/mocked-deps.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { tableRegistryPartition } from '../../functions/telemetry/status-layout.js';

const base = parseConfig({
  name: 'upgrade',
  tables: [{ source: 'public.customers', target: 'upgrade-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'upgrade-raw' },
});

describe(`status-migrate on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
  });
  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  const put = (item: Record<string, unknown>) => target.clients.dynamodb.send(new PutItemCommand({ TableName: config.statusTable, Item: marshall(item) }));
  const get = async (partition: string, row: string) => {
    const res = await target.clients.dynamodb.send(new GetItemCommand({ TableName: config.statusTable, Key: { pipeline: { S: partition }, table: { S: row } }, ConsistentRead: true }));
    return res.Item ? (unmarshall(res.Item) as Record<string, unknown>) : undefined;
  };

  it('moves counters once, keeps newer facts and higher watermarks, moves hours and job rows, and deletes only moved rows', async () => {
    const now = Date.now();
    const hour = new Date(now - 3_600_000).toISOString().slice(0, 13);
    const oldWatermark = encodePosition([5n, 6n]);
    // Layout 1, as the previous version left it.
    await put({ pipeline: config.name, table: 'public.customers', received: 10, applied: 8, stale: 2, state: 'RUNNING', lastPosition: 'a-old', truncateWatermark: oldWatermark, carriesFlattened: true });
    await put({ pipeline: config.name, table: `hour#${hour}#public.customers`, received: 10, applied: 8, opC: 8, __expiresAt: Math.floor(now / 1000) + 86_400 });
    await put({ pipeline: config.name, table: 'reconcile#public.customers', lastRunAt: now - 60_000, runId: 'r1', mode: 'window' });
    await put({ pipeline: `${config.name}#fresh:upgrade-rebuild`, table: 'public.customers', truncateWatermark: oldWatermark });
    // A schema the previous version recorded (schema#<table>), for a table the new version has not seen yet.
    await put({ pipeline: config.name, table: 'schema#public.orders', schema: '{"kept":true}', version: 3, columns: 4, changes: 2, incompatible: 0 });
    // The new version ran before the migration: it wrote its own row and a row below the old watermark.
    const deps = ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: silentLog });
    const batch = [1, 2].map((id) => JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { id, name: `n${id}` }, lsn: 100 + id, lastCommitLsn: 99 + id })));
    await processBatch(records(batch), deps);
    await target.clients.dynamodb.send(new PutItemCommand({ TableName: config.tables[0]?.target, Item: { id: { N: '99' }, __pos: { S: encodePosition([1n, 2n]) } } }));

    const first = await migrateStatus(target.clients.dynamodb, config);
    assert.deepEqual({ rows: first.rows, moved: first.moved, units: first.units, jobRows: first.jobRows, retryLater: first.retryLater }, { rows: 5, moved: 2, units: 46, jobRows: 1, retryLater: 0 });
    assert.equal(first.swept, 1, 'the row below the old watermark, written by the new version before it knew it, is swept');
    const row = await get(`${config.name}/public.customers`, 'status');
    assert.equal(row?.received, 12, 'the old counters added to what the new version counted');
    assert.equal(row?.applied, 10);
    assert.equal(row?.stale, 2);
    assert.notEqual(row?.lastPosition, 'a-old', 'a fact the new version wrote wins');
    assert.equal(row?.truncateWatermark, oldWatermark);
    assert.equal(row?.carriesFlattened, true);
    assert.equal((await get(`${config.name}/public.customers`, `hour#${hour}#v1`))?.received, 10);
    assert.equal((await get(`${config.name}/public.customers`, 'job#reconcile'))?.runId, 'r1');
    assert.equal((await get(`${config.name}#fresh:upgrade-rebuild/public.customers`, 'status'))?.truncateWatermark, oldWatermark);
    assert.ok(await get(tableRegistryPartition(config.name, 'public.customers'), 'public.customers'), 'registered');
    assert.deepEqual(
      await get(`${config.name}/public.orders`, 'schema'),
      { pipeline: `${config.name}/public.orders`, table: 'schema', schema: '{"kept":true}', version: 3, columns: 4, changes: 2, incompatible: 0 },
      "the recorded schema moves to its table's partition as it was",
    );

    const again = await migrateStatus(target.clients.dynamodb, config);
    assert.deepEqual([again.moved, again.units, again.current], [0, 0, 2], 'a second run moves nothing');

    // The old version, still draining, adds a batch to its row: the next run moves exactly that.
    await target.clients.dynamodb.send(
      new UpdateItemCommand({
        TableName: config.statusTable,
        Key: { pipeline: { S: config.name }, table: { S: 'public.customers' } },
        UpdateExpression: 'ADD received :n, applied :n',
        ExpressionAttributeValues: { ':n': { N: '5' } },
      }),
    );
    const late = await migrateStatus(target.clients.dynamodb, config);
    assert.deepEqual([late.moved, late.units], [1, 10]);
    assert.equal((await get(`${config.name}/public.customers`, 'status'))?.received, 17);

    const hours = await new StatusReader(target.clients.dynamodb, config.statusTable, config.name).hourRows('public.customers', now - 3_600_000, now);
    assert.equal(hours.reduce((n, h) => n + h.counters.received, 0), 12, 'the moved hour and the open hour of layout 2');
    const shown = await statusRows(target.clients.dynamodb, config);
    assert.deepEqual(
      shown.map((r) => r.table),
      ['public.customers', 'reconcile#public.customers', 'schema#public.customers'],
      'the status row, the job row moved, and the schema the new version recorded',
    );

    const cleaned = await migrateStatus(target.clients.dynamodb, config, { deleteOld: true });
    assert.equal(cleaned.deleted, 5);
    assert.equal(await get(config.name, 'public.customers'), undefined);
    assert.equal((await migrateStatus(target.clients.dynamodb, config)).rows, 0);
    assert.equal((await get(`${config.name}/public.customers`, 'status'))?.received, 17, 'deleting layout 1 changed nothing in layout 2');
  });
});
