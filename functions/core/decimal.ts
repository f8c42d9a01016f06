/**
 * Decimal text, read in one linear pass and never through a regular expression: a record may carry
 * a PostgreSQL `numeric` of 100,000 digits, and a pattern such as `/0+$/` takes quadratic time on
 * a long run of digits (40,000 digits took 14 s; one record held a shard past its timeout). Every
 * function here is O(length) and allocates at most one substring of the input.
 *
 *   decimalParts('-0012.500e3')  →  { negative: true, digits: '125', exponent: 2n }   // -12.5e3
 *   significantDigits('0012.500') →  '125'
 *   canonicalDecimal('1E+2') === canonicalDecimal('100.0')   // '1e2'
 */

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * Exponents longer than this many digits are beyond every range a store holds (DynamoDB's is
 * ±130): they are reported as out of range without building a BigInt of them.
 */
const MAX_EXPONENT_DIGITS = 18;

/** The parts of a decimal: value = sign × int.frac × 10^exponent, as offsets into the text. */
interface Scanned {
  readonly negative: boolean;
  /** [start, end) of the integer digits and of the fraction digits. */
  readonly int: readonly [number, number];
  readonly frac: readonly [number, number];
  /** The exponent, or null when it has more than {@link MAX_EXPONENT_DIGITS} digits. */
  readonly exponent: bigint | null;
  /** Sign of an exponent too long to read (+1 or -1), else 0. */
  readonly hugeExponentSign: number;
}

/** A cursor over `text` up to `end` (blanks around the number already cut off). */
interface Cursor {
  readonly text: string;
  i: number;
  readonly end: number;
}

/** Skips digits; returns [start, end) of the run. */
function digitRun(c: Cursor): [number, number] {
  const start = c.i;
  while (c.i < c.end && isDigit(c.text.charCodeAt(c.i))) c.i++;
  return [start, c.i];
}

/** Consumes one `+` or `-`; true when it was `-`. */
function sign(c: Cursor): boolean {
  const s = c.text.charCodeAt(c.i);
  if (c.i < c.end && (s === 0x2d || s === 0x2b)) {
    c.i++;
    return s === 0x2d;
  }
  return false;
}

/** `e[+-]digits`, or nothing: the exponent (null when too long to read, with its sign), or undefined when malformed. */
function exponentOf(c: Cursor): { exponent: bigint | null; hugeSign: number } | undefined {
  const e = c.text.charCodeAt(c.i);
  if (c.i >= c.end || (e !== 0x65 && e !== 0x45)) return { exponent: 0n, hugeSign: 0 };
  c.i++;
  const negative = sign(c);
  const [start, stop] = digitRun(c);
  if (start === stop) return undefined;
  let first = start;
  while (first < stop - 1 && c.text.charCodeAt(first) === 0x30) first++;
  if (stop - first > MAX_EXPONENT_DIGITS) return { exponent: null, hugeSign: negative ? -1 : 1 };
  const magnitude = BigInt(c.text.slice(first, stop));
  return { exponent: negative ? -magnitude : magnitude, hugeSign: 0 };
}

/** Reads `[+-]digits[.digits][e[+-]digits]` with surrounding blanks; null when the text is not one. */
function scan(text: string): Scanned | null {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  const c: Cursor = { text, i: start, end };
  const negative = sign(c);
  const int = digitRun(c);
  let frac: [number, number] = [c.i, c.i];
  if (c.i < end && text.charCodeAt(c.i) === 0x2e) {
    c.i++;
    frac = digitRun(c);
  }
  if (int[1] === int[0] && frac[1] === frac[0]) return null;
  const exp = exponentOf(c);
  if (exp === undefined || c.i !== end) return null;
  return { negative, int, frac, exponent: exp.exponent, hugeExponentSign: exp.hugeSign };
}

/** The scanned digits without leading or trailing zeros, how many trailing zeros were dropped, and the fraction's length. */
function trimmedDigits(text: string, s: Scanned): { digits: string; dropped: number; fracLength: number } {
  const all = text.slice(s.int[0], s.int[1]) + text.slice(s.frac[0], s.frac[1]);
  const fracLength = s.frac[1] - s.frac[0];
  let a = 0;
  while (a < all.length && all.charCodeAt(a) === 0x30) a++;
  let z = all.length;
  while (z > a && all.charCodeAt(z - 1) === 0x30) z--;
  return { digits: all.slice(a, z), dropped: all.length - z, fracLength };
}

/**
 * A decimal's exact parts: value = sign × digits × 10^exponent, with no leading or trailing zeros
 * in `digits` (zero is digits "0", exponent 0). Null when the text is not a decimal number. An
 * exponent of more than 18 digits gives ±∞ as `exponent` is then meaningless: `hugeExponent` says
 * which way.
 */
export function decimalParts(text: string): { negative: boolean; digits: string; exponent: bigint; hugeExponent?: 1 | -1 } | null {
  const s = scan(text);
  if (s === null) return null;
  const { digits, dropped, fracLength } = trimmedDigits(text, s);
  if (digits === '') return { negative: false, digits: '0', exponent: 0n };
  if (s.exponent === null) return { negative: s.negative, digits, exponent: 0n, hugeExponent: s.hugeExponentSign > 0 ? 1 : -1 };
  return { negative: s.negative, digits, exponent: s.exponent - BigInt(fracLength) + BigInt(dropped) };
}

/**
 * The significant digits of a decimal text: `"0012.500"` → `"125"`, `"1.5e3"` → `"15"`. Text that
 * is not a decimal gives its digits before any exponent, without leading or trailing zeros.
 */
export function significantDigits(text: string): string {
  const parts = decimalParts(text);
  if (parts !== null) return parts.digits === '0' ? '' : parts.digits;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x65 || c === 0x45) break;
    if (isDigit(c)) out += text[i];
  }
  let a = 0;
  while (a < out.length && out.charCodeAt(a) === 0x30) a++;
  let z = out.length;
  while (z > a && out.charCodeAt(z - 1) === 0x30) z--;
  return out.slice(a, z);
}

/** One spelling per number: `1E+2`, `100` and `100.0` all give `1e2`. For comparing values exactly. */
export function canonicalDecimal(text: string): string {
  const n = decimalParts(text);
  if (n === null) throw new RangeError(`not a decimal number: ${text.length > 40 ? `${text.slice(0, 40)}…` : text}`);
  if (n.hugeExponent !== undefined) return `${n.negative ? '-' : ''}${n.digits}e${n.hugeExponent > 0 ? '+' : '-'}inf`;
  return `${n.negative && n.digits !== '0' ? '-' : ''}${n.digits}e${n.exponent}`;
}

/** The last run of decimal digits of `text` (a binlog file's numeric suffix), read from the end; null when it does not end in one (after blanks). */
export function trailingDigits(text: string): string | null {
  let end = text.length;
  while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
  let start = end;
  while (start > 0 && isDigit(text.charCodeAt(start - 1))) start--;
  return start === end ? null : text.slice(start, end);
}
