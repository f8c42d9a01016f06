/**
 * From delivered bytes to validated normalized events, or a quarantine reason.
 *
 * decode → parse losslessly → unwrap `{schema, payload}` → detect the format (then the plain-row
 * fallbacks) → decode → check against the config (table configured, key columns present and
 * typed, no reserved column names) → split key-changing updates → map long decimals to text.
 * A null value (Kafka tombstone) is ignored or applied as a delete, as `kafkaTombstones` says.
 * Nothing here throws: every failure is a {@link Rejection} with a reason from reasons.ts, which
 * the caller quarantines. Nothing is dropped silently.
 */
import { DecodeError, errorMessage } from './errors.js';
import { FORMATS, formatByName } from './formats/index.js';
import { FLATTENED_FORMAT, ignoredTombstone, type TombstoneMode, type TombstoneSetting, tombstoneDelete, tombstoneTable, unknownTombstoneTable } from './formats/kafka-tombstones.js';
import { decodeError, own, put, significantDigits } from './formats/kit.js';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, parseJson } from './json.js';
import { type KeyedTable, keyId, normalizeKey } from './keys.js';
import { checkChange } from './limits.js';
import { isQuarantineReason, type QuarantineReason } from './reasons.js';
import type { ChangeEvent, DecodeContext, FormatDecoder, InboundMessage, Key, NormalizedEvent, Row, TransportMeta } from './types.js';

/** A delivered record as the transport gives it. `value === null` (or empty) is a Kafka tombstone. */
export interface RawRecord {
  readonly value: Uint8Array | null;
  /** Kafka message key bytes, or the Kinesis partition key as UTF-8. */
  readonly key: Uint8Array | null;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly transport: TransportMeta;
  /** A tombstone read back from raw: what it did when it was first applied (replay repeats it). */
  readonly tombstone?: TombstoneMode;
}

/** A configured source table, as the Normalizer reads it. */
export interface NormalizerTable extends KeyedTable {
  /** Source table as the decoders name it, e.g. `public.orders`. */
  readonly source: string;
  /** What a Kafka tombstone means for this table; the pipeline's setting when absent. */
  readonly kafkaTombstones?: TombstoneSetting;
}

/** The parts of the pipeline config the Normalizer reads (the resolved config has this shape). */
export interface NormalizerConfig {
  /** `auto`, or the one format name every message must be. */
  readonly format: string;
  readonly tables: readonly NormalizerTable[];
  /** What a Kafka tombstone means when its table does not say. @default delete for debezium-flattened, auto under auto, else ignore */
  readonly kafkaTombstones?: TombstoneSetting;
  /** The unchanged-value marker, e.g. `__debezium_unavailable_value`. */
  readonly placeholder: string;
  readonly dms: { readonly beforeImageField: string };
  /** `maxColumns`: columns a row image or patch may carry before the change is quarantined. */
  readonly apply: { readonly maxColumns: number };
}

export interface Accepted {
  readonly ok: true;
  readonly message: InboundMessage;
  readonly events: readonly NormalizedEvent[];
  /** The format that decoded the message. */
  readonly format: string;
  /**
   * The record's value and key as the text they were parsed from, when they are valid UTF-8 (null:
   * absent or not UTF-8). The raw line reuses them instead of decoding the bytes a second time.
   */
  readonly texts: RecordTexts;
}

/** A record's value and key decoded as UTF-8 (fatal), or null. */
export interface RecordTexts {
  readonly value: string | null;
  readonly key: string | null;
}

export interface Rejection {
  readonly ok: false;
  /** Machine-readable reason from the closed vocabulary in reasons.ts. */
  readonly reason: QuarantineReason;
  /** Human-readable detail naming what was expected. Never contains row values. */
  readonly detail: string;
  readonly message: InboundMessage | null;
  /** The source table the record named, when the decoder got that far (status rows count it there). */
  readonly table?: string;
}

export type Normalized = Accepted | Rejection;

const RESERVED = '__';
/**
 * UTF-8 with errors refused and a leading byte-order mark kept (as U+FEFF): the texts are the
 * record's exact bytes, which the raw line stores. Parsing skips the mark.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const BOM = '\uFEFF';
const withoutBom = (text: string): string => (text.startsWith(BOM) ? text.slice(1) : text);
/** DynamoDB numbers hold 38 significant digits exactly; longer decimals are stored as their text. */
const DYNAMO_NUMBER_DIGITS = 38;

/** Splits JsonConverter `{schema, payload}` wrapping; anything else passes through. */
export function unwrapSchema(value: JsonValue | null): { payload: JsonValue | null; schema: JsonObject | null } {
  if (isJsonObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 2 && 'schema' in value && 'payload' in value) {
      const schema = value.schema;
      if (schema === null) return { payload: value.payload ?? null, schema: null };
      if (isJsonObject(schema) && (schema.type === 'struct' || typeof schema.name === 'string')) {
        return { payload: value.payload ?? null, schema };
      }
    }
  }
  return { payload: value, schema: null };
}

function parseText(text: string, what: string): JsonValue {
  try {
    return parseJson(withoutBom(text));
  } catch (err) {
    throw decodeError('invalid-json', `${what} is not valid JSON: ${errorMessage(err)}`, { cause: err });
  }
}

function decodeText(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch (err) {
    throw decodeError('invalid-utf8', `${what} is not valid UTF-8`, { cause: err });
  }
}

/** The key as UTF-8 text, or null when it is absent or not valid UTF-8. */
function keyText(bytes: Uint8Array | null): string | null {
  if (!bytes || bytes.length === 0) return null;
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function parseKey(bytes: Uint8Array | null, text: string | null): JsonValue | null {
  if (!bytes || bytes.length === 0) return null;
  try {
    if (text === null) throw new Error('not UTF-8');
    return parseJson(withoutBom(text));
  } catch {
    // A Kinesis partition key is often a plain string, not JSON: keep it as text.
    return text !== null ? withoutBom(text) : new TextDecoder().decode(bytes);
  }
}

/**
 * The value and key of a record as UTF-8 text: a value that is not valid UTF-8 is refused
 * (`invalid-utf8`); a key that is not is null (it is kept as bytes in raw, and parsed leniently).
 */
export function recordTexts(record: RawRecord): RecordTexts {
  return { value: record.value && record.value.length > 0 ? decodeText(record.value, 'message value') : null, key: keyText(record.key) };
}

export class Normalizer {
  private readonly decoders: readonly FormatDecoder[];
  private readonly ctx: DecodeContext;
  private readonly tables: ReadonlyMap<string, NormalizerTable>;
  /** What a Kafka tombstone means when its table's config does not say. */
  private readonly tombstones: TombstoneSetting;
  /** Tables whose flattened records this Normalizer has seen or was told of: `auto` tombstones of them are deletes. */
  private readonly flattened = new Set<string>();
  /** The context plain-row fallbacks see: under `auto` without `onlyTable`, so they need a named table. */
  private readonly fallbackCtx: DecodeContext;

  constructor(private readonly config: NormalizerConfig) {
    if (config.format === 'auto') this.decoders = FORMATS;
    else {
      const only = formatByName(config.format);
      if (!only) throw decodeError('unknown-format', `format "${config.format}" is not known`);
      this.decoders = [only];
    }
    const tables = new Map(config.tables.map((t) => [t.source, t]));
    this.tables = tables;
    // Flattened Debezium deletes reach the topic only as tombstones; elsewhere a tombstone follows a delete event.
    this.tombstones = config.kafkaTombstones ?? (config.format === FLATTENED_FORMAT ? 'delete' : config.format === 'auto' ? 'auto' : 'ignore');
    const only = config.tables.length === 1 ? config.tables[0]?.source : undefined;
    this.ctx = {
      keyColumns: (table) => tables.get(table)?.key,
      placeholder: config.placeholder,
      dmsBeforeImageField: config.dms.beforeImageField,
      ...(only === undefined ? {} : { onlyTable: only }),
    };
    this.fallbackCtx = config.format === 'auto' ? { ...this.ctx, onlyTable: undefined } : this.ctx;
  }

  /** Builds the inbound message for a record: parsed, unwrapped, not yet interpreted. */
  inbound(record: RawRecord, texts: RecordTexts = recordTexts(record)): InboundMessage {
    const rawValue = texts.value !== null ? parseText(texts.value, 'message value') : null;
    const value = unwrapSchema(rawValue);
    const key = unwrapSchema(parseKey(record.key, texts.key));
    return {
      key: key.payload,
      keySchema: key.schema,
      value: value.payload,
      valueSchema: value.schema,
      topic: record.topic,
      headers: record.headers,
      transport: record.transport,
    };
  }

  /** Never throws: returns the events of the record, or a rejection with its reason. */
  normalize(record: RawRecord): Normalized {
    let message: InboundMessage | null = null;
    try {
      const texts = recordTexts(record);
      message = this.inbound(record, texts);
      if (message.value === null) return this.tombstone(message, texts, record.tombstone);
      const decoder = this.detect(message);
      const events = decoder.decode(message, this.ctx).flatMap((e): NormalizedEvent[] => (e.kind === 'change' ? this.validate(e) : [e]));
      if (decoder.name === FLATTENED_FORMAT) for (const e of events) if (e.table !== null) this.flattened.add(e.table);
      return { ok: true, message, events, format: decoder.name, texts };
    } catch (err) {
      if (err instanceof DecodeError && isQuarantineReason(err.reason)) {
        const table = err.context.table;
        return { ok: false, reason: err.reason, detail: err.message, message, ...(table !== undefined ? { table } : {}) };
      }
      const code = err instanceof DecodeError ? `${err.reason}: ` : '';
      return { ok: false, reason: 'decoder-error', detail: `unexpected decoder failure: ${code}${errorMessage(err)}`, message };
    }
  }

  /**
   * The setting for a tombstone of `table`. Under `auto`, callers that can look further (the ingest
   * reads the table's status row) call {@link noteFlattened} first for tables not yet known.
   */
  tombstoneSetting(table: string | null): TombstoneSetting {
    return (table === null ? undefined : this.tables.get(table)?.kafkaTombstones) ?? this.tombstones;
  }

  /** The table of a tombstone record whose `auto` setting this Normalizer cannot settle yet; null for any other record. */
  openTombstoneTable(record: RawRecord): string | null {
    if (record.value !== null && record.value.length > 0) return null;
    const table = tombstoneTable(record.topic, (t) => this.tables.has(t), this.ctx.onlyTable);
    return table !== null && this.tombstoneSetting(table) === 'auto' && !this.flattened.has(table) ? table : null;
  }

  /** Records that `table` carries flattened records (e.g. its status row lists the format). */
  noteFlattened(table: string): void {
    this.flattened.add(table);
  }

  /**
   * A Kafka tombstone: a control event, or a delete of the record key, as `kafkaTombstones` says;
   * `landed` (a tombstone read back from raw) repeats the decision made when it was first applied.
   */
  private tombstone(message: InboundMessage, texts: RecordTexts, landed: TombstoneMode | undefined): Normalized {
    const table = tombstoneTable(message.topic, (t) => this.tables.has(t), this.ctx.onlyTable);
    const setting = landed ?? this.tombstoneSetting(table);
    const mode: TombstoneMode = setting === 'auto' ? (table !== null && this.flattened.has(table) ? 'delete' : 'ignore') : setting;
    if (mode === 'ignore') {
      const why = setting === 'auto' ? 'kafkaTombstones is auto and no Debezium flattened record of this table has been seen yet' : undefined;
      return { ok: true, message, events: [ignoredTombstone(message, table, why)], format: 'kafka', texts };
    }
    if (table === null) unknownTombstoneTable(message, [...this.tables.keys()]);
    const keyColumns = this.tables.get(table)?.key ?? [];
    return { ok: true, message, events: this.validate(tombstoneDelete(message, table, keyColumns)), format: 'kafka', texts };
  }

  private detect(message: InboundMessage): FormatDecoder {
    const found = this.decoders.find((d) => d.detect(message)) ?? this.decoders.find((d) => d.fallback?.(message, this.fallbackCtx) === true);
    if (found) return found;
    const expected = this.decoders.map((d) => `${d.name} (${d.shape})`).join('; ');
    const top = isJsonObject(message.value) ? `an object with fields [${Object.keys(message.value).slice(0, 12).join(', ')}]` : `a JSON ${Array.isArray(message.value) ? 'array' : typeof message.value}`;
    throw decodeError('unknown-format', `message is ${top}, which matches no known format; expected ${expected}`);
  }

  /** Checks a change against the config (see {@link validateIn}); rejections name the table. */
  private validate(event: ChangeEvent): ChangeEvent[] {
    try {
      return this.validateIn(event);
    } catch (err) {
      if (err instanceof DecodeError && err.context.table === undefined) {
        throw new DecodeError(err.reason, err.message, { cause: err, context: { ...err.context, table: event.table } });
      }
      throw err;
    }
  }

  /**
   * Checks a change against the config and returns it with its key normalized: one event, or two
   * for an update that changes the primary key (see {@link splitKeyChange}).
   */
  private validateIn(decoded: ChangeEvent): ChangeEvent[] {
    const table = this.tables.get(decoded.table);
    if (!table) {
      const known = this.config.tables.map((t) => t.source).join(', ');
      throw decodeError('unknown-table', `table "${decoded.table}" is not configured (configured: ${known})`);
    }
    checkColumnCount(decoded, this.config.apply.maxColumns);
    // Long decimals become text first (a documented mapping, key columns excepted); what DynamoDB
    // still cannot hold is refused before anything else reads the event.
    const event = withDecimalText(decoded, table.key);
    checkChange(event, table, this.config.placeholder);
    if (event.op === 't') return [event];
    if ((event.op === 'c' || event.op === 'r' || event.op === 'u') && event.after === null && event.patch === null) {
      throw decodeError('missing-after', `${event.op} event for "${event.table}" carries no after image and no patch`);
    }
    for (const image of [event.after, event.patch?.set ?? null]) {
      if (image === null) continue;
      const reserved = Object.keys(image).find((c) => c.startsWith(RESERVED));
      if (reserved) throw decodeError('reserved-column', `column "${reserved}" of "${event.table}" starts with "${RESERVED}", which is reserved for tidemark metadata`);
    }
    // Own properties only: a key column named `constructor` must not read Object.prototype's.
    const merged: JsonObject = {};
    for (const col of table.key) {
      const v = firstPresent(col, [event.key, event.after, event.patch?.set ?? null, event.before]);
      if (v === undefined) throw decodeError('missing-key', `key column "${col}" of "${event.table}" is missing or null in the message key and in every image`);
      merged[col] = v;
    }
    return splitKeyChange(table, { ...event, key: normalizeKey(table, merged) });
  }

  /** The canonical key text of a validated change, for grouping. */
  keyIdOf(event: ChangeEvent): string {
    const table = this.tables.get(event.table);
    return table ? keyId(table, event.key) : JSON.stringify(event.key);
  }
}

/** Refuses a change whose images carry more than `max` columns (counted without allocating). */
function checkColumnCount(event: ChangeEvent, max: number): void {
  for (const [what, image] of [['after image', event.after], ['patch', event.patch?.set ?? null], ['before image', event.before]] as const) {
    if (image === null) continue;
    let n = 0;
    for (const column in image) {
      if (Object.hasOwn(image, column) && ++n > max) {
        throw decodeError('too-many-columns', `the ${what} of "${event.table}" carries more than ${max} columns (apply.maxColumns)`);
      }
    }
  }
}

/**
 * An update whose before image holds another primary key than its after image (DMS before image,
 * Maxwell and Canal `old`, CockroachDB `diff` `before`) moves the row: the old key gets a delete at
 * the same position, then the new key the row. A key column the before image does not carry (or
 * carries as null) is unchanged. Debezium sends a key change as delete + create instead, which
 * needs nothing here.
 */
export function splitKeyChange(table: KeyedTable, event: ChangeEvent): ChangeEvent[] {
  const before = event.before;
  if (event.op !== 'u' || before === null || !table.key.some((col) => isPresent(own(before, col)))) return [event];
  const old: Key = {};
  for (const col of table.key) {
    const value = firstPresent(col, [before, event.key]);
    if (value !== undefined) old[col] = value;
  }
  const oldKey = normalizeKey(table, old);
  if (keyId(table, oldKey) === keyId(table, event.key)) return [event];
  const tombstone: ChangeEvent = { ...event, op: 'd', key: oldKey, after: null, patch: null, placeholders: [], decimalText: [] };
  return [tombstone, event];
}

function isPresent(value: JsonValue | undefined): value is JsonValue {
  return value !== undefined && value !== null;
}

/** The first non-null own value of `column` among the rows, or undefined. */
function firstPresent(column: string, rows: readonly (Row | null)[]): JsonValue | undefined {
  for (const row of rows) {
    const v = row === null ? undefined : own(row, column);
    if (isPresent(v)) return v;
  }
  return undefined;
}

/** A decimal DynamoDB cannot hold exactly: a number with more than 38 significant digits. */
function isLongDecimal(value: JsonValue | undefined): boolean {
  return isLosslessNumber(value) && significantDigits(value.value).length > DYNAMO_NUMBER_DIGITS;
}

function hasLongDecimal(row: Row | null): boolean {
  if (row === null) return false;
  for (const column in row) if (Object.hasOwn(row, column) && isLongDecimal(row[column])) return true;
  return false;
}

/**
 * Stores decimals of more than 38 significant digits as their exact text, and lists those columns
 * in `decimalText`, so that one logical type lands as one DynamoDB type from every source: N when
 * it fits, S (flagged) when it does not. docs/formats.md, "Decimals".
 */
export function withDecimalText(event: ChangeEvent, keyColumns: readonly string[] = []): ChangeEvent {
  // The common case, no long decimal anywhere, allocates nothing.
  if (!hasLongDecimal(event.after) && (event.patch === null || !hasLongDecimal(event.patch.set))) return event;
  const columns = new Set<string>();
  const keys = new Set(keyColumns);
  const map = (row: Row | null): Row | null => {
    if (row === null || !hasLongDecimal(row)) return row;
    const out: Row = {};
    for (const [column, v] of Object.entries(row)) {
      if (isLosslessNumber(v) && isLongDecimal(v) && !keys.has(column)) {
        put(out, column, v.value);
        columns.add(column);
      } else put(out, column, v);
    }
    return out;
  };
  const after = map(event.after);
  const set = event.patch === null ? null : map(event.patch.set);
  if (columns.size === 0) return event;
  return { ...event, after, patch: event.patch === null || set === null ? event.patch : { ...event.patch, set }, decimalText: [...columns] };
}
