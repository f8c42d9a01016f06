/** The commands guard.ts builds: one name per attribute path, the named guard clauses, size limits. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig, type TableConfig } from '../../../../lib/config/config.js';
import { LosslessNumber } from '../../../../functions/core/json.js';
import { keyId } from '../../../../functions/core/keys.js';
import { type PlannedWrite, planBatch } from '../../../../functions/core/plan.js';
import type { ChangeEvent } from '../../../../functions/core/types.js';
import { expressionTooLarge, guardExpression, MAX_EXPRESSION_BYTES, patchCommand, putCommand } from '../../../../functions/adapters/guard.js';
import { marshallValue } from '../../../../functions/adapters/item-codec.js';
import { change, pos } from '../../../helpers/events.js';

const config = parseConfig({
  name: 'gd',
  tables: [
    { source: 'public.one', target: 'g-one', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.two', target: 'g-two', key: ['tenant', 'id'] },
    { source: 'public.three', target: 'g-three', key: ['a', 'b', 'c'], keyTypes: { b: 'number' } },
  ],
  raw: { bucket: 'g-raw' },
});
const table = (source: string): TableConfig => {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new Error(source);
  return t;
};
const ctx = (t: TableConfig) => ({ table: t, now: 1_700_000_000_000 });

function patchWrite(e: ChangeEvent): PlannedWrite & { effect: { kind: 'patch' } } {
  const [w] = planBatch([e], (x) => keyId(table(x.table), x.key)).writes;
  if (w?.effect.kind !== 'patch') throw new Error('expected a patch');
  return w as PlannedWrite & { effect: { kind: 'patch' } };
}

/** Attribute names (resolved) of each SET and REMOVE clause of an update expression. */
function paths(cmd: ReturnType<typeof patchCommand>): string[] {
  const names = cmd.ExpressionAttributeNames ?? {};
  return (cmd.UpdateExpression ?? '')
    .replace(/\b(SET|REMOVE)\b/g, ',')
    .split(',')
    .map((c) => c.split('=')[0]?.trim() ?? '')
    .filter((c) => c !== '')
    .map((c) => names[c] ?? c);
}

describe('patchCommand', () => {
  for (const [source, key] of [
    ['public.one', { id: 1 }],
    ['public.two', { tenant: 't', id: 'x' }],
    ['public.three', { a: 'x', b: 2, c: 'z' }],
  ] as const) {
    it(`names each attribute path once for a ${Object.keys(key).length}-column key, even when the patch carries the key columns`, () => {
      const t = table(source);
      const w = patchWrite(change({ op: 'u', table: source, key, after: null, patch: { set: { ...key, qty: 1 }, unset: ['old', 'qty'] }, position: pos(3) }));
      const cmd = patchCommand(t.target, w, ctx(t));
      const all = paths(cmd);
      assert.equal(new Set(all).size, all.length, `overlapping paths in ${cmd.UpdateExpression}`);
      assert.ok(all.includes('qty'));
      const keyAttrs = Object.keys(cmd.Key ?? {});
      for (const k of keyAttrs) assert.ok(!all.includes(k), `key attribute ${k} must not be SET`);
      if (source === 'public.three') for (const col of ['a', 'b', 'c']) assert.ok(all.includes(col), 'composite key columns are kept as attributes');
    });
  }

  it('is guarded by the position guard and refuses to update a spilled stub', () => {
    const t = table('public.one');
    const cmd = patchCommand(t.target, patchWrite(change({ op: 'u', table: 'public.one', key: { id: 1 }, after: null, patch: { set: { a: 1 }, unset: [] } })), ctx(t));
    assert.equal(cmd.ConditionExpression, `(${guardExpression}) AND attribute_not_exists(#spill)`);
    assert.equal(cmd.ExpressionAttributeNames?.['#spill'], '__spill');
    assert.equal(cmd.ReturnValuesOnConditionCheckFailure, 'ALL_OLD');
  });
});

describe('putCommand conditions', () => {
  const t = table('public.one');
  const [w] = planBatch([change({ op: 'c', table: 'public.one', key: { id: 1 }, after: { id: 1 }, position: pos(9) })], (x) => keyId(t, x.key)).writes;
  it('guard, exact stored position, or key absent', () => {
    assert.ok(w);
    assert.equal(putCommand(t.target, w, ctx(t)).ConditionExpression, guardExpression);
    const exact = putCommand(t.target, w, ctx(t), { kind: 'exact', position: 'a15' });
    assert.equal(exact.ConditionExpression, '#pos = :stored');
    assert.deepEqual(exact.ExpressionAttributeValues, { ':stored': { S: 'a15' } });
    const absent = putCommand(t.target, w, ctx(t), { kind: 'absent' });
    assert.equal(absent.ConditionExpression, 'attribute_not_exists(#pk)');
    assert.equal(absent.ExpressionAttributeValues, undefined);
  });
});

describe('expressionTooLarge', () => {
  it('is true only past 4 KB', () => {
    assert.equal(expressionTooLarge({ UpdateExpression: 'x'.repeat(MAX_EXPRESSION_BYTES) }), false);
    assert.equal(expressionTooLarge({ UpdateExpression: 'x'.repeat(MAX_EXPRESSION_BYTES + 1) }), true);
  });
});

describe('marshallValue', () => {
  it('keeps number text exact and maps every JSON type', () => {
    assert.deepEqual(marshallValue(new LosslessNumber('12345678901234567890.10')), { N: '12345678901234567890.10' });
    assert.deepEqual(marshallValue([1, 'a', null, true, { x: [] }]), { L: [{ N: '1' }, { S: 'a' }, { NULL: true }, { BOOL: true }, { M: { x: { L: [] } } }] });
    assert.deepEqual(marshallValue(''), { S: '' });
  });
});

describe('decimals stored as text', () => {
  it('lists the columns a write carries as exact decimal text in __decimalText, and nothing when there are none', () => {
    const price = '1234567890123456789012345678901234567.891';
    const long = change({ op: 'c', table: 'public.one', key: { id: 1 }, after: { id: 1, price }, position: pos(5), decimalText: ['price'] });
    const [w] = planBatch([long], (x) => keyId(table(x.table), x.key)).writes;
    assert.ok(w);
    const item = putCommand('g-one', w, ctx(table('public.one'))).Item ?? {};
    assert.deepEqual(item.__decimalText, { SS: ['price'] });
    assert.deepEqual(item.price, { S: price });
    const [plain] = planBatch([change({ op: 'c', table: 'public.one', key: { id: 1 }, after: { id: 1, price: 'x' }, position: pos(5) })], (x) => keyId(table(x.table), x.key)).writes;
    assert.ok(plain);
    assert.equal(putCommand('g-one', plain, ctx(table('public.one'))).Item?.__decimalText, undefined);
  });
});
