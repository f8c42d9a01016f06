/**
 * Table lifecycles in the ingest (functions/core/lifecycle.ts, functions/ingest/lifecycle.ts): a held
 * table's records land and are not applied while the other tables go on; a table whose writes keep
 * failing stops in error once its streak spends ingest.errorBudget, or at once for a failure no
 * retry fixes, and from then its shard moves on. Every received unit still ends as one outcome.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchGetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { budgetSpent, isHeld, lifecycleOf, nextStreak, permanentFailure } from '../../../../functions/core/lifecycle.js';
import { processBatch } from '../../../../functions/ingest/process-batch.js';
import { identityGap } from '../../../../functions/telemetry/contract.js';
import { pgMessage } from '../../../helpers/debezium.js';
import { mockedDeps, NOW, putObjects, records, rowPuts, statusCounters } from '../../../helpers/mocked-deps.js';

const tables = ['a', 'b'].map((t) => ({ source: `public.${t}`, target: `shop-${t}`, key: ['id'], keyTypes: { id: 'number' as const } }));
const config = parseConfig({ name: 'shop', tables, raw: { bucket: 'shop-raw' }, ingest: { errorBudget: { attempts: 3, hours: 1 } } });

/** Two inserts into each table. */
const batch = (lsn: number) =>
  records(['a', 'b', 'a', 'b'].map((t, i) => JSON.stringify(pgMessage({ table: t, op: 'c', after: { id: i + 1, name: 'x' }, lsn: lsn + i, lastCommitLsn: lsn + i - 1 }))), { firstSequence: lsn });

const serviceError = (name: string, message = name) => Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });

/** Status rows served by BatchGetItem: `public.a` with the given attributes. */
function statusOf(ddb: ReturnType<typeof mockedDeps>['ddb'], attributes: Record<string, unknown>) {
  ddb.on(BatchGetItemCommand).callsFake((input: { RequestItems: Record<string, { Keys: Record<string, { S?: string }>[] }> }) => {
    const keys = input.RequestItems['shop-status']?.Keys ?? [];
    const hit = keys.filter((k) => k.pipeline?.S === 'shop/public.a' && k.table?.S === 'status');
    return { Responses: { 'shop-status': hit.map(() => marshall({ pipeline: 'shop/public.a', table: 'status', ...attributes })) } };
  });
}

/** The SET and ADD clauses the status write of `table` made, by attribute name. */
function statusWriteOf(ddb: ReturnType<typeof mockedDeps>['ddb'], table: string): { expression: string; values: Record<string, unknown> } {
  const call = ddb.commandCalls(UpdateItemCommand).find((c) => c.args[0].input.Key?.pipeline?.S === `shop/${table}` && c.args[0].input.Key?.table?.S === 'status');
  const input = call?.args[0].input;
  assert.ok(input, `a status write of ${table}`);
  const names = input.ExpressionAttributeNames ?? {};
  const expression = Object.entries(names).reduce((e, [k, v]) => e.split(k).join(v), input.UpdateExpression ?? '');
  const values = Object.fromEntries(Object.entries(input.ExpressionAttributeValues ?? {}).map(([k, v]) => [k, v.S ?? v.N]));
  return { expression, values };
}

describe('table lifecycle in the ingest', () => {
  it('lands a suspended table’s records and applies the other table’s; the held units are counted, none failed', async () => {
    const { deps, ddb, s3 } = mockedDeps(config);
    statusOf(ddb, { lifecycle: 'suspended', lifecycleAt: NOW - 60_000, heldFrom: NOW - 60_000 });
    const result = await processBatch(batch(100), deps);
    assert.deepEqual(result.batchItemFailures, []);
    assert.deepEqual(
      rowPuts(ddb, 'shop-status').map((c) => c.args[0].input.TableName),
      ['shop-b', 'shop-b'],
      'only the running table is written',
    );
    const landed = putObjects(s3).flatMap((o) => o.lines);
    assert.equal(landed.filter((l) => l.table === 'public.a').length, 2, 'the held records are in raw');
    const counters = statusCounters(ddb, 'shop-status');
    assert.equal(counters.get('public.a')?.held, 2);
    assert.equal(counters.get('public.a')?.applied, undefined);
    assert.equal(counters.get('public.b')?.applied, 2);
    assert.equal(result.summary.held, 2);
    assert.equal(identityGap(result.summary), 0, 'received = Σ outcomes');
  });

  it('stops a table in error at once for a failure no retry fixes; the shard moves on and the state is recorded', async () => {
    const { deps, ddb, log } = mockedDeps(config);
    ddb.on(PutItemCommand).callsFake((input: { TableName?: string }) => {
      if (input.TableName === 'shop-a') throw serviceError('ResourceNotFoundException', 'Requested resource not found');
      return {};
    });
    const result = await processBatch(batch(100), deps);
    assert.deepEqual(result.batchItemFailures, [], 'nothing holds the shard back');
    assert.equal(result.summary.held, 2);
    assert.equal(result.summary.failed, 0);
    assert.equal(result.summary.enteredError, 1);
    assert.equal(identityGap(result.summary), 0);
    const { expression, values } = statusWriteOf(ddb, 'public.a');
    assert.match(expression, /lifecycle = :v\d+/);
    assert.ok(Object.values(values).includes('error'));
    assert.ok(Object.values(values).includes('permanent'));
    assert.ok(Object.values(values).some((v) => typeof v === 'string' && v.includes('the target table does not exist')));
    assert.ok(log.lines.some((l) => l.level === 'error' && l.extra?.table === 'public.a' && /stopped in error/.test(l.message)));
    // The next batch of this container holds the table from its own copy, without reading the row.
    ddb.resetHistory();
    const next = await processBatch(batch(200), deps);
    assert.deepEqual(next.batchItemFailures, []);
    assert.equal(next.summary.held, 2);
    assert.equal(rowPuts(ddb, 'shop-status').filter((c) => c.args[0].input.TableName === 'shop-a').length, 0);
  });

  it('counts a streak of failing batches and stops the table only once it has spent the budget (attempts and hours)', async () => {
    const throttled = (input: { TableName?: string }) => {
      if (input.TableName === 'shop-a') throw Object.assign(serviceError('ProvisionedThroughputExceededException'), { $retryable: { throttling: true } });
      return {};
    };
    // Two failing batches before, since 2 hours: this one is the third, the budget is spent.
    const spent = mockedDeps(config);
    spent.ddb.on(PutItemCommand).callsFake(throttled);
    statusOf(spent.ddb, { failAttempts: 2, failSince: NOW - 2 * 3_600_000 });
    const r1 = await processBatch(batch(100), { ...spent.deps, landing: { budgetMs: 0, sleep: async () => {} } });
    assert.deepEqual(r1.batchItemFailures, []);
    assert.equal(r1.summary.enteredError, 1);
    const w1 = statusWriteOf(spent.ddb, 'public.a');
    assert.ok(Object.values(w1.values).includes('budget'));
    assert.ok(Object.values(w1.values).includes(String(NOW - 2 * 3_600_000)), 'held from the first failure: resume replays from there');

    // Enough attempts but not yet the hours: one more attempt in the streak, and the batch fails.
    const early = mockedDeps(config);
    early.ddb.on(PutItemCommand).callsFake(throttled);
    statusOf(early.ddb, { failAttempts: 5, failSince: NOW - 10 * 60_000 });
    const r2 = await processBatch(batch(100), { ...early.deps, landing: { budgetMs: 0, sleep: async () => {} } });
    assert.equal(r2.batchItemFailures.length, 1);
    assert.equal(r2.summary.enteredError, 0);
    const w2 = statusWriteOf(early.ddb, 'public.a');
    assert.match(w2.expression, /ADD .*failAttempts :v\d+/);
    assert.match(w2.expression, /failSince = if_not_exists\(failSince, :v\d+\)/);

    // A batch that applies the table again clears the streak.
    const healed = mockedDeps(config);
    statusOf(healed.ddb, { failAttempts: 5, failSince: NOW - 10 * 60_000 });
    await processBatch(batch(100), healed.deps);
    assert.match(statusWriteOf(healed.ddb, 'public.a').expression, /REMOVE failAttempts, failSince/);
  });

  it('decides state, streak and permanence from what a status row and an error say', () => {
    assert.equal(lifecycleOf(undefined), 'running');
    assert.equal(lifecycleOf({ lifecycle: 'paused' }), 'running', 'an unknown state is not a hold');
    assert.equal(isHeld({ lifecycle: 'error' }), true);
    assert.deepEqual(nextStreak({ failAttempts: 'x', failSince: NOW + 5 }, NOW), { attempts: 1, since: NOW }, 'a bad or future record starts a new streak');
    assert.equal(permanentFailure(new Error('x', { cause: serviceError('AccessDeniedException') })), 'access to the target table is denied (AccessDeniedException)');
    assert.match(String(permanentFailure(serviceError('ValidationException', 'The provided key element does not match the schema'))), /key schema differs/);
    assert.equal(permanentFailure(serviceError('ValidationException', 'Item size has exceeded the maximum allowed size')), undefined, "one record's problem is quarantine's");
    assert.equal(permanentFailure('text'), undefined);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 100 }), (attempts, hours, budgetAttempts, budgetHours) => {
        const streak = { attempts, since: NOW - hours * 3_600_000 };
        assert.equal(budgetSpent(streak, { attempts: budgetAttempts, hours: budgetHours }, NOW), attempts >= budgetAttempts && hours >= budgetHours);
      }),
    );
  });
});
