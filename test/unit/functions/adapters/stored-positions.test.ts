/**
 * readStoredPositions against a mocked DynamoDB client: chunking, projection, retry of
 * UnprocessedKeys, read units, number-key normalization, composite keys and failures.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { type AttributeValue, BatchGetItemCommand, type BatchGetItemCommandInput, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig, type TableConfig } from '../../../../lib/config/config.js';
import { WriteError } from '../../../../functions/core/errors.js';
import { LosslessNumber } from '../../../../functions/core/json.js';
import { keyId, normalizeKey } from '../../../../functions/core/keys.js';
import type { Key } from '../../../../functions/core/types.js';
import { canonicalNumber, readStoredPositions } from '../../../../functions/adapters/stored-positions.js';

const config = parseConfig({
  name: 'sp',
  tables: [
    { source: 'public.one', target: 'one', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.two', target: 'two', key: ['tenant', 'id'], keyTypes: { id: 'number' } },
    { source: 'public.three', target: 'three', key: ['a', 'b', 'c'] },
  ],
  raw: { bucket: 'sp-raw' },
});
const table = (source: string): TableConfig => {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new Error(source);
  return t;
};
const one = table('public.one');
const two = table('public.two');
const three = table('public.three');

const toRead = (t: TableConfig, key: Key) => {
  const k = normalizeKey(t, key);
  return { keyId: keyId(t, k), key: k };
};

const ddb = mockClient(DynamoDBClient);
const client = new DynamoDBClient({ region: 'us-east-1' });

/** Serves BatchGetItem from `items` (keyed by the canonical request key), like DynamoDB would. */
function serve(items: Map<string, Record<string, AttributeValue>>, opts: { unprocessedFirst?: number; unitsPerKey?: number } = {}) {
  const inputs: BatchGetItemCommandInput[] = [];
  let leaveOut = opts.unprocessedFirst ?? 0;
  ddb.on(BatchGetItemCommand).callsFake((input: BatchGetItemCommandInput) => {
    inputs.push(input);
    const [target, req] = Object.entries(input.RequestItems ?? {})[0] ?? [];
    if (!target || !req) throw new Error('no request items');
    const keys = req.Keys ?? [];
    const served = keys.slice(0, Math.max(0, keys.length - leaveOut));
    const unprocessed = keys.slice(served.length);
    leaveOut = Math.max(0, leaveOut - 1);
    const found = served.flatMap((k) => {
      const item = items.get(JSON.stringify(k));
      return item ? [item] : [];
    });
    return {
      Responses: { [target]: found },
      UnprocessedKeys: unprocessed.length > 0 ? { [target]: { ...req, Keys: unprocessed } } : {},
      ConsumedCapacity: [{ TableName: target, CapacityUnits: served.length * (opts.unitsPerKey ?? 0.5) }],
    };
  });
  return inputs;
}

const stored = (key: Record<string, AttributeValue>, pos: string, hash: string, deleted = false) =>
  [JSON.stringify(key), { ...key, __pos: { S: pos }, __hash: { S: hash }, __deleted: { BOOL: deleted } }] as const;

describe('readStoredPositions', () => {
  beforeEach(() => ddb.reset());

  it('reads in chunks of 100, eventually consistent, projecting only the key and position attributes', async () => {
    const items = new Map([stored({ id: { N: '7' } }, 'a17', 'h7'), stored({ id: { N: '150' } }, 'a18', 'h150', true)]);
    const inputs = serve(items);
    const writes = Array.from({ length: 250 }, (_v, i) => toRead(one, { id: i }));
    const res = await readStoredPositions(client, one, writes);
    assert.equal(inputs.length, 3);
    assert.deepEqual(
      inputs.map((i) => i.RequestItems?.one?.Keys?.length),
      [100, 100, 50],
    );
    const req = inputs[0]?.RequestItems?.one;
    assert.equal(req?.ConsistentRead, false);
    assert.equal(inputs[0]?.ReturnConsumedCapacity, 'TOTAL');
    const projected = (req?.ProjectionExpression ?? '').split(', ').map((n) => req?.ExpressionAttributeNames?.[n]);
    assert.deepEqual(projected.sort(), ['__deleted', '__hash', '__pos', 'id']);
    assert.equal(res.byKey.size, 2);
    assert.deepEqual(res.byKey.get(keyId(one, { id: 7 })), { position: 'a17', hash: 'h7', deleted: false });
    assert.deepEqual(res.byKey.get(keyId(one, { id: 150 })), { position: 'a18', hash: 'h150', deleted: true });
    assert.equal(res.readUnits, 125);
    assert.equal(res.requests, 3);
    assert.equal(res.unread.size, 0);
  });

  it('asks for each distinct key once', async () => {
    const inputs = serve(new Map());
    await readStoredPositions(client, one, [toRead(one, { id: 1 }), toRead(one, { id: 1 }), toRead(one, { id: '1' })]);
    assert.equal(inputs[0]?.RequestItems?.one?.Keys?.length, 1);
  });

  it('retries UnprocessedKeys with growing backoff until every key is read', async () => {
    const items = new Map([stored({ id: { N: '3' } }, 'a15', 'h')]);
    const inputs = serve(items, { unprocessedFirst: 2 });
    const sleeps: number[] = [];
    const res = await readStoredPositions(client, one, [1, 2, 3].map((id) => toRead(one, { id })), {
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.999,
      baseDelayMs: 10,
    });
    assert.equal(inputs.length, 3, 'first request left 2 keys, the second 1, the third none');
    assert.deepEqual(inputs.map((i) => i.RequestItems?.one?.Keys?.length), [3, 2, 1]);
    assert.deepEqual(sleeps, [9, 19]);
    assert.equal(res.byKey.get(keyId(one, { id: 3 }))?.position, 'a15');
    assert.equal(res.unread.size, 0);
  });

  it('reports keys still unprocessed after the last attempt as unread, not as absent', async () => {
    serve(new Map(), { unprocessedFirst: 100 });
    const res = await readStoredPositions(client, one, [toRead(one, { id: 1 }), toRead(one, { id: 2 })], { maxAttempts: 3, sleep: async () => {} });
    assert.equal(res.requests, 3);
    assert.deepEqual([...res.unread].sort(), [keyId(one, { id: 1 }), keyId(one, { id: 2 })].sort());
  });

  it('maps number keys back although DynamoDB normalizes their text', async () => {
    // The key column is declared number and arrives as "1.50": it is sent as N "1.50", and
    // DynamoDB answers with N "1.5".
    const w = toRead(one, { id: '1.50' });
    assert.ok(w.key.id instanceof LosslessNumber);
    ddb.on(BatchGetItemCommand).resolves({ Responses: { one: [{ id: { N: '1.5' }, __pos: { S: 'a19' }, __hash: { S: 'x' } }] } });
    const res = await readStoredPositions(client, one, [w]);
    assert.equal(res.byKey.get(w.keyId)?.position, 'a19');
  });

  it('reads partition + sort keys and composite __key keys', async () => {
    const items = new Map([
      stored({ tenant: { S: 't1' }, id: { N: '5' } }, 'a12', 'h2'),
      stored({ __key: { S: '["x","y","z"]' } }, 'a13', 'h3'),
    ]);
    serve(items);
    const r2 = await readStoredPositions(client, two, [toRead(two, { tenant: 't1', id: 5 }), toRead(two, { tenant: 't2', id: 5 })]);
    assert.deepEqual([...r2.byKey.keys()], [keyId(two, { tenant: 't1', id: 5 })]);
    const r3 = await readStoredPositions(client, three, [toRead(three, { a: 'x', b: 'y', c: 'z' })]);
    assert.equal(r3.byKey.get('["x","y","z"]')?.hash, 'h3');
  });

  it('sends nothing for no keys', async () => {
    const inputs = serve(new Map());
    const res = await readStoredPositions(client, one, []);
    assert.equal(inputs.length, 0);
    assert.equal(res.requests, 0);
  });

  it('fails with a WriteError naming the table', async () => {
    ddb.on(BatchGetItemCommand).rejects(new Error('boom'));
    await assert.rejects(readStoredPositions(client, one, [toRead(one, { id: 1 })]), (err: unknown) => {
      assert.ok(err instanceof WriteError);
      assert.equal(err.context.table, 'public.one');
      assert.match(err.message, /one.*boom/);
      return true;
    });
  });
});

describe('canonicalNumber', () => {
  it('gives one text per number value', () => {
    const same = [
      ['1.50', '1.5', '01.5', '15e-1', '0.15E1'],
      ['7', '007', '7.000', '700e-2'],
      ['0', '0.000', '-0', '0e5'],
      ['-2.5', '-25e-1'],
    ];
    for (const group of same) assert.equal(new Set(group.map(canonicalNumber)).size, 1, group.join(' '));
    assert.notEqual(canonicalNumber('1.5'), canonicalNumber('15'));
    assert.notEqual(canonicalNumber('-1'), canonicalNumber('1'));
  });

  it('reads a long run of zeros in linear time (issue 20, item 1: no pattern over record content)', () => {
    // `/0+$/` over 100,000 zeros before a last digit took seconds (quadratic); one pass takes milliseconds.
    const text = `1${'0'.repeat(100_000)}1`;
    const started = process.cpuUsage();
    assert.equal(canonicalNumber(text), canonicalNumber(`${text}.000`));
    assert.equal(canonicalNumber(`1.${'0'.repeat(100_000)}`), canonicalNumber('1'));
    const used = process.cpuUsage(started);
    const ms = (used.user + used.system) / 1e3;
    assert.ok(ms < 1_000, `${ms.toFixed(0)} ms of CPU`);
  });
});
