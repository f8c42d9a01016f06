/**
 * Schema drift through the ingest's step (SchemaTracker), its store (SchemaStore over a DynamoDB
 * mock that keeps items and checks the version condition) and `tidemark status --schema`'s text:
 * Debezium PostgreSQL messages in which a column is added, then removed, then changes type from
 * number to text; the report names each change at its position, the last as one the target cannot
 * hold. Bounded cost: the schema row is read once per container, written at most once per table per
 * batch and only when the shape changed.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { type AttributeValue, BatchGetItemCommand, ConditionalCheckFailedException, DynamoDBClient, UpdateItemCommand, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { renderSchemas, schemaStates, showPosition } from '../../../../bin/cli/schema-status.js';
import { statusTable } from '../../../../bin/cli/state.js';
import { parseConfig } from '../../../../lib/config/config.js';
import { fitState, parseRow, SchemaStore } from '../../../../functions/adapters/schema-store.js';
import { debezium } from '../../../../functions/core/formats/debezium.js';
import { decodePosition } from '../../../../functions/core/position.js';
import type { JsonObject } from '../../../../functions/core/json.js';
import type { SchemaState } from '../../../../functions/core/schema-drift.js';
import type { ChangeEvent, ControlEvent } from '../../../../functions/core/types.js';
import { SchemaTracker } from '../../../../functions/ingest/schema.js';
import { BatchTally } from '../../../../functions/ingest/tally.js';
import type { Log } from '../../../../functions/telemetry/sinks.js';
import { SCHEMA_ROW, tableOfPartition } from '../../../../functions/telemetry/status-layout.js';
import { pgMessage, pgPosition } from '../../../helpers/debezium.js';
import { decodeContext, inboundFrom } from '../../../helpers/messages.js';

const config = parseConfig({
  name: 'shop',
  tables: [
    { source: 'public.orders', target: 'shop-orders', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.lines', target: 'shop-lines', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'shop-raw' },
});
const STATUS = config.statusTable;

interface LogLine {
  level: string;
  message: string;
  extra?: Record<string, unknown>;
}
const logged: LogLine[] = [];
const log: Log = {
  debug: () => {},
  info: (message, extra) => logged.push({ level: 'info', message, extra }),
  warn: (message, extra) => logged.push({ level: 'warn', message, extra }),
  error: (message, extra) => logged.push({ level: 'error', message, extra }),
};

/** A DynamoDB mock that keeps the status table's items and evaluates the schema store's version condition. */
function statusTableMock() {
  const client = new DynamoDBClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const ddb = mockClient(client);
  const items = new Map<string, Record<string, AttributeValue>>();
  const id = (key: Record<string, AttributeValue> | undefined) => `${key?.pipeline?.S}\u0000${key?.table?.S}`;
  const calls = { get: 0, update: 0, failNext: 0 };
  ddb.on(BatchGetItemCommand).callsFake((input: { RequestItems: Record<string, { Keys: Record<string, AttributeValue>[] }> }) => {
    calls.get++;
    const keys = input.RequestItems[STATUS]?.Keys ?? [];
    return { Responses: { [STATUS]: keys.flatMap((k): Record<string, AttributeValue>[] => { const item = items.get(id(k)); return item ? [item] : []; }) } };
  });
  ddb.on(UpdateItemCommand).callsFake((input: UpdateItemCommandInput) => {
    calls.update++;
    if (calls.failNext > 0) {
      calls.failNext--;
      throw new Error('throttled');
    }
    const old = items.get(id(input.Key));
    const v = old?.version?.N;
    const ok = input.ConditionExpression === 'attribute_not_exists(#v)' ? v === undefined : v === input.ExpressionAttributeValues?.[':v']?.N;
    if (!ok) throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    const values = input.ExpressionAttributeValues ?? {};
    items.set(id(input.Key), {
      ...(input.Key ?? {}),
      schema: values[':s'] as AttributeValue,
      version: values[':next'] as AttributeValue,
      columns: values[':c'] as AttributeValue,
      changes: values[':t'] as AttributeValue,
      incompatible: values[':i'] as AttributeValue,
      updatedAt: values[':u'] as AttributeValue,
    });
    return {};
  });
  /** The rows as `tidemark status` reads them (bin/cli/state.ts): a table's `schema` row shown as `schema#<table>`. */
  const rows = () =>
    [...items.values()].map((i) => {
      const row = unmarshall(i) as JsonObject;
      const table = tableOfPartition(config.name, String(row.pipeline));
      assert.equal(row.table, SCHEMA_ROW, 'the schema row sits in its table\'s partition');
      return { ...row, pipeline: config.name, table: `schema#${String(table)}` };
    });
  return { client, items, calls, rows };
}

let lsn = 33_228_000;
/** A Debezium PostgreSQL update of orders/1 with this after image, at the next LSN. */
function update(after: JsonObject, table = 'orders'): ChangeEvent {
  lsn += 8;
  const [e] = debezium.decode(inboundFrom(pgMessage({ table, op: 'u', after: { id: 1, ...after }, lsn, lastCommitLsn: lsn - 4, tsMs: 1_735_732_800_000 + lsn })), decodeContext());
  assert.ok(e?.kind === 'change');
  return e;
}
const lastPosition = () => pgPosition(lsn - 4, lsn);

const batch = (changes: ChangeEvent[], controls: ControlEvent[] = []) => ({ changes, controls });

describe('schema drift through the ingest step and tidemark status --schema', () => {
  beforeEach(() => {
    logged.length = 0;
  });

  it('names a column added, then removed, then changing type at its position, and the last as one the target cannot hold', async () => {
    const mock = statusTableMock();
    const tracker = new SchemaTracker(new SchemaStore(mock.client, STATUS, config.name), config, log, () => 1_000);
    const track = async (changes: ChangeEvent[]) => {
      const tally = new BatchTally([]);
      await tracker.track(batch(changes), tally);
      return tally;
    };

    await track([update({ name: 'a', total: 1 }), update({ name: 'b', total: 2 })]);
    const baseline = pgPosition(33_228_004, 33_228_008);
    await track([update({ name: 'c', total: 3, email: 'x@example.com' })]);
    const added = lastPosition();
    await track([update({ name: 'd', total: 4 })]);
    const removed = lastPosition();
    const tally = await track([update({ name: 'e', total: 'four' })]);
    const changed = lastPosition();

    assert.equal(tally.tables.get('public.orders')?.counters.schemaChanges, 1);
    assert.equal(tally.tables.get('public.orders')?.counters.schemaIncompatible, 1);
    const state = schemaStates(mock.rows()).get('public.orders');
    assert.ok(state);
    assert.equal(state.since, baseline);
    assert.deepEqual(
      state.changes.map((c) => [c.kind, c.column, c.from ?? null, c.to ?? null, c.position, c.holds]),
      [
        ['added', 'email', null, 'string', added, true],
        ['removed', 'email', 'string', null, removed, true],
        ['type-changed', 'total', 'number', 'string', changed, false],
      ],
    );
    const text = renderSchemas(mock.rows());
    const lines = text.split('\n');
    assert.equal(lines[0], `public.orders: 3 columns (1 removed), 3 changes, 1 the target cannot hold; baseline at ${showPosition(baseline)}`);
    assert.equal(lines[1], '  columns: id number, name string, total string');
    const row = (i: number, position: string) => {
      const line = lines[i] ?? '';
      assert.ok(line.startsWith(`  ${showPosition(position)}  `), line);
      return line.slice(showPosition(position).length + 4).split(/ {2,}/);
    };
    assert.deepEqual(row(3, added).slice(1), ['added', 'email', 'string']);
    assert.deepEqual(row(4, removed).slice(1), ['removed', 'email', 'string']);
    assert.deepEqual(row(5, changed).slice(1), ['type-changed', 'total', 'number', 'string', 'the target cannot hold it as before']);
    assert.equal(row(3, added)[0], new Date(1_735_732_800_000 + Number(decodePosition(added)[1])).toISOString(), 'the commit time of the first event showing it');
    assert.equal(showPosition(pgPosition(7, 9)), '[7, 9]');
    assert.ok(
      logged.some((l) => l.level === 'warn' && l.extra?.column === 'total' && l.extra?.position === changed),
      'the change the target cannot hold is logged as a warning, naming column and position',
    );
    assert.ok(!JSON.stringify(logged).includes('four'), 'no row value in a log line');
    // `tidemark status` leaves the schema row out of the table list and points at --schema.
    const status = statusTable([{ pipeline: 'shop', table: 'public.orders', state: 'RUNNING' }, ...mock.rows()]);
    assert.ok(!status.split('\n\n')[0]?.includes('schema#'));
    assert.match(status, /schema drift: public\.orders 3 changes \(1 the target cannot hold\) \(tidemark status --schema\)/);
    assert.equal(renderSchemas(mock.rows(), 'public.lines'), 'no schema recorded for public.lines yet');
  });

  it('reads each table once per container, writes only when the shape changed, at most once per table per batch', async () => {
    const mock = statusTableMock();
    const tracker = new SchemaTracker(new SchemaStore(mock.client, STATUS, config.name), config, log);
    await tracker.track(batch([update({ a: 1 }), update({ a: 1 }, 'lines')]), new BatchTally([]));
    assert.deepEqual([mock.calls.get, mock.calls.update], [1, 2], 'one read of both tables, one baseline write each');
    for (let i = 0; i < 5; i++) await tracker.track(batch(Array.from({ length: 40 }, (_, j) => update({ a: i * 100 + j }))), new BatchTally([]));
    assert.deepEqual([mock.calls.get, mock.calls.update], [1, 2], 'unchanged shapes: no read, no write');
    await tracker.track(batch([update({ a: 1, b: 1 }), update({ a: 1, b: 1, c: 1 }), update({ a: 'x', b: 1, c: 1 })]), new BatchTally([]));
    assert.deepEqual([mock.calls.get, mock.calls.update], [1, 3], 'three changes in one batch: one write');
    assert.equal(schemaStates(mock.rows()).get('public.orders')?.total, 3);
    assert.equal(tracker.schemaOf('public.orders')?.total, 3);
    assert.equal(tracker.schemaOf('public.unknown'), undefined);
  });

  it('a write lost to another container is reloaded and merged on the next batch; a failed write is retried, never thrown', async () => {
    const mock = statusTableMock();
    const store = new SchemaStore(mock.client, STATUS, config.name);
    const one = new SchemaTracker(store, config, log);
    const two = new SchemaTracker(store, config, log);
    await one.track(batch([update({ a: 1 })]), new BatchTally([]));
    await two.track(batch([update({ a: 1 })]), new BatchTally([]));
    await one.track(batch([update({ a: 1, b: 2 })]), new BatchTally([]));
    // `two` still holds version 1: its change loses the race, then merges over what `one` wrote.
    const racing = new BatchTally([]);
    await two.track(batch([update({ a: 1, b: 2, c: 3 })]), racing);
    assert.equal(racing.summary.schemaChanges, 0, 'nothing counted for a write that did not land');
    await two.track(batch([]), new BatchTally([]));
    const state = schemaStates(mock.rows()).get('public.orders');
    assert.deepEqual(
      state?.changes.map((c) => `${c.kind} ${c.column}`),
      ['added b', 'added c'],
    );
    // A throttled write: logged and kept pending for the batches after.
    mock.calls.failNext = 1;
    await one.track(batch([update({ a: 1, b: 2, c: 3, d: 4 })]), new BatchTally([]));
    assert.ok(logged.some((l) => l.level === 'error' && l.extra?.table === 'public.orders'));
    // The retry finds the row moved on (`two` wrote version 3): it reloads, and the batch after merges.
    await one.track(batch([]), new BatchTally([]));
    await one.track(batch([]), new BatchTally([]));
    assert.deepEqual(
      schemaStates(mock.rows())
        .get('public.orders')
        ?.changes.map((c) => c.column),
      ['b', 'c', 'd'],
    );
  });

  it('keeps the DDL of schema-change records, and a failing read never fails the batch', async () => {
    const mock = statusTableMock();
    const tracker = new SchemaTracker(new SchemaStore(mock.client, STATUS, config.name), config, log);
    const ddl: ControlEvent = {
      kind: 'control',
      format: 'debezium-postgresql',
      control: 'schema',
      table: 'public.orders',
      position: null,
      txid: null,
      commitTs: Date.UTC(2026, 0, 1),
      detail: { ddl: 'ALTER TABLE orders\n  ADD COLUMN note text', type: 'ALTER' },
    };
    await tracker.track(batch([], [ddl, { ...ddl, table: 'public.unconfigured' }, { ...ddl, detail: {} }]), new BatchTally([]));
    const state = schemaStates(mock.rows()).get('public.orders');
    assert.deepEqual(state?.ddl, [{ ddl: 'ALTER TABLE orders\n  ADD COLUMN note text', position: null, commitTs: Date.UTC(2026, 0, 1), type: 'ALTER' }]);
    assert.match(renderSchemas(mock.rows()), /DDL:\n {2}- {2}2026-01-01T00:00:00\.000Z {2}ALTER: ALTER TABLE orders ADD COLUMN note text/);
    assert.equal(schemaStates(mock.rows()).size, 1, 'an unconfigured table gets no schema row');

    const broken = new SchemaTracker({ load: async () => Promise.reject(new Error('access denied')), save: async () => true }, config, log);
    await broken.track(batch([update({ a: 1 })]), new BatchTally([]));
    assert.ok(logged.some((l) => l.level === 'error' && String(l.extra?.error).includes('access denied')));
  });

  it('cuts a history too long for one item, keeping columns and counts; reads back only rows that hold a state', () => {
    const state: SchemaState = {
      since: 'a1',
      columns: [{ name: 'id', type: 'number', kind: 'N', basis: 'rows', present: true, since: 'a1' }],
      changes: Array.from({ length: 100 }, (_, i) => ({ kind: 'added' as const, column: `c${i}${'x'.repeat(500)}`, to: 'string', position: 'a2', commitTs: null, basis: 'rows' as const, holds: true })),
      ddl: [],
      total: 100,
      incompatible: 0,
    };
    const text = fitState(state, 20_000);
    assert.ok(text.length <= 20_000);
    const cut = JSON.parse(text) as SchemaState;
    assert.equal(cut.total, 100);
    assert.equal(cut.columns.length, 1);
    assert.ok(cut.changes.length < 100);
    assert.equal(parseRow({ schema: { S: text }, version: { N: '3' } })?.version, 3);
    assert.equal(parseRow({ schema: { S: '{not json' }, version: { N: '3' } }), undefined);
    assert.equal(parseRow({ version: { N: '3' } }), undefined);
    assert.equal(schemaStates([{ pipeline: 'shop', table: 'schema#public.orders', schema: '{not json' }]).size, 0);
  });
});
