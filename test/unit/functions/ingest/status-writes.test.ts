/**
 * What a batch costs the status table, over the real wiring (mocked clients): one UpdateItem per
 * table, no status read while the container's copy is fresh (and an eventually consistent one when
 * it is not), a throttled update retried within the invocation's time and then counted and logged,
 * and rows written below a truncate another shard raised meanwhile removed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchGetItemCommand, DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { parseConfig } from '../../../../lib/config/config.js';
import { processBatch } from '../../../../functions/ingest/process-batch.js';
import { pgMessage } from '../../../helpers/debezium.js';
import { mockedDeps, NOW, records } from '../../../helpers/mocked-deps.js';
import { STATUS_ROW } from '../../../../functions/telemetry/status-layout.js';

const tables = Array.from({ length: 12 }, (_, i) => ({ source: `public.t${i}`, target: `shop-t${i}`, key: ['id'], keyTypes: { id: 'number' as const } }));
const config = parseConfig({ name: 'shop', tables, raw: { bucket: 'shop-raw' }, ingest: { statusMaxAgeSeconds: 30 } });

/** One insert into each of the tables, at increasing positions. */
const batchOver = (n: number, lsn: number) =>
  records(Array.from({ length: n }, (_, i) => JSON.stringify(pgMessage({ table: `t${i}`, op: 'c', after: { id: i + 1, name: 'x' }, lsn: lsn + i, lastCommitLsn: lsn + i - 1 }))));

const throttled = () => Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException', $fault: 'client', $metadata: { httpStatusCode: 400 } });

/** Updates of status rows (not the schema rows the drift step writes when a table's shape changes). */
const statusUpdates = (ddb: ReturnType<typeof mockedDeps>['ddb']) =>
  ddb.commandCalls(UpdateItemCommand).filter((c) => c.args[0].input.TableName === 'shop-status' && c.args[0].input.Key?.table?.S === STATUS_ROW);
const statusReads = (ddb: ReturnType<typeof mockedDeps>['ddb']) =>
  ddb.commandCalls(BatchGetItemCommand).filter((c) => c.args[0].input.RequestItems?.['shop-status']?.Keys?.some((k) => k.table?.S === STATUS_ROW));

describe('status writes per batch', () => {
  it('writes one status update per table per batch, and reads status rows only when the container has no fresh copy', async () => {
    let now = NOW;
    const { deps, ddb } = mockedDeps(config);
    const clocked = { ...deps, now: () => now };
    await processBatch(batchOver(12, 100), clocked);
    assert.equal(statusUpdates(ddb).length, 12, 'one per table');
    assert.equal(statusReads(ddb).length, 1, 'a cold container reads its tables once (one BatchGetItem for 12)');
    assert.equal(statusReads(ddb)[0]?.args[0].input.RequestItems?.['shop-status']?.ConsistentRead, false, 'eventually consistent');

    now += 5_000;
    await processBatch(batchOver(12, 200), clocked);
    assert.equal(statusUpdates(ddb).length, 24);
    assert.equal(statusReads(ddb).length, 1, 'the copies from the last status writes are fresh: no read');

    now += 31_000;
    await processBatch(batchOver(3, 300), clocked);
    assert.equal(statusReads(ddb).length, 2, 'older than ingest.statusMaxAgeSeconds: read again');
    assert.deepEqual(
      statusReads(ddb)[1]?.args[0].input.RequestItems?.['shop-status']?.Keys?.map((k) => k.pipeline?.S),
      ['shop/public.t0', 'shop/public.t1', 'shop/public.t2'],
    );
  });

  it('retries a throttled status update within the invocation’s time, and sends it once it goes through', async () => {
    const { deps, ddb, metrics, log } = mockedDeps(config);
    let failures = 3;
    ddb.on(UpdateItemCommand).callsFake((input: { TableName?: string; Key?: { table?: { S?: string } } }) => {
      if (input.TableName === 'shop-status' && input.Key?.table?.S === STATUS_ROW && failures-- > 0) throw throttled();
      return {};
    });
    const result = await processBatch(batchOver(1, 100), { ...deps, landing: { budgetMs: 10_000, sleep: async () => {} } });
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(statusUpdates(ddb).length, 4, 'three throttled attempts, then the one that counted');
    assert.equal(log.lines.filter((l) => l.message === 'status update failed; retrying').length, 3);
    assert.equal(metrics.totals.get('public.t0:StatusUpdatesFailed'), undefined, 'nothing lost, nothing counted as lost');
  });

  it('counts (StatusUpdatesFailed) and logs a status update still throttled when the time is up, and never drops it silently', async () => {
    const { deps, ddb, metrics, log } = mockedDeps(config);
    ddb.on(UpdateItemCommand).callsFake((input: { TableName?: string }) => {
      if (input.TableName === 'shop-status') throw throttled();
      return {};
    });
    let remaining = 20_000;
    const result = await processBatch(batchOver(2, 100), {
        ...deps,
        landing: {
          sleep: async (ms) => {
            remaining -= ms;
          },
        },
      }, { remainingTimeMs: () => remaining });
    assert.deepEqual(result.batchItemFailures, [], 'the rows are applied; only their counters are missing from the status row');
    assert.ok(statusUpdates(ddb).length > 4, `retried (${statusUpdates(ddb).length} attempts)`);
    assert.ok(remaining > 0 && remaining <= 1_000 + 5_000, `retried until the reserve (${remaining} ms left)`);
    assert.equal(metrics.totals.get('public.t0:StatusUpdatesFailed'), 1);
    assert.equal(metrics.totals.get('public.t1:StatusUpdatesFailed'), 1);
    assert.equal(metrics.totals.get('public.t0:EventsApplied'), 1, "the batch's metrics are still emitted");
    const errors = log.lines.filter((l) => l.level === 'error' && /StatusUpdatesFailed/.test(l.message));
    assert.deepEqual(errors.map((l) => l.extra?.table).sort(), ['public.t0', 'public.t1']);
  });

  it('removes the rows it wrote below a truncate watermark that its status write shows another shard raised meanwhile', async () => {
    const { deps, ddb } = mockedDeps(config);
    ddb.on(UpdateItemCommand).callsFake((input: { TableName?: string; Key?: { pipeline?: { S?: string } } }) => {
      if (input.TableName === 'shop-status' && input.Key?.pipeline?.S === 'shop/public.t0') return { Attributes: marshall({ pipeline: 'shop/public.t0', table: 'status', truncateWatermark: 'z' }) };
      return {};
    });
    ddb.on(DeleteItemCommand).resolves({});
    await processBatch(batchOver(2, 100), deps);
    const deletes = ddb.commandCalls(DeleteItemCommand).map((c) => c.args[0].input);
    assert.equal(deletes.length, 1, 'only the table whose watermark moved');
    assert.deepEqual(deletes[0]?.Key, { id: { N: '1' } });
    assert.equal(deletes[0]?.TableName, 'shop-t0');
    assert.equal(deletes[0]?.ConditionExpression, '#pos < :wm');
    assert.equal(deps.statusCache.peek('public.t0')?.truncateWatermark, 'z', 'and the container holds the new watermark for its next batch');
  });

  it('sends again, within the invocation’s time, only the guarded writes that were throttled, and fails fast on errors no retry fixes', async () => {
    const { deps, ddb, log } = mockedDeps(config);
    const sent: string[] = [];
    let throttles = 2;
    ddb.on(PutItemCommand).callsFake((input: { TableName?: string }) => {
      sent.push(String(input.TableName));
      if (input.TableName === 'shop-t1' && throttles-- > 0) throw throttled();
      if (input.TableName === 'shop-t2') throw Object.assign(new Error('One or more parameter values were invalid'), { name: 'ValidationException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
      return {};
    });
    ddb.on(UpdateItemCommand).resolves({});
    const result = await processBatch(batchOver(3, 100), { ...deps, landing: { budgetMs: 10_000, sleep: async () => {} } });
    assert.deepEqual(
      sent.filter((t) => t !== 'shop-status').sort(),
      ['shop-t0', 'shop-t1', 'shop-t1', 'shop-t1', 'shop-t2'],
      'the throttled key twice more, nothing else again, the refused one once',
    );
    assert.equal(result.batchItemFailures.length, 1, 'the write no retry fixes goes back to the mapping');
    assert.equal(result.summary.applied, 2);
    assert.equal(log.lines.filter((l) => l.message === 'guarded writes failed; retrying them').length, 2);
    assert.ok(!JSON.stringify(log.lines).includes('"x"'), 'no row value in a log line');
  });
});
