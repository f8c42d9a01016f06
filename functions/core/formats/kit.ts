/**
 * The decoder kit: the event factories and the small readers every decoder shares, so that a new
 * format or a fix touches one file. No decoder builds a ChangeEvent or ControlEvent literal by hand.
 *
 * - {@link changeEvent}, {@link truncateEvent}, {@link controlEvent}: events with defaults
 *   (no images, no patch, no placeholders, no txid or commit time; `snapshot` true for `r`).
 * - {@link decodeError}: a DecodeError whose reason is checked against the closed vocabulary.
 * - Readers: {@link describe}, {@link rowOrNull}, {@link textOf}, {@link msOf}, {@link idText},
 *   {@link epochMsOrNull}, {@link requireString}, {@link keyFromImages}, {@link decimalNumber},
 *   {@link readUnsigned} (a position element, losslessly: `"33228232"`, `33228232` → 33228232n).
 * - Transport order: the Kinesis sequence number or Kafka offset of the record, the fallback
 *   position of formats that carry no comparable source position. It is weak ordering: a connector
 *   redelivery looks newer than it is.
 */
import { isSafeNumber } from 'lossless-json';
import { DecodeError, type ErrorContext } from '../errors.js';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, LosslessNumber, toBigInt } from '../json.js';
import { type Position, transportPosition } from '../position.js';
import type { QuarantineReason } from '../reasons.js';
import type { ChangeEvent, ControlEvent, ControlKind, DecodeContext, InboundMessage, Key, Patch, Row, RowOp, TxMember } from '../types.js';

/** A DecodeError with a reason from the closed vocabulary (reasons.ts). */
export function decodeError(reason: QuarantineReason, message: string, options?: ErrorOptions & { context?: ErrorContext }): DecodeError {
  return new DecodeError(reason, message, options);
}

export interface ChangeInit {
  readonly format: string;
  readonly op: RowOp;
  readonly table: string;
  readonly position: Position;
  readonly key?: Key;
  readonly before?: Row | null;
  readonly after?: Row | null;
  readonly patch?: Patch | null;
  readonly placeholders?: readonly string[];
  readonly txid?: string | null;
  readonly commitTs?: number | null;
  /** @default op === 'r' */
  readonly snapshot?: boolean;
  /** Membership in a source transaction; left out of the event when absent. */
  readonly tx?: TxMember | null;
  /** The declared schema of the after image; left out of the event when absent. */
  readonly rowSchema?: JsonObject | null;
}

/** A row change. A delete never keeps an after image. */
export function changeEvent(init: ChangeInit): ChangeEvent {
  return {
    kind: 'change',
    format: init.format,
    op: init.op,
    table: init.table,
    key: init.key ?? {},
    before: init.before ?? null,
    after: init.op === 'd' ? null : (init.after ?? null),
    patch: init.patch ?? null,
    placeholders: init.placeholders ?? [],
    position: init.position,
    txid: init.txid ?? null,
    commitTs: init.commitTs ?? null,
    snapshot: init.snapshot ?? init.op === 'r',
    ...(init.tx ? { tx: init.tx } : {}),
    ...(init.rowSchema ? { rowSchema: init.rowSchema } : {}),
  };
}

/** A table truncate: op `t`, empty key, no images. */
export function truncateEvent(init: Pick<ChangeInit, 'format' | 'table' | 'position' | 'txid' | 'commitTs'>): ChangeEvent {
  return changeEvent({ ...init, op: 't', snapshot: false });
}

export interface ControlInit {
  readonly format: string;
  readonly control: ControlKind;
  readonly table?: string | null;
  readonly position?: Position | null;
  readonly txid?: string | null;
  readonly commitTs?: number | null;
  readonly detail?: JsonObject;
}

/** A non-row message: kept in raw and counted, never applied as a row. */
export function controlEvent(init: ControlInit): ControlEvent {
  return {
    kind: 'control',
    format: init.format,
    control: init.control,
    table: init.table ?? null,
    position: init.position ?? null,
    txid: init.txid ?? null,
    commitTs: init.commitTs ?? null,
    detail: init.detail ?? {},
  };
}

/** A short description of a JSON value for error messages (never the row contents). */
export function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isLosslessNumber(value)) return value.value.length > 40 ? `a ${value.value.length}-character number` : value.value;
  return isJsonObject(value) ? 'an object' : String(value);
}

/** A row image: an object, or null when absent. Anything else throws `missing-field`. */
export function rowOrNull(value: JsonValue | undefined, what: string): Row | null {
  if (value === null || value === undefined) return null;
  if (!isJsonObject(value)) throw decodeError('missing-field', `expected ${what} to be a row object or null, got ${describe(value)}`);
  return value;
}

/** A scalar as text (numbers keep their exact digits), objects as JSON; null when absent or empty. */
export function textOf(value: JsonValue | undefined): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (isLosslessNumber(value)) return value.value;
  return JSON.stringify(value);
}

/**
 * A commit time that is present must be usable: absent or null gives null, anything else that is not
 * a finite number (or an integer, for epochMsOrNull) within safe range is refused as `bad-timestamp`,
 * never silently turned into "no commit time".
 */
function badTimestamp(value: JsonValue): never {
  const shown = typeof value === 'string' || isLosslessNumber(value) ? `${String(isLosslessNumber(value) ? value.value : value).length} characters` : typeof value;
  throw decodeError('bad-timestamp', `a commit time must be a whole number of epoch milliseconds (or the format's unit); got a value of ${shown}`);
}

/** Milliseconds from a JSON number (fractions kept); null when absent; `bad-timestamp` when unusable. */
export function msOf(value: JsonValue | undefined): number | null {
  if (value === undefined || value === null) return null;
  const n = typeof value === 'number' ? value : isLosslessNumber(value) ? Number(value.value) : Number.NaN;
  if (!Number.isFinite(n) || Math.abs(n) > Number.MAX_SAFE_INTEGER) return badTimestamp(value);
  return n;
}

/** Epoch milliseconds from an integer JSON value; null when absent; `bad-timestamp` when not a safe integer. */
export function epochMsOrNull(value: JsonValue | undefined): number | null {
  if (value === undefined || value === null) return null;
  const n = toBigInt(value);
  if (n === undefined) return badTimestamp(value);
  const ms = Number(n);
  return Number.isSafeInteger(ms) ? ms : badTimestamp(value);
}

/** A transaction id as text (numbers keep their exact digits), or null. */
export function idText(value: JsonValue | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  const n = toBigInt(value);
  return n === undefined ? null : n.toString();
}

/** Reads a required non-empty string field of `obj`, or throws `missing-field` naming what was expected. */
export function requireString(obj: JsonObject, field: string, where: string, example: string): string {
  const value = obj[field];
  if (typeof value !== 'string' || value === '') {
    throw decodeError('missing-field', `expected ${where}.${field} to be a non-empty string (e.g. ${example}), got ${describe(value)}`);
  }
  return value;
}

/** The longest decimal text read as one position element. */
const MAX_ELEMENT_TEXT = 160;

/**
 * An unsigned integer position element from a JSON number, LosslessNumber or decimal string, never
 * through a float; anything else throws `bad-position` naming `what` and an example.
 */
export function readUnsigned(value: JsonValue | undefined, what: string, example: string): bigint {
  // No position element has more digits (a Kinesis sequence number has 129): longer text is refused
  // before BigInt reads it, whose cost grows faster than its length.
  const text = typeof value === 'string' ? value : isLosslessNumber(value) ? value.value : '';
  const n = text.length > MAX_ELEMENT_TEXT ? undefined : toBigInt(value);
  if (n === undefined || n < 0n) {
    throw decodeError('bad-position', `expected ${what} to be an unsigned integer (e.g. ${example}), got ${describe(value)}`);
  }
  return n;
}

/** Like {@link readUnsigned} but null or missing reads as 0. */
export function readUnsignedOrZero(value: JsonValue | undefined, what: string, example: string): bigint {
  return value === null || value === undefined ? 0n : readUnsigned(value, what, example);
}

/** MySQL caps a file name at FN_REFLEN (512) characters: longer text is not a binlog file name. */
const MAX_BINLOG_FILE = 512;

/**
 * The number a binlog file name ends in (`"mysql-bin.000003"` → 3n), or null when it ends in none.
 * Read by a scan from the end, in linear time (a pattern like `/(\d+)\s*$/` is quadratic on a long
 * run of digits); a name longer than MySQL allows is `bad-position`.
 */
export function binlogFileNo(file: string, what: string): bigint | null {
  if (file.length > MAX_BINLOG_FILE) throw decodeError('bad-position', `expected ${what} to be a binlog file name of at most ${MAX_BINLOG_FILE} characters, got ${describe(file)}`);
  const name = file.trimEnd();
  let start = name.length;
  while (start > 0 && name.charCodeAt(start - 1) >= 0x30 && name.charCodeAt(start - 1) <= 0x39) start--;
  return start === name.length ? null : BigInt(name.slice(start));
}

/** The record's transport sequence as an exact integer; DecodeError `bad-position` if it is not one. */
export function transportSequence(message: InboundMessage): bigint {
  const seq = message.transport.sequence;
  if (!/^\d+$/.test(seq)) throw decodeError('bad-position', `transport sequence must be a decimal string, got ${describe(seq)}`);
  return BigInt(seq);
}

/** `(sequence, ...tiebreak)` as a transport-strength position, e.g. a row index within one message. */
export function transportOrder(message: InboundMessage, ...tiebreak: bigint[]): Position {
  return transportPosition(transportSequence(message), ...tiebreak);
}

/**
 * The configured key columns of `table`, each taken from the first image that has a non-null value.
 * The caller re-derives the final key; this is a decoder's best guess.
 */
export function keyFromImages(table: string, ctx: DecodeContext, images: readonly (JsonObject | null)[]): Key {
  const key: Key = {};
  for (const column of ctx.keyColumns(table) ?? []) {
    for (const image of images) {
      const v = image === null ? undefined : own(image, column);
      if (v !== undefined && v !== null) {
        key[column] = v;
        break;
      }
    }
  }
  return key;
}

const DECIMAL_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** True when `text` is exactly a decimal number (`12.50`, `-5`, `1e3`): no spaces, no NaN or Infinity. */
export function isDecimalText(text: string): boolean {
  return DECIMAL_TEXT.test(text);
}

/**
 * A decimal's exact text as a JSON number: a plain number when a double holds it without loss,
 * else a LosslessNumber with the same digits. Decimals of every source land as numbers this way;
 * the Normalizer turns those DynamoDB cannot hold (over 38 significant digits) into flagged text.
 * `decimalNumber("12.50")` → 12.5; `decimalNumber("12345678901234567890.5")` → LosslessNumber.
 */
export function decimalNumber(text: string): number | LosslessNumber {
  return isSafeNumber(text) ? Number(text) : new LosslessNumber(text);
}

export { significantDigits } from '../decimal.js';

/** `table[name]` for own entries only: a field holding `"constructor"` or `"__proto__"` is not found. */
export function lookup<T>(table: Readonly<Record<string, T>>, name: unknown): T | undefined {
  return typeof name === 'string' && Object.hasOwn(table, name) ? table[name] : undefined;
}

/**
 * Sets `obj[name] = value` as an own data property, also for `__proto__`, which plain assignment
 * would turn into a prototype change and silently drop. The column then reaches validation and is
 * quarantined as `reserved-column` instead of vanishing.
 */
export function put(obj: JsonObject, name: string, value: JsonValue): void {
  if (name === '__proto__') Object.defineProperty(obj, name, { value, writable: true, enumerable: true, configurable: true });
  else obj[name] = value;
}

/** `obj[name]` when it is an own property: never `Object.prototype` members for `__proto__` or `constructor`. */
export function own(obj: JsonObject, name: string): JsonValue | undefined {
  return Object.hasOwn(obj, name) ? obj[name] : undefined;
}
