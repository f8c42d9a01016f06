/**
 * processBatch over the real wiring with mocked DynamoDB and S3 clients: the accounting identity,
 * per-table quarantine counts, raw landing retries and failure, refused writes, multi-row messages
 * stored once per object, and binary keys kept exactly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConditionalCheckFailedException, PutItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { identityGap, OUTCOMES } from '../../../../functions/telemetry/contract.js';
import type { JsonObject } from '../../../../functions/core/json.js';
import { processBatch } from '../../../../functions/ingest/process-batch.js';
import { pgMessage } from '../../../helpers/debezium.js';
import { mockedDeps, putObjects, records, rowPuts, statusCounters } from '../../../helpers/mocked-deps.js';

const config = parseConfig({
  name: 'shop',
  tables: [
    { source: 'public.customers', target: 'shop-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'shop-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
    { source: 'employees', target: 'shop-employees', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'shop-raw' },
});

const pg = (table: 'customers' | 'orders', op: 'c' | 'u' | 'd' | 'r', id: number, lsn: number, extra: JsonObject = {}) => {
  const keyCol = table === 'customers' ? 'id' : 'order_id';
  const row = { [keyCol]: id, name: `n${lsn}`, ...extra };
  return JSON.stringify(pgMessage({ table, op, before: op === 'd' ? row : null, after: op === 'd' ? null : row, lsn, lastCommitLsn: lsn - 1 }));
};

/** A Debezium PostgreSQL TRUNCATE event (op "t", no before/after): https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-truncate-events */
const pgTruncate = (table: 'customers' | 'orders', lsn: number) => JSON.stringify(pgMessage({ table, op: 't' as 'c', lsn, lastCommitLsn: lsn - 1 }));

describe('processBatch', () => {
  it('counts every record exactly once as an outcome, per batch and per status row (property)', async () => {
    const kinds = fc.oneof(
      fc.record({ kind: fc.constant('row' as const), table: fc.constantFrom('customers' as const, 'orders' as const), op: fc.constantFrom('c' as const, 'u' as const, 'd' as const, 'r' as const), id: fc.integer({ min: 1, max: 4 }), lsn: fc.integer({ min: 10, max: 40 }) }),
      fc.record({ kind: fc.constantFrom('invalid-json' as const, 'unknown-table' as const, 'missing-key' as const, 'heartbeat' as const, 'tombstone' as const) }),
      fc.record({ kind: fc.constant('truncate' as const), table: fc.constantFrom('customers' as const, 'orders' as const), lsn: fc.integer({ min: 10, max: 40 }) }),
    );
    const outcome = fc.constantFrom('ok', 'ok', 'ok', 'stale', 'error');
    await fc.assert(
      fc.asyncProperty(fc.array(kinds, { minLength: 1, maxLength: 25 }), fc.array(outcome, { minLength: 1, maxLength: 30 }), fc.boolean(), async (batch, outcomes, sweepFails) => {
        const { deps, ddb, statusTable } = mockedDeps(config);
        let call = 0;
        const writeOutcome = () => {
          const o = outcomes[call++ % outcomes.length];
          if (o === 'stale') throw new ConditionalCheckFailedException({ message: 'newer', $metadata: {} });
          if (o === 'error') throw new Error('throttled for good');
          return {};
        };
        ddb.on(PutItemCommand).callsFake(writeOutcome);
        ddb.on(UpdateItemCommand).callsFake((input: { TableName?: string }) => (input.TableName === statusTable ? {} : writeOutcome()));
        ddb.on(ScanCommand).callsFake(() => {
          if (sweepFails) throw new Error('scan failed');
          return { Items: [] };
        });
        const values = batch.map((b) => {
          switch (b.kind) {
            case 'row':
              return pg(b.table, b.op, b.id, b.lsn);
            case 'truncate':
              return pgTruncate(b.table, b.lsn);
            case 'invalid-json':
              return '{"before":';
            case 'unknown-table':
              return JSON.stringify(pgMessage({ table: 'widgets', op: 'c', after: { id: 1 }, lsn: 5, lastCommitLsn: 4 }));
            case 'missing-key':
              return JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { name: 'no key' }, lsn: 6, lastCommitLsn: 5 }));
            case 'heartbeat':
              // Debezium heartbeat value: https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-property-heartbeat-interval-ms
              return '{"ts_ms":1735732800000}';
            default:
              return null; // a Kafka tombstone: no value
          }
        });
        const result = await processBatch(records(values), deps);
        const s = result.summary;
        assert.equal(identityGap(s), 0, JSON.stringify(s));
        assert.ok(s.received >= s.records - 0, 'a record is at least one received unit');
        const rows = statusCounters(ddb, statusTable);
        for (const [table, counters] of rows) assert.equal(identityGap(counters), 0, `${table}: ${JSON.stringify(counters)}`);
        const total = (c: string) => [...rows.values()].reduce((n, r) => n + (r[c] ?? 0), 0);
        for (const c of ['received', ...OUTCOMES]) assert.equal(total(c), s[c as keyof typeof s], `status rows sum to the batch summary for ${c}`);
        assert.equal(result.batchItemFailures.length > 0, s.failed > 0);
      }),
      { numRuns: 60 },
    );
  });

  it('counts quarantines of configured tables under the table, and only unknown tables under *', async () => {
    const { deps, ddb, statusTable, s3 } = mockedDeps(config);
    const values = [
      pg('customers', 'c', 1, 10),
      JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { name: 'no key' }, lsn: 11, lastCommitLsn: 10 })),
      JSON.stringify(pgMessage({ table: 'widgets', op: 'c', after: { id: 1 }, lsn: 12, lastCommitLsn: 11 })),
      'not json',
    ];
    const { summary } = await processBatch(records(values), deps);
    assert.equal(summary.quarantined, 3);
    const rows = statusCounters(ddb, statusTable);
    assert.equal(rows.get('public.customers')?.quarantined, 1);
    assert.equal(rows.get('*')?.quarantined, 2);
    const quarantine = putObjects(s3).find((o) => o.key.startsWith('quarantine/'));
    assert.deepEqual(
      quarantine?.lines.map((l) => [l.reason, l.table]),
      [
        ['missing-key', 'public.customers'],
        ['unknown-table', null],
        ['invalid-json', null],
      ],
    );
  });

  it('retries raw landing with backoff until it succeeds, then applies', async () => {
    const { deps, ddb, s3, log } = mockedDeps(config);
    s3.on(PutObjectCommand).rejectsOnce(new Error('SlowDown')).rejectsOnce(new Error('SlowDown')).resolves({});
    const result = await processBatch(records([pg('customers', 'c', 1, 10)]), deps);
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(result.summary.applied, 1);
    assert.equal(rowPuts(ddb, config.statusTable).length, 1);
    assert.deepEqual(
      log.lines.filter((l) => l.message === 'raw landing failed; retrying').map((l) => [l.extra?.attempt, l.extra?.retryInMs]),
      [
        [1, 100],
        [2, 200],
      ],
    );
  });

  it('fails the whole batch, applying nothing, once landing keeps failing for the time it has', async () => {
    const { deps, ddb, s3, statusTable } = mockedDeps(config);
    s3.on(PutObjectCommand).rejects(new Error('S3 is down'));
    const slept: number[] = [];
    const result = await processBatch(records([pg('customers', 'c', 1, 10), 'bad json', pg('orders', 'c', 2, 11)]), {
      ...deps,
      landing: { budgetMs: 5_000, sleep: async (ms) => void slept.push(ms) },
    });
    assert.deepEqual(result.batchItemFailures, [{ itemIdentifier: '1000' }]);
    assert.equal(rowPuts(ddb, statusTable).length, 0, 'nothing applied');
    assert.equal(result.summary.failed, 3);
    assert.equal(result.summary.quarantined, 0, 'the quarantine object did not land either');
    assert.equal(identityGap(result.summary), 0);
    assert.ok(slept.length >= 3 && slept.every((ms, i) => i === 0 || ms >= (slept[i - 1] ?? 0)), `backoff grows: ${slept}`);
    assert.ok(slept.reduce((a, b) => a + b, 0) <= 5_000);
    const rows = statusCounters(ddb, statusTable);
    assert.equal(rows.get('public.customers')?.failed, 1);
    const statusUpdate = ddb.commandCalls(UpdateItemCommand).find((c) => c.args[0].input.Key?.pipeline?.S === 'shop/public.customers');
    assert.match(JSON.stringify(statusUpdate?.args[0].input.ExpressionAttributeValues), /raw landing failed: S3 is down/);
  });

  it("retries landing only while Lambda's remaining time allows", async () => {
    const { deps, s3 } = mockedDeps(config);
    s3.on(PutObjectCommand).rejects(new Error('S3 is down'));
    let remaining = 30_000;
    const result = await processBatch(records([pg('customers', 'c', 1, 10)]), {
        ...deps,
        landing: {
          sleep: async (ms) => {
            remaining -= ms;
          },
        },
      }, { remainingTimeMs: () => remaining });
    assert.equal(result.summary.failed, 1);
    // The reserve is 10 s of the 30 s: retries stop once the next delay would cut into it.
    assert.ok(remaining > 10_000 && remaining <= 15_000, `stopped with ${remaining} ms left`);
    const attempts = s3.commandCalls(PutObjectCommand).length;
    const { deps: d2, s3: s2 } = mockedDeps(config);
    s2.on(PutObjectCommand).rejects(new Error('S3 is down'));
    await processBatch(records([pg('customers', 'c', 1, 10)]), d2, { remainingTimeMs: () => 150 });
    assert.equal(s2.commandCalls(PutObjectCommand).length, 1, 'no time to retry');
    assert.ok(attempts > 5);
  });

  it('quarantines the records of a write DynamoDB refuses for good, instead of blocking the shard', async () => {
    const { deps, s3 } = mockedDeps(config);
    const value = pg('customers', 'c', 1, 10);
    deps.writer.write = async () => ({ outcome: 'quarantined' as const, writeUnits: 0, requests: 0, missing: [], spilled: false, error: new Error('item exceeds the DynamoDB item size limit') });
    const refusing = deps;
    const result = await processBatch(records([value]), refusing);
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(result.summary.quarantined, 1);
    assert.equal(identityGap(result.summary), 0);
    const refused = putObjects(s3).find((o) => o.key.startsWith('quarantine/'));
    assert.equal(refused?.lines[0]?.reason, 'write-refused');
    assert.equal(Buffer.from(String(refused?.lines[0]?.valueBase64), 'base64').toString('utf8'), value);
  });

  it('stores a multi-row message once per object: 2,500 CockroachDB webhook rows stay proportional to the input', async () => {
    // CockroachDB webhook sink body `{payload: [...], length}` (CockroachDB docs, "Changefeed Messages",
    // webhook sink; the element shape is test/fixtures/cockroachdb/webhook-sink-batch.json).
    const payload = Array.from({ length: 2500 }, (_, i) => ({
      after: { id: i + 1, name: `employee ${i + 1}`, office: 'new york city' },
      key: [i + 1],
      topic: 'employees',
      updated: `17011022966629${String(69433 + i).padStart(5, '0')}.0000000000`,
    }));
    const text = JSON.stringify({ payload, length: payload.length });
    const { deps, s3 } = mockedDeps(config);
    const before = process.memoryUsage().heapUsed;
    const result = await processBatch(records([text]), deps);
    const heapGrowth = process.memoryUsage().heapUsed - before;
    assert.equal(result.summary.received, 2500);
    assert.equal(result.summary.applied, 2500);
    assert.equal(identityGap(result.summary), 0);
    const raw = putObjects(s3).find((o) => o.key.startsWith('raw/dt='));
    assert.ok(raw);
    assert.equal(raw.lines.length, 2500);
    assert.equal(raw.lines[0]?.message, text, 'the first line carries the message');
    assert.equal(raw.lines[0]?.messageRef, undefined);
    assert.ok(raw.lines.slice(1).every((l) => l.message === null && l.messageRef === true), 'later lines reference it');
    assert.ok(raw.lines.every((l) => (l.transport as JsonObject).sequence === '1000'));
    // Before: every line repeated the message, 2,500 × 362 KB ≈ 900 MB of raw JSON. Now: the message once plus
    // each row's own metadata (key, position, transport), about 4× the input for these narrow three-column rows.
    assert.ok(raw.text.length < 6 * text.length, `raw ${raw.text.length} bytes for ${text.length} bytes of input`);
    assert.ok(heapGrowth < 200 * text.length, `heap grew ${heapGrowth} bytes for ${text.length} bytes of input`);
  });

  it('keeps binary Kafka keys exactly: base64 when they are not UTF-8', async () => {
    const { deps, s3 } = mockedDeps(config);
    const key = Uint8Array.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
    await processBatch(records([pg('customers', 'c', 1, 10), pg('customers', 'c', 2, 11)], { keys: [key, Buffer.from('{"id":2}')] }), deps);
    const raw = putObjects(s3).find((o) => o.key.startsWith('raw/dt='));
    assert.equal(raw?.lines[0]?.messageKey, null);
    assert.deepEqual([...Buffer.from(String(raw?.lines[0]?.messageKeyBase64), 'base64')], [...key]);
    assert.equal(raw?.lines[1]?.messageKey, '{"id":2}');
    assert.equal(raw?.lines[1]?.messageKeyBase64, undefined, 'text keys stay text');
  });

  it('emits only contract metrics, per table, with freshness samples for applied keys', async () => {
    const { deps, metrics } = mockedDeps(config);
    await processBatch(records([pg('customers', 'c', 1, 10), pg('orders', 'u', 7, 11), 'nope']), deps);
    assert.equal(metrics.totals.get('public.customers:EventsApplied'), 1);
    assert.equal(metrics.totals.get('public.orders:EventsUpdate'), 1);
    assert.equal(metrics.totals.get('*:Quarantined'), 1);
    assert.equal(metrics.totals.get('*:EventsReceived'), 1);
    assert.equal(metrics.samples.get('public.customers:FreshnessLagMs')?.length, 1);
  });

  it('does nothing for an empty batch', async () => {
    const { deps, ddb, s3 } = mockedDeps(config);
    const result = await processBatch([], deps);
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(ddb.calls().length + s3.calls().length, 0);
  });
});
