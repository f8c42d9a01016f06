/**
 * parseJson, canonicalJson and cloneJson: the behaviour the rest of the pipeline relies on.
 * (Equivalence with the first implementations is the job of json.fuzz.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson, cloneJson, isLosslessNumber, type JsonObject, LosslessNumber, parseJson } from '../../../../functions/core/json.js';

const obj = (text: string): JsonObject => parseJson(text) as JsonObject;

describe('parseJson', () => {
  it('keeps integers beyond 2^53 and long decimals exact, and safe numbers as numbers', () => {
    const v = obj('{"ts_ns":1735732800123456789,"ts_us":1735732800123456,"lsn":9007199254740993,"d":0.1234567890123456789,"n":42,"neg":-0}');
    assert.ok(isLosslessNumber(v.ts_ns) && v.ts_ns.value === '1735732800123456789');
    assert.equal(v.ts_us, 1735732800123456);
    assert.ok(isLosslessNumber(v.lsn) && v.lsn.value === '9007199254740993');
    assert.ok(isLosslessNumber(v.d) && v.d.value === '0.1234567890123456789');
    assert.equal(v.n, 42);
    assert.ok(Object.is(v.neg, -0));
  });

  it('keeps big numbers exact in arrays, at the top level and next to look-alike strings', () => {
    assert.deepEqual(
      (parseJson('[18446744073709551616, "18446744073709551616", 1e400]') as unknown[]).map((x) => (isLosslessNumber(x) ? `L${x.value}` : x)),
      ['L18446744073709551616', '18446744073709551616', 'L1e400'],
    );
    const top = parseJson('170141183460469231731687303715884105728');
    assert.ok(isLosslessNumber(top) && top.value === '170141183460469231731687303715884105728');
  });

  it('rejects a key given twice with different values, in the fast and the exact tier', () => {
    assert.throws(() => parseJson('{"id":1,"id":2}'), /Duplicate key 'id'/);
    assert.throws(() => parseJson('{"a":{"x":1},"b":[{"k":true,"k":false}]}'), /Duplicate key 'k'/);
    assert.throws(() => parseJson('{"ts_ns":1735732800123456789,"id":1,"id":2}'), /Duplicate key 'id'/);
    // An exact repeat is accepted, as it always was.
    assert.deepEqual(parseJson('{"id":1,"id":1}'), { id: 1 });
  });

  it('stores a __proto__ key as an own property and never changes the prototype', () => {
    for (const text of ['{"__proto__":{"polluted":true},"id":1}', '{"__proto__":{"polluted":true},"ts_ns":1735732800123456789}', '{"__proto__":1,"__proto__":2}']) {
      let v: JsonObject;
      try {
        v = obj(text);
      } catch (err) {
        assert.match((err as Error).message, /Duplicate key '__proto__'/);
        continue;
      }
      assert.equal(Object.getPrototypeOf(v), Object.prototype);
      assert.ok(Object.hasOwn(v, '__proto__'));
      assert.deepEqual(Object.keys(v)[0], '__proto__');
      assert.equal((v as Record<string, unknown>).polluted, undefined);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    }
  });

  it('keeps constructor, toString and hasOwnProperty as ordinary own columns', () => {
    const v = obj('{"constructor":"c","toString":1,"hasOwnProperty":null}');
    assert.deepEqual(Object.keys(v), ['constructor', 'toString', 'hasOwnProperty']);
    assert.equal(v.constructor, 'c');
  });

  it('throws SyntaxError with a position on invalid JSON', () => {
    for (const text of ['', '{', '{"a":}', '[1,]', '{12345678901234567890:1}', '01', '"\u0001"', '{"a":1} x']) {
      assert.throws(() => parseJson(text), SyntaxError, text);
    }
  });

  it('treats a \\u0000 escape in the input as ordinary text, with or without big numbers', () => {
    const v = obj('{"s":"\\u00000","n":12345678901234567890}');
    assert.equal(v.s, '\u00000');
    assert.ok(isLosslessNumber(v.n));
  });
});

describe('canonicalJson', () => {
  it('sorts keys, writes numbers by value and big numbers digit for digit', () => {
    assert.equal(canonicalJson(parseJson('{"b":[1.50,1e3],"a":{"y":null,"x":"é"},"c":123456789012345678901234567890}')), '{"a":{"x":"é","y":null},"b":[1.5,1000],"c":123456789012345678901234567890}');
    assert.equal(canonicalJson(new LosslessNumber('-0')), '0');
    assert.equal(canonicalJson(parseJson('{"__proto__":{"a":1}}')), '{"__proto__":{"a":1}}');
  });
});

describe('cloneJson', () => {
  it('deep-copies, keeps LosslessNumbers and copies __proto__ as an own key', () => {
    const src = obj('{"__proto__":{"x":1},"n":18446744073709551616,"a":[{"b":1}]}');
    const copy = cloneJson(src);
    assert.notEqual(copy, src);
    assert.notEqual(copy.a, src.a);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.ok(Object.hasOwn(copy, '__proto__'));
    assert.ok(copy.n instanceof LosslessNumber);
    assert.equal(canonicalJson(copy), canonicalJson(src));
  });
});
