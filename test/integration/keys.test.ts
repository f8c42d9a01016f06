/**
 * Keys of one, two and three columns, and wide or odd rows, through processBatch on the
 * integration target (DynamoDB Local by default): full rows, patches and tombstones each.
 *
 * Patches come in the shapes connectors really send:
 * - Debezium PostgreSQL updates with unchanged TOAST columns carried as the placeholder
 *   `__debezium_unavailable_value` (REPLICA IDENTITY DEFAULT; Debezium PostgreSQL connector docs,
 *   "Considerations when using PostgreSQL TOAST": https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-toasted-values);
 * - Debezium MongoDB change-stream updates with `updateDescription` (updatedFields / removedFields)
 *   and no `after` (https://debezium.io/documentation/reference/stable/connectors/mongodb.html#mongodb-update-events),
 *   taken from test/fixtures/debezium-mongodb.
 * Each patch is sent in a later batch than the row it changes, so it reaches DynamoDB as an update
 * of the stored item rather than being folded into a full row inside one batch.
 *
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/keys.test.ts`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { localDeps } from '../../bin/cli/context.js';
import { kinesisEvent } from '../../bin/cli/kinesis-shape.js';
import { getRow } from '../../bin/cli/state.js';
import { DynamoWriter } from '../../functions/adapters/dynamo-writer.js';
import { recordsFromKinesis } from '../../functions/adapters/records.js';
import { s3SpillReader } from '../../functions/adapters/spill-reader.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { type JsonObject, stringifyJson } from '../../functions/core/json.js';
import { keyId } from '../../functions/core/keys.js';
import { planBatch } from '../../functions/core/plan.js';
import { type BatchSummary, type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import { change, pos } from '../helpers/events.js';
import { PLACEHOLDER, pgMessage } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'keys',
  tables: [
    { source: 'public.k1', target: 'keys-k1', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.k2', target: 'keys-k2', key: ['tenant', 'id'], keyTypes: { id: 'number' } },
    { source: 'public.k3', target: 'keys-k3', key: ['order_id', 'line_no', 'sku'], keyTypes: { order_id: 'number', line_no: 'number' } },
    { source: 'inventory.customers', target: 'keys-mongo', key: ['_id'] },
    { source: 'public.wide', target: 'keys-wide', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'keys-raw' },
});

const quietLog: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** Row columns only (no `__` metadata), as plain JSON. */
function columns(row: JsonObject | null): JsonObject | null {
  if (!row) return null;
  const plain = JSON.parse(stringifyJson(row)) as JsonObject;
  return Object.fromEntries(Object.entries(plain).filter(([k]) => !k.startsWith('__')));
}

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/debezium-mongodb/${name}.json`, import.meta.url), 'utf8')) as { message_key: JsonObject; message_value: JsonObject };

describe(`keys of 1, 2 and 3 columns on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let sequence = 49_600_000_000_000_000_000_000_000_000_000_000_000_000_000_000n;
  let lsn = 33_228_000;

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  const table = (source: string): TableConfig => {
    const t = config.tables.find((x) => x.source === source);
    if (!t) throw new Error(source);
    return t;
  };

  /** One batch through the Lambda's own path; every record must be applied or counted, none failed. */
  async function batch(messages: readonly { key: JsonObject; value: JsonObject }[], deps?: IngestDeps): Promise<BatchSummary> {
    const event = kinesisEvent(
      'keys',
      'shardId-000000000000',
      messages.map((m) => {
        sequence += 1n;
        return { data: Buffer.from(JSON.stringify(m.value)), partitionKey: JSON.stringify(m.key), sequenceNumber: String(sequence), arrival: new Date() };
      }),
    );
    const result = await processBatch(recordsFromKinesis(event), deps ?? { ...localDeps(config, target.clients), log: quietLog });
    assert.deepEqual(result.batchItemFailures, [], JSON.stringify(result.summary));
    assert.equal(result.summary.failed, 0, JSON.stringify(result.summary));
    assert.equal(result.summary.quarantined, 0, JSON.stringify(result.summary));
    return result.summary;
  }

  /** A Debezium PostgreSQL change on `public.<table>`, at the next LSN. */
  function pg(tableName: string, op: 'c' | 'u' | 'd', key: JsonObject, row: JsonObject | null) {
    lsn += 8;
    const image = { ...key, ...(row ?? {}) };
    return { key, value: pgMessage({ table: tableName, op, before: op === 'd' ? image : null, after: op === 'd' ? null : image, lsn, lastCommitLsn: lsn - 4 }) };
  }

  const shapes = [
    { name: 'public.k1', short: 'k1', keys: [{ id: 1 }, { id: 2 }] },
    { name: 'public.k2', short: 'k2', keys: [{ tenant: 't1', id: 1 }, { tenant: 't1', id: 2 }] },
    { name: 'public.k3', short: 'k3', keys: [{ order_id: 7, line_no: 1, sku: 'A-1' }, { order_id: 7, line_no: 2, sku: 'B-2' }] },
  ] as const;

  for (const shape of shapes) {
    it(`${shape.keys[0] ? Object.keys(shape.keys[0]).length : 0}-column key: full rows, TOAST-placeholder patches and a tombstone`, async () => {
      const [a, b] = shape.keys;
      assert.ok(a && b);
      await batch([pg(shape.short, 'c', a, { qty: 1, note: 'long text a' }), pg(shape.short, 'c', b, { qty: 1, note: 'long text b' })]);
      const patched = await batch([pg(shape.short, 'u', a, { qty: 2, note: PLACEHOLDER }), pg(shape.short, 'u', b, { qty: 2, note: PLACEHOLDER })]);
      assert.equal(patched.applied, 2);
      await batch([pg(shape.short, 'd', a, { qty: 2, note: PLACEHOLDER }), pg(shape.short, 'u', b, { qty: 3, note: PLACEHOLDER })]);
      const t = table(shape.name);
      const deleted = await getRow(target.clients.dynamodb, t, a);
      assert.equal(deleted?.__deleted, true, 'the delete left a tombstone');
      const row = await getRow(target.clients.dynamodb, t, b);
      assert.deepEqual(columns(row), { ...b, qty: 3, note: 'long text b' }, 'the patches kept the unchanged TOAST column');
      assert.equal(row?.__partial, undefined);
      // A patch that revives the tombstone starts a partial row whose placeholder column is missing.
      await batch([pg(shape.short, 'u', a, { qty: 4, note: PLACEHOLDER })]);
      const revived = await getRow(target.clients.dynamodb, t, a);
      assert.deepEqual(columns(revived), { ...a, qty: 4 });
      assert.deepEqual(revived?.__missing, ['note']);
      assert.equal(revived?.__deleted, false);
    });
  }

  it('MongoDB key: insert, updateDescription patch (set and unset), delete', async () => {
    const insert = fixture('insert');
    const update = fixture('update-change-streams-delta-only');
    const remove = fixture('delete-without-pre-image');
    await batch([{ key: insert.message_key, value: insert.message_value }]);
    const patched = await batch([{ key: update.message_key, value: update.message_value }]);
    assert.equal(patched.applied, 1);
    const t = table('inventory.customers');
    const row = columns(await getRow(target.clients.dynamodb, t, { _id: '1004' }));
    assert.deepEqual(row, { _id: '1004', first_name: 'Anne Marie', last_name: 'Kretchmar' });
    await batch([{ key: remove.message_key, value: remove.message_value }]);
    assert.equal((await getRow(target.clients.dynamodb, t, { _id: '1004' }))?.__deleted, true);
  });

  it('a TOAST update carrying 400 columns (an update expression over 4 KB) is applied', async () => {
    const wide = (v: string) => Object.fromEntries(Array.from({ length: 400 }, (_x, i) => [`column_${String(i).padStart(3, '0')}`, `${v}${i}`]));
    await batch([pg('wide', 'c', { id: 1 }, { ...wide('old'), note: 'kept' })]);
    const s = await batch([pg('wide', 'u', { id: 1 }, { ...wide('new'), note: PLACEHOLDER })]);
    assert.equal(s.applied, 1);
    const row = columns(await getRow(target.clients.dynamodb, table('public.wide'), { id: 1 }));
    assert.deepEqual(row, { id: 1, ...wide('new'), note: 'kept' });
  });

  it('columns named constructor, toString and hasOwnProperty are written, patched and kept', async () => {
    const odd = JSON.parse('{"constructor":"c1","toString":"t1","hasOwnProperty":"h1"}') as JsonObject;
    await batch([pg('wide', 'c', { id: 2 }, odd)]);
    const s = await batch([pg('wide', 'u', { id: 2 }, JSON.parse(`{"constructor":"${PLACEHOLDER}","toString":"t2","hasOwnProperty":"h1"}`) as JsonObject)]);
    assert.equal(s.applied, 1);
    const row = columns(await getRow(target.clients.dynamodb, table('public.wide'), { id: 2 }));
    assert.deepEqual(row, { id: 2, constructor: 'c1', toString: 't2', hasOwnProperty: 'h1' });
  });

  it('a patch whose carried columns exceed an item (400 KB) is spilled with the merged row, not failed forever', async () => {
    await batch([pg('wide', 'c', { id: 3 }, { small: 's', note: 'kept' })]);
    const s = await batch([pg('wide', 'u', { id: 3 }, { small: 's', big: 'x'.repeat(420 * 1024), note: PLACEHOLDER })]);
    assert.equal(s.applied, 1);
    assert.equal(s.spilled, 1);
    const row = await getRow(target.clients.dynamodb, table('public.wide'), { id: 3 });
    assert.match(String(row?.__spill), /^s3:\/\//);
  });

  it('a TOAST update of a spilled row is merged with the spilled copy (re-spilled while large, inline once it fits)', async () => {
    // The ingest wiring (functions/ingest/deps.ts) passes the spill reader to the writer.
    const deps = { ...localDeps(config, target.clients), log: quietLog };
    const bio = 'b'.repeat(360 * 1024);
    const t = table('public.wide');
    const first = await batch([pg('wide', 'c', { id: 4 }, { note: 'n1', bio })], deps);
    assert.equal(first.spilled, 1);
    const second = await batch([pg('wide', 'u', { id: 4 }, { note: 'n2', bio: PLACEHOLDER, email: 'e2' })], deps);
    assert.equal(second.spilled, 1, 'the merged row is still too large: spilled again');
    const stub = await getRow(target.clients.dynamodb, t, { id: 4 });
    assert.match(String(stub?.__spill), /^s3:\/\//);
    const spilled = await s3SpillReader(target.clients.s3)(String(stub?.__spill));
    assert.deepEqual(JSON.parse(stringifyJson(spilled)), { id: 4, note: 'n2', bio, email: 'e2' }, 'the new spilled copy holds the merged row');
    await batch([pg('wide', 'u', { id: 4 }, { note: PLACEHOLDER, bio: 'short', email: 'e3' })], deps);
    const row = await getRow(target.clients.dynamodb, t, { id: 4 });
    assert.deepEqual(columns(row), { id: 4, note: 'n2', bio: 'short', email: 'e3' });
    assert.equal(row?.__spill, undefined, 'inline again: no pointer to an outdated copy');
  });

  it('pre-read: a window applied twice with preRead always costs no write unit the second time', async (t) => {
    const k1 = table('public.k1');
    const window = () =>
      planBatch(
        Array.from({ length: 200 }, (_v, i) => change({ op: 'u', table: 'public.k1', key: { id: 1000 + i }, after: { id: 1000 + i, qty: i, note: 'n'.repeat(100) }, position: pos(5_000, i) })),
        (e) => keyId(k1, e.key),
      ).writes;
    const writer = new DynamoWriter({ client: target.clients.dynamodb, tables: config.tables, maxItemBytes: config.apply.maxItemBytes });
    const first = await writer.writeAll(window(), { preRead: 'always' });
    const second = await writer.writeAll(window(), { preRead: 'always' });
    const guarded = await writer.writeAll(window(), { preRead: 'never' });
    for (const [name, r] of [['first pass, always', first], ['second pass, always', second], ['third pass, never', guarded]] as const) {
      const x = r.totals;
      t.diagnostic(`${name}: applied ${x.applied}, duplicate ${x.duplicate}, readRequests ${x.readRequests}, readUnits ${x.readUnits}, writeRequests ${x.writeRequests}, writeUnits ${x.writeUnits}`);
    }
    assert.equal(first.totals.applied, 200);
    assert.equal(second.totals.duplicate, 200);
    assert.equal(second.totals.writeUnits, 0);
    assert.equal(second.totals.writeRequests, 0);
    assert.equal(second.totals.readRequests, 2, '200 keys: two BatchGetItem requests of 100');
    assert.equal(guarded.totals.duplicate, 200);
    assert.equal(guarded.totals.writeRequests, 200, 'without the pre-read every write is sent and fails its guard');
    assert.ok(guarded.totals.writeUnits >= 200);
  });
});
