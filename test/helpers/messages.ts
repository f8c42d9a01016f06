/**
 * Test factories for inbound messages and the decode context, plus a loader for the JSON
 * fixtures under `test/fixtures/` (parsed losslessly, like the pipeline does).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import { parseJson } from '../../functions/core/json.js';
import { unwrapSchema } from '../../functions/core/normalize.js';
import type { ChangeEvent, ControlEvent, DecodeContext, InboundMessage, NormalizedEvent, TransportMeta } from '../../functions/core/types.js';

export interface InboundOptions {
  readonly key?: JsonValue | null;
  readonly topic?: string | null;
  readonly valueSchema?: JsonObject | null;
  readonly keySchema?: JsonObject | null;
  readonly headers?: Readonly<Record<string, string>>;
  /** Kafka offset / Kinesis sequence number, decimal text. Default "1". */
  readonly sequence?: string;
}

/** The pipeline's own JsonConverter unwrapping, so decoder tests see exactly what the pipeline passes on. */
export { unwrapSchema };

/**
 * Builds an InboundMessage from a (possibly schema-wrapped) Kafka value and options, unwrapping
 * `{schema, payload}` on both key and value. Explicit `valueSchema`/`keySchema` options win.
 */
export function inboundFrom(value: JsonValue | null, options: InboundOptions = {}): InboundMessage {
  const v = unwrapSchema(value);
  const k = unwrapSchema(options.key ?? null);
  const topic = options.topic ?? null;
  const transport: TransportMeta = {
    kind: 'kafka',
    stream: topic ?? 'test-topic',
    shard: '0',
    sequence: options.sequence ?? '1',
    partitionKey: null,
    arrivalTime: 1_735_732_900_000,
  };
  return {
    key: k.payload,
    keySchema: options.keySchema ?? k.schema,
    value: v.payload,
    valueSchema: options.valueSchema ?? v.schema,
    topic,
    headers: options.headers ?? {},
    transport,
  };
}

/** A decode context with the given key columns per table (default placeholder, DMS field `before-image`). */
export function decodeContext(keys: Readonly<Record<string, readonly string[]>> = {}, placeholder = '__debezium_unavailable_value'): DecodeContext {
  return {
    keyColumns: (table: string) => keys[table],
    placeholder,
    dmsBeforeImageField: 'before-image',
  };
}

/** One example message as stored in `test/fixtures/<dir>/<name>.json`. */
export interface MessageFixture {
  readonly format: string;
  readonly case: string;
  readonly message_key: JsonValue | null;
  readonly message_value: JsonValue | null;
  readonly topic?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly notes?: string | null;
}

/** Reads `test/fixtures/<dir>/<name>.json` with the lossless parser. */
export function readFixture(dir: string, name: string): MessageFixture {
  const url = new URL(`../fixtures/${dir}/${name}.json`, import.meta.url);
  return parseJson(readFileSync(url, 'utf8')) as unknown as MessageFixture;
}

/** The InboundMessage of a fixture: key, value (unwrapped), topic and headers as stored; `options` override. */
export function inboundFromFixture(dir: string, name: string, options: InboundOptions = {}): InboundMessage {
  const f = readFixture(dir, name);
  return inboundFrom(f.message_value, { key: f.message_key, topic: f.topic ?? null, headers: f.headers ?? {}, ...options });
}

/** Asserts that decoding produced exactly one change event and returns it. */
export function onlyChange(events: readonly NormalizedEvent[]): ChangeEvent {
  assert.equal(events.length, 1, `expected one event, got ${events.length}`);
  const event = events[0]!;
  assert.equal(event.kind, 'change', `expected a change event, got ${event.kind}`);
  return event as ChangeEvent;
}

/** Asserts that decoding produced exactly one control event and returns it. */
export function onlyControl(events: readonly NormalizedEvent[]): ControlEvent {
  assert.equal(events.length, 1, `expected one event, got ${events.length}`);
  const event = events[0]!;
  assert.equal(event.kind, 'control', `expected a control event, got ${event.kind}`);
  return event as ControlEvent;
}
