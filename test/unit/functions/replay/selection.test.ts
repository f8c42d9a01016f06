/** Replay selection (positions, keys file, event filter) and the tombstone-horizon safety rule. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/config.js';
import { encodePosition } from '../../../../functions/core/position.js';
import type { ChangeEvent } from '../../../../functions/core/types.js';
import { checkReplaySafety, parseTarget, ReplayRefusedError } from '../../../../functions/replay/safety.js';
import { parseKeysFile, parsePosition, parseTime, SelectionError, selects } from '../../../../functions/replay/selection.js';

const config = parseConfig({
  name: 'sel',
  tables: [
    { source: 'public.orders', target: 'sel-orders', key: ['order_id'], keyTypes: { order_id: 'number' }, tombstoneTtlDays: 7 },
    { source: 'public.customers', target: 'sel-customers', key: ['id'], tombstoneTtlDays: 2 },
  ],
  raw: { bucket: 'sel-raw' },
});
const DAY = 86_400_000;

const change = (table: string, key: Record<string, number | string>, op: ChangeEvent['op'] = 'u'): ChangeEvent => ({
  kind: 'change', format: 'generic', op, table, key, before: null, after: key, patch: null, placeholders: [], position: { tuple: [1n], strength: 'source' }, txid: null, commitTs: null, snapshot: false,
});

describe('replay selection', () => {
  it('reads positions as JSON tuples (big values exact) or as encoded __pos, and refuses anything else', () => {
    assert.equal(parsePosition('[1000, 1002]', 'p'), encodePosition([1000n, 1002n]));
    assert.equal(parsePosition('["18446744073709551615"]', 'p'), encodePosition([18446744073709551615n]));
    const encoded = encodePosition([7n, 9n]);
    assert.equal(parsePosition(encoded, 'p'), encoded);
    assert.throws(() => parsePosition('[-1]', '--from-position'), SelectionError);
    assert.throws(() => parsePosition('[]', '--from-position'), SelectionError);
    assert.throws(() => parsePosition('yesterday', '--from-position'), /--from-position/);
    assert.equal(parseTime('2026-11-30T06:00:00Z', 't'), Date.parse('2026-11-30T06:00:00Z'));
    assert.equal(parseTime('1764482400000', 't'), 1764482400000);
    assert.throws(() => parseTime('soon', '--since'), /--since/);
  });

  it('reads a keys file in canonical form, wrapped or bare, and names bad lines without their values', () => {
    const text = ['{"table":"public.orders","key":{"order_id":"7"}}', '{"order_id": 8}', '# comment', '', 'nope', '{"table":"public.nope","key":{"id":1}}', '{"table":"public.orders","key":{"order_id":"x"}}'].join('\n');
    const { keys, problems } = parseKeysFile(text, config, ['public.orders']);
    assert.deepEqual([...(keys.get('public.orders') ?? [])], ['["7"]', '["8"]']);
    assert.deepEqual(problems.map((p) => p.line), [5, 6, 7]);
    assert.match(problems[2]?.detail ?? '', /bad-key/);
    const two = parseKeysFile('{"order_id": 8}', config, ['public.orders', 'public.customers']);
    assert.match(two.problems[0]?.detail ?? '', /exactly one selected table/);
  });

  it('selects by table, position range and keys; a truncate only without a key list', () => {
    const e = change('public.orders', { order_id: 7 });
    const pos = encodePosition([5n]);
    assert.equal(selects({ tables: ['public.orders'] }, e, '["7"]', pos), true);
    assert.equal(selects({ tables: ['public.customers'] }, e, '["7"]', pos), false);
    assert.equal(selects({ tables: ['public.orders'], fromPosition: encodePosition([6n]) }, e, '["7"]', pos), false);
    assert.equal(selects({ tables: ['public.orders'], toPosition: encodePosition([4n]) }, e, '["7"]', pos), false);
    assert.equal(selects({ tables: ['public.orders'], fromPosition: pos, toPosition: pos }, e, '["7"]', pos), true);
    const keys = new Map([['public.orders', new Set(['["8"]'])]]);
    assert.equal(selects({ tables: ['public.orders'], keys }, e, '["7"]', pos), false);
    assert.equal(selects({ tables: ['public.orders'], keys }, e, '["8"]', pos), true);
    assert.equal(selects({ tables: ['public.orders'], keys }, change('public.orders', {}, 't'), '[]', pos), false);
  });
});

describe('replay safety', () => {
  const now = Date.parse('2026-11-30T06:00:00Z');
  const check = (over: Partial<Parameters<typeof checkReplaySafety>[0]>) => () =>
    checkReplaySafety({ config, tables: ['public.orders'], target: { kind: 'live' }, oldestLanding: now - DAY, now, force: false, ...over });

  it('refuses a live replay whose oldest landing is before now - tombstoneTtlDays (shortest of the tables)', () => {
    assert.doesNotThrow(check({}));
    assert.throws(check({ oldestLanding: now - 8 * DAY }), ReplayRefusedError);
    assert.throws(check({ tables: ['public.orders', 'public.customers'], oldestLanding: now - 3 * DAY }), /tombstone horizon/);
    assert.doesNotThrow(check({ tables: ['public.orders'], oldestLanding: now - 3 * DAY }));
  });

  it('allows it with --force, into a fresh table, or when nothing is read', () => {
    assert.doesNotThrow(check({ oldestLanding: now - 30 * DAY, force: true }));
    assert.doesNotThrow(check({ oldestLanding: now - 30 * DAY, target: { kind: 'fresh', target: 'x-v2' } }));
    assert.doesNotThrow(check({ oldestLanding: null }));
  });

  it('parses --into', () => {
    assert.deepEqual(parseTarget('live', 'shop'), { kind: 'live' });
    assert.deepEqual(parseTarget('fresh:shop-fresh-orders', 'shop'), { kind: 'fresh', target: 'shop-fresh-orders' });
    assert.throws(() => parseTarget('fresh:', 'shop'), ReplayRefusedError);
    assert.throws(() => parseTarget('elsewhere', 'shop'), /--into/);
  });

  it('accepts a fresh table only under the reserved prefix <pipeline>-fresh-, so no other table of the account can be named', () => {
    // Tables the old `<pipeline>-*` rule let through: another pipeline's, or an unrelated one that shares the name's start.
    for (const name of ['shop-payments', 'shop-eu-customers', 'shop-fresh-', 'shopfresh-orders', 'other-fresh-orders', 'shop-status']) {
      assert.throws(() => parseTarget(`fresh:${name}`, 'shop'), (e: unknown) => e instanceof ReplayRefusedError && /must be named shop-fresh-<suffix>/.test(e.message), name);
    }
    assert.throws(() => parseTarget('fresh:shop-fresh-orders@', 'shop'), ReplayRefusedError);
  });

  it('reads fresh:<table>@<run> as the continuation of the rebuild that run created', () => {
    assert.deepEqual(parseTarget('fresh:shop-fresh-orders@replay-20261130T060000-a1b2c3', 'shop'), {
      kind: 'fresh',
      target: 'shop-fresh-orders',
      createdBy: 'replay-20261130T060000-a1b2c3',
    });
    assert.throws(() => parseTarget('fresh:shop-payments@replay-1', 'shop'), /must be named shop-fresh-<suffix>/);
  });
});
