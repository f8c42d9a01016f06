/**
 * Debezium / Kafka Connect logical types, decoded from the JsonConverter schema that travels with a
 * message (`schemas.enable=true`). Without a schema none of this runs and values stay as delivered.
 *
 * Output forms (all exact, no float anywhere):
 * - decimals (`Decimal`, `VariableScaleDecimal`) → numbers, exactly from their decimal text
 *   (`"12.50"` → 12.5; a LosslessNumber when a double cannot hold it), as every other source's
 *   decimals land (docs/formats.md, "Decimals"). A `Decimal` field is base64 of the unscaled
 *   bytes; text that is not base64 but spells a decimal exactly (`"12.50"`) is read as that
 *   decimal, anything else is `bad-field`;
 * - timestamps → ISO-8601 UTC with the unit's full precision: ms → 3 fraction digits,
 *   µs → 6, ns → 9 (`2025-01-01T12:00:00.123456Z`), so one column always has one text shape;
 * - dates → `YYYY-MM-DD`; times → `HH:MM:SS.` plus the unit's fraction digits (`12:34:56.789000` for µs).
 * A date or time outside what `Date` can represent is kept as delivered.
 */
import { isJsonObject, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import { decimalNumber, decodeError, isDecimalText, lookup, put } from './kit.js';

const DECIMAL = 'org.apache.kafka.connect.data.Decimal';
const VARIABLE_SCALE_DECIMAL = 'io.debezium.data.VariableScaleDecimal';

/** Fraction digits per unit, and how many units make one second. */
const UNITS = {
  ms: { digits: 3, perSecond: 1_000n },
  us: { digits: 6, perSecond: 1_000_000n },
  ns: { digits: 9, perSecond: 1_000_000_000n },
} as const;
type Unit = keyof typeof UNITS;

const TIMESTAMPS: Readonly<Record<string, Unit>> = {
  'io.debezium.time.Timestamp': 'ms',
  'io.debezium.time.MicroTimestamp': 'us',
  'io.debezium.time.NanoTimestamp': 'ns',
  'org.apache.kafka.connect.data.Timestamp': 'ms',
};
const TIMES: Readonly<Record<string, Unit>> = {
  'io.debezium.time.Time': 'ms',
  'io.debezium.time.MicroTime': 'us',
  'io.debezium.time.NanoTime': 'ns',
  'org.apache.kafka.connect.data.Time': 'ms',
};
const DATES = new Set(['io.debezium.time.Date', 'org.apache.kafka.connect.data.Date']);

/** Floor division for BigInt (BigInt `/` truncates toward zero). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

/**
 * Reads big-endian two's-complement bytes as a signed integer.
 * `bytesToBigInt(Buffer.from([0xfe, 0x0c]))` → -500n.
 */
export function bytesToBigInt(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  const unsigned = BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
  return ((bytes[0] ?? 0) & 0x80) === 0 ? unsigned : unsigned - (1n << BigInt(bytes.length * 8));
}

/** Writes an unscaled integer with `scale` fraction digits: (1250n, 2) → "12.50", (-5n, 3) → "-0.005". */
export function formatScaled(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString();
  const sign = negative ? '-' : '';
  if (scale <= 0) return sign + digits + (unscaled === 0n ? '' : '0'.repeat(-scale));
  const padded = digits.padStart(scale + 1, '0');
  return `${sign}${padded.slice(0, -scale)}.${padded.slice(-scale)}`;
}

/**
 * Decodes a Kafka Connect `Decimal` (base64 of the unscaled two's-complement bytes) to exact text.
 * `decodeDecimal("BOI=", 2)` → "12.50"; `decodeDecimal("/gw=", 2)` → "-5.00".
 */
export function decodeDecimal(base64: string, scale: number): string {
  return formatScaled(bytesToBigInt(Buffer.from(base64, 'base64')), scale);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** True for canonical base64 (padded, standard alphabet), the form Debezium writes bytes in. */
export function isBase64(text: string): boolean {
  return BASE64.test(text);
}

/**
 * The number a `Decimal` field's text stands for: base64 of the unscaled bytes (what Debezium
 * writes), else text that spells a decimal exactly (`"12.50"`, from `decimal.handling.mode=string`
 * behind a stale schema or a hand-written producer), which is never base64-decoded into garbage.
 * A `.` never occurs in base64, so `"12.50"` is always the decimal; digit-only text of a length
 * that is a multiple of 4 (`"1250"`) is valid base64 and read as such. Anything else: `bad-field`.
 */
export function decimalFieldValue(text: string, scale: number, column: string): JsonValue {
  if (isDecimalText(text) && (text.includes('.') || !isBase64(text))) return decimalNumber(text);
  if (!isBase64(text)) throw decodeError('bad-field', `Decimal column "${column}" holds text that is neither base64 nor a decimal number`);
  return decimalNumber(decodeDecimal(text, scale));
}

/**
 * Decodes an `io.debezium.data.VariableScaleDecimal` struct `{scale, value}` to exact text.
 * Returns undefined when the struct does not have that shape.
 * `decodeVariableScaleDecimal({scale: 4, value: "AeJA"})` → "12.3456".
 */
export function decodeVariableScaleDecimal(value: JsonValue): string | undefined {
  if (!isJsonObject(value) || typeof value.value !== 'string') return undefined;
  const scale = toBigInt(value.scale);
  if (scale === undefined) return undefined;
  return decodeDecimal(value.value, Number(scale));
}

function fraction(rest: bigint, unit: Unit): string {
  return rest.toString().padStart(UNITS[unit].digits, '0');
}

/**
 * Formats an epoch count in `unit` as ISO-8601 UTC with that unit's full precision.
 * `formatEpoch(1735732800123456n, 'us')` → "2025-01-01T12:00:00.123456Z".
 */
export function formatEpoch(count: bigint, unit: Unit): string {
  const { perSecond } = UNITS[unit];
  const seconds = floorDiv(count, perSecond);
  const rest = count - seconds * perSecond;
  const whole = new Date(Number(seconds) * 1000).toISOString().slice(0, -5); // drop ".000Z"
  return `${whole}.${fraction(rest, unit)}Z`;
}

/** Formats days since the epoch as `YYYY-MM-DD`: `formatEpochDay(20089)` → "2025-01-01". */
export function formatEpochDay(days: bigint): string {
  return new Date(Number(days) * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Formats a time of day given as a count of `unit` since midnight: `HH:MM:SS` then the unit's
 * fraction digits (`formatTimeOfDay(45296789000n, 'us')` → "12:34:56.789000"). PostgreSQL's
 * `24:00:00` is kept as 24 hours, not wrapped.
 */
export function formatTimeOfDay(count: bigint, unit: Unit): string {
  const { perSecond } = UNITS[unit];
  const seconds = count / perSecond;
  const rest = count % perSecond;
  const pad = (n: bigint) => n.toString().padStart(2, '0');
  return `${pad(seconds / 3600n)}:${pad((seconds / 60n) % 60n)}:${pad(seconds % 60n)}.${fraction(rest, unit)}`;
}

function decodeTemporal(name: string, n: bigint): string | undefined {
  // Own entries only: a schema name such as "toString" is not a unit.
  const tsUnit = lookup(TIMESTAMPS, name);
  const timeUnit = lookup(TIMES, name);
  try {
    if (tsUnit) return formatEpoch(n, tsUnit);
    if (timeUnit) return formatTimeOfDay(n, timeUnit);
    if (DATES.has(name)) return formatEpochDay(n);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e; // out of Date's range: keep the raw number
  }
  return undefined;
}

/**
 * Decodes one value by its field schema. Values that do not match the schema's expected JSON
 * shape (e.g. a Decimal sent as a JSON number under `decimal.format=NUMERIC`) are kept as delivered.
 */
export function decodeValue(value: JsonValue, schema: JsonObject, column = '?'): JsonValue {
  if (value === null) return null;
  const name = typeof schema.name === 'string' ? schema.name : undefined;
  if (name === DECIMAL) return decimalValue(value, schema, column);
  if (name === VARIABLE_SCALE_DECIMAL) return variableScaleDecimalValue(value, column);
  if (name !== undefined) {
    const decoded = temporalValue(name, value);
    if (decoded !== undefined) return decoded;
    // ZonedTimestamp, ZonedTime, Enum, Json, ... are already text: keep them.
  }
  if (schema.type === 'array' && Array.isArray(value) && isJsonObject(schema.items)) {
    const items = schema.items;
    return value.map((v) => decodeValue(v, items, column));
  }
  if (schema.type === 'struct' && isJsonObject(value)) return decodeRow(value, schema);
  return value;
}

/** A `Decimal` with its fixed scale from the schema parameters (0 when absent). */
function decimalValue(value: JsonValue, schema: JsonObject, column: string): JsonValue {
  const params = isJsonObject(schema.parameters) ? schema.parameters : {};
  const scale = toBigInt(params.scale) ?? 0n;
  return typeof value === 'string' ? decimalFieldValue(value, Number(scale), column) : value;
}

function variableScaleDecimalValue(value: JsonValue, column: string): JsonValue {
  if (isJsonObject(value) && typeof value.value === 'string' && !isBase64(value.value)) {
    throw decodeError('bad-field', `VariableScaleDecimal column "${column}" holds a value that is not base64`);
  }
  const text = decodeVariableScaleDecimal(value);
  return text === undefined ? value : decimalNumber(text);
}

/** A date or time type sent as an integer, decoded; undefined for any other value or type. */
function temporalValue(name: string, value: JsonValue): JsonValue | undefined {
  const n = toBigInt(value);
  return n === undefined ? undefined : decodeTemporal(name, n);
}

/** The field schemas of a struct schema, by field name. */
export function structFields(schema: JsonObject): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  if (!Array.isArray(schema.fields)) return out;
  for (const f of schema.fields) {
    if (isJsonObject(f) && typeof f.field === 'string') out.set(f.field, f);
  }
  return out;
}

/**
 * Decodes every column of a row by its struct schema; columns named in `skip` (placeholder
 * markers) and columns the schema does not describe are copied as delivered. Never mutates `row`.
 */
export function decodeRow(row: JsonObject, schema: JsonObject, skip: readonly string[] = []): JsonObject {
  const fields = structFields(schema);
  const out: JsonObject = {};
  for (const [column, value] of Object.entries(row)) {
    const field = fields.get(column);
    put(out, column, field && !skip.includes(column) ? decodeValue(value, field, column) : value);
  }
  return out;
}

/** The struct schema of one envelope field (`before`, `after`, ...) of a Debezium value schema. */
export function envelopeFieldSchema(valueSchema: JsonObject | null, field: string): JsonObject | undefined {
  if (!valueSchema) return undefined;
  const f = structFields(valueSchema).get(field);
  return f && f.type === 'struct' ? f : undefined;
}

/** The DynamoDB attribute type a value is stored as: number, string, boolean, map, list. */
export type StoredKind = 'N' | 'S' | 'BOOL' | 'M' | 'L';

const NUMERIC_TYPES = new Set(['int8', 'int16', 'int32', 'int64', 'float32', 'float64', 'float', 'double']);

/**
 * How a column of this field schema is stored once {@link decodeValue} has decoded it: decimals
 * as numbers, dates, times and timestamps as ISO text, other named types (`ZonedTimestamp`, `Json`,
 * `Enum`, …) by their base type, bytes as base64 text. Schema drift compares these.
 *
 *   {type: "int64", name: "io.debezium.time.MicroTimestamp"} → "S";  {type: "bytes", name: "…Decimal"} → "N"
 */
export function storedKindOfField(field: JsonObject): StoredKind {
  const name = typeof field.name === 'string' ? field.name : undefined;
  if (name === DECIMAL || name === VARIABLE_SCALE_DECIMAL) return 'N';
  if (name !== undefined && (lookup(TIMESTAMPS, name) !== undefined || lookup(TIMES, name) !== undefined || DATES.has(name))) return 'S';
  if (typeof field.type === 'string' && NUMERIC_TYPES.has(field.type)) return 'N';
  if (field.type === 'boolean') return 'BOOL';
  if (field.type === 'struct' || field.type === 'map') return 'M';
  if (field.type === 'array') return 'L';
  return 'S';
}

/** A field's declared type as the drift report names it: its logical name's last part, else its type (`Decimal`, `int32`). */
export function declaredTypeOfField(field: JsonObject): string {
  if (typeof field.name === 'string' && field.name !== '') return field.name.slice(field.name.lastIndexOf('.') + 1);
  return typeof field.type === 'string' ? field.type : 'unknown';
}
