/**
 * MongoDB Extended JSON → plain JSON values, for every dialect Debezium writes
 * (`json.serialization.mode`): legacy / strict (v1), canonical (v2) and relaxed (v2).
 *
 * The same BSON value gives the same plain value whatever the dialect, so `_id`s and documents
 * compare by value:
 *
 * | BSON type            | Extended JSON forms                                                  | plain value                         |
 * |----------------------|----------------------------------------------------------------------|-------------------------------------|
 * | ObjectId             | `{"$oid": "<24 hex>"}`                                               | the 24-hex string (lower case)      |
 * | Int32 / Int64        | `{"$numberInt": "7"}`, `{"$numberLong": "7"}`, bare `7`              | exact integer (`LosslessNumber` beyond 2^53) |
 * | Double               | `{"$numberDouble": "1.5"}`, bare `1.5`                               | number; `"NaN"`, `"Infinity"`, `"-Infinity"` stay strings |
 * | Decimal128           | `{"$numberDecimal": "12.50"}`                                        | the decimal string, digit for digit |
 * | Date                 | `{"$date": <ms>}`, `{"$date": {"$numberLong": "<ms>"}}`, `{"$date": "<ISO>"}` | ISO-8601 UTC string with ms (`2025-01-01T12:00:00.000Z`); epoch ms when outside the JS date range |
 * | Binary               | `{"$binary": "<b64>", "$type": "00"}`, `{"$binary": {"base64", "subType"}}` | base64 string; subtype 3/4 (UUID) → `xxxxxxxx-xxxx-…` |
 * | UUID (shell / v2)    | `{"$uuid": "…"}`                                                     | lower-case UUID string              |
 * | Timestamp            | `{"$timestamp": {"t", "i"}}`                                         | `{t, i}` numbers                    |
 * | Regular expression   | `{"$regex", "$options"}`, `{"$regularExpression": {"pattern", "options"}}` | `/pattern/options`            |
 * | Symbol, Code         | `{"$symbol"}`, `{"$code"}`, `{"$code", "$scope"}`                     | the string; `{code, scope}` with a scope |
 * | MinKey, MaxKey       | `{"$minKey": 1}`, `{"$maxKey": 1}`                                   | `"MinKey"`, `"MaxKey"`              |
 * | Undefined            | `{"$undefined": true}`                                               | null                                |
 * | DBPointer            | `{"$dbPointer": {"$ref", "$id"}}`                                    | `{$ref, $id}` with `$id` converted  |
 *
 * A wrapper is recognized only when the object's keys are exactly those of the form; any other
 * object is a sub-document and is converted member by member.
 */
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, LosslessNumber, parseJson } from '../json.js';
import { errorMessage } from '../errors.js';
import { decodeError, describe, put } from './kit.js';

const MAX_DATE_MS = 8_640_000_000_000_000n;

function exactInteger(text: string, form: string): number | LosslessNumber {
  const t = text.trim();
  if (!/^-?\d+$/.test(t)) throw decodeError('bad-value', `${form} must hold a decimal integer string, got "${text}"`);
  const n = BigInt(t);
  const safe = n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= BigInt(Number.MIN_SAFE_INTEGER);
  return safe ? Number(n) : new LosslessNumber(n.toString());
}

function integerOf(value: JsonValue, form: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (isLosslessNumber(value) && /^-?\d+$/.test(value.value)) return BigInt(value.value);
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  if (isJsonObject(value) && keysAre(value, ['$numberLong']) && typeof value.$numberLong === 'string') {
    return BigInt(exactInteger(value.$numberLong, '$numberLong').toString());
  }
  throw decodeError('bad-value', `${form} must be an integer, got ${describe(value)}`);
}

function dateValue(value: JsonValue): JsonValue {
  let ms: bigint;
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    if (Number.isNaN(parsed)) throw decodeError('bad-value', `$date string must be ISO-8601, got "${value}"`);
    ms = BigInt(parsed);
  } else {
    ms = integerOf(value, '$date');
  }
  if (ms > MAX_DATE_MS || ms < -MAX_DATE_MS) return exactInteger(ms.toString(), '$date');
  return new Date(Number(ms)).toISOString();
}

function doubleValue(text: JsonValue): JsonValue {
  if (typeof text !== 'string') throw decodeError('bad-value', `$numberDouble must hold a string, got ${describe(text)}`);
  if (text === 'NaN' || text === 'Infinity' || text === '-Infinity') return text;
  const n = Number(text);
  if (text.trim() === '' || Number.isNaN(n)) throw decodeError('bad-value', `$numberDouble must hold a number string, got "${text}"`);
  return n;
}

function uuidText(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function binaryValue(base64: JsonValue, subType: JsonValue): JsonValue {
  if (typeof base64 !== 'string') throw decodeError('bad-value', `$binary must hold a base64 string, got ${describe(base64)}`);
  const sub = typeof subType === 'string' ? Number.parseInt(subType, 16) : typeof subType === 'number' ? subType : Number.NaN;
  if (sub === 3 || sub === 4) {
    const hex = Buffer.from(base64, 'base64').toString('hex');
    if (hex.length === 32) return uuidText(hex);
  }
  return base64;
}

function keysAre(obj: JsonObject, expected: readonly string[]): boolean {
  const keys = Object.keys(obj);
  return keys.length === expected.length && expected.every((k) => Object.hasOwn(obj, k));
}

/** A wrapper member; own members of parsed JSON are never undefined, `null` keeps the type honest. */
function member(obj: JsonObject, key: string): JsonValue {
  return obj[key] ?? null;
}

function stringOr(value: JsonValue, convert: (text: string) => JsonValue): JsonValue | undefined {
  return typeof value === 'string' ? convert(value) : undefined;
}

function objectOr(value: JsonValue, convert: (inner: JsonObject) => JsonValue): JsonValue | undefined {
  return isJsonObject(value) ? convert(value) : undefined;
}

type WrapperConverter = (obj: JsonObject) => JsonValue | undefined;

/**
 * One converter per wrapper, keyed by its sorted member names: a wrapper is recognized only when
 * its members are exactly these. A converter returns undefined when the members hold the wrong
 * types, and the object is then an ordinary document.
 */
const WRAPPERS: ReadonlyMap<string, WrapperConverter> = new Map<string, WrapperConverter>([
  ['$oid', (o) => stringOr(member(o, '$oid'), (t) => t.toLowerCase())],
  ['$numberLong', (o) => stringOr(member(o, '$numberLong'), (t) => exactInteger(t, '$numberLong'))],
  ['$numberInt', (o) => stringOr(member(o, '$numberInt'), (t) => exactInteger(t, '$numberInt'))],
  ['$numberDouble', (o) => doubleValue(member(o, '$numberDouble'))],
  ['$numberDecimal', (o) => stringOr(member(o, '$numberDecimal'), (t) => t)],
  ['$date', (o) => dateValue(member(o, '$date'))],
  ['$binary,$type', (o) => binaryValue(member(o, '$binary'), member(o, '$type'))],
  ['$binary', (o) => objectOr(member(o, '$binary'), (b) => binaryValue(b.base64 ?? null, b.subType ?? null))],
  ['$uuid', (o) => stringOr(member(o, '$uuid'), (t) => uuidText(t.replace(/-/g, '').toLowerCase()))],
  ['$timestamp', (o) => objectOr(member(o, '$timestamp'), (ts) => ({ t: toPlain(ts.t ?? null), i: toPlain(ts.i ?? null) }))],
  ['$options,$regex', (o) => stringOr(member(o, '$regex'), (re) => `/${re}/${String(o.$options)}`)],
  ['$regularExpression', (o) => objectOr(member(o, '$regularExpression'), (re) => `/${String(re.pattern)}/${String(re.options ?? '')}`)],
  ['$symbol', (o) => stringOr(member(o, '$symbol'), (t) => t)],
  ['$code', (o) => stringOr(member(o, '$code'), (t) => t)],
  ['$code,$scope', (o) => ({ code: toPlain(member(o, '$code')), scope: toPlain(member(o, '$scope')) })],
  ['$minKey', () => 'MinKey'],
  ['$maxKey', () => 'MaxKey'],
  ['$undefined', () => null],
  ['$dbPointer', (o) => objectOr(member(o, '$dbPointer'), (p) => toPlain(p))],
]);

/** Converts a single-wrapper object, or returns undefined when `obj` is an ordinary document. */
function convertWrapper(obj: JsonObject): JsonValue | undefined {
  const keys = Object.keys(obj);
  if (!keys[0]?.startsWith('$')) return undefined;
  const convert = WRAPPERS.get([...keys].sort().join(','));
  return convert === undefined ? undefined : convert(obj);
}

/**
 * Converts a parsed Extended JSON value (any dialect) to plain JSON values. Integers stay exact.
 * Throws DecodeError `bad-value` for a recognized wrapper holding an unusable value.
 */
export function toPlain(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) {
    // Bare relaxed-mode numbers: an integral LosslessNumber is already exact.
    return value;
  }
  if (Array.isArray(value)) return value.map(toPlain);
  const wrapped = convertWrapper(value);
  if (wrapped !== undefined) return wrapped;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) put(out, k, toPlain(v));
  return out;
}

/**
 * Parses Extended JSON text (as Debezium writes documents, keys and `updatedFields`) into plain
 * values. `what` names the field in error messages. Throws DecodeError `invalid-json`.
 */
export function parseExtJson(text: string, what: string): JsonValue {
  let parsed: JsonValue;
  try {
    parsed = parseJson(text);
  } catch (err) {
    throw decodeError('invalid-json', `${what} must be Extended JSON text: ${errorMessage(err)}`, { cause: err });
  }
  return toPlain(parsed);
}

/** Parses an Extended JSON document string; throws DecodeError `bad-field` if it is not an object. */
export function parseExtJsonDocument(text: string, what: string): JsonObject {
  const doc = parseExtJson(text, what);
  if (!isJsonObject(doc)) throw decodeError('bad-field', `${what} must be an Extended JSON document (object), got ${describe(doc)}`);
  return doc;
}
