/**
 * Schema drift, the pure part: what an event says about its table's columns (declared schema or
 * row shape), and how a table's recorded state changes — a column added, then removed, then
 * changing type, each named at the position of the first event that showed it; changes the target
 * cannot hold named as such; shards behind changing nothing; DDL kept once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { changeEvent } from '../../../../functions/core/formats/kit.js';
import type { JsonObject } from '../../../../functions/core/json.js';
import { encodePosition, sourcePosition } from '../../../../functions/core/position.js';
import {
  isSchemaState,
  MAX_CHANGES,
  MAX_DDL,
  MAX_DDL_CHARS,
  mergeSchema,
  type ObserveOptions,
  observeEvent,
  type SchemaState,
  SPARSE_FORMATS,
  shapeRuns,
} from '../../../../functions/core/schema-drift.js';
import type { ChangeEvent, Row, RowOp } from '../../../../functions/core/types.js';

const options: ObserveOptions = { keyTypes: new Map([['id', 'number']]), sparse: (f) => SPARSE_FORMATS.has(f) };
const TABLE = 'public.orders';
const pos = (lsn: number) => encodePosition([BigInt(lsn - 1), BigInt(lsn)]);

interface EventInit {
  lsn: number;
  after?: Row | null;
  op?: RowOp;
  format?: string;
  rowSchema?: JsonObject;
  placeholders?: string[];
  patch?: Row;
  decimalText?: string[];
}

function event(init: EventInit): ChangeEvent {
  const op = init.op ?? 'u';
  const e = changeEvent({
    format: init.format ?? 'debezium-postgresql',
    op,
    table: TABLE,
    key: { id: 1 },
    before: op === 'd' ? { id: 1 } : null,
    after: op === 'd' || init.patch ? null : (init.after ?? null),
    patch: init.patch ? { set: init.patch, unset: [] } : null,
    placeholders: init.placeholders ?? [],
    position: sourcePosition(BigInt(init.lsn - 1), BigInt(init.lsn)),
    commitTs: 1_735_732_800_000 + init.lsn,
    ...(init.rowSchema ? { rowSchema: init.rowSchema } : {}),
  });
  return init.decimalText ? { ...e, decimalText: init.decimalText } : e;
}

/** Records a history batch by batch, as the ingest would. */
function record(batches: readonly (readonly ChangeEvent[])[], start?: SchemaState): SchemaState | undefined {
  let state = start;
  for (const b of batches) state = mergeSchema(state, shapeRuns(b, options)).state;
  return state;
}

const summary = (s: SchemaState | undefined) => s?.changes.map((c) => `${c.kind} ${c.column}${c.from ? ` ${c.from}` : ''}${c.to ? ` → ${c.to}` : ''} @${c.position}${c.holds ? '' : ' (cannot hold)'}`);

describe('schema drift', () => {
  it('names a column added, then removed, then changing type, each at the position that first showed it (row shapes)', () => {
    const state = record([
      [event({ lsn: 100, op: 'c', after: { id: 1, name: 'a' } }), event({ lsn: 110, after: { id: 1, name: 'b' } })],
      [event({ lsn: 120, after: { id: 1, name: 'b', email: 'x@y' } }), event({ lsn: 130, after: { id: 1, name: 'c', email: 'z@y' } })],
      [event({ lsn: 140, after: { id: 1, name: 'c' } })],
      [event({ lsn: 150, after: { id: 1, name: 42 } }), event({ lsn: 160, after: { id: 1, name: 43 } })],
    ]);
    assert.deepEqual(summary(state), [`added email → string @${pos(120)}`, `removed email string @${pos(140)}`, `type-changed name string → number @${pos(150)} (cannot hold)`]);
    assert.equal(state?.since, pos(100), 'the first shape is the baseline, not a change');
    assert.equal(state?.total, 3);
    assert.equal(state?.incompatible, 1);
    assert.deepEqual(
      state?.columns.map((c) => [c.name, c.type, c.kind, c.present]),
      [
        ['email', 'string', 'S', false],
        ['id', 'number', 'N', true],
        ['name', 'number', 'N', true],
      ],
    );
    assert.equal(state?.changes[0]?.commitTs, 1_735_732_800_000 + 120, 'the commit time of the first event showing it');
  });

  it('reads declared types from the schema block: null values still declare their column, int32 → int64 holds, int32 → string does not', () => {
    const struct = (...fields: [string, string, string?][]): JsonObject => ({ type: 'struct', fields: fields.map(([field, type, name]) => ({ field, type, optional: true, ...(name ? { name } : {}) })) });
    const state = record([
      [event({ lsn: 200, op: 'c', after: { id: 1, total: 5, note: null }, rowSchema: struct(['id', 'int32'], ['total', 'bytes', 'org.apache.kafka.connect.data.Decimal'], ['note', 'string']) })],
      [event({ lsn: 210, after: { id: 1, total: 5, note: null, qty: 2 }, rowSchema: struct(['id', 'int64'], ['total', 'bytes', 'org.apache.kafka.connect.data.Decimal'], ['note', 'string'], ['qty', 'int32']) })],
      [event({ lsn: 220, after: { id: 1, total: 5, note: null, qty: 'two' }, rowSchema: struct(['id', 'int64'], ['total', 'bytes', 'org.apache.kafka.connect.data.Decimal'], ['note', 'string'], ['qty', 'string']) })],
      [event({ lsn: 230, after: { id: 1, total: 5, qty: 'two' }, rowSchema: struct(['id', 'int64'], ['total', 'bytes', 'org.apache.kafka.connect.data.Decimal'], ['qty', 'string']) })],
    ]);
    assert.deepEqual(summary(state), [
      `type-changed id int32 → int64 @${pos(210)}`,
      `added qty → int32 @${pos(210)}`,
      `type-changed qty int32 → string @${pos(220)} (cannot hold)`,
      `removed note string @${pos(230)}`,
    ]);
    assert.deepEqual(
      state?.columns.filter((c) => c.present).map((c) => [c.name, c.type, c.kind, c.basis]),
      [
        ['id', 'int64', 'N', 'schema'],
        ['qty', 'string', 'S', 'schema'],
        ['total', 'Decimal', 'N', 'schema'],
      ],
    );
  });

  it('decodes a real schema-wrapped Debezium message into a declared observation', async () => {
    const { debezium } = await import('../../../../functions/core/formats/debezium.js');
    const { decodeContext, inboundFromFixture } = await import('../../../helpers/messages.js');
    const [e] = debezium.decode(inboundFromFixture('debezium', 'pg-insert-schema-wrapped'), decodeContext());
    assert.ok(e?.kind === 'change');
    const obs = observeEvent(e, options);
    assert.equal(obs?.basis, 'schema');
    assert.equal(obs?.full, true);
    assert.deepEqual(
      [...(obs?.columns ?? [])].map(([c, s]) => [c, s.type, s.kind]),
      [
        ['id', 'int32', 'N'],
        ['first_name', 'string', 'S'],
        ['last_name', 'string', 'S'],
        ['email', 'string', 'S'],
        ['bio', 'string', 'S'],
      ],
    );
  });

  it('a patch, placeholders or a sparse format add columns but never remove one', () => {
    const base = record([[event({ lsn: 300, op: 'c', after: { id: 1, a: 1, b: 2 } })]]);
    const after = record(
      [
        [event({ lsn: 310, patch: { a: 3, c: 'new' } })],
        [event({ lsn: 320, after: { id: 1, a: '__debezium_unavailable_value' }, placeholders: ['a'] })],
        [event({ lsn: 330, format: 'dms', after: { id: 1, a: 5 } })],
      ],
      base,
    );
    assert.deepEqual(summary(after), [`added c → string @${pos(310)}`]);
    assert.equal(
      after?.columns.every((c) => c.present),
      true,
    );
    const removed = record([[event({ lsn: 340, after: { id: 1, a: 1, c: 'x' } })]], after);
    assert.deepEqual(summary(removed)?.slice(1), [`removed b number @${pos(340)}`], 'a full image of a dense format does remove');
  });

  it('a null value or a placeholder says nothing of a type; a decimal over 38 digits as text is named once', () => {
    const state = record([
      [event({ lsn: 400, op: 'c', after: { id: 1, amount: 10 } })],
      [event({ lsn: 410, after: { id: 1, amount: null } })],
      [event({ lsn: 420, after: { id: 1, amount: '__debezium_unavailable_value' }, placeholders: ['amount'] })],
      [event({ lsn: 430, after: { id: 1, amount: '123456789012345678901234567890123456789.5' }, decimalText: ['amount'] })],
      [event({ lsn: 440, after: { id: 1, amount: '223456789012345678901234567890123456789.5' }, decimalText: ['amount'] })],
    ]);
    assert.deepEqual(summary(state), [`type-changed amount number → number as text (over 38 digits) @${pos(430)} (cannot hold)`]);
    const typed = record([[event({ lsn: 500, op: 'c', after: { id: 1, amount: null } })], [event({ lsn: 510, after: { id: 1, amount: 3 } })]]);
    assert.deepEqual(summary(typed), [], 'a column first seen null learns its type without a change');
    assert.equal(typed?.columns.find((c) => c.name === 'amount')?.type, 'number');
  });

  it('names a declared decimal that starts arriving as text (over 38 digits) as a change the target cannot hold', () => {
    const schema: JsonObject = { type: 'struct', fields: [{ field: 'id', type: 'int32' }, { field: 'amount', type: 'bytes', name: 'org.apache.kafka.connect.data.Decimal' }] };
    const state = record([
      [event({ lsn: 600, op: 'c', after: { id: 1, amount: 1 }, rowSchema: schema })],
      [event({ lsn: 610, after: { id: 1, amount: '1'.repeat(40) }, rowSchema: schema, decimalText: ['amount'] })],
    ]);
    assert.deepEqual(summary(state), [`type-changed amount Decimal → Decimal as text (over 38 digits) @${pos(610)} (cannot hold)`]);
  });

  it('deletes and truncates say nothing; one shape over a batch is one observation', () => {
    assert.equal(observeEvent(event({ lsn: 1, op: 'd' }), options), null);
    const runs = shapeRuns(
      [
        ...Array.from({ length: 50 }, (_, i) => event({ lsn: 1000 + i * 2, after: { id: 1, a: i } })),
        event({ lsn: 1200, after: { id: 1, a: 'x' } }),
        ...Array.from({ length: 50 }, (_, i) => event({ lsn: 1300 + i * 2, after: { id: 1, a: 'y' } })),
      ],
      options,
    );
    assert.deepEqual(
      runs.map((r) => r.position),
      [pos(1000), pos(1200)],
    );
  });

  it('an unchanged shape changes nothing (no write needed); DDL is kept once, cut to size, the latest kept', () => {
    const state = record([[event({ lsn: 700, op: 'c', after: { id: 1, a: 1 } })]]);
    const again = mergeSchema(state, shapeRuns([event({ lsn: 710, after: { id: 1, a: 2 } })], options));
    assert.equal(again.changed, false);
    const ddl = { ddl: `ALTER TABLE orders ADD COLUMN note text ${'-'.repeat(2000)}`, position: null, commitTs: 5, type: 'ALTER' };
    const withDdl = mergeSchema(again.state, [], [ddl]);
    assert.equal(withDdl.changed, true);
    assert.equal(withDdl.state.ddl[0]?.ddl.length, MAX_DDL_CHARS);
    assert.equal(mergeSchema(withDdl.state, [], [ddl]).changed, false, 'the same statement redelivered is kept once');
    let many = withDdl.state;
    for (let i = 0; i < MAX_DDL + 5; i++) many = mergeSchema(many, [], [{ ddl: `ALTER ${i}`, position: null, commitTs: i }]).state;
    assert.equal(many.ddl.length, MAX_DDL);
    assert.equal(many.ddl.at(-1)?.ddl, `ALTER ${MAX_DDL + 4}`);
    assert.ok(isSchemaState(JSON.parse(JSON.stringify(many))));
    assert.equal(isSchemaState({ since: 'x' }), false);
  });

  it('keeps the last MAX_CHANGES changes and counts them all', () => {
    let state = record([[event({ lsn: 10, op: 'c', after: { id: 1, v: 1 } })]]);
    for (let i = 0; i < MAX_CHANGES + 10; i++) state = record([[event({ lsn: 20 + i * 2, after: { id: 1, v: i % 2 === 0 ? 'text' : 1 } })]], state);
    assert.equal(state?.changes.length, MAX_CHANGES);
    assert.equal(state?.total, MAX_CHANGES + 10);
  });

  it('batch boundaries do not matter, and a redelivered window adds no change (property)', () => {
    // A history: per step, whether column b is absent, a number or text, and whether c is present.
    const step = fc.record({ b: fc.constantFrom('absent', 'number', 'text'), c: fc.boolean() });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 12 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
        fc.record({ start: fc.nat(), length: fc.integer({ min: 1, max: 4 }) }),
        (steps, cuts, redelivery) => {
          const events = steps.map((st, i) => {
            const after: Row = { id: 1, a: 1 };
            if (st.b !== 'absent') after.b = st.b === 'number' ? 1 : 'one';
            if (st.c) after.c = true;
            return event({ lsn: 10 + i * 10, op: i === 0 ? 'c' : 'u', after });
          });
          const oneByOne = record(events.map((e) => [e]));
          const batches: ChangeEvent[][] = [[]];
          events.forEach((e, i) => {
            (batches[batches.length - 1] as ChangeEvent[]).push(e);
            if (cuts[i % cuts.length]) batches.push([]);
          });
          const batched = record(batches.filter((b) => b.length > 0));
          assert.deepEqual(batched, oneByOne);
          // The expected history, folded by hand: each step against the one before.
          // A column added back with another stored type than it last had cannot be held as before.
          const expected: string[] = [];
          const kindOf = (b: string) => (b === 'number' ? 'number' : 'string');
          let lastB = steps[0]?.b === 'absent' ? undefined : steps[0]?.b;
          steps.forEach((st, i) => {
            const prev = steps[i - 1];
            if (!prev) return;
            const at = pos(10 + i * 10);
            if (prev.b === 'absent' && st.b !== 'absent') expected.push(`added b → ${kindOf(st.b)} @${at}${lastB !== undefined && lastB !== st.b ? ' (cannot hold)' : ''}`);
            if (st.b !== 'absent') lastB = st.b;
            if (prev.b !== 'absent' && st.b !== 'absent' && prev.b !== st.b) expected.push(`type-changed b ${kindOf(prev.b)} → ${kindOf(st.b)} @${at} (cannot hold)`);
            if (!prev.c && st.c) expected.push(`added c → boolean @${at}`);
            if (prev.b !== 'absent' && st.b === 'absent') expected.push(`removed b ${kindOf(prev.b)} @${at}`);
            if (prev.c && !st.c) expected.push(`removed c boolean @${at}`);
          });
          // Within one position: additions and type changes, then removals.
          const order = (c: string) => (c.startsWith('removed') ? 1 : 0);
          const byPosition = (x: string, y: string) => (x.split('@')[1] ?? '').localeCompare(y.split('@')[1] ?? '') || order(x) - order(y) || x.localeCompare(y);
          assert.deepEqual([...(summary(oneByOne) ?? [])].sort(byPosition), [...expected].sort(byPosition));
          const start = redelivery.start % events.length;
          const again = record([events.slice(start, start + redelivery.length)], oneByOne);
          assert.deepEqual(again?.changes, oneByOne?.changes, 'a redelivered window adds no change');
        },
      ),
      { numRuns: 300, includeErrorInReport: true },
    );
  });
});
