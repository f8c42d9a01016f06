/** resolveAgainstStored: the stored-row rule, case by case (the property tests cover its combinations). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type PlannedWrite, planBatch } from '../../../../functions/core/plan.js';
import { nextItem, outcomeOf, resolveAgainstStored } from '../../../../functions/core/stored.js';
import type { ChangeEvent } from '../../../../functions/core/types.js';
import { change, pos } from '../../../helpers/events.js';

const write = (...events: ChangeEvent[]): PlannedWrite => {
  const [w] = planBatch(events, (e) => JSON.stringify(e.key)).writes;
  if (!w) throw new Error('no write');
  return w;
};
const full = (at: number, a: number) => change({ op: 'u', after: { id: 1, a }, position: pos(at) });
const patch = (at: number, b: number) => change({ op: 'u', after: null, patch: { set: { b }, unset: [] }, position: pos(at) });

describe('resolveAgainstStored', () => {
  const w = write(full(10, 1), patch(20, 2), patch(30, 3));

  it('applies on no stored row, or one older than the write base', () => {
    assert.deepEqual(resolveAgainstStored(undefined, w), { kind: 'apply', write: w });
    assert.deepEqual(resolveAgainstStored({ position: write(full(9, 0)).encodedPosition, contentHash: 'x' }, w), { kind: 'apply', write: w });
  });

  it('rebases on a stored row inside the chain: only newer events remain, based after the stored one', () => {
    const stored = { position: write(patch(20, 2)).encodedPosition, contentHash: 'x' };
    const r = resolveAgainstStored(stored, w);
    assert.equal(r.kind, 'rebase');
    assert.ok(r.kind === 'rebase');
    assert.equal(r.write.chain.length, 1);
    assert.equal(r.write.basePosition, w.encodedPosition);
    assert.deepEqual(r.write.effect, { kind: 'patch', set: { b: 3 }, unset: [], unresolved: [] });
    // A stored row at the base itself rebases too: the base event is already there.
    assert.equal(resolveAgainstStored({ position: w.basePosition, contentHash: 'x' }, w).kind, 'rebase');
    assert.equal(outcomeOf(r), 'applied');
  });

  it('is stale on a newer stored row; duplicate or conflict at the same position by content hash', () => {
    assert.deepEqual(resolveAgainstStored({ position: write(full(31, 0)).encodedPosition, contentHash: w.contentHash }, w), { kind: 'stale' });
    assert.deepEqual(resolveAgainstStored({ position: w.encodedPosition, contentHash: w.contentHash }, w), { kind: 'duplicate' });
    assert.deepEqual(resolveAgainstStored({ position: w.encodedPosition, contentHash: 'other' }, w), { kind: 'conflict' });
  });
});

describe('nextItem', () => {
  it('a patch on a stored row keeps its other columns; on nothing it starts a partial row', () => {
    const p = write(change({ op: 'u', after: { id: 1, a: 2, big: '__debezium_unavailable_value' }, placeholders: ['big'], position: pos(5) }));
    const stored = { row: { id: 1, a: 1, big: 'x' }, deleted: false, missing: [], partial: false };
    assert.deepEqual(nextItem(stored, p).row, { id: 1, a: 2, big: 'x' });
    const fresh = nextItem(undefined, p);
    assert.deepEqual(fresh.row, { id: 1, a: 2 });
    assert.equal(fresh.partial, true);
    assert.deepEqual(fresh.missing, ['big']);
  });
});
