/**
 * Lossless JSON for change events.
 *
 * Source systems send integers beyond 2^53 (PostgreSQL LSNs, `ts_ns`, BIGINT UNSIGNED columns)
 * and decimals with more digits than a double holds. Numbers that survive a round trip through a
 * JS number become `number`; all others stay a `LosslessNumber` holding the exact decimal text.
 *
 * Parsing is the hot path of ingest, so it runs in two tiers that give identical results:
 * - fast: one scan of the text finds every number token that could lose precision and counts the
 *   object members; the native `JSON.parse` builds the value; the unsafe tokens (replaced by
 *   placeholder strings before parsing) are put back as `LosslessNumber`s; a member count lower
 *   than the text's shows a duplicate key;
 * - exact: `lossless-json`, used whenever the fast tier cannot vouch for its result (a duplicate
 *   key, invalid JSON, a placeholder that could collide with the input). It rejects a duplicate
 *   key whose values differ, and gives the error messages.
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

const NUMBER_GRAMMAR = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/** A double holds every decimal of up to 15 significant digits exactly enough to round-trip. */
const SAFE_DIGITS = 15;

/** What one scan of a JSON text found. */
interface Scan {
  /** Object members (`:` outside strings). */
  members: number;
  /** Start and end offsets of number tokens that a double would not hold, in text order. */
  unsafe: number[] | null;
}

const isNumberChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x65 || c === 0x45;

/**
 * One pass over the text outside strings (strings are skipped with `indexOf`). Returns null when
 * only the exact tier can answer: an unterminated string, or an unsafe token that is not a JSON
 * number or stands where a key belongs (replacing it by a string must never turn invalid JSON valid).
 */
function scan(text: string): Scan | null {
  const n = text.length;
  let members = 0;
  let unsafe: number[] | null = null;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = text.indexOf('"', i + 1);
      while (j !== -1 && text.charCodeAt(j - 1) === 0x5c) {
        // The quote ends the string unless an odd run of backslashes escapes it.
        let k = j - 2;
        while (text.charCodeAt(k) === 0x5c) k--;
        if (((j - 1 - k) & 1) === 0) break;
        j = text.indexOf('"', j + 1);
      }
      if (j === -1) return null;
      i = j + 1;
    } else if (c === 0x3a) {
      members++;
      i++;
    } else if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
      const start = i;
      let digits = 0;
      let plain = true;
      for (; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d >= 0x30 && d <= 0x39) digits++;
        else if (!isNumberChar(d)) break;
        else if (d !== 0x2e && !(d === 0x2d && i === start)) plain = false;
      }
      // Up to 15 digits without an exponent: always safe, the common case, no slice needed.
      if (plain && digits <= SAFE_DIGITS) continue;
      const token = text.slice(start, i);
      if (isSafeNumber(token)) continue;
      if (!NUMBER_GRAMMAR.test(token)) return null;
      let k = i;
      while (k < n && isJsonSpace(text.charCodeAt(k))) k++;
      if (text.charCodeAt(k) === 0x3a) return null;
      if (unsafe === null) unsafe = [];
      unsafe.push(start, i);
    } else i++;
  }
  return { members, unsafe };
}

const isJsonSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * Puts the unsafe numbers back (`"\u0000<index>"` placeholders) and counts object members.
 * `numbers` is null when the text had no unsafe number.
 */
function restore(value: unknown, numbers: readonly string[] | null): number {
  let members = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'object' && v !== null) members += restore(v, numbers);
      else if (numbers !== null && typeof v === 'string' && v.charCodeAt(0) === 0) value[i] = placeholderNumber(v, numbers);
    }
    return members;
  }
  const obj = value as Record<string, unknown>;
  for (const k in obj) {
    members++;
    const v = obj[k];
    if (typeof v === 'object' && v !== null) members += restore(v, numbers);
    // `k` is an own key, so even `__proto__` assigns the own property here.
    else if (numbers !== null && typeof v === 'string' && v.charCodeAt(0) === 0) obj[k] = placeholderNumber(v, numbers);
  }
  return members;
}

function placeholderNumber(placeholder: string, numbers: readonly string[]): LosslessNumber {
  const text = numbers[Number(placeholder.slice(1))];
  if (text === undefined) throw new SyntaxError('number placeholder out of range'); // unreachable: placeholders are ours
  return new LosslessNumber(text);
}

/**
 * Parses JSON text without ever rounding a number. Throws `SyntaxError` on bad input, and on a
 * key given twice with different values.
 */
export function parseJson(text: string): JsonValue {
  const found = scan(text);
  if (found === null) return parseExact(text);
  let source = text;
  let numbers: string[] | null = null;
  if (found.unsafe !== null) {
    // A `\u0000` escape in the input could spell a placeholder: leave such texts to the exact tier.
    if (text.includes('\\u0000')) return parseExact(text);
    numbers = [];
    const unsafe = found.unsafe;
    let rewritten = '';
    let from = 0;
    for (let u = 0; u < unsafe.length; u += 2) {
      const start = unsafe[u] as number;
      const end = unsafe[u + 1] as number;
      rewritten += `${text.slice(from, start)}"\\u0000${numbers.length}"`;
      numbers.push(text.slice(start, end));
      from = end;
    }
    source = rewritten + text.slice(from);
  }
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch {
    return parseExact(text); // for its error message
  }
  if (typeof value === 'object' && value !== null) {
    if (restore(value, numbers) !== found.members) return parseExact(text); // a duplicate key
    return value as JsonValue;
  }
  if (numbers !== null && typeof value === 'string' && value.charCodeAt(0) === 0) return placeholderNumber(value, numbers);
  return value as JsonValue;
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
  const keys = Object.keys(obj).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (i > 0) out += ',';
    out += `${JSON.stringify(k)}:${canonicalJson(obj[k])}`;
  }
  return `${out}}`;
}

const INTEGER_TEXT = /^-?\d+$/;

function normalizeNumberText(text: string): string {
  // 1e3, 1000 and 1000.0 are the same number; integers are compared by their digits.
  if (INTEGER_TEXT.test(text)) return BigInt(text).toString();
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
  if (isLosslessNumber(value)) return INTEGER_TEXT.test(value.value) ? BigInt(value.value) : undefined;
  if (typeof value === 'string' && INTEGER_TEXT.test(value.trim())) return BigInt(value.trim());
  return undefined;
}

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
    const out: JsonValue[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i] as JsonValue);
    return out as T;
  }
  const out: JsonObject = {};
  for (const k of Object.keys(value)) {
    const v = cloneJson((value as JsonObject)[k]);
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
    else out[k] = v as JsonValue;
  }
  return out as T;
}
