/**
 * Source log positions: ordered tuples of unsigned integers, and their order-preserving text form.
 *
 * DynamoDB compares strings byte by byte in a ConditionExpression (`#pos < :pos`), so positions are
 * stored as one string whose byte order equals the tuple order:
 *
 *   element n  →  <d><L><digits of n>   where digits = n in decimal, L = number of digits (decimal),
 *                                        d = one letter giving the number of digits of L ('a' = 1, 'b' = 2, …)
 *   tuple      →  elements joined by '.'
 *
 * Examples: [5] → "a15", [33228056, 33228232] → "a833228056.a833228232", [] → "".
 * A longer number always has a larger length prefix, equal lengths compare digit by digit, and '.'
 * sorts below every letter and digit, so a tuple that is a prefix of another sorts first.
 * The empty tuple sorts below every other position: it is used for events with no position at all
 * (incremental-snapshot reads), which may only fill a key the stream has not touched.
 */
import { PositionError } from './errors.js';
import { trailingDigits } from './decimal.js';

export type OrderingStrength = 'source' | 'transport' | 'none';

export interface Position {
  /** The ordered tuple, compared element by element. */
  readonly tuple: readonly bigint[];
  /**
   * `source`: a true source log order. `transport`: a fallback to Kinesis sequence / Kafka offset
   * (weak: a connector redelivery looks newer than it is). `none`: no position at all.
   */
  readonly strength: OrderingStrength;
}

const MAX_LENGTH_DIGITS = 26; // 'a'..'z': integers of up to 10^26 - 1 decimal digits

/**
 * Digits a position element read from a message may have. The longest position of any source is a
 * Kinesis sequence number (at most 129 digits); text beyond this is refused before it becomes a
 * BigInt (whose parsing is superlinear: a million digits take about half a second).
 */
export const MAX_ELEMENT_DIGITS = 160;

export function encodeElement(n: bigint): string {
  if (n < 0n) throw new PositionError(`position element must be unsigned, got ${n}`);
  const digits = n.toString(10);
  const len = String(digits.length);
  if (len.length > MAX_LENGTH_DIGITS) throw new PositionError('position element is too large to encode');
  return String.fromCharCode(0x60 + len.length) + len + digits;
}

/** Encodes a tuple so that `encode(a) < encode(b)` (string order) exactly when `a < b` (tuple order). */
export function encodePosition(tuple: readonly bigint[]): string {
  return tuple.map(encodeElement).join('.');
}

/** Inverse of {@link encodePosition}. Throws PositionError on text it did not produce. */
export function decodePosition(text: string): bigint[] {
  if (text === '') return [];
  return text.split('.').map((part) => {
    const d = part.charCodeAt(0) - 0x60;
    if (!(d >= 1 && d <= MAX_LENGTH_DIGITS)) throw new PositionError(`bad position element "${part}"`);
    const len = Number(part.slice(1, 1 + d));
    const digits = part.slice(1 + d);
    if (!/^\d+$/.test(digits) || digits.length !== len) throw new PositionError(`bad position element "${part}"`);
    return BigInt(digits);
  });
}

/** Compares two tuples element by element; a proper prefix is smaller. */
export function compareTuples(a: readonly bigint[], b: readonly bigint[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? 0n;
    const y = b[i] ?? 0n;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length === 0 ? 0 : a.length < b.length ? -1 : 1;
}

export function comparePositions(a: Position, b: Position): number {
  return compareTuples(a.tuple, b.tuple);
}

export function sourcePosition(...tuple: bigint[]): Position {
  return { tuple, strength: 'source' };
}

export function transportPosition(...tuple: bigint[]): Position {
  return { tuple, strength: 'transport' };
}

export const NO_POSITION: Position = Object.freeze({ tuple: Object.freeze([]) as readonly bigint[], strength: 'none' });

/**
 * Parses a PostgreSQL text LSN "X/Y" (two hex halves) into its 64-bit value.
 * `0/1FB05C8` → 33228232n.
 */
export function parsePgLsn(text: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text.trim());
  if (!m) throw new PositionError(`not a PostgreSQL LSN: "${text}"`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

/**
 * Parses a CockroachDB HLC timestamp "<wall ns>.<logical>" into (wall, logical).
 * `"1735732800123456789.0000000002"` → [1735732800123456789n, 2n].
 */
export function parseHlc(text: string): [bigint, bigint] {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  const wall = m?.[1];
  if (wall === undefined) throw new PositionError(`not an HLC timestamp: "${text}"`);
  return [BigInt(wall), BigInt(m?.[2] ?? '0')];
}

/** The numeric suffix of a binlog file name: "mysql-bin.000003" → 3n. */
export function binlogFileNumber(file: string): bigint {
  const digits = trailingDigits(file);
  if (digits === null || digits.length > MAX_ELEMENT_DIGITS) throw new PositionError(`binlog file name has no numeric suffix of at most ${MAX_ELEMENT_DIGITS} digits: "${file.slice(0, 80)}"`);
  return BigInt(digits);
}
