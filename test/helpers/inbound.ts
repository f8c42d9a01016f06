/**
 * Test helpers for format decoders: build InboundMessages, a DecodeContext, and load the JSON
 * fixtures under `test/fixtures/<format>/` losslessly (as the pipeline parses messages).
 */
import { readFileSync } from 'node:fs';
import { isJsonObject, type JsonValue, parseJson } from '../../functions/core/json.js';
import type { DecodeContext, InboundMessage } from '../../functions/core/types.js';

export interface InboundOptions {
  readonly key?: JsonValue | null;
  readonly topic?: string | null;
  /** Kafka offset / Kinesis sequence, decimal text. Default "1". */
  readonly sequence?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A full InboundMessage on a Kafka transport, with the value already parsed and unwrapped. */
export function inbound(value: JsonValue | null, options: InboundOptions = {}): InboundMessage {
  const topic = options.topic ?? null;
  return {
    key: options.key ?? null,
    keySchema: null,
    value,
    valueSchema: null,
    topic,
    headers: options.headers ?? {},
    transport: {
      kind: 'kafka',
      stream: topic ?? 'test',
      shard: '0',
      sequence: options.sequence ?? '1',
      partitionKey: null,
      arrivalTime: 0,
    },
  };
}

export interface Fixture {
  readonly key: JsonValue | null;
  readonly value: JsonValue | null;
}

/** Loads `test/fixtures/<dir>/<name>.json` (`{message_key, message_value, …}`) without rounding numbers. */
export function fixture(dir: string, name: string): Fixture {
  const url = new URL(`../fixtures/${dir}/${name}.json`, import.meta.url);
  const doc = parseJson(readFileSync(url, 'utf8'));
  if (!isJsonObject(doc)) throw new TypeError(`fixture ${dir}/${name} is not a JSON object`);
  return { key: doc.message_key ?? null, value: doc.message_value ?? null };
}

/** Builds the InboundMessage for a fixture; options override the fixture's key. */
export function inboundFixture(dir: string, name: string, options: InboundOptions = {}): InboundMessage {
  const f = fixture(dir, name);
  return inbound(f.value, { key: f.key, ...options });
}

/** A DecodeContext with the given key columns per table, default placeholder and DMS field `before-image`. */
export function context(keys: Readonly<Record<string, readonly string[]>> = {}, dmsBeforeImageField = 'before-image'): DecodeContext {
  return {
    keyColumns: (table) => keys[table],
    placeholder: '__debezium_unavailable_value',
    dmsBeforeImageField,
  };
}
