/**
 * Decimal text is read in linear time (issue 20, item 1): one record holding `1`, 100,000 zeros and
 * `1` once kept a shard busy past its timeout, because `/0+$/` is quadratic on a long digit run.
 * The properties compare the linear readers with a reference written with those very patterns (on
 * short inputs, where they are fast), over strings built from long runs of digits, zeros, blanks,
 * signs, dots and exponents; one test holds the readers to linear time on million-character runs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertLinear } from '../../../helpers/linear.js';
import fc from 'fast-check';
import { canonicalDecimal, decimalParts, significantDigits, trailingDigits } from '../../../../functions/core/decimal.js';
import { MAX_INTEGER_CHARS, toBigInt } from '../../../../functions/core/json.js';
import { binlogFileNumber } from '../../../../functions/core/position.js';

/** The former, regex-based reading: correct, and quadratic on long runs. The oracle on short inputs. */
function referenceParts(text: string): { negative: boolean; digits: string; exponent: bigint } | null {
  const m = /^([-+]?)(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$/.exec(text.trim());
  if (!m || ((m[2] ?? '') === '' && (m[3] ?? '') === '')) return null;
  const fracPart = m[3] ?? '';
  const digits = ((m[2] ?? '') + fracPart).replace(/^0+/, '');
  if (digits === '') return { negative: false, digits: '0', exponent: 0n };
  const trimmed = digits.replace(/0+$/, '');
  const exponent = BigInt(m[4] ?? '0') - BigInt(fracPart.length) + BigInt(digits.length - trimmed.length);
  return { negative: m[1] === '-', digits: trimmed, exponent };
}

/** Runs of one character, so that long zero and digit runs are common. */
const piece = fc.oneof(
  fc.constantFrom('0', '1', '9', ' ', '\t', '\n', '-', '+', '.', 'e', 'E', 'x').chain((c) => fc.integer({ min: 1, max: 40 }).map((n) => c.repeat(n))),
  fc.constantFrom('0', '1', '.', 'e', '-', ' '),
);
const decimalish = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));
const numberLike = fc
  .tuple(fc.constantFrom('', '-', '+'), fc.stringMatching(/^[0-9]{0,60}$/), fc.option(fc.stringMatching(/^[0-9]{0,60}$/)), fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '-', '+'), fc.stringMatching(/^[0-9]{1,6}$/))))
  .map(([s, i, f, e]) => `${s}${i}${f === null ? '' : `.${f}`}${e === null ? '' : e.join('')}`);

describe('decimal text in linear time', () => {
  it('reads every decimal as the regex reference does (property, long zero runs and blanks included)', () => {
    fc.assert(
      fc.property(fc.oneof(decimalish, numberLike), (text) => {
        const got = decimalParts(text);
        const ref = referenceParts(text);
        if (got?.hugeExponent === undefined) assert.deepEqual(got, ref);
        else {
          // An exponent of more than 18 digits is read as out of every range: same digits, the same side.
          assert.ok(ref !== null && got.digits === ref.digits && ref.exponent * BigInt(got.hugeExponent) > 10n ** 17n, text);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('spells one number one way: canonicalDecimal is equal exactly when the values are (property)', () => {
    fc.assert(
      fc.property(numberLike, fc.integer({ min: 0, max: 30 }), (text, zeros) => {
        if (decimalParts(text) === null) return;
        // Appending zeros to the fraction, or moving them into the exponent, keeps the value.
        const withZeros = text.includes('e') || text.includes('E') ? text : `${text}${text.includes('.') ? '' : '.'}${'0'.repeat(zeros)}`;
        assert.equal(canonicalDecimal(withZeros), canonicalDecimal(text));
      }),
    );
    assert.equal(canonicalDecimal('1E+2'), canonicalDecimal('100.0'));
    assert.notEqual(canonicalDecimal('1E+2'), canonicalDecimal('10'));
  });

  it('gives the significant digits and the trailing digit run as the patterns did', () => {
    assert.equal(significantDigits('0012.500'), '125');
    assert.equal(significantDigits('1.5e3'), '15');
    assert.equal(significantDigits('-0.000'), '');
    assert.equal(trailingDigits('mysql-bin.000003'), '000003');
    assert.equal(trailingDigits('mysql-bin.000003  '), '000003');
    assert.equal(trailingDigits('mysql-bin'), null);
    fc.assert(
      fc.property(decimalish, (text) => {
        assert.equal(trailingDigits(text), /(\d+)\s*$/.exec(text)?.[1] ?? null);
      }),
    );
  });

  it('reads a 100,000-digit exponent as out of any range, without a BigInt of it', () => {
    const parts = decimalParts(`1e${'9'.repeat(100_000)}`);
    assert.equal(parts?.hugeExponent, 1);
    assert.equal(decimalParts(`1e-${'9'.repeat(100_000)}`)?.hugeExponent, -1);
  });

  it('refuses integers longer than any source position before parsing them', () => {
    assert.equal(toBigInt('9'.repeat(MAX_INTEGER_CHARS)), BigInt('9'.repeat(MAX_INTEGER_CHARS)));
    assert.equal(toBigInt('9'.repeat(MAX_INTEGER_CHARS + 1)), undefined);
    assert.throws(() => binlogFileNumber(`mysql-bin.${'7'.repeat(200_000)}`), /numeric suffix of at most 160 digits/);
  });

  it('stays linear on million-character runs (a quadratic reader would take hours here)', { timeout: 120_000 }, () => {
    const runsOf = (n: number) => [`1${'0'.repeat(n)}1`, `${'7'.repeat(n)}x`, `${' '.repeat(n)}1${' '.repeat(n)}`, `0.${'0'.repeat(n)}`];
    assertLinear(
      (n) => {
        const runs = runsOf(n);
        return () => {
          for (const text of runs) {
            decimalParts(text);
            significantDigits(text);
            trailingDigits(text);
            toBigInt(text);
          }
        };
      },
      1_000_000,
      'decimal readers over digit and space runs',
    );
    const runs = runsOf(1_000_000);
    assert.equal(decimalParts(runs[0] as string)?.digits.length, 1_000_002);
  });
});
