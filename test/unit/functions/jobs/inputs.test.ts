/**
 * The job inputs' rules, which the CLI applies before it starts anything and each job's plan step
 * applies again: malformed times, an inverted window, a cutoff that is not a number, unknown
 * tables, all listed at once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/config.js';
import { reconcileInputProblems, snapshotInputProblems, validateReconcileRequest } from '../../../../functions/jobs/inputs.js';
import { JobInputError } from '../../../../functions/jobs/deps.js';

const config = parseConfig({ name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } });

describe('job inputs', () => {
  it('accepts the defaults and well-formed windows', () => {
    assert.deepEqual(reconcileInputProblems(config, {}), []);
    assert.deepEqual(reconcileInputProblems(config, { mode: 'window', since: '2026-11-30T00:00:00Z', until: '2026-11-30T06:00:00Z', cutoffSeconds: 0, hours: 2, tables: ['public.orders'] }), []);
    assert.deepEqual(snapshotInputProblems(config, { hours: 24, apply: true }), []);
  });

  it('refuses reconcile --since yesterday, --cutoff-seconds abc and an inverted window, every problem at once', () => {
    const problems = reconcileInputProblems(config, { since: 'yesterday', cutoffSeconds: Number.NaN });
    assert.deepEqual(problems, ['cutoffSeconds must be a whole number of seconds from 0 to 31536000, got NaN', 'since must be an ISO 8601 time (2026-11-30T06:00:00Z), got "yesterday"']);
    assert.deepEqual(reconcileInputProblems(config, { since: '2026-12-01T00:00:00Z', until: '2026-11-30T00:00:00Z' }), ['since (2026-12-01T00:00:00Z) must be before until (2026-11-30T00:00:00Z)']);
    assert.throws(() => validateReconcileRequest(config, { cutoffSeconds: 'abc' as unknown as number }), (e: unknown) => e instanceof JobInputError && /cutoffSeconds must be a whole number/.test(e.message));
  });

  it('refuses unknown tables, modes, run ids, manifests and hours', () => {
    const problems = reconcileInputProblems(config, { tables: ['public.nope'], mode: 'fast' as 'full', runId: 'a b', manifest: 'bucket/key', hours: 0 });
    assert.equal(problems.length, 5, problems.join('\n'));
    assert.match(snapshotInputProblems(config, { tables: ['x'] }).join(), /table "x" is not configured \(configured: public\.orders\)/);
  });
});
