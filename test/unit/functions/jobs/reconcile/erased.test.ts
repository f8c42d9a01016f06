/**
 * erasedByLedger: a finding of a key the erase ledger holds is `erased` exactly when raw's winner is
 * absent or at or below the erasure (issue 20, item 17); a genuine later change is judged as usual.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { LedgerEntry } from '../../../../../functions/adapters/erase-ledger.js';
import { erasedByLedger } from '../../../../../functions/jobs/reconcile/run.js';

const entry = (table: string, position: string): LedgerEntry => ({ table, keyHash: 'h', keyId: 'k1', position, erasedAt: 1, reason: 'r' });
/** A ledger holding one key of one table. */
const ledgerOf = (table: string, keyId: string, position: string) => ({
  entry: (t: string, k: string) => (t === table && k === keyId ? entry(table, position) : undefined),
});

describe('erasedByLedger', () => {
  it('is false without a ledger, and for keys the ledger does not hold', () => {
    assert.equal(erasedByLedger(null, { source_table: 'public.a', key_id: '["1"]', expected_position: null }), false);
    const ledger = ledgerOf('public.a', '["1"]', 'p5');
    assert.equal(erasedByLedger(ledger, { source_table: 'public.a', key_id: '["2"]', expected_position: null }), false);
    assert.equal(erasedByLedger(ledger, { source_table: 'public.b', key_id: '["1"]', expected_position: null }), false);
  });

  it('an erased key with no winner, or a winner at or below the erasure, is erased; a later winner is not', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 6 }), fc.string({ minLength: 1, maxLength: 6 }), (erasure, winner) => {
        const ledger = ledgerOf('public.a', '["7"]', erasure);
        const row = { source_table: 'public.a', key_id: '["7"]', expected_position: winner };
        assert.equal(erasedByLedger(ledger, row), winner <= erasure);
        assert.equal(erasedByLedger(ledger, { ...row, expected_position: null }), true, 'no winner: erased');
      }),
    );
  });

  it('an erasure recorded with no known position covers every winner', () => {
    assert.equal(erasedByLedger(ledgerOf('public.a', '["7"]', ''), { source_table: 'public.a', key_id: '["7"]', expected_position: 'zzz' }), true);
  });
});
