/** How the jobs label a held table (functions/core/lifecycle.ts heldLabelOf, heldRawSince). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { heldLabelOf, heldRawSince } from '../../../../functions/core/lifecycle.js';

describe('held table labels', () => {
  it('labels suspended and stopped tables from their status rows; a running one has none', () => {
    assert.equal(heldLabelOf(undefined), null);
    assert.equal(heldLabelOf({ lifecycle: 'running', heldFrom: 5 }), null);
    assert.deepEqual(heldLabelOf({ lifecycle: 'suspended', lifecycleAt: 9, heldFrom: 7, lifecycleReason: 'migration' }), { state: 'suspended', heldFrom: 7, reason: 'migration' });
    assert.deepEqual(heldLabelOf({ lifecycle: 'error', lifecycleAt: 9 }), { state: 'stopped', heldFrom: 9 }, 'without heldFrom, from when the state changed');
    assert.deepEqual(heldLabelOf({ lifecycle: 'error' }), { state: 'stopped', heldFrom: 0 }, 'no time recorded: held from the start');
  });

  it('held raw starts the ingest timeout and a margin before the hold, as resume replays it', () => {
    assert.equal(heldRawSince(1_000_000, 60), 1_000_000 - 60_000 - 5_000);
  });
});
