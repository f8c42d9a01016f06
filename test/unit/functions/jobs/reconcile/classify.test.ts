/** The reconcile decision for one key: each class in its own situation, and no finding when table and raw agree. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { encodePosition } from '../../../../../functions/core/position.js';
import { type Actual, classify, type ClassifyContext, type Expected } from '../../../../../functions/jobs/reconcile/classify.js';

const pos = (n: number) => encodePosition([7n, BigInt(n)]);
const full: ClassifyContext = { mode: 'full', cutoff: 1000 };
const window: ClassifyContext = { mode: 'window', cutoff: 1000 };
const exp = (p: number, op = 'u', hash = 'h', extra: Partial<Expected> = {}): Expected => ({ winner: { position: pos(p), op, hash, conflict: false }, maxPosition: pos(p), ...extra });
const act = (p: number, deleted = false, hash = 'h', appliedAt = 500): Actual => ({ position: pos(p), deleted, hash, appliedAt });

describe('classify', () => {
  it('names each class in its situation', () => {
    assert.equal(classify(exp(5), undefined, full), 'missing');
    assert.equal(classify(exp(5), act(3, true), full), 'missing', 'an older tombstone does not hold the live row');
    assert.equal(classify(exp(5, 'd'), act(3), full), 'deleted-live');
    assert.equal(classify(exp(5), act(3), full), 'stale');
    assert.equal(classify(exp(5), act(5, false, 'other'), full), 'mismatch');
    assert.equal(classify(exp(5), act(9), full), 'ahead');
    assert.equal(classify(undefined, act(9), full), 'extra');
    assert.equal(classify(undefined, act(9, true), full), 'ahead', 'a tombstone raw never saw');
  });

  it('finds nothing where table and raw agree', () => {
    assert.equal(classify(exp(5), act(5), full), 'ok');
    assert.equal(classify(exp(5, 'd', 'h'), act(5, true), full), 'ok');
    assert.equal(classify(exp(5, 'd'), undefined, full), 'ok', 'an expired tombstone');
    assert.equal(classify(exp(5, 'd'), act(3, true), full), 'ok');
    assert.equal(classify(exp(5, 'u', 'h', { maxPosition: pos(9) }), act(9), full), 'ok', 'the table holds a newer raw event not yet settled');
    assert.equal(classify(undefined, undefined, full), 'ok');
  });

  it('leaves rows applied after the cutoff, and keys with no settled raw, alone', () => {
    assert.equal(classify(exp(5), act(3, false, 'h', 1001), full), 'in-flight');
    assert.equal(classify(undefined, act(3, false, 'h', 1001), full), 'in-flight');
    assert.equal(classify({ winner: null, maxPosition: pos(5) }, undefined, full), 'in-flight');
  });

  it('window mode cannot tell ahead or extra: it says so instead of guessing', () => {
    assert.equal(classify(exp(5), act(9), window), 'unverifiable');
    assert.equal(classify(undefined, act(9), window), 'unverifiable');
    assert.equal(classify(exp(5), act(3), window), 'stale');
  });

  it('does not call a conflict or an unknown hash a mismatch', () => {
    assert.equal(classify({ winner: { position: pos(5), op: 'u', hash: 'a', conflict: true }, maxPosition: pos(5) }, act(5, false, 'b'), full), 'ok');
    assert.equal(classify({ winner: { position: pos(5), op: 'u', hash: null, conflict: false }, maxPosition: pos(5) }, act(5, false, 'b'), full), 'ok');
  });

  it('respects the truncate watermark: rows and raw below it read as absent', () => {
    const ctx = { ...full, truncateWatermark: pos(6) };
    assert.equal(classify(exp(5), undefined, ctx), 'ok');
    assert.equal(classify(exp(5), act(5), ctx), 'ok');
    assert.equal(classify(exp(8), act(5), ctx), 'missing');
  });

  it('property: a table that holds exactly what raw folds to has no finding, in either mode', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ p: fc.nat(1000), op: fc.constantFrom('c', 'u', 'd', 'r'), h: fc.constantFrom('a', 'b', 'c') }), { minLength: 1, maxLength: 20 }), fc.boolean(), (events, isFull) => {
        // The winner is the highest position; ties keep the first arrival, as the guard does.
        let winner = events[0];
        for (const e of events) if (winner && e.p > winner.p) winner = e;
        if (!winner) return;
        const expected: Expected = { winner: { position: pos(winner.p), op: winner.op, hash: winner.h, conflict: false }, maxPosition: pos(winner.p) };
        const actual: Actual | undefined = { position: pos(winner.p), deleted: winner.op === 'd', hash: winner.h, appliedAt: 1 };
        assert.equal(classify(expected, actual, isFull ? full : window), 'ok');
      }),
    );
  });

  it('property: a table behind raw is always a finding, and never a critical one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 999 }), fc.constantFrom('c', 'u', 'd'), fc.boolean(), (w, behind, op, deleted) => {
        fc.pre(behind < w);
        const verdict = classify(exp(w, op), act(behind, deleted), full);
        if (op === 'd' && deleted) assert.equal(verdict, 'ok');
        else assert.ok(['missing', 'stale', 'deleted-live'].includes(verdict), verdict);
      }),
    );
  });
});

describe('repair chain and partitions', () => {

});
