/**
 * The replay request's rules, shared by the CLI (before anything is written) and the Plan task:
 * an inverted landing-time range or position range selects nothing and is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/config.js';
import { encodePosition } from '../../../../functions/core/position.js';
import { replayInputProblems, validateReplayRequest } from '../../../../functions/replay/inputs.js';
import { SelectionError } from '../../../../functions/replay/selection.js';

const config = parseConfig({ name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } });
const base = { runId: 'replay-1', tables: ['public.orders'], into: 'live' };

describe('replay inputs', () => {
  it('accepts a forward range', () => {
    assert.deepEqual(replayInputProblems(config, { ...base, since: 1000, until: 2000, fromPosition: encodePosition([1n]), toPosition: encodePosition([10n]) }), []);
  });

  it('refuses --since later than --until and --from-position above --to-position', () => {
    assert.deepEqual(replayInputProblems(config, { ...base, since: Date.UTC(2026, 11, 1), until: Date.UTC(2026, 10, 30) }), ['since (2026-12-01T00:00:00.000Z) must be before until (2026-11-30T00:00:00.000Z)']);
    const from = encodePosition([2000n, 2000n]);
    const to = encodePosition([1000n, 1000n]);
    assert.deepEqual(replayInputProblems(config, { ...base, fromPosition: from, toPosition: to }), [`fromPosition ${from} is above toPosition ${to}: the range selects nothing`]);
    assert.throws(() => validateReplayRequest(config, { ...base, since: 5, until: 5 }), SelectionError);
  });

  it('refuses unknown tables, a bad target, bad positions and times', () => {
    const problems = replayInputProblems(config, { runId: 'r', tables: ['public.nope'], into: 'fresh:', since: Number.NaN, fromPosition: 'zz' });
    assert.equal(problems.length, 4, problems.join('\n'));
  });
});
