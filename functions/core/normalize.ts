/**
 * From delivered bytes to validated normalized events, or a quarantine reason.
 *
 * decode → parse losslessly → unwrap `{schema, payload}` → detect the format → decode →
 * check against the config (table configured, key columns present and typed, no reserved
 * column names). Nothing here throws for bad input: every failure is a {@link Rejection} with a
 * specific reason, which the caller quarantines. Nothing is dropped silently.
 */
import type { TableConfig, TidemarkConfig } from '../commons/config.js';
import { DecodeError } from './errors.js';
import { FORMATS, formatByName } from './formats/index.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from './json.js';
import { keyId, normalizeKey } from './keys.js';
import type { ChangeEvent, DecodeContext, FormatDecoder, InboundMessage, NormalizedEvent, TransportMeta } from './types.js';

/** A delivered record as the transport gives it. `value === null` (or empty) is a Kafka tombstone. */
export interface RawRecord {
  readonly value: Uint8Array | null;
  /** Kafka message key bytes, or the Kinesis partition key as UTF-8. */
  readonly key: Uint8Array | null;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly transport: TransportMeta;
}

export interface Accepted {
  readonly ok: true;
  readonly message: InboundMessage;
  readonly events: readonly NormalizedEvent[];
  /** The format that decoded the message. */
  readonly format: string;
}

export interface Rejection {
  readonly ok: false;
  /** Machine-readable reason: invalid-json, unknown-format, unknown-table, missing-key, … */
  readonly reason: string;
  /** Human-readable detail naming what was expected. Never contains row values. */
  readonly detail: string;
  readonly message: InboundMessage | null;
  /** The source table the record named, when the decoder got that far (status rows count it there). */
  readonly table?: string;
}

export type Normalized = Accepted | Rejection;

const RESERVED = '__';
const utf8 = new TextDecoder('utf-8', { fatal: true });

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

function parseBytes(bytes: Uint8Array, what: string): JsonValue {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (err) {
    throw new DecodeError('invalid-utf8', `${what} is not valid UTF-8`, { cause: err });
  }
  try {
    return parseJson(text);
  } catch (err) {
    throw new DecodeError('invalid-json', `${what} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

function parseKey(bytes: Uint8Array | null): JsonValue | null {
  if (!bytes || bytes.length === 0) return null;
  try {
    return parseJson(utf8.decode(bytes));
  } catch {
    // A Kinesis partition key is often a plain string, not JSON: keep it as text.
    return new TextDecoder().decode(bytes);
  }
}

export class Normalizer {
  private readonly decoders: readonly FormatDecoder[];
  private readonly ctx: DecodeContext;
  private readonly tables: ReadonlyMap<string, TableConfig>;

  constructor(private readonly config: TidemarkConfig) {
    if (config.format === 'auto') this.decoders = FORMATS;
    else {
      const only = formatByName(config.format);
      if (!only) throw new DecodeError('unknown-format', `format "${config.format}" is not known`);
      this.decoders = [only];
    }
    const tables = new Map(config.tables.map((t) => [t.source, t]));
    this.tables = tables;
    this.ctx = {
      keyColumns: (table) => tables.get(table)?.key,
      placeholder: config.placeholder,
      dmsBeforeImageField: config.dms.beforeImageField,
    };
  }

  /** Builds the inbound message for a record: parsed, unwrapped, not yet interpreted. */
  inbound(record: RawRecord): InboundMessage {
    const rawValue = record.value && record.value.length > 0 ? parseBytes(record.value, 'message value') : null;
    const value = unwrapSchema(rawValue);
    const key = unwrapSchema(parseKey(record.key));
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

  normalize(record: RawRecord): Normalized {
    let message: InboundMessage | null = null;
    try {
      message = this.inbound(record);
      if (message.value === null) {
        const tombstone: NormalizedEvent = {
          kind: 'control',
          format: 'kafka',
          control: 'kafka-tombstone',
          table: null,
          position: null,
          txid: null,
          commitTs: null,
          detail: {},
        };
        return { ok: true, message, events: [tombstone], format: 'kafka' };
      }
      const decoder = this.detect(message);
      const events = decoder.decode(message, this.ctx).map((e) => (e.kind === 'change' ? this.validate(e) : e));
      return { ok: true, message, events, format: decoder.name };
    } catch (err) {
      if (err instanceof DecodeError) {
        const table = err.context.table;
        return { ok: false, reason: err.reason, detail: err.message, message, ...(table !== undefined ? { table } : {}) };
      }
      return { ok: false, reason: 'decoder-error', detail: `unexpected decoder failure: ${(err as Error).message}`, message };
    }
  }

  private detect(message: InboundMessage): FormatDecoder {
    const found = this.decoders.find((d) => d.detect(message));
    if (found) return found;
    const expected = this.decoders.map((d) => `${d.name} (${d.shape})`).join('; ');
    const top = isJsonObject(message.value) ? `an object with fields [${Object.keys(message.value).slice(0, 12).join(', ')}]` : `a JSON ${Array.isArray(message.value) ? 'array' : typeof message.value}`;
    throw new DecodeError('unknown-format', `message is ${top}, which matches no known format; expected ${expected}`);
  }

  /** Checks a change against the config and returns it with its key normalized; rejections name the table. */
  private validate(event: ChangeEvent): ChangeEvent {
    try {
      return this.validateIn(event);
    } catch (err) {
      if (err instanceof DecodeError && err.context.table === undefined) {
        throw new DecodeError(err.reason, err.message, { cause: err, context: { ...err.context, table: event.table } });
      }
      throw err;
    }
  }

  private validateIn(event: ChangeEvent): ChangeEvent {
    const table = this.tables.get(event.table);
    if (!table) {
      const known = this.config.tables.map((t) => t.source).join(', ');
      throw new DecodeError('unknown-table', `table "${event.table}" is not configured (configured: ${known})`);
    }
    if (event.op === 't') return event;
    if ((event.op === 'c' || event.op === 'r' || event.op === 'u') && event.after === null && event.patch === null) {
      throw new DecodeError('missing-after', `${event.op} event for "${event.table}" carries no after image and no patch`);
    }
    for (const image of [event.after, event.patch?.set ?? null]) {
      if (image === null) continue;
      const reserved = Object.keys(image).find((c) => c.startsWith(RESERVED));
      if (reserved) throw new DecodeError('reserved-column', `column "${reserved}" of "${event.table}" starts with "${RESERVED}", which is reserved for tidemark metadata`);
    }
    const merged: JsonObject = {};
    for (const col of table.key) {
      const v = event.key[col] ?? event.after?.[col] ?? event.patch?.set[col] ?? event.before?.[col];
      if (v !== undefined) merged[col] = v;
    }
    return { ...event, key: normalizeKey(table, merged) };
  }

  /** The canonical key text of a validated change, for grouping. */
  keyIdOf(event: ChangeEvent): string {
    const table = this.tables.get(event.table);
    return table ? keyId(table, event.key) : JSON.stringify(event.key);
  }
}
