/**
 * Short names for the decoder-test factories in messages.ts, as the MongoDB, CockroachDB, DMS,
 * Maxwell and Canal tests use them.
 */
import type { JsonValue } from '../../functions/core/json.js';
import type { DecodeContext, InboundMessage } from '../../functions/core/types.js';
import { decodeContext, type InboundOptions, inboundFrom, inboundFromFixture, readFixture } from './messages.js';

export type { InboundOptions };

/** A full InboundMessage on a Kafka transport; `{schema, payload}` wrapping is split as the pipeline does. */
export const inbound: (value: JsonValue | null, options?: InboundOptions) => InboundMessage = inboundFrom;

/** Loads `test/fixtures/<dir>/<name>.json` without rounding numbers. */
export function fixture(dir: string, name: string): { key: JsonValue | null; value: JsonValue | null } {
  const f = readFixture(dir, name);
  return { key: f.message_key ?? null, value: f.message_value ?? null };
}

/** The InboundMessage of a fixture; options override the fixture's key. */
export const inboundFixture: (dir: string, name: string, options?: InboundOptions) => InboundMessage = inboundFromFixture;

/** A DecodeContext with the given key columns per table, the default placeholder and a DMS before-image field. */
export function context(keys: Readonly<Record<string, readonly string[]>> = {}, dmsBeforeImageField = 'before-image'): DecodeContext {
  return { ...decodeContext(keys), dmsBeforeImageField };
}
