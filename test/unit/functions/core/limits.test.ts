/**
 * The validation rules of functions/core/limits.ts (docs/limits.md): position ranges per format,
 * commit time, and DynamoDB's number, key, name and nesting limits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../functions/core/errors.js';
import { FORMATS } from '../../../../functions/core/formats/index.js';
import { LosslessNumber, parseJson, type JsonObject, type JsonValue } from '../../../../functions/core/json.js';
import { canonicalDecimal, checkChange, checkCommitTs, checkPosition, checkValue, DYNAMO, hasLoneSurrogate, MAX_COMMIT_TS, numberProblem, POSITION_RANGES } from '../../../../functions/core/limits.js';
import { sourcePosition, transportPosition } from '../../../../functions/core/position.js';
import { change } from '../../../helpers/events.js';

const PLACEHOLDER = '__debezium_unavailable_value';
const table = { key: ['id'], keyTypes: { id: 'number' as const } };
const stringTable = { key: ['sku'], keyTypes: {} };

function reason(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    assert.ok(err instanceof DecodeError, `expected a DecodeError, got ${err}`);
    return err.reason;
  }
}

const nest = (levels: number, leaf: JsonValue = 1): JsonValue => {
  let v: JsonValue = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
};

describe('numbers against DynamoDB limits', () => {
  for (const [text, expected] of [
    ['0', null],
    ['-0.000e999999', null],
    ['1e125', null],
    ['9.9999999999999999999999999999999999999e125', null],
    ['1e126', 'too large'],
    ['1E+200', 'too large'],
    ['1e400', 'too large'],
    ['1e-130', null],
    ['1e-131', 'too small'],
    ['1e-400', 'too small'],
    ['5e-324', 'too small'],
    ['12345678901234567890123456789012345678', null],
    ['123456789012345678901234567890123456789', 'significant digits'],
    ['1234567890123456789012345678901234567800000', null],
    ['0.00000000000000000000000000000000000000001', null],
    ['1.00000000000000000000000000000000000000000000001', 'significant digits'],
    [`1${'0'.repeat(400)}`, 'too large'],
    ['1e99999999999999999999999', 'too large'],
  ] as const) {
    it(`${text.length > 40 ? `${text.slice(0, 30)}…(${text.length} chars)` : text} → ${expected ?? 'accepted'}`, () => {
      const p = numberProblem(text);
      if (expected === null) assert.equal(p, null);
      else assert.match(p ?? '', new RegExp(expected));
    });
  }

  it('agrees with the float value for every double in range (property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        const abs = Math.abs(d);
        const inRange = abs === 0 || (abs >= 1e-130 && abs < 1e126);
        assert.equal(numberProblem(String(d)) === null, inRange, String(d));
      }),
    );
  });

  it('checks a JS number exactly as its decimal text (fast path agrees, property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        assert.equal(reason(() => checkValue('c', d)) === null, numberProblem(String(d)) === null, String(d));
      }),
      { numRuns: 5000 },
    );
    for (const d of [1e-130, 1e-129, 9.999999999999999e125, 1e125, 1e126, -1e-131]) {
      assert.equal(reason(() => checkValue('c', d)) === null, numberProblem(String(d)) === null, String(d));
    }
  });

  it('rejects numbers inside nested values with number-range / number-precision', () => {
    assert.equal(reason(() => checkValue('c', { a: [new LosslessNumber('1e400')] })), 'number-range');
    assert.equal(reason(() => checkValue('c', [new LosslessNumber('1234567890123456789012345678901234567890')])), 'number-precision');
    assert.equal(reason(() => checkValue('c', parseJson('{"x":1e-400}'))), 'number-range');
  });
});

describe('nesting, names and strings', () => {
  it('accepts 31 levels of maps and lists around a scalar and rejects 32 (DynamoDB counts the attribute as level 1)', () => {
    assert.equal(reason(() => checkValue('c', nest(DYNAMO.nestingLevels - 1))), null);
    assert.equal(reason(() => checkValue('c', nest(DYNAMO.nestingLevels))), 'too-deep');
  });

  it('walks 2,000 and 100,000 levels without overflowing the stack', () => {
    assert.equal(reason(() => checkValue('c', nest(2000))), 'too-deep');
    assert.equal(reason(() => checkValue('c', nest(100_000))), 'too-deep');
  });

  it('rejects empty, oversize and unpaired-surrogate names, and __proto__ map keys', () => {
    const row = (name: string): JsonObject => ({ id: 1, [name]: 1 });
    const ev = (after: JsonObject) => change({ op: 'c', format: 'generic', after, key: {} });
    assert.equal(reason(() => checkChange(ev(row('')), table, PLACEHOLDER)), 'bad-column-name');
    assert.equal(reason(() => checkChange(ev(row('x'.repeat(65_536))), table, PLACEHOLDER)), 'bad-column-name');
    assert.equal(reason(() => checkChange(ev(row('x'.repeat(65_535))), table, PLACEHOLDER)), null);
    assert.equal(reason(() => checkChange(ev(row('a\uD800')), table, PLACEHOLDER)), 'bad-column-name');
    assert.equal(reason(() => checkValue('c', parseJson('{"__proto__": {"id": 5}}'))), 'reserved-column');
    assert.equal(reason(() => checkValue('c', { '': 1 })), 'bad-column-name');
  });

  it('rejects a row whose __proto__ key replaced its prototype (a decoder copied it with obj[k] = v)', () => {
    const after: JsonObject = { id: 1 };
    Object.setPrototypeOf(after, { id: 5 });
    assert.equal(reason(() => checkChange(change({ op: 'c', format: 'generic', after, key: {} }), table, PLACEHOLDER)), 'reserved-column');
  });

  it('finds unpaired surrogates but not pairs', () => {
    assert.equal(hasLoneSurrogate('a\uD83D\uDE00b'), false);
    assert.equal(hasLoneSurrogate('a\uD83Db'), true);
    assert.equal(hasLoneSurrogate('\uDE00'), true);
    assert.equal(reason(() => checkValue('c', 'x\uDC80')), 'invalid-string');
  });
});

describe('keys', () => {
  const ev = (after: JsonObject, key: JsonObject = {}) => change({ op: 'c', format: 'generic', after, key });

  it('rejects a string partition key over 2,048 bytes and a sort key over 1,024, counting UTF-8 bytes', () => {
    assert.equal(reason(() => checkChange(ev({ sku: 'é'.repeat(1024) }), stringTable, PLACEHOLDER)), null);
    assert.equal(reason(() => checkChange(ev({ sku: `${'é'.repeat(1024)}x` }), stringTable, PLACEHOLDER)), 'key-too-large');
    const two = { key: ['a', 'b'], keyTypes: {} };
    assert.equal(reason(() => checkChange(ev({ a: 'x', b: 'y'.repeat(1024) }), two, PLACEHOLDER)), null);
    assert.equal(reason(() => checkChange(ev({ a: 'x', b: 'y'.repeat(1025) }), two, PLACEHOLDER)), 'key-too-large');
    const three = { key: ['a', 'b', 'c'], keyTypes: {} };
    assert.equal(reason(() => checkChange(ev({ a: 'x'.repeat(1000), b: 'y'.repeat(1000), c: 'z'.repeat(100) }), three, PLACEHOLDER)), 'key-too-large');
  });

  it('rejects a number key DynamoDB cannot hold: by its value rule in a row, as bad-key when only the message key has it', () => {
    assert.equal(reason(() => checkChange(ev({ id: new LosslessNumber('1e400') }), table, PLACEHOLDER)), 'number-range');
    assert.equal(reason(() => checkChange(ev({ id: new LosslessNumber('123456789012345678901234567890123456789') }), table, PLACEHOLDER)), 'number-precision');
    assert.equal(reason(() => checkChange(ev({ name: 'x' }, { id: new LosslessNumber('1e400') }), table, PLACEHOLDER)), 'bad-key');
  });

  it('spells every decimal one way', () => {
    assert.equal(canonicalDecimal('1E+2'), canonicalDecimal('100.0'));
    assert.equal(canonicalDecimal('-0.00'), '0e0');
    assert.equal(canonicalDecimal('9.9E+125'), canonicalDecimal(`99${'0'.repeat(124)}`));
  });

  it('rejects the placeholder in a string or number key column as placeholder-key', () => {
    assert.equal(reason(() => checkChange(ev({ sku: PLACEHOLDER }), stringTable, PLACEHOLDER)), 'placeholder-key');
    assert.equal(reason(() => checkChange(ev({ id: PLACEHOLDER }), table, PLACEHOLDER)), 'placeholder-key');
    assert.equal(reason(() => checkChange(ev({ sku: 'A' }, { sku: PLACEHOLDER }), stringTable, PLACEHOLDER)), 'placeholder-key');
  });

  it('reads key columns as own properties: a missing `constructor` column is missing-key, a present one is a key', () => {
    const ctor = { key: ['constructor'], keyTypes: {} };
    assert.equal(reason(() => checkChange(ev({ name: 'x' }), ctor, PLACEHOLDER)), 'missing-key');
    assert.equal(reason(() => checkChange(ev({ constructor: 'k1' }), ctor, PLACEHOLDER)), null);
    const ts = { key: ['toString', 'hasOwnProperty'], keyTypes: { toString: 'number' as const } };
    assert.equal(reason(() => checkChange(ev({ toString: 1 }), ts, PLACEHOLDER)), 'missing-key');
    assert.equal(reason(() => checkChange(ev({ toString: 1, hasOwnProperty: 'h' }), ts, PLACEHOLDER)), null);
  });
});

describe('positions per format', () => {
  it('has a row for every format a decoder emits', () => {
    const emitted = ['debezium-postgresql', 'debezium-mysql', 'debezium-sqlserver', 'debezium-oracle', 'debezium-flattened', 'debezium-mongodb', 'generic', 'cockroachdb', 'maxwell', 'canal', 'dms'];
    for (const f of emitted) assert.ok(POSITION_RANGES[f], f);
    const decoders = FORMATS.map((d) => d.name).filter((n) => n !== 'debezium');
    for (const d of decoders) assert.ok(POSITION_RANGES[d], `decoder ${d} has no position row`);
  });

  const U64 = (1n << 64n) - 1n;
  for (const [format, pos, expected] of [
    ['debezium-postgresql', sourcePosition(U64, U64), null],
    ['debezium-postgresql', sourcePosition(1n, U64 + 6n), 'bad-position'],
    ['debezium-postgresql', { tuple: [0n, U64 + 1n], strength: 'transport' }, 'bad-position'],
    ['debezium-postgresql', sourcePosition(1n, 2n, 3n), 'bad-position'],
    ['debezium-mysql', sourcePosition(3n, 154n, 0n), null],
    ['debezium-mysql', sourcePosition(1n << 31n, 154n, 0n), 'bad-position'],
    ['debezium-mysql', sourcePosition(3n, 1n << 32n, 0n), 'bad-position'],
    ['debezium-sqlserver', sourcePosition((1n << 80n) - 1n, 0n, 1n), null],
    ['debezium-sqlserver', sourcePosition(1n << 80n, 0n, 1n), 'bad-position'],
    ['debezium-oracle', sourcePosition(U64 + 1n, 1n, 0n), 'bad-position'],
    ['cockroachdb', sourcePosition(1_701_102_311_425_045_163n, 0n), null],
    ['cockroachdb', sourcePosition(5n, 0n), 'bad-position'],
    ['cockroachdb', sourcePosition(5_000_000_000_000_000_000n, 0n), 'bad-position'],
    ['cockroachdb', sourcePosition(1_701_102_311_425_045_163n, 1n << 31n), 'bad-position'],
    ['maxwell', sourcePosition(6n, 800_911n, 0n), null],
    ['maxwell', sourcePosition(6n, 1n << 40n, 0n), 'bad-position'],
    ['generic', sourcePosition(U64 + 1n), 'bad-position'],
    ['canal', transportPosition(49_600_000_000_000_000_000_000_000_000_000_000_000_000_000_000n, 3n), null],
    ['canal', transportPosition(10n ** 129n, 0n), 'bad-position'],
    ['dms', sourcePosition(1n), 'bad-position'],
    ['debezium-mysql', { tuple: [], strength: 'none' }, null],
    ['debezium-mysql', { tuple: [1n], strength: 'none' }, 'bad-position'],
  ] as const) {
    it(`${format} ${pos.strength} [${pos.tuple.map((n) => (String(n).length > 12 ? `${String(n).length} digits` : n)).join(', ')}] → ${expected ?? 'accepted'}`, () => {
      assert.equal(reason(() => checkPosition(format, pos)), expected);
    });
  }
});

describe('commit time', () => {
  it('accepts null and whole epoch ms up to year 9999, rejects the rest as bad-timestamp', () => {
    assert.equal(reason(() => checkCommitTs(null)), null);
    assert.equal(reason(() => checkCommitTs(1_735_732_800_000)), null);
    assert.equal(reason(() => checkCommitTs(MAX_COMMIT_TS)), null);
    for (const bad of [Number.POSITIVE_INFINITY, Number.NaN, -1, MAX_COMMIT_TS + 1, 1e20, 1.5]) assert.equal(reason(() => checkCommitTs(bad)), 'bad-timestamp', String(bad));
  });
});
