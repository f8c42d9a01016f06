/**
 * The handler's event paths: Kinesis partial-batch response, and Kafka's per-partition partial-batch
 * response, whose item identifier is `{partition: "<topic>-<partition>" (the key of the event's
 * records map), offset}` (as in Powertools for AWS Lambda (Python), aws-powertools/powertools-lambda-python
 * PR #7941, `KafkaItemIdentifier`; docs: https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchGetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { kinesisEvent, mskEvent } from '../../../bin/cli/kinesis-shape.js';
import { parseConfig } from '../../../lib/config/config.js';
import type { PlannedWrite } from '../../../functions/core/plan.js';
import { handleEvent } from '../../../functions/ingest.js';
import { BAD_KINDS, corpusConfig } from '../../corpus/bad-input.js';
import { pgMessage } from '../../helpers/debezium.js';
import { readFixture } from '../../helpers/messages.js';
import { mockedDeps, putObjects, rowPuts } from '../../helpers/mocked-deps.js';

const config = parseConfig({
  name: 'shop',
  tables: [{ source: 'public.customers', target: 'shop-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'shop-raw' },
});
const msg = (id: number, lsn: number) => Buffer.from(JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { id, name: `c${id}` }, lsn, lastCommitLsn: lsn - 1 })));

/** Deps whose writes fail for the given customer ids. */
function failingFor(ids: readonly number[]) {
  const { deps } = mockedDeps(config);
  const write = deps.writer.write.bind(deps.writer);
  // writeAll sends each write through `write`, so failing it per key fails exactly those writes.
  deps.writer.write = async (w: PlannedWrite) =>
    ids.includes(Number(w.key.id)) ? { outcome: 'failed' as const, writeUnits: 0, requests: 1, missing: [], spilled: false, error: new Error('injected') } : write(w);
  return deps;
}

describe('ingest handler', () => {
  it('answers Kafka batches with the lowest failed offset of each failed partition, and nothing for the others', async () => {
    const event = mskEvent([
      { topic: 'shop.public.customers', partition: 0, offset: 10, key: null, value: msg(1, 10), timestamp: 1 },
      { topic: 'shop.public.customers', partition: 0, offset: 11, key: null, value: msg(2, 11), timestamp: 1 },
      { topic: 'shop.public.customers', partition: 0, offset: 12, key: null, value: msg(3, 12), timestamp: 1 },
      { topic: 'shop.public.customers', partition: 3, offset: 40, key: null, value: msg(4, 13), timestamp: 1 },
      { topic: 'shop.public.customers', partition: 5, offset: 7, key: null, value: msg(5, 14), timestamp: 1 },
    ]);
    const response = await handleEvent(event, failingFor([2, 3, 5]));
    assert.deepEqual(response, {
      batchItemFailures: [{ itemIdentifier: { partition: 'shop.public.customers-0', offset: 11 } }, { itemIdentifier: { partition: 'shop.public.customers-5', offset: 7 } }],
    });
    assert.deepEqual(await handleEvent(event, failingFor([])), { batchItemFailures: [] });
  });

  it('answers Kinesis batches with the lowest failed sequence number', async () => {
    const event = kinesisEvent(
      'cdc',
      'shardId-000000000000',
      [1, 2, 3].map((id) => ({ data: msg(id, 10 + id), partitionKey: String(id), sequenceNumber: String(500 + id), arrival: new Date() })),
    );
    assert.deepEqual(await handleEvent(event, failingFor([2, 3])), { batchItemFailures: [{ itemIdentifier: '502' }] });
  });

  it('gets through a record holding a 100,002-digit number and one of 320,000 columns in linear time, quarantining only the wide one (issue 20, items 1 and 2)', async () => {
    const big = `1${'0'.repeat(100_000)}1`;
    const long = Buffer.from(JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { id: 7, name: 'n' }, lsn: 20, lastCommitLsn: 19 })).replace('"name":"n"', `"name":"n","v":${big}`));
    const wideAfter: Record<string, number> = { id: 8 };
    for (let i = 0; i < 320_000; i++) wideAfter[`c${i}`] = i;
    const wide = Buffer.from(JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: wideAfter, lsn: 30, lastCommitLsn: 29 })));
    const event = kinesisEvent(
      'cdc',
      'shardId-000000000000',
      [long, wide, msg(9, 40)].map((data, i) => ({ data, partitionKey: String(i), sequenceNumber: String(600 + i), arrival: new Date() })),
    );
    const { deps, s3, metrics } = mockedDeps(config);
    const started = process.cpuUsage();
    assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
    const used = process.cpuUsage(started);
    const ms = (used.user + used.system) / 1e3;
    // Quadratic readers took 121 s on the first record alone; linear ones take well under a second
    // each. CPU time, which a loaded machine does not inflate as it does wall time.
    assert.ok(ms < 20_000, `${ms.toFixed(0)} ms of CPU`);
    assert.equal(metrics.totals.get('public.customers:Quarantined'), 1);
    const quarantine = putObjects(s3).find((o) => o.key.startsWith('quarantine/'));
    assert.equal(quarantine?.lines.length, 1);
    assert.equal(quarantine?.lines[0]?.reason, 'too-many-columns');
    assert.equal(metrics.totals.get('public.customers:EventsApplied'), 2);
  });

  it('quarantines every long-digit and wide-row kind of the bad-input corpus with its reason, in linear time (issue 20, items 1 and 2)', async () => {
    const kinds = BAD_KINDS.filter((k) => k.family === 'long-digits' || k.family === 'wide-row');
    assert.ok(kinds.length >= 8, `${kinds.length} kinds`);
    const event = kinesisEvent(
      'cdc',
      'shardId-000000000000',
      kinds.map((k, i) => ({ data: Buffer.from(k.value), partitionKey: `p${i}`, sequenceNumber: String(800 + i), arrival: new Date() })),
    );
    const { deps, s3 } = mockedDeps(corpusConfig);
    const started = process.cpuUsage();
    assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
    const used = process.cpuUsage(started);
    const ms = (used.user + used.system) / 1e3;
    // Each kind once took seconds to minutes (quadratic patterns, per-column costs); linear readers take milliseconds.
    assert.ok(ms < 20_000, `${ms.toFixed(0)} ms of CPU`);
    const reasons = new Map(putObjects(s3).filter((o) => o.key.startsWith('quarantine/')).flatMap((o) => o.lines.map((l) => [String((l.transport as { sequence?: string } | undefined)?.sequence), l.reason])));
    for (const [i, k] of kinds.entries()) assert.equal(reasons.get(String(800 + i)), k.reason, k.name);
  });

  describe('Kafka tombstones of Debezium flattened feeds under format "auto" (issue 20, item 13)', () => {
    // Debezium ExtractNewRecordState, delete.tombstone.handling.mode=tombstone (the default since 2.5):
    // test/fixtures/debezium/flattened-default-no-metadata.json and flattened-default-tombstone.json.
    const flatConfig = parseConfig({
      name: 'shop',
      tables: [
        { source: 'inventory.customers', target: 'shop-inv-customers', key: ['id'], keyTypes: { id: 'number' } },
        { source: 'inventory.orders', target: 'shop-inv-orders', key: ['id'], keyTypes: { id: 'number' } },
      ],
      raw: { bucket: 'shop-raw' },
    });
    const topic = 'dbserver1.inventory.customers';
    const row = Buffer.from(JSON.stringify(readFixture('debezium', 'flattened-default-no-metadata').message_value));
    const key = Buffer.from(JSON.stringify({ id: 1004 }));
    const tombstoneWrites = (ddb: ReturnType<typeof mockedDeps>['ddb']) =>
      ddb.commandCalls(PutItemCommand).filter((c) => c.args[0].input.TableName === 'shop-inv-customers' && c.args[0].input.Item?.__deleted?.BOOL === true);

    it('deletes the row when the tombstone follows the flattened insert in the batch', async () => {
      const { deps, ddb } = mockedDeps(flatConfig);
      const event = mskEvent([
        { topic, partition: 0, offset: 40, key, value: row, timestamp: 1 },
        { topic, partition: 0, offset: 41, key, value: null, timestamp: 2 },
      ]);
      assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
      assert.equal(tombstoneWrites(ddb).length, 1, 'one guarded tombstone for id 1004');
    });

    it('deletes it in a fresh container too, from what the status row recorded (carriesFlattened)', async () => {
      const { deps, ddb } = mockedDeps(flatConfig);
      ddb.on(BatchGetItemCommand).resolves({ Responses: { 'shop-status': [marshall({ pipeline: 'shop/inventory.customers', table: 'status', carriesFlattened: true })] } });
      const event = mskEvent([{ topic, partition: 0, offset: 41, key, value: null, timestamp: 2 }]);
      assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
      assert.equal(tombstoneWrites(ddb).length, 1);
    });

    it('keeps a tombstone of a table never seen flattened as a control in raw, saying why', async () => {
      const { deps, ddb, s3 } = mockedDeps(flatConfig);
      const event = mskEvent([{ topic: 'dbserver1.inventory.orders', partition: 0, offset: 7, key, value: null, timestamp: 2 }]);
      assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
      assert.equal(rowPuts(ddb, 'shop-status').length, 0);
      const raw = putObjects(s3).flatMap((o) => o.lines);
      assert.equal(raw[0]?.control, 'kafka-tombstone');
    });
  });

  it('quarantines a CockroachDB sinkless key_only row as unsupported-envelope (issue 20, item 14)', async () => {
    // CockroachDB docs, "key_only" with a sinkless changefeed: test/fixtures/cockroachdb/sinkless-key-only.json
    const crdb = parseConfig({ name: 'shop', tables: [{ source: 'users', target: 'shop-users', key: ['city', 'id'] }, { source: 'orders', target: 'shop-orders', key: ['id'] }], raw: { bucket: 'shop-raw' } });
    const { deps, s3 } = mockedDeps(crdb);
    const value = Buffer.from(JSON.stringify(readFixture('cockroachdb', 'sinkless-key-only').message_value));
    const event = kinesisEvent('cdc', 'shardId-000000000000', [{ data: value, partitionKey: 'k', sequenceNumber: '700', arrival: new Date() }]);
    assert.deepEqual(await handleEvent(event, deps), { batchItemFailures: [] });
    const quarantine = putObjects(s3).find((o) => o.key.startsWith('quarantine/'));
    assert.equal(quarantine?.lines[0]?.reason, 'unsupported-envelope');
  });
});
