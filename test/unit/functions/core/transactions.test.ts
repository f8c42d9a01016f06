/**
 * planTransactions (core/transactions.ts): which transactions of a batch are complete and fit, why
 * the others fall back to per-key apply, and the cut points that give a fitting transaction one
 * write per row; and planBatch cutting a key's chain at them.
 *
 * Markers are shaped as Debezium documents them: END `{status, id, event_count, data_collections:
 * [{data_collection, event_count}]}`, and each data event's `transaction: {id, total_order,
 * data_collection_order}` (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-transaction-metadata),
 * and DMS's `transaction-id`, `transaction-record-id`, `prev-transaction-id`,
 * `prev-transaction-record-id` (IncludeTransactionDetails, DMS KinesisSettings API reference).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planBatch } from '../../../../functions/core/plan.js';
import { encodePosition } from '../../../../functions/core/position.js';
import { planTransactions, type TransactionGroups } from '../../../../functions/core/transactions.js';
import type { ChangeEvent, ControlEvent, TxMember } from '../../../../functions/core/types.js';
import { change, pos } from '../../../helpers/events.js';

const GROUPS: TransactionGroups = { groups: [{ name: 'shop', tables: ['public.orders', 'public.lines'] }], maxItems: 100, maxBytes: 4_000_000 };
const keyIdOf = (e: ChangeEvent) => JSON.stringify(e.key.id);

let lsn = 100;
/** A data event of transaction `id` (PostgreSQL-like position [commit before, lsn]). */
function ev(table: string, id: number, tx: TxMember | null, commit = 1): ChangeEvent {
  lsn += 8;
  return change({ op: 'u', table, key: { id }, after: { id, v: lsn }, position: pos(commit, lsn), ...(tx ? { tx } : {}) });
}
const member = (id: string, order: number | null, collectionOrder: number | null = order): TxMember => ({ id, order, collectionOrder });
function end(id: string, collections: Record<string, number> | null, eventCount?: number): ControlEvent {
  const total = eventCount ?? Object.values(collections ?? {}).reduce((a, b) => a + b, 0);
  return {
    kind: 'control',
    format: 'debezium',
    control: 'tx-end',
    table: null,
    position: null,
    txid: id,
    commitTs: null,
    detail: { status: 'END', id, eventCount: total, ...(collections ? { dataCollections: Object.entries(collections).map(([data_collection, event_count]) => ({ data_collection, event_count })) } : {}) },
  };
}
const plan = (changes: ChangeEvent[], controls: ControlEvent[], groups: TransactionGroups = GROUPS) => planTransactions(changes, controls, (i) => keyIdOf(changes[i] as ChangeEvent), groups);

describe('planTransactions', () => {
  it('makes a transaction complete in the batch one unit, cut at its last event on each row', () => {
    const a = ev('public.orders', 1, member('769', 1, 1));
    const b = ev('public.lines', 7, member('769', 2, 1));
    const c = ev('public.lines', 7, member('769', 3, 2));
    const p = plan([a, b, c], [end('769', { 'public.orders': 1, 'public.lines': 2 })]);
    assert.equal(p.units.length, 1);
    assert.deepEqual(p.fallbacks, []);
    const [unit] = p.units;
    assert.deepEqual(
      unit?.cuts.map((cut) => [cut.table, cut.keyId, cut.position]),
      [
        ['public.orders', '1', encodePosition(a.position.tuple)],
        ['public.lines', '7', encodePosition(c.position.tuple)],
      ],
    );
    assert.deepEqual([...(p.cuts('public.lines', '7') ?? [])], [encodePosition(c.position.tuple)]);
    assert.equal(unit?.table, 'public.orders', 'counted under the table of its first event');
  });

  it('counts a redelivered event once, and reads collection names with a longer prefix (SQL Server testDB.dbo.t)', () => {
    const groups: TransactionGroups = { ...GROUPS, groups: [{ name: 'g', tables: ['dbo.a', 'dbo.b'] }] };
    const a = ev('dbo.a', 1, member('t1', 1));
    const b = ev('dbo.b', 2, member('t1', 2, 1));
    const p = plan([a, b, a], [end('t1', { 'testDB.dbo.a': 1, 'testDB.dbo.b': 1 })], groups);
    assert.equal(p.units.length, 1);
  });

  it('falls back as incomplete when END is not in the batch, when events are missing, or when END does not list a table it has events of', () => {
    const a = ev('public.orders', 1, member('1', 1));
    const b = ev('public.lines', 2, member('1', 2, 1));
    assert.deepEqual(plan([a, b], []).fallbacks.map((f) => f.reason), ['incomplete'], 'no END');
    assert.deepEqual(plan([a], [end('1', { 'public.orders': 1, 'public.lines': 1 })]).fallbacks.map((f) => [f.reason, f.events]), [['incomplete', 1]], 'a row missing');
    assert.deepEqual(plan([a, b], [end('1', { 'public.orders': 1 })]).fallbacks.map((f) => f.reason), ['incomplete'], 'END does not list public.lines');
    assert.equal(plan([a, b], []).units.length, 0);
    assert.equal(plan([a, b], []).cuts('public.orders', '1'), undefined, 'no cut: the rows collapse per key as usual');
  });

  it('ignores what END lists outside the group: those rows are not its to apply together', () => {
    const a = ev('public.orders', 1, member('2', 1));
    const b = ev('public.lines', 2, member('2', 3, 1));
    const p = plan([a, b], [end('2', { 'public.orders': 1, 'public.lines': 1, 'public.audit': 5 })]);
    assert.equal(p.units.length, 1);
  });

  it('reads event_count when END lists no collections: every event must be in the batch and in the group', () => {
    const a = ev('public.orders', 1, member('3', 1, null));
    const b = ev('public.lines', 2, member('3', 2, null));
    assert.equal(plan([a, b], [end('3', null, 2)]).units.length, 1);
    assert.deepEqual(plan([a, b], [end('3', null, 3)]).fallbacks.map((f) => f.reason), ['incomplete']);
  });

  it('makes a one-row transaction "single": atomic as one write, no cut', () => {
    const a = ev('public.orders', 1, member('4', 1));
    const b = ev('public.orders', 1, member('4', 2, 2));
    const p = plan([a, b], [end('4', { 'public.orders': 2 })]);
    assert.deepEqual(p.single.map((s) => s.txid), ['4']);
    assert.equal(p.units.length, 0);
    assert.equal(p.cuts('public.orders', '1'), undefined);
  });

  it('falls back as too-large over maxItems rows', () => {
    const events = [1, 2, 3].map((id, i) => ev('public.orders', id, member('5', i + 1)));
    const p = plan(events, [end('5', { 'public.orders': 3 })], { ...GROUPS, maxItems: 2 });
    assert.deepEqual(p.fallbacks.map((f) => [f.reason, f.txid, f.events]), [['too-large', '5', 3]]);
  });

  it('reads DMS transaction details: a later record naming the transaction as previous closes it', () => {
    const dms = (table: string, id: number, txid: string, order: number, previous?: { id: string; lastOrder: number }) => ev(table, id, { id: txid, order, collectionOrder: null, ...(previous ? { previous } : {}) });
    const a = dms('public.orders', 1, '1139', 1);
    const b = dms('public.lines', 2, '1139', 2);
    const next = dms('public.orders', 3, '1140', 1, { id: '1139', lastOrder: 2 });
    const p = plan([a, b, next], []);
    assert.deepEqual(p.units.map((u) => u.txid), ['1139']);
    assert.deepEqual(p.fallbacks.map((f) => [f.txid, f.reason]), [['1140', 'incomplete']], 'the last transaction has no successor yet');
    assert.deepEqual(plan([a, next], []).fallbacks.map((f) => [f.txid, f.reason]), [['1139', 'incomplete'], ['1140', 'incomplete']], 'record 2 missing');
  });

  it('sets apart transactions whose events interleave on a row (no commit order holds)', () => {
    const t1a = ev('public.orders', 1, member('6', 1), 1);
    const t2a = ev('public.orders', 1, member('7', 1), 1);
    const t1b = ev('public.orders', 1, member('6', 2, 2), 1);
    const t1c = ev('public.lines', 9, member('6', 3, 1), 1);
    const t2c = ev('public.lines', 8, member('7', 2, 1), 1);
    const p = plan([t1a, t2a, t1b, t1c, t2c], [end('6', { 'public.orders': 2, 'public.lines': 1 }), end('7', { 'public.orders': 1, 'public.lines': 1 })]);
    assert.deepEqual(p.fallbacks.map((f) => [f.txid, f.reason]).sort(), [['6', 'unordered'], ['7', 'unordered']]);
  });

  it('plans nothing for tables in no group, or without transaction metadata', () => {
    assert.deepEqual(plan([ev('public.other', 1, member('8', 1))], [end('8', { 'public.other': 1 })]), { ...plan([], []) });
    assert.equal(plan([ev('public.orders', 1, null)], []).units.length, 0);
    assert.equal(plan([ev('public.orders', 1, member('9', 1))], [end('9', { 'public.orders': 1 })], { ...GROUPS, groups: [] }).single.length, 0);
  });
});

describe('planBatch with cut points', () => {
  it('gives a key one write per segment, each folding only its segment, and counts the rest superseded', () => {
    const e1 = ev('public.orders', 1, null);
    const e2 = ev('public.orders', 1, member('a', 1));
    const e3 = change({ op: 'u', table: 'public.orders', key: { id: 1 }, after: { id: 1, v: '__p' }, placeholders: ['v'], position: pos(1, lsn + 4) });
    const e4 = ev('public.orders', 1, null);
    const events = [e1, e2, e3, e4];
    const cut = encodePosition(e2.position.tuple);
    const p = planBatch(events, keyIdOf, undefined, (table, key) => (table === 'public.orders' && key === '1' ? new Set([cut]) : undefined));
    assert.equal(p.writes.length, 2);
    const [first, second] = p.writes;
    assert.equal(first?.encodedPosition, cut, 'the first write ends at the cut');
    assert.deepEqual(first?.sources, [0, 1]);
    assert.equal(second?.encodedPosition, encodePosition(e4.position.tuple));
    assert.deepEqual(second?.sources, [2, 3]);
    assert.equal(second?.chain.length, 1, 'a full row anchors the second segment');
    assert.equal(p.counts.get('public.orders')?.superseded, 2, 'four kept events, two writes');
    const whole = planBatch(events, keyIdOf);
    assert.equal(whole.writes.length, 1, 'without cuts: one write');
  });

  it('starts a segment without a full row as a patch on what the earlier write leaves', () => {
    const e1 = ev('public.orders', 2, member('b', 1));
    const e2 = change({ op: 'u', table: 'public.orders', key: { id: 2 }, after: { id: 2, v: '__p', w: 1 }, placeholders: ['v'], position: pos(1, lsn + 4) });
    const p = planBatch([e1, e2], keyIdOf, undefined, () => new Set([encodePosition(e1.position.tuple)]));
    assert.equal(p.writes[1]?.effect.kind, 'patch');
    assert.equal(p.writes[1]?.basePosition, encodePosition(e2.position.tuple));
  });
});
