/**
 * DynamoWriter against a mocked SDK client (aws-sdk-client-mock) and against the in-memory fake
 * DynamoDB (test/helpers/fake-dynamodb.ts), which evaluates conditions and refuses what DynamoDB
 * refuses. Outcomes, rebase, read-merge-put (wide patches, spilled rows, oversized patches),
 * spill, failures and the pre-read.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig, type TableConfig } from '../../../../lib/config/config.js';
import { WriteError } from '../../../../functions/core/errors.js';
import type { JsonObject } from '../../../../functions/core/json.js';
import { keyId } from '../../../../functions/core/keys.js';
import { type PlannedWrite, planBatch } from '../../../../functions/core/plan.js';
import type { ChangeEvent, Row } from '../../../../functions/core/types.js';
import { DynamoWriter, type DynamoWriterOptions } from '../../../../functions/adapters/dynamo-writer.js';
import { decodeItem, marshallRow } from '../../../../functions/adapters/item-codec.js';
import { change, pos } from '../../../helpers/events.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';

const PLACEHOLDER = '__debezium_unavailable_value';
const config = parseConfig({
  name: 'wt',
  tables: [
    { source: 'public.t', target: 'wt-t', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.lines', target: 'wt-lines', key: ['order_id', 'line_no', 'sku'], keyTypes: { order_id: 'number', line_no: 'number' } },
  ],
  raw: { bucket: 'wt-raw' },
});
const tableOf = (source: string): TableConfig => {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new Error(source);
  return t;
};
const T = tableOf('public.t');
const LINES = tableOf('public.lines');

/** The planned writes of a batch of events (one per key). */
function plan(...events: ChangeEvent[]): PlannedWrite[] {
  return [...planBatch(events, (e) => keyId(tableOf(e.table), e.key)).writes];
}
function onlyWrite(...events: ChangeEvent[]): PlannedWrite {
  const [w] = plan(...events);
  if (!w) throw new Error('no write planned');
  return w;
}

const full = (id: number, at: number, row: Row = {}): ChangeEvent => change({ op: 'u', key: { id }, after: { id, ...row }, position: pos(at) });
const placeholderUpdate = (id: number, at: number, row: Row, placeholders: string[]): ChangeEvent => {
  const after: Row = { id, ...row };
  for (const c of placeholders) after[c] = PLACEHOLDER;
  return change({ op: 'u', key: { id }, after, placeholders, position: pos(at) });
};
const patch = (id: number, at: number, set: Row, unset: string[] = []): ChangeEvent => change({ op: 'u', key: { id }, after: null, patch: { set, unset }, position: pos(at) });
const del = (id: number, at: number): ChangeEvent => change({ op: 'd', key: { id }, before: { id }, after: null, position: pos(at) });

function setup(options: Partial<DynamoWriterOptions> = {}) {
  const fake = new FakeDynamoDB(config.tables);
  const writer = new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000, now: () => 1_700_000_000_000, ...options });
  const row = (id: number) => {
    const item = fake.get(T.target, { id: { N: String(id) } });
    return item ? decodeItem(T, item) : undefined;
  };
  return { fake, writer, row };
}

const wide = (n: number, prefix = 'col_'): JsonObject => Object.fromEntries(Array.from({ length: n }, (_v, i) => [`${prefix}${String(i).padStart(3, '0')}`, `v${i}`]));

describe('DynamoWriter outcomes (fake DynamoDB)', () => {
  it('applies, then reports an older write stale, a redelivery duplicate and other content at the same position conflict', async () => {
    const { writer, row } = setup();
    assert.equal((await writer.write(onlyWrite(full(1, 10, { a: 1 })))).outcome, 'applied');
    assert.equal((await writer.write(onlyWrite(full(1, 5, { a: 0 })))).outcome, 'stale');
    assert.equal((await writer.write(onlyWrite(full(1, 10, { a: 1 })))).outcome, 'duplicate');
    const conflict = await writer.write(onlyWrite(full(1, 10, { a: 2 })));
    assert.equal(conflict.outcome, 'conflict');
    assert.equal(conflict.writeUnits, 1, 'a failed condition costs one write unit');
    assert.deepEqual(row(1)?.row, { id: 1, a: 1 });
  });

  it('rebases a chain on a stored row inside it: only the newer events are applied', async () => {
    const { writer, row } = setup();
    // Batch 1 applied up to 20; the retried window 10..30 arrives as one chain based at 10.
    await writer.write(onlyWrite(full(1, 10, { a: 1, b: 1 })));
    await writer.write(onlyWrite(patch(1, 20, { b: 2 })));
    const chain = onlyWrite(full(1, 10, { a: 1, b: 1 }), patch(1, 20, { b: 2 }), patch(1, 30, { a: 3 }));
    const r = await writer.write(chain);
    assert.equal(r.outcome, 'applied');
    assert.deepEqual(row(1)?.row, { id: 1, a: 3, b: 2 });
    assert.equal(row(1)?.position, chain.encodedPosition);
  });

  it('a tombstone sets __deleted and an expiry; a later patch revives the key as a partial row', async () => {
    const { writer, row, fake } = setup();
    await writer.write(onlyWrite(full(1, 10, { a: 1 })));
    await writer.write(onlyWrite(del(1, 11)));
    assert.equal(row(1)?.deleted, true);
    assert.ok(row(1)?.expiresAt);
    await writer.write(onlyWrite(placeholderUpdate(1, 12, { b: 2 }, ['a'])));
    const d = row(1);
    assert.equal(d?.deleted, false);
    assert.equal(d?.expiresAt, null);
    assert.equal(d?.partial, true);
    assert.deepEqual(d?.missing, ['a']);
    assert.equal(fake.count('UpdateItem'), 2, 'the patch and its __missing follow-up');
  });

  it('fails a write to a table that is not configured, with context', async () => {
    const { writer } = setup();
    const r = await writer.write({ ...onlyWrite(full(1, 1)), table: 'public.nope' });
    assert.equal(r.outcome, 'failed');
    assert.ok(r.error instanceof WriteError);
    assert.equal(r.error.context.table, 'public.nope');
  });
});

describe('patches on composite keys (issue 9 item 1)', () => {
  it('sets every key column once, so DynamoDB does not refuse the patch with overlapping paths', async () => {
    const { writer, fake } = setup();
    const key = { order_id: 7, line_no: 2, sku: 'A' };
    // A MongoDB-style patch that carries the key columns too, as a DMS patch or a TOAST update does.
    const w = onlyWrite(change({ op: 'u', table: 'public.lines', key, after: null, patch: { set: { ...key, qty: 3 }, unset: [] }, position: pos(5) }));
    const r = await writer.write(w);
    assert.equal(r.outcome, 'applied', r.error?.message);
    const [item] = fake.items(LINES.target);
    assert.ok(item);
    assert.deepEqual(decodeItem(LINES, item).row, { order_id: 7, line_no: 2, sku: 'A', qty: 3 });
    assert.equal(item.__key?.S, '["7","2","A"]');
  });
});

describe('columns named like Object.prototype members (issue 10 item 11)', () => {
  it('writes and reads back constructor, toString, hasOwnProperty and valueOf columns, nested too', async () => {
    const { writer, row } = setup();
    const cols = JSON.parse('{"constructor":"c","toString":1,"hasOwnProperty":true,"valueOf":{"constructor":"n"}}') as Row;
    const r = await writer.write(onlyWrite(full(1, 1, cols)));
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.deepEqual(row(1)?.row, { id: 1, ...cols });
    const p = await writer.write(onlyWrite(patch(1, 2, JSON.parse('{"toString":2}') as Row, ['constructor'])));
    assert.equal(p.outcome, 'applied', p.error?.message);
    assert.deepEqual(row(1)?.row, { id: 1, toString: 2, hasOwnProperty: true, valueOf: { constructor: 'n' } });
  });

  it('marshals a __proto__ column as an attribute rather than a prototype', () => {
    // Decoders quarantine `__proto__` as a reserved column; the marshaller still never drops it.
    const item = marshallRow(JSON.parse('{"__proto__":"x","a":{"__proto__":1}}') as Row);
    assert.deepEqual(Object.getOwnPropertyDescriptor(item, '__proto__')?.value, { S: 'x' });
    const nested = item.a?.M;
    assert.ok(nested && Object.hasOwn(nested, '__proto__'));
    assert.deepEqual(Object.keys(item).sort(), ['__proto__', 'a']);
  });
});

describe('wide patches (issue 10 item 12)', () => {
  it('applies a placeholder update carrying 400 columns, whose update expression exceeds 4 KB, as a read-merge-put', async () => {
    const { writer, fake, row } = setup();
    await writer.write(onlyWrite(full(1, 1, { ...wide(400), big: 'kept' })));
    const update = onlyWrite(placeholderUpdate(1, 2, wide(400, 'col_'), ['big']));
    const changed = Object.fromEntries(Object.keys(wide(400)).map((c) => [c, `new-${c}`]));
    const w: PlannedWrite = { ...update, effect: update.effect.kind === 'patch' ? { ...update.effect, set: changed } : update.effect };
    const r = await writer.write(w);
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.deepEqual(row(1)?.row, { id: 1, ...changed, big: 'kept' });
    assert.equal(fake.count('GetItem'), 1, 'the stored row is read once');
    assert.equal(fake.count('UpdateItem'), 0, 'no UpdateItem is sent that DynamoDB would refuse');
    assert.equal(r.readRequests, 1);
  });

  it('resolves a wide patch against the stored row like any write: an older one is stale and writes nothing', async () => {
    const { writer, fake } = setup();
    await writer.write(onlyWrite(full(1, 5, { a: 1 })));
    const r = await writer.write(onlyWrite(patch(1, 3, wide(400))));
    assert.equal(r.outcome, 'stale');
    assert.equal(fake.count('PutItem'), 1);
  });

  it('a wide patch on no stored row starts a partial row', async () => {
    const { writer, row } = setup();
    const r = await writer.write(onlyWrite(placeholderUpdate(1, 2, wide(300), ['gone'])));
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.equal(row(1)?.partial, true);
    assert.deepEqual(row(1)?.missing, ['gone']);
    assert.equal(Object.keys(row(1)?.row ?? {}).length, 301);
  });

  it('a concurrent write between the read and the put is not overwritten: the put is retried against it', async () => {
    const { writer, fake, row } = setup();
    await writer.write(onlyWrite(full(1, 1, { a: 1 })));
    // Slip a newer full row in right after the writer's GetItem.
    const send = fake.client.send.bind(fake.client);
    let slipped = false;
    fake.client.send = (async (cmd: unknown) => {
      const out = await send(cmd as never);
      if (cmd instanceof GetItemCommand && !slipped) {
        slipped = true;
        await send(new PutItemCommand({ TableName: T.target, Item: { id: { N: '1' }, b: { S: 'newer' }, __pos: { S: 'a19' }, __hash: { S: 'h' }, __deleted: { BOOL: false } } }) as never);
      }
      return out;
    }) as typeof fake.client.send;
    const r = await writer.write(onlyWrite(patch(1, 2, wide(400))));
    assert.equal(r.outcome, 'stale', 'the row written meanwhile (position 9) is newer than the patch (2)');
    assert.deepEqual(row(1)?.row, { id: 1, b: 'newer' });
  });
});

describe('oversized rows and patches (issue 10 item 15)', () => {
  const big = (kb: number) => 'x'.repeat(kb * 1024);

  it('spills a full row over the limit: the item keeps its key, metadata and a pointer', async () => {
    const spilled: PlannedWrite[] = [];
    const { writer, row } = setup({ maxItemBytes: 10_000, spill: async (w) => {
        spilled.push(w);
        return 's3://b/spill/1';
      },
    });
    const r = await writer.write(onlyWrite(full(1, 1, { blob: big(20) })));
    assert.equal(r.outcome, 'applied');
    assert.equal(r.spilled, true);
    assert.equal(spilled.length, 1);
    assert.deepEqual(row(1)?.row, { id: 1 });
    assert.equal(row(1)?.spill, 's3://b/spill/1');
  });

  it('spills the merged row when a patch carries more than an item holds (400 KB), instead of failing forever', async () => {
    const spilled: Row[] = [];
    const { writer, row } = setup({
      spill: async (w) => {
        spilled.push(w.effect.kind === 'put' ? w.effect.row : {});
        return 's3://b/spill/2';
      },
    });
    await writer.write(onlyWrite(full(1, 1, { a: 1, keep: 'me' })));
    const r = await writer.write(onlyWrite(placeholderUpdate(1, 2, { a: big(420) }, ['keep'])));
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.equal(r.spilled, true);
    assert.deepEqual(spilled[0], { id: 1, a: big(420), keep: 'me' }, 'the spilled copy is the whole merged row');
    assert.equal(row(1)?.spill, 's3://b/spill/2');
  });

  it('quarantines such a patch when no spill store is configured (not a failure retried forever)', async () => {
    const { writer } = setup();
    const r = await writer.write(onlyWrite(patch(1, 2, { a: big(420) })));
    assert.equal(r.outcome, 'quarantined');
    assert.equal(r.reason, 'item-too-large');
    assert.ok(r.error instanceof WriteError);
    assert.equal(r.error.context.position, onlyWrite(patch(1, 2, { a: big(420) })).encodedPosition);
  });
});

describe('patches on spilled rows (issue 10 item 5)', () => {
  const big = 'y'.repeat(20 * 1024);
  const spillStore = () => {
    const objects = new Map<string, Row>();
    let n = 0;
    return {
      objects,
      spill: async (w: PlannedWrite) => {
        const pointer = `s3://b/spill/${++n}`;
        objects.set(pointer, w.effect.kind === 'put' ? { ...w.effect.row } : {});
        return pointer;
      },
      readSpill: async (pointer: string) => {
        const row = objects.get(pointer);
        if (!row) throw new Error(`no ${pointer}`);
        return row;
      },
    };
  };

  it('merges a TOAST update with the spilled copy, and stores the merged row inline when it fits', async () => {
    const store = spillStore();
    const { writer, row } = setup({ maxItemBytes: 10_000, spill: store.spill, readSpill: store.readSpill });
    await writer.write(onlyWrite(full(1, 1, { email: 'old', bio: big, name: 'n' })));
    assert.equal(row(1)?.spill, 's3://b/spill/1');
    // The name is unchanged (a TOAST placeholder); the bio shrinks, so the merged row fits again.
    const r = await writer.write(onlyWrite(placeholderUpdate(1, 2, { email: 'new', bio: 'short now' }, ['name'])));
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.deepEqual(row(1)?.row, { id: 1, email: 'new', bio: 'short now', name: 'n' });
    assert.equal(row(1)?.spill, null, 'stored inline: no pointer to an outdated copy');
    assert.equal(row(1)?.partial, false);
  });

  it('re-spills the merged row when it is still too large', async () => {
    const store = spillStore();
    const { writer, row } = setup({ maxItemBytes: 10_000, spill: store.spill, readSpill: store.readSpill });
    await writer.write(onlyWrite(full(1, 1, { email: 'old', bio: big })));
    const r = await writer.write(onlyWrite(placeholderUpdate(1, 2, { email: 'new' }, ['bio'])));
    assert.equal(r.outcome, 'applied', r.error?.message);
    assert.equal(r.spilled, true);
    assert.equal(row(1)?.spill, 's3://b/spill/2');
    assert.deepEqual(store.objects.get('s3://b/spill/2'), { id: 1, email: 'new', bio: big });
    assert.deepEqual(row(1)?.missing, []);
  });

  it('without a spill reader, marks the row partial and keeps the pointer to the full copy', async () => {
    const store = spillStore();
    const { writer, row } = setup({ maxItemBytes: 10_000, spill: store.spill });
    await writer.write(onlyWrite(full(1, 1, { email: 'old', bio: big })));
    const r = await writer.write(onlyWrite(placeholderUpdate(1, 2, { email: 'new' }, ['bio'])));
    assert.equal(r.outcome, 'applied', r.error?.message);
    const d = row(1);
    assert.deepEqual(d?.row, { id: 1, email: 'new' });
    assert.equal(d?.partial, true, 'columns not on the item are unknown here');
    assert.deepEqual(d?.missing, ['bio'], 'the placeholder column is missing, not silently absent');
    assert.equal(d?.spill, 's3://b/spill/1');
  });

  it('a full row replaces a spilled one entirely (no stale pointer left)', async () => {
    const store = spillStore();
    const { writer, row } = setup({ maxItemBytes: 10_000, spill: store.spill, readSpill: store.readSpill });
    await writer.write(onlyWrite(full(1, 1, { bio: big })));
    await writer.write(onlyWrite(full(1, 2, { bio: 'small' })));
    assert.equal(row(1)?.spill, null);
    assert.deepEqual(row(1)?.row, { id: 1, bio: 'small' });
  });
});

describe('writeAll and the pre-read', () => {
  const window = () => plan(...Array.from({ length: 150 }, (_v, i) => full(i + 1, 100 + i, { v: i })));

  it('applies a window once, then with preRead always reads it again and writes nothing (0 write units)', async () => {
    const { writer, fake } = setup();
    const first = await writer.writeAll(window(), { preRead: 'always' });
    assert.equal(first.totals.applied, 150);
    assert.equal(first.totals.preRead, 150);
    assert.equal(first.totals.readRequests, 2, '150 keys are two BatchGetItem requests');
    const before = fake.calls.length;
    const second = await writer.writeAll(window(), { preRead: 'always' });
    assert.equal(second.totals.duplicate, 150);
    assert.equal(second.totals.skipped, 150);
    assert.equal(second.totals.writeUnits, 0);
    assert.equal(second.totals.writeRequests, 0);
    assert.ok(second.totals.readUnits > 0);
    assert.deepEqual(
      fake.calls.slice(before).map((c) => c.name),
      ['BatchGetItem', 'BatchGetItem'],
    );
  });

  it('tells duplicate from conflict and stale by the stored __hash and position, exactly as the guard would', async () => {
    const { writer } = setup();
    await writer.writeAll(plan(full(1, 10, { a: 1 }), full(2, 10, { a: 1 }), full(3, 10, { a: 1 })));
    const r = await writer.writeAll(plan(full(1, 10, { a: 1 }), full(2, 10, { a: 9 }), full(3, 9, { a: 1 }), full(4, 1)), { preRead: 'always' });
    assert.deepEqual(
      r.results.map((x) => x.outcome),
      ['duplicate', 'conflict', 'stale', 'applied'],
    );
    const guarded = await setupAndWriteGuarded();
    assert.deepEqual(guarded, ['duplicate', 'conflict', 'stale', 'applied']);
  });

  it('rebases a chain from the pre-read and writes it once, without a failed guard', async () => {
    const { writer, fake, row } = setup();
    await writer.writeAll(plan(full(1, 10, { a: 1, b: 1 }), patch(1, 20, { b: 2 })));
    const before = fake.count('PutItem') + fake.count('UpdateItem');
    const r = await writer.writeAll(plan(full(1, 10, { a: 1, b: 1 }), patch(1, 20, { b: 2 }), patch(1, 30, { a: 3 })), { preRead: 'always' });
    assert.equal(r.results[0]?.outcome, 'applied');
    assert.equal(fake.count('PutItem') + fake.count('UpdateItem') - before, 1, 'one UpdateItem, no failed guard');
    assert.deepEqual(row(1)?.row, { id: 1, a: 3, b: 2 });
  });

  it('auto reads only writes at or below the high-water mark of what this writer applied (or was seeded with)', async () => {
    const { writer, fake } = setup();
    const first = await writer.writeAll(plan(full(1, 10), full(2, 20)), { preRead: 'auto' });
    assert.equal(first.totals.preRead, 0, 'nothing applied yet: no mark, no read');
    assert.equal(writer.highWaterOf('public.t'), onlyWrite(full(2, 20)).encodedPosition);
    const reads = fake.count('BatchGetItem');
    const second = await writer.writeAll(plan(full(1, 10), full(2, 20), full(3, 21)), { preRead: 'auto' });
    assert.equal(second.totals.preRead, 2);
    assert.equal(second.totals.skipped, 2);
    assert.equal(fake.count('BatchGetItem') - reads, 1);
    assert.deepEqual(
      second.results.map((r) => r.outcome),
      ['duplicate', 'duplicate', 'applied'],
    );
    const seeded = new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000, highWater: { 'public.t': onlyWrite(full(9, 50)).encodedPosition } });
    const third = await seeded.writeAll(plan(full(1, 10), full(5, 60)), { preRead: 'auto' });
    assert.equal(third.totals.preRead, 1, 'only the write at or below the seeded mark');
  });

  it('writes keys the pre-read could not read under their guard', async () => {
    const { writer, fake } = setup();
    await writer.writeAll(plan(full(1, 10), full(2, 10)));
    fake.unprocessedBatchGets = 100;
    const r = await writer.writeAll(plan(full(1, 10), full(2, 10)), { preRead: 'always' });
    assert.deepEqual(
      r.results.map((x) => x.outcome),
      ['duplicate', 'duplicate'],
    );
    assert.ok(r.totals.skipped < 2, 'the unread key went out as a guarded write');
    assert.equal(r.totals.failed, 0);
  });
});

/** The same four writes as the pre-read test, through the guard alone. */
async function setupAndWriteGuarded(): Promise<string[]> {
  const { writer } = setup();
  await writer.writeAll(plan(full(1, 10, { a: 1 }), full(2, 10, { a: 1 }), full(3, 10, { a: 1 })));
  const r = await writer.writeAll(plan(full(1, 10, { a: 1 }), full(2, 10, { a: 9 }), full(3, 9, { a: 1 }), full(4, 1)), { preRead: 'never' });
  return r.results.map((x) => x.outcome);
}

describe('DynamoWriter commands and failures (aws-sdk-client-mock)', () => {
  const ddb = mockClient(DynamoDBClient);
  const client = new DynamoDBClient({ region: 'us-east-1' });
  const writer = () => new DynamoWriter({ client, tables: config.tables, maxItemBytes: 350_000, now: () => 1_700_000_000_000 });
  beforeEach(() => ddb.reset());

  it('sends a full row as a guarded PutItem asking for ALL_OLD and consumed capacity', async () => {
    ddb.on(PutItemCommand).resolves({ ConsumedCapacity: { TableName: T.target, CapacityUnits: 1 } });
    const w = onlyWrite(full(1, 10, { a: 1 }));
    const r = await writer().write(w);
    assert.deepEqual(r, { outcome: 'applied', writeUnits: 1, readUnits: 0, requests: 1, readRequests: 0, missing: [], spilled: false });
    const input = ddb.commandCalls(PutItemCommand)[0]?.args[0].input;
    assert.equal(input?.ConditionExpression, 'attribute_not_exists(#pk) OR #pos < :base');
    assert.deepEqual(input?.ExpressionAttributeValues, { ':base': { S: w.basePosition } });
    assert.equal(input?.ReturnValuesOnConditionCheckFailure, 'ALL_OLD');
    assert.equal(input?.ReturnConsumedCapacity, 'TOTAL');
    assert.equal(input?.Item?.__pos?.S, w.encodedPosition);
  });

  it('turns ConditionalCheckFailed with ALL_OLD into stale without another request', async () => {
    const newer: Record<string, AttributeValue> = { id: { N: '1' }, __pos: { S: 'b9999999999' }, __hash: { S: 'h' } };
    ddb.on(PutItemCommand).rejects(new ConditionalCheckFailedException({ message: 'failed', $metadata: {}, Item: newer }));
    const r = await writer().write(onlyWrite(full(1, 10)));
    assert.equal(r.outcome, 'stale');
    assert.equal(ddb.calls().length, 1);
  });

  it('reads the item back when the endpoint returns no ALL_OLD item', async () => {
    const w = onlyWrite(full(1, 10));
    ddb.on(PutItemCommand).rejects(new ConditionalCheckFailedException({ message: 'failed', $metadata: {} }));
    ddb.on(GetItemCommand).resolves({ Item: { id: { N: '1' }, __pos: { S: w.encodedPosition }, __hash: { S: w.contentHash } } });
    const r = await writer().write(w);
    assert.equal(r.outcome, 'duplicate');
    assert.equal(ddb.commandCalls(GetItemCommand)[0]?.args[0].input.ConsistentRead, true);
  });

  it('returns other errors as failed, with a WriteError naming table, key and position', async () => {
    ddb.on(UpdateItemCommand).rejects(new Error('ProvisionedThroughputExceeded'));
    const w = onlyWrite(patch(1, 10, { a: 1 }));
    const r = await writer().write(w);
    assert.equal(r.outcome, 'failed');
    assert.ok(r.error instanceof WriteError);
    assert.deepEqual(r.error.context, { table: 'public.t', key: w.keyId, position: w.encodedPosition });
    assert.match(r.error.message, /wt-t.*ProvisionedThroughputExceeded/);
  });

  it('gives up as failed when it keeps losing to concurrent writers', async () => {
    const w = onlyWrite(full(1, 10), patch(1, 20, { a: 1 }));
    // Every attempt finds a stored row at the chain's base: a rebase each time, and still losing.
    ddb.on(UpdateItemCommand).rejects(new ConditionalCheckFailedException({ message: 'failed', $metadata: {}, Item: { id: { N: '1' }, __pos: { S: w.basePosition }, __hash: { S: 'x' } } }));
    ddb.on(PutItemCommand).rejects(new ConditionalCheckFailedException({ message: 'failed', $metadata: {}, Item: { id: { N: '1' }, __pos: { S: '' }, __hash: { S: 'x' } } }));
    const r = await writer().write(w);
    assert.equal(r.outcome, 'failed');
    assert.match(r.error?.message ?? '', /concurrent/);
  });

  it('pre-reads with one BatchGetItem and writes nothing for keys already current', async () => {
    const w = onlyWrite(full(1, 10));
    ddb.on(BatchGetItemCommand).resolves({
      Responses: { [T.target]: [{ id: { N: '1' }, __pos: { S: w.encodedPosition }, __hash: { S: w.contentHash }, __deleted: { BOOL: false } }] },
      ConsumedCapacity: [{ TableName: T.target, CapacityUnits: 0.5 }],
    });
    const r = await writer().writeAll([w], { preRead: 'always' });
    assert.deepEqual(r.results.map((x) => x.outcome), ['duplicate']);
    assert.equal(r.totals.readUnits, 0.5);
    assert.equal(ddb.commandCalls(PutItemCommand).length, 0);
  });

  it('falls back to guarded writes when the pre-read fails', async () => {
    ddb.on(BatchGetItemCommand).rejects(new Error('down'));
    ddb.on(PutItemCommand).resolves({});
    const r = await writer().writeAll([onlyWrite(full(1, 10))], { preRead: 'always' });
    assert.deepEqual(r.results.map((x) => x.outcome), ['applied']);
    assert.equal(r.totals.readFailures, 1);
  });
});
