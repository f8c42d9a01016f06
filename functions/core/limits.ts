/**
 * What a normalized change may hold before it is planned: positions inside their format's range,
 * a sane commit time, and only values DynamoDB accepts. A change that breaks a rule is rejected
 * with a specific reason and quarantined; it never reaches the writer, where DynamoDB would refuse
 * it on every retry and block the shard, and it never poisons the guard with an impossible position.
 *
 * The rules and reasons are documented in docs/limits.md; keep the two in step.
 */
import { decodeError } from './formats/kit.js';
import { isPlaceholderValue, placeholderForms } from './formats/debezium-placeholders.js';
import { isLosslessNumber, type JsonObject, type JsonValue } from './json.js';
import { COMPOSITE_KEY_ATTRIBUTE, type KeyedTable, keyId, keyLayout, keySource, normalizeKey } from './keys.js';
import type { Position } from './position.js';
import type { ChangeEvent, Key } from './types.js';
import { decimalParts } from './decimal.js';

export { canonicalDecimal, decimalParts } from './decimal.js';

// ---------------------------------------------------------------------------------------------
// Position ranges
// ---------------------------------------------------------------------------------------------

/** The allowed values of one position element. */
export interface ElementRange {
  /** What the element is, for the rejection detail. */
  readonly name: string;
  readonly min: bigint;
  readonly max: bigint;
}

/** The tuple shapes one format produces, per ordering strength. */
export interface FormatPositions {
  /** Tuples read from the message (strength `source`). */
  readonly source: readonly (readonly ElementRange[])[];
  /** Tuples of strength `transport`; defaults to {@link TRANSPORT_SHAPES}. */
  readonly transport?: readonly (readonly ElementRange[])[];
}

const pow2 = (bits: bigint) => (1n << bits) - 1n;
const range = (name: string, max: bigint, min = 0n): ElementRange => ({ name, min, max });

/** 64-bit unsigned: PostgreSQL LSNs, Oracle SCNs. */
const U64 = pow2(64n);
/** Non-negative signed 64-bit (Java `long`): Debezium counters. */
const I63 = pow2(63n);
/** Non-negative signed 32-bit (Java `int`): row indexes within one event or message. */
const I31 = pow2(31n);
/** A Kinesis sequence number has at most 129 decimal digits; a Kafka offset (signed 64-bit) is far below. */
const TRANSPORT_SEQUENCE = range('transport sequence (Kafka offset or Kinesis sequence number)', 10n ** 129n - 1n);
const ROW_INDEX = range('row index within the message', I31);

const pgLsn = (name: string) => range(`${name} (PostgreSQL LSN, 64-bit unsigned)`, U64);
/** MySQL numbers binlog files with a 6+ digit suffix and stops at 2^31 - 1 (MAX_LOG_UNIQUE_FN_EXT). */
const BINLOG_FILE = range('binlog file number (MySQL caps the suffix at 2^31 - 1)', I31);
/** The binlog event header holds the next position in 4 bytes. */
const binlogPos = (name: string) => range(`${name} (binlog offset, 32-bit unsigned)`, pow2(32n));
/** A SQL Server LSN is VLF (32 bits) : block (32 bits) : slot (16 bits), read as one 80-bit integer. */
const sqlServerLsn = (name: string) => range(`${name} (SQL Server LSN, 80 bits)`, pow2(80n));
const oracleScn = (name: string) => range(`${name} (Oracle SCN, 64-bit unsigned)`, U64);
/** CockroachDB HLC wall time, ns since the epoch: not before 2015-01-01 (no CockroachDB cluster ran earlier), not after 2100-01-01. */
export const HLC_WALL = range('HLC wall time (ns since the epoch, 2015-01-01 to 2100-01-01)', 4_102_444_800_000_000_000n, 1_420_070_400_000_000_000n);
const HLC_LOGICAL = range('HLC logical counter (32-bit signed)', I31);

/** A commit time in ns since the epoch, 2015-01-01 to 2100-01-01, the same bounds as {@link HLC_WALL}. */
const commitNs = (name: string) => range(`${name} (commit time, ns since the epoch, 2015-01-01 to 2100-01-01)`, HLC_WALL.max, HLC_WALL.min);
/** Db2 LSNs are 10 bytes (Db2 for z/OS, LUW before 10.1) or 16 bytes (LUW 10.1 and later). */
const db2Lsn = (name: string) => range(`${name} (Db2 LSN, 10 or 16 bytes)`, pow2(128n));
/** An Informix LSN is (loguniq << 32) + logpos in a Java long. */
const informixLsn = (name: string) => range(`${name} (Informix LSN, (loguniq << 32) + logpos, 63 bits)`, I63);
/** Aurora DSQL `source.txId` as an integer: a 0x01 byte, then its UTF-8 bytes (at most 64; see aurora-dsql.ts). */
const DSQL_TXID = range('source.txId as an integer (0x01 then at most 64 UTF-8 bytes)', pow2(8n * 65n));

/** Transport-strength shapes every format may fall back to: the sequence, then a row index. */
export const TRANSPORT_SHAPES: readonly (readonly ElementRange[])[] = [[TRANSPORT_SEQUENCE], [TRANSPORT_SEQUENCE, ROW_INDEX]];

const MYSQL_SHAPE = [BINLOG_FILE, binlogPos('source.pos'), range('source.row (row within the binlog event)', I31)];

/**
 * Position ranges, keyed by the `format` of a normalized event. One row per format family; the tuple
 * shapes match the decoders (see debezium-positions.ts, cockroachdb.ts, maxwell.ts, generic.ts).
 * Formats not listed (none today) get {@link DEFAULT_POSITIONS}.
 */
export const POSITION_RANGES: Readonly<Record<string, FormatPositions>> = {
  'debezium-postgresql': {
    source: [[pgLsn('source.sequence[0]'), pgLsn('source.sequence[1]')]],
    // Without source.sequence: [0, lsn], weak ordering.
    transport: [[range('constant 0', 0n), pgLsn('source.lsn')], ...TRANSPORT_SHAPES],
  },
  'debezium-mysql': { source: [MYSQL_SHAPE] },
  'debezium-mariadb': { source: [MYSQL_SHAPE] },
  'debezium-sqlserver': { source: [[sqlServerLsn('source.commit_lsn'), sqlServerLsn('source.change_lsn'), range('source.event_serial_no', I63)]] },
  'debezium-oracle': { source: [[oracleScn('source.commit_scn'), oracleScn('source.scn'), range('source.txSeq or transaction.total_order', I63)]] },
  'debezium-db2': { source: [[db2Lsn('source.commit_lsn'), db2Lsn('source.change_lsn')]] },
  'debezium-informix': { source: [[informixLsn('source.commit_lsn'), informixLsn('source.change_lsn'), range('transaction.total_order', I63)]] },
  'debezium-yashandb': {
    source: [[range('source.position_scn (commit SCN, 64-bit unsigned)', U64), range('source.group_lsn (64-bit unsigned)', U64), range('source.group_offset (32-bit signed)', I31), range('source.batch_row_id (32-bit signed)', I31)]],
  },
  // Only with ordered transaction metadata; else transport order (VGTIDs are per shard).
  'debezium-vitess': { source: [[range('transaction.transaction_epoch', I63), range('transaction.transaction_rank (sum of the shard GTID sequence numbers)', pow2(128n)), range('transaction.total_order', I63)]] },
  'debezium-spanner': { source: [[commitNs('source.ts_ns'), range('source.sequence (record_sequence, 64-bit signed)', I63), range('source.mod_number (32-bit signed)', I31)]] },
  // `source.ts_hlc` when set; the connector leaves it null today, and the position is then transport order.
  'debezium-cockroachdb': { source: [[HLC_WALL, HLC_LOGICAL]] },
  'aurora-dsql': { source: [[commitNs('source.ts_ns'), DSQL_TXID]] },
  'debezium-flattened': {
    source: [[pgLsn('__sequence[0]'), pgLsn('__sequence[1]')], [pgLsn('__lsn')], [BINLOG_FILE, binlogPos('__pos'), range('__row', I31)]],
  },
  // Before Debezium 3.4: the oplog clusterTime [seconds, increment]; from 3.4: transport order behind a
  // constant 2^32 first element (see debezium-mongodb.ts), so 3.3 keys stay updatable after an upgrade.
  'debezium-mongodb': {
    source: [[range('clusterTime seconds (source.ts_ms / 1000, 32-bit unsigned)', pow2(32n)), range('source.ord (oplog increment, 32-bit unsigned)', pow2(32n))]],
    transport: [...TRANSPORT_SHAPES, ...TRANSPORT_SHAPES.map((shape) => [range('constant 2^32', 1n << 32n, 1n << 32n), ...shape])],
  },
  generic: { source: [[pgLsn('source.lsn')]] },
  cockroachdb: { source: [[HLC_WALL, HLC_LOGICAL]] },
  maxwell: { source: [[BINLOG_FILE, binlogPos('position offset'), range('xoffset (row within the transaction)', I63)]] },
  canal: { source: [] },
  dms: { source: [] },
};

/** Any 64-bit unsigned element, for a format without its own row. */
export const DEFAULT_POSITIONS: FormatPositions = { source: [[range('position element', U64)], [range('position element', U64), range('position element', U64)], [range('position element', U64), range('position element', U64), range('position element', U64)]] };

/** Checks a position against its format's shapes; throws DecodeError `bad-position` when it fits none. */
export function checkPosition(format: string, position: Position): void {
  if (position.strength === 'none') {
    if (position.tuple.length === 0) return;
    throw decodeError('bad-position', `a position without ordering must be empty, got ${position.tuple.length} elements`);
  }
  const spec = POSITION_RANGES[format] ?? DEFAULT_POSITIONS;
  const shapes = position.strength === 'source' ? spec.source : (spec.transport ?? TRANSPORT_SHAPES);
  const tuple = position.tuple;
  const candidates = shapes.filter((s) => s.length === tuple.length);
  if (candidates.length === 0) {
    throw decodeError('bad-position', `a ${format} position of ${position.strength} strength has ${shapes.map((s) => s.length).join(' or ') || 'no'} elements, got ${tuple.length}`);
  }
  let detail = '';
  for (const shape of candidates) {
    const bad = shape.findIndex((r, i) => {
      const v = tuple[i] as bigint;
      return v < r.min || v > r.max;
    });
    if (bad < 0) return;
    const r = shape[bad] as ElementRange;
    detail ||= `${format} position element ${bad + 1}, the ${r.name}, must be between ${r.min} and ${r.max}; got a ${String(tuple[bad]).length}-digit value`;
  }
  throw decodeError('bad-position', detail);
}

// ---------------------------------------------------------------------------------------------
// Commit time
// ---------------------------------------------------------------------------------------------

/** 9999-12-31T23:59:59.999Z: the last instant an ISO-8601 date with a 4-digit year names. */
export const MAX_COMMIT_TS = 253_402_300_799_999;

/** `commitTs` must be null or whole epoch milliseconds in [0, {@link MAX_COMMIT_TS}]. */
export function checkCommitTs(commitTs: number | null): void {
  if (commitTs === null) return;
  if (!Number.isSafeInteger(commitTs) || commitTs < 0 || commitTs > MAX_COMMIT_TS) {
    const what = Number.isFinite(commitTs) ? (Number.isInteger(commitTs) ? 'out of range' : 'not a whole number') : 'not finite';
    throw decodeError('bad-timestamp', `commit time must be epoch milliseconds between 0 and ${MAX_COMMIT_TS} (year 9999); the value is ${what}`);
  }
}

// ---------------------------------------------------------------------------------------------
// DynamoDB value limits
// ---------------------------------------------------------------------------------------------

/** DynamoDB's limits, as documented in its developer guide ("Quotas": attributes and data types). */
export const DYNAMO = {
  /** Significant decimal digits of a number. */
  numberDigits: 38,
  /** Largest power of ten of a non-zero number's leading digit (9.99…E+125). */
  numberMaxExponent: 125,
  /** Smallest power of ten of a non-zero number's leading digit (1E-130). */
  numberMinExponent: -130,
  /** UTF-8 bytes of a string partition key. */
  partitionKeyBytes: 2048,
  /** UTF-8 bytes of a string sort key. */
  sortKeyBytes: 1024,
  /** UTF-8 bytes of an attribute (or map key) name: 1 to 65,535. */
  nameBytes: 65_535,
  /** Levels of nesting, counting the top-level attribute as level 1: at most 31 maps or lists around a scalar. */
  nestingLevels: 32,
} as const;

/**
 * Why DynamoDB would refuse a number, or null when it accepts it. Works on the decimal text, so
 * 400-digit or 1e-400 values are judged exactly, never through a float.
 */
export function numberProblem(text: string): string | null {
  const n = decimalParts(text);
  if (n === null) return 'is not a decimal number';
  if (n.digits === '0') return null; // zero, in any spelling
  if (n.hugeExponent !== undefined) return n.hugeExponent > 0 ? `is too large in magnitude for DynamoDB (at most 9.99…E+${DYNAMO.numberMaxExponent})` : `is too small in magnitude for DynamoDB (at least 1E${DYNAMO.numberMinExponent}, or 0)`;
  if (n.digits.length > DYNAMO.numberDigits) return `has ${n.digits.length} significant digits; DynamoDB keeps at most ${DYNAMO.numberDigits}`;
  const leading = n.exponent + BigInt(n.digits.length - 1);
  if (leading > BigInt(DYNAMO.numberMaxExponent)) return `is too large in magnitude for DynamoDB (at most 9.99…E+${DYNAMO.numberMaxExponent})`;
  if (leading < BigInt(DYNAMO.numberMinExponent)) return `is too small in magnitude for DynamoDB (at least 1E${DYNAMO.numberMinExponent}, or 0)`;
  return null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** `String.prototype.isWellFormed` (Node 20+), typed here because the compiler's lib is ES2023. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** True when a string has a UTF-16 surrogate without its pair: it cannot be written as UTF-8. */
export function hasLoneSurrogate(s: string): boolean {
  return isWellFormed ? !isWellFormed.call(s) : LONE_SURROGATE.test(s);
}

/**
 * A JS number (the parser keeps only numbers that round-trip, so at most 17 significant digits)
 * well inside DynamoDB's range needs no text check; the rest are judged on their decimal text.
 */
function plainNumberProblem(v: number): string | null {
  if (!Number.isFinite(v)) return 'is not finite';
  const abs = Math.abs(v);
  if (abs === 0 || (abs >= 1e-129 && abs < 1e125)) return null;
  return numberProblem(String(v));
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** Object keys that would turn into prototype changes or shadow built-ins if copied with `obj[k] = v`. */
const PROTOTYPE_KEY = '__proto__';

function checkName(name: string, where: string): void {
  if (name === '') throw decodeError('bad-column-name', `${where} has an empty name; DynamoDB attribute names must have at least one character`);
  if (hasLoneSurrogate(name)) throw decodeError('bad-column-name', `${where} has a name with an unpaired UTF-16 surrogate, which has no UTF-8 form`);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short names need no count.
  const bytes = name.length * 3 <= DYNAMO.nameBytes ? 0 : utf8Bytes(name);
  if (bytes > DYNAMO.nameBytes) throw decodeError('bad-column-name', `${where} has a ${bytes}-byte name; DynamoDB allows at most ${DYNAMO.nameBytes} bytes`);
  if (name === PROTOTYPE_KEY) throw decodeError('reserved-column', `${where} is named "__proto__", which is reserved (it would change an object's prototype)`);
}

/** An object built by the lossless parser or a decoder: a plain or null prototype, nothing inherited. */
function hasPlainPrototype(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks one column value (iteratively: a 2,000-level document must not overflow the stack):
 * numbers within DynamoDB's precision and range, strings with a UTF-8 form, map keys that are
 * valid names, and at most {@link DYNAMO.nestingLevels} levels counting the column itself.
 */
export function checkValue(column: string, value: JsonValue): void {
  // Most columns are scalars: checked without the walk's allocations.
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) {
    checkScalar(column, value);
    return;
  }
  const stack: PendingValue[] = [{ v: value, level: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { v, level } = item;
    if (v !== null && typeof v === 'object' && !isLosslessNumber(v)) pushChildren(column, v, level, stack);
    else checkScalar(column, v);
  }
}

/** A value still to check, with its nesting level (the column itself is level 1). */
interface PendingValue {
  v: JsonValue;
  level: number;
}

/** Numbers within DynamoDB's precision and range, strings with a UTF-8 form. */
function checkScalar(column: string, v: JsonValue): void {
  if (typeof v === 'string') {
    if (hasLoneSurrogate(v)) throw decodeError('invalid-string', `a string in column "${column}" has an unpaired UTF-16 surrogate (a \\uD800-\\uDFFF escape alone), which has no UTF-8 form`);
    return;
  }
  const problem = typeof v === 'number' ? plainNumberProblem(v) : isLosslessNumber(v) ? numberProblem(v.value) : null;
  if (problem) throw decodeError(numberReason(problem), `a number in column "${column}" ${problem}`);
}

/** Checks a map or list's depth and map keys, then queues its members one level deeper. */
function pushChildren(column: string, v: JsonValue[] | JsonObject, level: number, stack: PendingValue[]): void {
  if (level >= DYNAMO.nestingLevels) {
    throw decodeError('too-deep', `column "${column}" nests maps and lists more than ${DYNAMO.nestingLevels - 1} deep; DynamoDB allows ${DYNAMO.nestingLevels} levels counting the attribute itself`);
  }
  if (Array.isArray(v)) {
    for (const e of v) stack.push({ v: e, level: level + 1 });
    return;
  }
  if (!hasPlainPrototype(v)) throw decodeError('reserved-column', `a map in column "${column}" had a "__proto__" key that replaced its prototype`);
  for (const k of Object.keys(v)) {
    checkName(k, `a map key in column "${column}"`);
    stack.push({ v: v[k] as JsonValue, level: level + 1 });
  }
}

const numberReason = (problem: string) => (problem.includes('significant digits') ? 'number-precision' : 'number-range');

/** Checks every column name and value of a row image. */
export function checkRow(row: Readonly<Record<string, JsonValue>>, what: string): void {
  if (!hasPlainPrototype(row)) throw decodeError('reserved-column', `the ${what} had a "__proto__" column that replaced its prototype`);
  for (const column of Object.keys(row)) {
    checkName(column, `a column of the ${what}`);
    checkValue(column, row[column] as JsonValue);
  }
}

/** Checks a normalized key against DynamoDB's key limits (sizes, number range). */
export function checkKeyLimits(table: KeyedTable, key: Key): void {
  const layout = keyLayout(table);
  if (layout.composite) checkCompositeKeySize(table, key);
  for (const col of table.key) {
    const v = key[col];
    if (typeof v === 'string') checkStringKeyColumn(col, v, layout);
    else checkNumberKeyColumn(col, v);
  }
}

/** The one encoded partition key of a composite key fits DynamoDB's partition key size. */
function checkCompositeKeySize(table: KeyedTable, key: Key): void {
  const bytes = utf8Bytes(keyId(table, key));
  if (bytes > DYNAMO.partitionKeyBytes) {
    throw decodeError('key-too-large', `the encoded ${COMPOSITE_KEY_ATTRIBUTE} of columns ${table.key.join(', ')} is ${bytes} bytes; a DynamoDB partition key holds at most ${DYNAMO.partitionKeyBytes}`);
  }
}

function checkStringKeyColumn(col: string, v: string, layout: ReturnType<typeof keyLayout>): void {
  if (hasLoneSurrogate(v)) throw decodeError('bad-key', `key column "${col}" has an unpaired UTF-16 surrogate, which has no UTF-8 form`);
  // A composite key is sized as a whole (above); its columns are not attributes of their own.
  if (layout.composite) return;
  const isSort = layout.sortKey?.name === col;
  const limit = isSort ? DYNAMO.sortKeyBytes : DYNAMO.partitionKeyBytes;
  const bytes = utf8Bytes(v);
  if (bytes > limit) {
    throw decodeError('key-too-large', `key column "${col}" is ${bytes} bytes; a DynamoDB ${isSort ? 'sort' : 'partition'} key holds at most ${limit}`);
  }
}

function checkNumberKeyColumn(col: string, v: Key[string]): void {
  // A safe integer has at most 16 digits: always within DynamoDB's precision and range.
  if (typeof v === 'number' && Number.isSafeInteger(v)) return;
  const text = isLosslessNumber(v) ? v.value : typeof v === 'number' ? String(v) : '';
  const problem = numberProblem(text);
  if (problem) throw decodeError('bad-key', `key column "${col}" is a number that ${problem}`);
}

// ---------------------------------------------------------------------------------------------
// The whole change
// ---------------------------------------------------------------------------------------------

/**
 * Validates one change of a configured table before it is planned; throws DecodeError with a
 * specific reason. Runs before the key is merged, so it reads own properties only: a missing key
 * column named like a built-in (`constructor`) is `missing-key`, never a function.
 */
export function checkChange(event: ChangeEvent, table: KeyedTable, placeholder: string): void {
  checkPosition(event.format, event.position);
  checkCommitTs(event.commitTs);
  if (event.op === 't') return;
  // A row op with no image at all is reported as `missing-after` by the caller.
  if (event.op !== 'd' && event.after === null && event.patch === null) return;
  // Names and values first: a `__proto__` column is the cause even when it also hides the key.
  if (event.after !== null) checkRow(event.after, 'after image');
  if (event.patch !== null) {
    checkRow(event.patch.set, 'patch');
    for (const name of event.patch.unset) checkName(name, 'a removed column');
  }
  const forms = placeholderForms(placeholder);
  for (const col of table.key) {
    const v = keySource(event, col);
    if (v !== undefined && v !== null && isPlaceholderValue(v, forms)) {
      throw decodeError('placeholder-key', `key column "${col}" holds the unchanged-value placeholder, not a key; the source must send the key (e.g. REPLICA IDENTITY or the message key)`);
    }
  }
  const merged: Key = {};
  for (const col of table.key) {
    const v = keySource(event, col);
    if (v !== undefined) merged[col] = v;
  }
  checkKeyLimits(table, normalizeKey(table, merged));
  if (!hasPlainPrototype(event.key)) throw decodeError('reserved-column', 'the message key had a "__proto__" field that replaced its prototype');
  for (const name of Object.keys(event.key)) checkName(name, 'a key field');
}
