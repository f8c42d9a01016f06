import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareTuples, decodePosition, encodePosition, parseHlc, parsePgLsn } from '../../../../functions/core/position.js';

const bigUnsigned = fc.oneof(
  fc.bigInt({ min: 0n, max: 1000n }),
  fc.bigInt({ min: 0n, max: 2n ** 64n }),
  fc.bigInt({ min: 0n, max: 10n ** 120n }),
);
const tuple = fc.array(bigUnsigned, { minLength: 0, maxLength: 5 });

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

describe('position encoding', () => {
  it('string order of encodings equals tuple order, for tuples of any length and integers of any size', () => {
    fc.assert(
      fc.property(tuple, tuple, (a, b) => {
        const ea = encodePosition(a);
        const eb = encodePosition(b);
        assert.equal(sign(ea < eb ? -1 : ea > eb ? 1 : 0), sign(compareTuples(a, b)));
      }),
      { numRuns: 2000 },
    );
  });

  it('orders tuples that share a prefix element by element (a proper prefix sorts first)', () => {
    fc.assert(
      fc.property(tuple, bigUnsigned, (prefix, extra) => {
        assert.ok(encodePosition(prefix) < encodePosition([...prefix, extra]));
      }),
    );
  });

  it('decodes what it encodes', () => {
    fc.assert(fc.property(tuple, (t) => assert.deepEqual(decodePosition(encodePosition(t)), t)));
  });

  it('puts 10 above 9 and 2^64 above 2^53 + 1, where text or float comparison would not', () => {
    assert.ok(encodePosition([9n]) < encodePosition([10n]));
    assert.ok(encodePosition([2n ** 53n + 1n]) < encodePosition([2n ** 64n]));
    assert.ok(encodePosition([1n, 99n]) < encodePosition([2n, 0n]));
  });

  it('sorts the empty position (no position at all) below every real position', () => {
    fc.assert(fc.property(fc.array(bigUnsigned, { minLength: 1, maxLength: 3 }), (t) => assert.ok(encodePosition([]) < encodePosition(t))));
  });

  it('rejects negative elements', () => {
    assert.throws(() => encodePosition([-1n]), /unsigned/);
  });
});

describe('source position parsers', () => {
  it('reads a PostgreSQL text LSN as (hi << 32) | lo', () => {
    assert.equal(parsePgLsn('0/1FB05C8'), 33228232n);
    assert.equal(parsePgLsn('16/B374D848'), 97500059720n);
    assert.ok(parsePgLsn('0/9') < parsePgLsn('0/10'));
  });

  it('reads a CockroachDB HLC as (wall, logical) without rounding the wall nanoseconds', () => {
    assert.deepEqual(parseHlc('1735732800123456789.0000000002'), [1735732800123456789n, 2n]);
    assert.deepEqual(parseHlc('1735732800123456789'), [1735732800123456789n, 0n]);
  });
});
