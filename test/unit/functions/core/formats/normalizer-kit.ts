/**
 * A Normalizer over a small validated config, records built from fixtures, and a tiny apply loop
 * (planBatch + MemoryStore, the production decision) for decoder regression tests.
 */
import { parseConfig } from '../../../../../lib/config/config.js';
import { type JsonValue, stringifyJson } from '../../../../../functions/core/json.js';
import { MemoryStore } from '../../../../../functions/core/memory-store.js';
import { type Normalized, Normalizer, type RawRecord } from '../../../../../functions/core/normalize.js';
import { planBatch } from '../../../../../functions/core/plan.js';
import type { ChangeEvent } from '../../../../../functions/core/types.js';
import { readFixture } from '../../../../helpers/messages.js';

export interface TableSpec {
  readonly source: string;
  readonly key: readonly string[];
  readonly keyTypes?: Readonly<Record<string, 'string' | 'number'>>;
  readonly kafkaTombstones?: 'ignore' | 'delete';
}

/** A Normalizer for these tables; `extra` sets pipeline fields such as `format` or `kafkaTombstones`. */
export function normalizerFor(tables: readonly TableSpec[], extra: Readonly<Record<string, unknown>> = {}): Normalizer {
  const config = parseConfig({
    name: 'shop',
    tables: tables.map((t, i) => ({ target: `shop-table-${i}`, ...t })),
    raw: { bucket: 'shop-raw' },
    ...extra,
  });
  return new Normalizer(config);
}

export interface RecordOptions {
  readonly key?: JsonValue | null;
  readonly topic?: string | null;
  readonly sequence?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

const bytes = (v: JsonValue | null | undefined): Uint8Array | null => (v === null || v === undefined ? null : new TextEncoder().encode(stringifyJson(v)));

/** A delivered Kafka record whose value (and key) are the JSON text of the given values. */
export function kafkaRecord(value: JsonValue | null, options: RecordOptions = {}): RawRecord {
  const topic = options.topic ?? null;
  return {
    value: bytes(value),
    key: bytes(options.key),
    topic,
    headers: options.headers ?? {},
    transport: { kind: 'kafka', stream: topic ?? 'cdc', shard: '0', sequence: options.sequence ?? '1', partitionKey: null, arrivalTime: 1_735_732_900_000 },
  };
}

/**
 * A Kinesis record of a value, as Aurora DSQL writes one: a random-looking partition key, which
 * decoders must not take for the row's key.
 */
export function kinesisRecord(value: JsonValue | null, shard = 'shardId-000000000000', sequence = '49590338271490256608559692538361571095921575989136588898'): RawRecord {
  const partitionKey = 'f3b1c6a2-partition';
  return {
    value: bytes(value),
    key: new TextEncoder().encode(partitionKey),
    topic: null,
    headers: {},
    transport: { kind: 'kinesis', stream: 'cdc', shard, sequence, partitionKey, arrivalTime: 1_735_732_900_000 },
  };
}

/** The record of a fixture: its value, key, topic and headers; `options` override. */
export function fixtureRecord(dir: string, name: string, options: RecordOptions = {}): RawRecord {
  const f = readFixture(dir, name);
  return kafkaRecord(f.message_value, { key: f.message_key, topic: f.topic ?? null, headers: f.headers ?? {}, ...options });
}

/** The change events of an accepted record; throws with the reason when it was rejected. */
export function changesOf(result: Normalized): ChangeEvent[] {
  if (!result.ok) throw new Error(`rejected: ${result.reason}: ${result.detail}`);
  return result.events.filter((e): e is ChangeEvent => e.kind === 'change');
}

/** Applies batches of records through normalize → planBatch → MemoryStore; returns the store. */
export function applyBatches(normalizer: Normalizer, batches: readonly (readonly RawRecord[])[], store = new MemoryStore()): MemoryStore {
  for (const batch of batches) {
    const events = batch.flatMap((r) => changesOf(normalizer.normalize(r)));
    const plan = planBatch(events, (e) => normalizer.keyIdOf(e));
    for (const w of plan.writes) store.apply(w);
  }
  return store;
}
