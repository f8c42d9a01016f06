/**
 * Freshness (functions/adapters/shard-frontier.ts): each shard's applied commit time, never lowered,
 * moved by control messages too; a failing shard holds the frontier back; an idle one is left out.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConditionalCheckFailedException, DynamoDBClient, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { ACTIVE_MS, batchCommitFrontier, frontierOf, resolvedMs, ShardFrontierStore } from '../../../../functions/adapters/shard-frontier.js';
import type { ChangeEvent, ControlEvent } from '../../../../functions/core/types.js';

const NOW = Date.UTC(2026, 11, 2, 4, 0);
const change = (commitTs: number | null) => ({ kind: 'change', commitTs }) as unknown as ChangeEvent;
const control = (c: Partial<ControlEvent>) => ({ kind: 'control', control: 'heartbeat', commitTs: null, detail: {}, ...c }) as unknown as ControlEvent;

describe('shard frontier', () => {
  it('reads CockroachDB resolved timestamps (wall nanoseconds . logical) without a pattern, and refuses anything else', () => {
    assert.equal(resolvedMs('1735732800000000000.0000000000'), 1_735_732_800_000);
    assert.equal(resolvedMs('1735732800123456789'), 1_735_732_800_123);
    for (const bad of ['', 'abc', '12', '1e20', `${'9'.repeat(100000)}.0`, '-1735732800000000000']) assert.equal(resolvedMs(bad), null, bad.slice(0, 20));
  });

  it('takes the newest commit a batch carried, heartbeats and resolved timestamps included', () => {
    assert.equal(batchCommitFrontier([change(5), change(null), change(9)], []), 9);
    assert.equal(batchCommitFrontier([change(5)], [control({ commitTs: 12 })]), 12, 'a heartbeat moves a quiet shard');
    assert.equal(batchCommitFrontier([], [control({ control: 'resolved' as ControlEvent['control'], detail: { resolved: '20000000.0' } })]), 20);
    assert.equal(batchCommitFrontier([change(null)], []), undefined);
    assert.equal(batchCommitFrontier([change(5)], [control({ control: 'heartbeat', detail: { tsMs: 40 } })]), 40, "a Debezium heartbeat's connector time");
  });

  it('is the lowest over active and failing shards; idle ones are counted and left out', () => {
    const f = frontierOf(
      [
        { shard: 's/1', commitTs: 100, at: NOW - 1000 },
        { shard: 's/2', commitTs: 50, at: NOW - 5000, failingSince: NOW - ACTIVE_MS * 3 },
        { shard: 's/3', commitTs: 10, at: NOW - ACTIVE_MS - 1 },
      ],
      NOW,
    );
    assert.deepEqual(f, { completeAsOf: 50, shards: 2, failing: 1, idle: 1 });
    assert.deepEqual(frontierOf([{ shard: 's/1', at: NOW }], NOW), { shards: 1, failing: 0, idle: 0 }, 'a shard with no commit time yet: not known');
    fc.assert(
      fc.property(fc.array(fc.record({ commitTs: fc.integer({ min: 0, max: 1e9 }), age: fc.integer({ min: 0, max: 2 * ACTIVE_MS }) }), { minLength: 1, maxLength: 20 }), (shards) => {
        const rows = shards.map((s, i) => ({ shard: `s/${i}`, commitTs: s.commitTs, at: NOW - s.age }));
        const active = shards.filter((s) => s.age <= ACTIVE_MS);
        const f = frontierOf(rows, NOW);
        assert.equal(f.completeAsOf, active.length === 0 ? undefined : Math.min(...active.map((s) => s.commitTs)));
      }),
    );
  });

  it('records a batch in one UpdateItem, never lowers the commit time, and marks a failing shard until it applies again', async () => {
    const client = new DynamoDBClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const ddb = mockClient(client);
    let refuse = false;
    ddb.on(UpdateItemCommand).callsFake((input: { ConditionExpression?: string }) => {
      if (refuse && input.ConditionExpression) throw new ConditionalCheckFailedException({ message: 'lower', $metadata: {} });
      return {};
    });
    const store = new ShardFrontierStore(client, 'shop-status', 'shop');
    await store.record('cdc', 'shardId-1', { ok: true, commitTs: 500 }, NOW);
    const first = ddb.commandCalls(UpdateItemCommand)[0]?.args[0].input;
    assert.deepEqual(first?.Key, { pipeline: { S: 'shop#shards' }, table: { S: 'cdc/shardId-1' } });
    assert.equal(first?.ConditionExpression, 'attribute_not_exists(#c) OR #c <= :c');
    assert.match(String(first?.UpdateExpression), /REMOVE #f/);
    refuse = true;
    await store.record('cdc', 'shardId-1', { ok: true, commitTs: 400 }, NOW);
    const calls = ddb.commandCalls(UpdateItemCommand).map((c) => c.args[0].input);
    assert.equal(calls.length, 3, 'refused lower commit: the shard is still marked alive');
    assert.equal(calls[2]?.ConditionExpression, undefined);
    await store.record('cdc', 'shardId-1', { ok: false }, NOW);
    assert.match(String(ddb.commandCalls(UpdateItemCommand)[3]?.args[0].input.UpdateExpression), /#f = if_not_exists\(#f, :now\)/);

    ddb.on(QueryCommand).resolvesOnce({ Items: [{ pipeline: { S: 'shop#shards' }, table: { S: 'cdc/shardId-1' }, commitTs: { N: '500' }, at: { N: String(NOW) } }], LastEvaluatedKey: { pipeline: { S: 'x' } } }).resolvesOnce({ Items: [{ pipeline: { S: 'shop#shards' }, table: { S: 'cdc/shardId-2' }, failingSince: { N: '7' } }] });
    assert.deepEqual(await store.list(), [
      { shard: 'cdc/shardId-1', commitTs: 500, at: NOW },
      { shard: 'cdc/shardId-2', failingSince: 7 },
    ]);
  });
});
