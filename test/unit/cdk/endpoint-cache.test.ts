/**
 * The Lambda bundle's `EndpointCache` (lib/bundle-shims/endpoint-cache.ts) against the original
 * (`@aws-sdk/endpoint-cache`, over mnemonist's LRU cache): the same random sequences of operations,
 * clock advances included, give the same answers from every method, with least-recently-used
 * eviction at capacity. The bundle test runs it over real DynamoDB calls.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it, mock } from 'node:test';
import { EndpointCache as Original } from '@aws-sdk/endpoint-cache';
import fc from 'fast-check';
import { EndpointCache as Lean } from '../../../lib/bundle-shims/endpoint-cache.js';

type Op =
  | { readonly op: 'set'; readonly key: string; readonly endpoints: { Address: string; CachePeriodInMinutes: number }[] }
  | { readonly op: 'get' | 'getEndpoint' | 'has' | 'delete'; readonly key: string }
  | { readonly op: 'clear' }
  | { readonly op: 'tick'; readonly ms: number };

const key = fc.constantFrom('{}', '{"accessKeyId":"AKID1"}', '{"accessKeyId":"AKID2"}', 'k3', 'k4', 'k5', 'k6');
const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('set' as const),
    key,
    endpoints: fc.array(fc.record({ Address: fc.constantFrom('a.example', 'b.example', 'c.example'), CachePeriodInMinutes: fc.integer({ min: 0, max: 3 }) }), { maxLength: 3 }),
  }),
  fc.record({ op: fc.constantFrom('get' as const, 'getEndpoint' as const, 'has' as const, 'delete' as const), key }),
  fc.constant({ op: 'clear' as const }),
  fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 120_000 }) }),
);

/** Runs `op` on a cache; every answer, as plain data. */
function apply(cache: Original | Lean, op: Op): unknown {
  switch (op.op) {
    case 'set':
      return cache.set(op.key, op.endpoints);
    case 'get':
      return cache.get(op.key);
    case 'getEndpoint':
      return cache.getEndpoint(op.key);
    case 'has':
      return cache.has(op.key);
    case 'delete':
      return cache.delete(op.key);
    case 'clear':
      return cache.clear();
    case 'tick':
      return undefined;
  }
}

describe('the Lambda bundle\'s EndpointCache', () => {
  afterEach(() => mock.restoreAll());

  it('answers every operation as the original does, eviction and expiry included', () => {
    let now = 1_764_000_000_000;
    let random = 0;
    mock.method(Date, 'now', () => now);
    mock.method(Math, 'random', () => random);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(fc.tuple(operation, fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })), { maxLength: 60 }), (capacity, ops) => {
        const original = new Original(capacity);
        const lean = new Lean(capacity);
        for (const [op, r] of ops) {
          if (op.op === 'tick') now += op.ms;
          random = r;
          assert.deepEqual(apply(lean, op), apply(original, op), JSON.stringify(op));
        }
        // The same keys survive, with the same endpoints.
        for (const k of ['{}', '{"accessKeyId":"AKID1"}', '{"accessKeyId":"AKID2"}', 'k3', 'k4', 'k5', 'k6']) assert.equal(lean.has(k), original.has(k), k);
      }),
      { numRuns: 500 },
    );
  });

  it('evicts the least recently used key, where a get counts as a use and has does not', () => {
    const cache = new Lean(2);
    const endpoint = [{ Address: 'a.example', CachePeriodInMinutes: 5 }];
    cache.set('x', endpoint);
    cache.set('y', endpoint);
    cache.get('x');
    cache.has('y');
    cache.set('z', endpoint);
    assert.deepEqual([cache.has('x'), cache.has('y'), cache.has('z')], [true, false, true]);
  });

  it('refuses a capacity the original cannot hold', () => {
    assert.throws(() => new Lean(0), /capacity should be positive number/);
    assert.throws(() => new Original(0), /capacity should be positive number/);
    assert.throws(() => new Lean(1.5), /positive integer/);
  });
});
