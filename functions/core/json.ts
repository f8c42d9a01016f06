/**
 * Lossless JSON for change events.
 *
 * Source systems send integers beyond 2^53 (PostgreSQL LSNs, `ts_ns`, BIGINT UNSIGNED columns)
 * and decimals with more digits than a double holds. Numbers that survive a round trip through a
 * JS number become `number`; all others stay a `LosslessNumber` holding the exact decimal text.
 *
 * Parsing is the hot path of ingest, so it runs in two tiers that give identical results:
 * - fast: one scan of the text finds every number token that could lose precision (by its ordinal
 *   among the text's numbers) and counts the object members; the native `JSON.parse` builds the
 *   value; one walk in document order puts the unsafe tokens back as `LosslessNumber`s and counts
 *   the members again: fewer than the text's shows a duplicate key;
 * - exact: `lossless-json`, used whenever the fast tier cannot vouch for its result (a duplicate
 *   key, invalid JSON, an unsafe number in an object with integer-like keys, whose order V8
 *   changes). It rejects a duplicate key whose values differ, and gives the error messages.
 * Both tiers store a `__proto__` key as an own property, never as the prototype.
 */
import { isLosslessNumber, isSafeNumber, LosslessNumber, parse, stringify } from 'lossless-json';

export { isLosslessNumber, LosslessNumber };

export type JsonPrimitive = null | boolean | number | string | LosslessNumber;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

function parseNumber(text: string): number | LosslessNumber {
  return isSafeNumber(text) ? Number(text) : new LosslessNumber(text);
}

/** The exact tier: a recursive-descent parser that never rounds and rejects differing duplicate keys. */
function parseExact(text: string): JsonValue {
  return parse(text, null, parseNumber) as JsonValue;
}

/** A double holds every decimal of up to 15 significant digits exactly enough to round-trip. */
const SAFE_DIGITS = 15;
/** 2^53 - 1, the largest integer a double holds with its neighbours: compared as same-length text. */
const MAX_SAFE_TEXT = String(Number.MAX_SAFE_INTEGER);

/** What one scan of a JSON text found. */
interface Scan {
  /** Object members (`:` outside strings). */
  members: number;
  /**
   * Number tokens a double would not hold: their ordinal among all number tokens of the text and
   * their text, or null when there is none.
   */
  unsafeOrdinals: number[] | null;
  unsafeTexts: string[] | null;
}

const isNumberChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x65 || c === 0x45;

/** True when the quote at `j` is escaped: an odd run of backslashes precedes it. */
function isEscapedQuote(text: string, j: number): boolean {
  let k = j - 2;
  while (text.charCodeAt(k) === 0x5c) k--;
  return ((j - 1 - k) & 1) === 1;
}

/** The index just past the string opening at `i`, or -1 when the string is unterminated. */
function skipString(text: string, i: number): number {
  let j = text.indexOf('"', i + 1);
  while (j !== -1 && text.charCodeAt(j - 1) === 0x5c) {
    // The quote ends the string unless an odd run of backslashes escapes it.
    if (!isEscapedQuote(text, j)) break;
    j = text.indexOf('"', j + 1);
  }
  return j === -1 ? -1 : j + 1;
}

/** One maximal run of number characters: where it ends and what it holds. */
interface NumberRun {
  end: number;
  digits: number;
  /** No exponent and no sign other than a leading minus. */
  plain: boolean;
  /** No decimal point. */
  integer: boolean;
}

/** Reads the run of number characters starting at `start` into `run` (reused: no allocation per number). */
function readNumberRun(text: string, start: number, run: NumberRun): void {
  const n = text.length;
  run.digits = 0;
  run.plain = true;
  run.integer = true;
  let i = start;
  for (; i < n; i++) {
    const d = text.charCodeAt(i);
    if (d >= 0x30 && d <= 0x39) run.digits++;
    else if (!isNumberChar(d)) break;
    else if (d === 0x2e) run.integer = false;
    else if (!(d === 0x2d && i === start)) run.plain = false;
  }
  run.end = i;
}

/** The token's text when a double would not hold it, else null. */
function unsafeToken(text: string, start: number, run: NumberRun): string | null {
  // Up to 15 digits without an exponent: always safe, the common case, no slice needed.
  if (run.plain && run.digits <= SAFE_DIGITS) return null;
  const token = text.slice(start, run.end);
  if (run.plain && run.integer) {
    // An integer of 16+ digits: safe only below 2^53, which has 16 digits.
    return run.digits === 16 && token.slice(token.length - 16) <= MAX_SAFE_TEXT ? null : token;
  }
  // A malformed token needs no check here: JSON.parse rejects the text and the exact tier answers.
  return isSafeNumber(token) ? null : token;
}

function addUnsafe(found: Scan, ordinal: number, token: string): void {
  if (found.unsafeOrdinals === null || found.unsafeTexts === null) {
    found.unsafeOrdinals = [];
    found.unsafeTexts = [];
  }
  found.unsafeOrdinals.push(ordinal);
  found.unsafeTexts.push(token);
}

/**
 * One pass over the text outside strings (strings are skipped with `indexOf`). In valid JSON every
 * maximal run of number characters outside strings is one number token. Returns null for an
 * unterminated string (invalid JSON: the exact tier gives the error).
 */
function scan(text: string): Scan | null {
  const n = text.length;
  const found: Scan = { members: 0, unsafeOrdinals: null, unsafeTexts: null };
  const run: NumberRun = { end: 0, digits: 0, plain: true, integer: true };
  let numbers = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = skipString(text, i);
      if (i === -1) return null;
    } else if (c === 0x3a) {
      found.members++;
      i++;
    } else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
      const ordinal = numbers++;
      readNumberRun(text, i, run);
      const unsafe = unsafeToken(text, i, run);
      if (unsafe !== null) addUnsafe(found, ordinal, unsafe);
      i = run.end;
    } else i++;
  }
  return found;
}

/** The walk over the parsed value: members counted, numbers counted in document order. */
interface Walk {
  members: number;
  /** Ordinal of the next number value met. */
  ordinal: number;
  /** Index into `ordinals` of the next unsafe number to put back. */
  next: number;
  readonly ordinals: readonly number[] | null;
  readonly texts: readonly string[] | null;
  /**
   * Set when an object has a key starting with a digit: V8 lists integer-like keys first, so the
   * walk's order may differ from the text's and the numbers cannot be matched by ordinal.
   */
  reordered: boolean;
}

/**
 * Counts object members and puts the unsafe numbers back as LosslessNumbers. JSON.parse keeps
 * document order (arrays by index, objects by insertion) except for integer-like keys, so the n-th
 * number value met is the n-th number token of the text.
 */
function restore(value: object, w: Walk): void {
  if (Array.isArray(value)) restoreArray(value, w);
  else restoreObject(value as Record<string, unknown>, w);
}

/** Counts the number `v` when it is one, and tells whether it is the next unsafe number to put back. */
function isNextUnsafe(v: unknown, w: Walk): boolean {
  return typeof v === 'number' && w.ordinals !== null && w.ordinal++ === w.ordinals[w.next];
}

function restoreArray(value: unknown[], w: Walk): void {
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    if (typeof v === 'object') {
      if (v !== null) restore(v, w);
    } else if (isNextUnsafe(v, w)) value[i] = nextUnsafe(w);
  }
}

function restoreObject(obj: Record<string, unknown>, w: Walk): void {
  const matching = w.ordinals !== null;
  for (const k in obj) {
    w.members++;
    if (matching && startsWithDigit(k)) w.reordered = true;
    const v = obj[k];
    if (typeof v === 'object') {
      if (v !== null) restore(v, w);
      // `k` is an own key, so even `__proto__` assigns the own property here.
    } else if (isNextUnsafe(v, w)) obj[k] = nextUnsafe(w);
  }
}

function startsWithDigit(k: string): boolean {
  const first = k.charCodeAt(0);
  return first >= 0x30 && first <= 0x39;
}

function nextUnsafe(w: Walk): LosslessNumber {
  const text = w.texts?.[w.next++];
  if (text === undefined) throw new SyntaxError('unsafe number out of range'); // unreachable: one per ordinal
  return new LosslessNumber(text);
}

/**
 * Parses JSON text without ever rounding a number. Throws `SyntaxError` on bad input, and on a
 * key given twice with different values.
 */
export function parseJson(text: string): JsonValue {
  const found = scan(text);
  if (found === null) return parseExact(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseExact(text); // for its error message
  }
  if (typeof value === 'object' && value !== null) {
    const w: Walk = { members: 0, ordinal: 0, next: 0, ordinals: found.unsafeOrdinals, texts: found.unsafeTexts, reordered: false };
    restore(value, w);
    // Fewer members than the text holds: a duplicate key, which only the exact tier judges.
    if (w.members !== found.members || w.reordered) return parseExact(text);
    return value as JsonValue;
  }
  const only = found.unsafeTexts?.[0];
  return only !== undefined ? new LosslessNumber(only) : (value as JsonValue);
}

/** Serializes a value produced by {@link parseJson}; big numbers are written digit for digit. */
export function stringifyJson(value: unknown): string {
  const out = stringify(value as never);
  if (out === undefined) throw new TypeError('value is not JSON-serializable');
  return out;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value);
}

/**
 * A canonical text form: object keys sorted, numbers in their exact decimal text.
 * Two values are the same content exactly when their canonical forms are equal.
 *
 * The text is part of the stored content hash (`__hash`), so it must never change: the
 * differential fuzz test holds it byte for byte to the first implementation.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // String(n) is already canonical: integers print all their digits, others the shortest
      // round-trip form (the normalization below returns it unchanged for every double).
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
      return 'null';
    case 'bigint':
      return value.toString();
    case 'object':
      return value === null ? 'null' : canonicalObject(value);
    default:
      return String(JSON.stringify(value));
  }
}

function canonicalObject(value: object): string {
  if (value instanceof LosslessNumber || isLosslessNumber(value)) return normalizeNumberText((value as LosslessNumber).value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      const v: unknown = value[i];
      // A hole prints as nothing, as Array.prototype.join does.
      if (v !== undefined || i in value) out += canonicalJson(v);
    }
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  const layout = layoutOf(Object.keys(obj));
  const keys = layout.sorted;
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ',';
    out += layout.quoted[i] as string;
    out += canonicalJson(obj[keys[i] as string]);
  }
  return `${out}}`;
}

/** An object's keys in canonical order, each with its JSON text and colon. */
interface Layout {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  readonly quoted: readonly string[];
}

const layoutFor = (keys: readonly string[]): Layout => {
  const sorted = [...keys].sort();
  return { keys, sorted, quoted: sorted.map((k) => `${JSON.stringify(k)}:`) };
};

/**
 * Rows of one table list the same columns in the same order, so each column list's layout is
 * remembered (found by its first key, checked element by element: the strings are internalized,
 * so each comparison is a pointer compare; bounded, so odd inputs cannot grow it).
 */
const layouts = new Map<string, Layout>();
function layoutOf(keys: string[]): Layout {
  if (keys.length === 0) return layoutFor(keys);
  const first = keys[0] as string;
  const known = layouts.get(first);
  if (known !== undefined && known.keys.length === keys.length) {
    let same = true;
    for (let i = 1; i < keys.length; i++) {
      if (known.keys[i] !== keys[i]) {
        same = false;
        break;
      }
    }
    if (same) return known;
  }
  const layout = layoutFor(keys);
  if (layouts.size < 1024) layouts.set(first, layout);
  return layout;
}

const INTEGER_TEXT = /^-?\d+$/;

/** `-007` → `-7`, `-0` → `0`: an integer's digits without leading zeros, as BigInt spells it. */
function canonicalIntegerText(text: string): string {
  const negative = text.charCodeAt(0) === 0x2d;
  let i = negative ? 1 : 0;
  while (i < text.length - 1 && text.charCodeAt(i) === 0x30) i++;
  const digits = text.slice(i);
  return negative && digits !== '0' ? `-${digits}` : digits;
}

function normalizeNumberText(text: string): string {
  // 1e3, 1000 and 1000.0 are the same number; integers are compared by their digits (as
  // BigInt(text).toString() spells them, without a BigInt: that is superlinear in the digits).
  if (INTEGER_TEXT.test(text)) return canonicalIntegerText(text);
  const n = Number(text);
  return Number.isFinite(n) && isSafeNumber(text, { approx: true }) ? String(n) : text;
}

/**
 * Reads an unsigned or signed integer from a JSON number, a LosslessNumber or a decimal string,
 * without going through a float. Returns undefined when the value is not an integer.
 */
export function toBigInt(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  const text = isLosslessNumber(value) ? value.value : typeof value === 'string' ? value.trim() : undefined;
  // Longer integers are no position, timestamp or id of any source; BigInt parsing is superlinear.
  if (text === undefined || text.length > MAX_INTEGER_CHARS) return undefined;
  return INTEGER_TEXT.test(text) ? BigInt(text) : undefined;
}

/** The longest integer text `toBigInt` reads: every source's positions, times and ids fit (a Kinesis sequence has 129 digits). */
export const MAX_INTEGER_CHARS = 200;

/** Converts a LosslessNumber to a number when it is safe; used when presenting values. */
export function toPlainNumber(value: number | LosslessNumber): number | LosslessNumber {
  if (typeof value === 'number') return value;
  return isSafeNumber(value.value) ? Number(value.value) : value;
}

/**
 * A deep copy that keeps LosslessNumber instances (structuredClone would drop their prototype).
 * A `__proto__` key is copied as an own property, never as the copy's prototype.
 */
export function cloneJson<T extends JsonValue | undefined>(value: T): T {
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) return value;
  if (Array.isArray(value)) {
    const out: JsonValue[] = value.slice();
    for (let i = 0; i < out.length; i++) {
      const v = out[i];
      if (typeof v === 'object' && v !== null) out[i] = cloneJson(v);
    }
    return out as T;
  }
  // Spread defines own properties (a `__proto__` key included) without calling any setter; only
  // nested objects and arrays need a deeper copy. Assigning an own key, even `__proto__`, writes
  // the own property.
  const out: JsonObject = { ...(value as JsonObject) };
  for (const k in out) {
    const v = out[k];
    if (typeof v === 'object' && v !== null && !isLosslessNumber(v)) out[k] = cloneJson(v);
  }
  return out as T;
}
