/**
 * Lossless JSON for change events.
 *
 * Source systems send integers beyond 2^53 (PostgreSQL LSNs, `ts_ns`, BIGINT UNSIGNED columns)
 * and decimals with more digits than a double holds. We parse every message with `lossless-json`:
 * numbers that survive a round trip through a JS number become `number`, all others stay a
 * `LosslessNumber` holding the exact decimal text.
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

/** Parses JSON text without ever rounding a number. Throws `SyntaxError` on bad input. */
export function parseJson(text: string): JsonValue {
  return parse(text, null, parseNumber) as JsonValue;
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
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (isLosslessNumber(value)) return normalizeNumberText(value.value);
  if (typeof value === 'number') return normalizeNumberText(String(value));
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

function normalizeNumberText(text: string): string {
  // 1e3, 1000 and 1000.0 are the same number; integers are compared by their digits.
  if (/^-?\d+$/.test(text)) return BigInt(text).toString();
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
  if (isLosslessNumber(value)) return /^-?\d+$/.test(value.value) ? BigInt(value.value) : undefined;
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  return undefined;
}

/** Converts a LosslessNumber to a number when it is safe; used when presenting values. */
export function toPlainNumber(value: number | LosslessNumber): number | LosslessNumber {
  if (typeof value === 'number') return value;
  return isSafeNumber(value.value) ? Number(value.value) : value;
}

/** A deep copy that keeps LosslessNumber instances (structuredClone would drop their prototype). */
export function cloneJson<T extends JsonValue | undefined>(value: T): T {
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) return value;
  if (Array.isArray(value)) return value.map((v) => cloneJson(v)) as T;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) out[k] = cloneJson(v);
  return out as T;
}
