/**
 * reconcile --repair's Repair step (functions/jobs/reconcile/repair.ts, repair-write.ts) over an
 * in-memory S3 and a mocked DynamoDB: the replay-select rows of the repair keys, merged by key and
 * position, each key's events folded and written through the guarded writer; a `mismatch` with the
 * same-bad-row guard (`stale` when the row moved on); a key of another run's rows never written.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../../lib/config/config.js';
import { jobDeps } from '../../../../../functions/composition.js';
import { keyId, normalizeKey } from '../../../../../functions/core/keys.js';
import type { JobDeps } from '../../../../../functions/jobs/deps.js';
import { applyRepair, eventsOfRows, type RepairKey, readRepairOutcomes, repairKeyId } from '../../../../../functions/jobs/reconcile/repair.js';
import { SAME_BAD_ROW } from '../../../../../functions/jobs/reconcile/repair-write.js';
import type { ReplayRow } from '../../../../../functions/replay/bucket-merge.js';
import { CollectingMetricSink } from '../../../../../functions/telemetry/sinks.js';
import { PgHistory, type PgEvent } from '../../../../helpers/debezium.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const NOW = Date.UTC(2026, 10, 30, 6);
const config = parseConfig({ name: 'shop', tables: [{ source: 'public.customers', target: 'shop-customers', key: ['id'], keyTypes: { id: 'number' } }], raw: { bucket: 'shop-raw' } });
const table = config.tables[0] as (typeof config.tables)[number];
const idOf = (n: number) => keyId(table, normalizeKey(table, { id: n }));
const run = { runId: 'full-9', startedAt: NOW, tables: ['public.customers'], prefix: 'reports/reconcile/full-9/', bucket: 'shop-raw' };
const PREFIX = 'history/unload/reconcile/full-9/repair/';

let sequence = 100;
/** A replay-select row of an event, as the UNLOAD writes it. */
const rowOf = (e: PgEvent, seq = sequence++): ReplayRow => ({
  source_table: e.table,
  key_id: idOf(Number(e.key.id)),
  position: e.position,
  op: e.op,
  arrival_ts: NOW - 60_000,
  transport_kind: 'kinesis',
  stream: 's',
  shard: 'shardId-000000000000',
  sequence: String(seq).padStart(20, '0'),
  partition_key: e.partitionKey,
  topic: null,
  headers: null,
  message_key: null,
  message_key_base64: null,
  message: e.value,
  message_base64: null,
  raw_object: 'raw/dt=2026-11-30/hour=05/x.jsonl.gz',
});
const lines = (rows: readonly ReplayRow[]) => gzipSync(Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''), 'utf8'));

describe('reconcile repair: applying the selected rows', () => {
  let s3: FakeS3;
  let ddb: AwsClientStub<DynamoDBClient>;
  let deps: JobDeps;
  let writes: { key: unknown; position: string }[];

  beforeEach(() => {
    s3 = fakeS3();
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    ddb = mockClient(dynamodb);
    writes = [];
    const real = jobDeps(config, { s3: s3.client, dynamodb }, { metrics: new CollectingMetricSink(), log: memoryLog(), now: () => NOW });
    const writer = {
      write: async (w: { key: unknown; encodedPosition: string }) => {
        writes.push({ key: w.key, position: w.encodedPosition });
        return { outcome: 'applied' };
      },
    };
    deps = { ...real, writer: writer as unknown as JobDeps['writer'] };
  });
  afterEach(() => {
    s3.restore();
    ddb.restore();
  });

  it('folds each key’s selected events and writes the winner; a mismatch is replaced under the same-bad-row guard', async () => {
    const h = new PgHistory();
    const c1 = h.emit('customers', 'c', { id: 1 }, { name: 'c1', tier: 'basic' });
    const c2 = h.emit('customers', 'c', { id: 2 }, { name: 'c2' });
    const u1 = h.emit('customers', 'u', { id: 1 }, { name: 'c1', tier: 'gold' });
    const c3 = h.emit('customers', 'c', { id: 3 }, { name: 'c3' });
    const c4 = h.emit('customers', 'c', { id: 4 }, { name: 'c4' });
    const keys: RepairKey[] = [
      { table: 'public.customers', keyId: idOf(1), class: 'stale', actualHash: null },
      { table: 'public.customers', keyId: idOf(2), class: 'mismatch', actualHash: 'bad' },
      { table: 'public.customers', keyId: idOf(3), class: 'missing', actualHash: null },
      { table: 'public.customers', keyId: idOf(5), class: 'missing', actualHash: null },
    ];
    s3.put(`${run.prefix}repair-keys.json`, JSON.stringify(keys));
    // Two output parts, each sorted as replay-select sorts them; key 1's events in both, key 3's row twice (a redelivery), key 4 not asked for.
    const r3 = rowOf(c3);
    s3.put(`${PREFIX}part=00000/a.json.gz`, lines([rowOf(c1), rowOf(c2), r3, r3]));
    s3.put(`${PREFIX}part=00001/b.json.gz`, lines([rowOf(u1), rowOf(c4)]));
    const plan = { keysKey: `${run.prefix}repair-keys.json`, bucket: 'shop-raw', prefix: PREFIX, keys: keys.length, count: 2 } as never;
    const out = await applyRepair({ run, repairPlan: plan }, deps);
    const outcomes = await readRepairOutcomes(s3.client, run.bucket, out.outcomesKey);
    assert.deepEqual(Object.fromEntries([1, 2, 3, 5].map((n) => [n, outcomes.get(repairKeyId('public.customers', idOf(n)))])), {
      1: 'applied',
      2: 'applied',
      3: 'applied',
      5: 'unrepairable: no event of the key in history or raw',
    });
    assert.deepEqual([out.repaired, out.failed], [3, 1]);
    assert.deepEqual(writes, [
      { key: { id: 1 }, position: u1.position },
      { key: { id: 3 }, position: c3.position },
    ]);
    const put = ddb.commandCalls(PutItemCommand).map((c) => c.args[0].input);
    assert.equal(put.length, 1, 'the mismatch is written directly, with its own guard');
    assert.equal(put[0]?.ConditionExpression, SAME_BAD_ROW);
    assert.deepEqual([put[0]?.ExpressionAttributeValues?.[':pos'], put[0]?.ExpressionAttributeValues?.[':stored']], [{ S: c2.position }, { S: 'bad' }]);
    assert.equal(put[0]?.Item?.name?.S, 'c2');
  });

  it('a mismatch whose row moved on is stale; a write that throws is failed, not repaired', async () => {
    const h = new PgHistory();
    const c1 = h.emit('customers', 'c', { id: 1 }, { name: 'c1' });
    const c2 = h.emit('customers', 'c', { id: 2 }, { name: 'c2' });
    const keys: RepairKey[] = [
      { table: 'public.customers', keyId: idOf(1), class: 'mismatch', actualHash: 'bad' },
      { table: 'public.customers', keyId: idOf(2), class: 'missing', actualHash: null },
    ];
    s3.put(`${run.prefix}k.json`, JSON.stringify(keys));
    s3.put(`${PREFIX}part=00000/a.json.gz`, lines([rowOf(c1), rowOf(c2)]));
    ddb.on(PutItemCommand).rejects(new ConditionalCheckFailedException({ message: 'moved', $metadata: {} }));
    deps = { ...deps, writer: { write: async () => Promise.reject(new Error('throttled')) } as unknown as JobDeps['writer'] };
    const out = await applyRepair({ run, repairPlan: { keysKey: `${run.prefix}k.json`, bucket: 'shop-raw', prefix: PREFIX } as never }, deps);
    const outcomes = await readRepairOutcomes(s3.client, run.bucket, out.outcomesKey);
    assert.equal(outcomes.get(repairKeyId('public.customers', idOf(1))), 'stale');
    assert.equal(outcomes.get(repairKeyId('public.customers', idOf(2))), 'failed: throttled');
    assert.deepEqual([out.repaired, out.failed], [0, 2]);
  });

  it('takes from a key’s rows only the events they name: other rows of the same record, and unreadable ones, are left out', () => {
    const h = new PgHistory();
    const c1 = h.emit('customers', 'c', { id: 1 }, { name: 'c1' });
    const bad = { ...rowOf(c1), sequence: '999', message: '{"not": "debezium"}' };
    const other = { ...rowOf(c1), sequence: '998', position: 'zz' };
    assert.deepEqual(
      eventsOfRows(deps, [rowOf(c1), bad]).map((e) => e.key),
      [{ id: 1 }],
    );
    assert.deepEqual(eventsOfRows(deps, [other]), [], 'a row naming another position selects nothing');
  });
});
