/**
 * No input crashes a decoder: arbitrary JSON, and JSON and byte mutations of every valid fixture,
 * make each decoder return events or throw a DecodeError whose reason is in the closed vocabulary
 * (reasons.ts), never anything else; and Normalizer.normalize never throws at all.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { DECODERS, FORMAT_NAMES, type FormatName } from '../../../../../functions/core/formats/index.js';
import { cloneJson, isJsonObject, type JsonValue, LosslessNumber, stringifyJson } from '../../../../../functions/core/json.js';
import { isQuarantineReason } from '../../../../../functions/core/reasons.js';
import { CONTROL_KINDS, type DecodeContext, isRowOp, type NormalizedEvent } from '../../../../../functions/core/types.js';
import { inboundFrom, readFixture } from '../../../../helpers/messages.js';
import { kafkaRecord, normalizerFor } from './normalizer-kit.js';

/** Fixture folders holding valid messages of each format. */
const FIXTURE_DIRS: Readonly<Record<FormatName, { dir: string; match: RegExp }>> = {
  debezium: { dir: 'debezium', match: /^(pg|mysql|sqlserver|oracle|legacy|mariadb|db2|informix|vitess|spanner|cockroachdb|yashandb)-/ },
  'debezium-flattened': { dir: 'debezium', match: /^flattened-/ },
  'debezium-mongodb': { dir: 'debezium-mongodb', match: /./ },
  cockroachdb: { dir: 'cockroachdb', match: /./ },
  dms: { dir: 'dms', match: /./ },
  maxwell: { dir: 'maxwell', match: /./ },
  canal: { dir: 'canal', match: /./ },
  generic: { dir: 'generic', match: /./ },
  'aurora-dsql': { dir: 'aurora-dsql', match: /./ },
};

interface Sample {
  readonly key: JsonValue | null;
  readonly value: JsonValue | null;
  readonly topic: string | null;
}

function samples(format: FormatName): Sample[] {
  const { dir, match } = FIXTURE_DIRS[format];
  const url = new URL(`../../../../fixtures/${dir}/`, import.meta.url);
  return readdirSync(url)
    .filter((f) => f.endsWith('.json') && match.test(f))
    .map((f) => readFixture(dir, f.slice(0, -'.json'.length)))
    .map((f) => ({ key: f.message_key, value: f.message_value, topic: f.topic ?? null }));
}

const ctx: DecodeContext = { keyColumns: () => ['id'], placeholder: '__debezium_unavailable_value', dmsBeforeImageField: 'before-image' };

/** Values that have broken decoders before: prototype names, huge and tiny numbers, odd text. */
const nasty: fc.Arbitrary<JsonValue> = fc.constantFrom<JsonValue>(
  null,
  '',
  'constructor',
  '__proto__',
  'toString',
  -1,
  1.5,
  new LosslessNumber('1e400'),
  new LosslessNumber('123456789012345678901234567890123456789012'),
  'x'.repeat(3000),
  [],
  {},
  { $numberLong: 'x' },
  '12.50',
  'c',
  'd',
  'INIT',
);
const anyJson: fc.Arbitrary<JsonValue> = fc.oneof(fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>, nasty);

/** Every path (list of keys and indexes) into a JSON value, the root included. */
function paths(value: JsonValue | null, prefix: (string | number)[] = []): (string | number)[][] {
  const out = [prefix];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) out.push(...paths(v, [...prefix, i]));
  }
  else if (isJsonObject(value)) for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

type Mutation = { kind: 'set'; value: JsonValue } | { kind: 'delete' } | { kind: 'rename'; name: string };

/** A copy of `root` with one mutation applied at `path`. */
function mutate(root: JsonValue | null, path: (string | number)[], m: Mutation): JsonValue | null {
  if (path.length === 0) return m.kind === 'set' ? m.value : null;
  const copy = cloneJson(root);
  let parent: JsonValue | null = copy;
  for (const part of path.slice(0, -1)) {
    if (Array.isArray(parent) && typeof part === 'number') parent = parent[part] ?? null;
    else if (isJsonObject(parent) && typeof part === 'string') parent = parent[part] ?? null;
  }
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') {
    if (m.kind === 'set') parent[last] = m.value;
    else parent.splice(last, 1);
  } else if (isJsonObject(parent) && typeof last === 'string') {
    const old = parent[last];
    delete parent[last];
    if (m.kind === 'set') parent[last] = m.value;
    if (m.kind === 'rename' && old !== undefined) parent[m.name] = old;
  }
  return copy;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: anyJson.map((value) => ({ kind: 'set' as const, value })) },
  { weight: 2, arbitrary: fc.constant({ kind: 'delete' as const }) },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'op', 'source', '', 'after').map((name) => ({ kind: 'rename' as const, name })) },
);

/** A decoded event is well-formed: a known kind, op or control kind, and a table for every change. */
function assertEvent(e: NormalizedEvent): void {
  if (e.kind === 'change') {
    assert.ok(isRowOp(e.op), `op ${String(e.op)}`);
    assert.equal(typeof e.table, 'string');
    assert.ok(Array.isArray(e.position.tuple));
  } else {
    assert.equal(e.kind, 'control');
    assert.ok((CONTROL_KINDS as readonly string[]).includes(e.control));
  }
}

/** Decodes, and accepts only events or a DecodeError with a known reason. */
function decodeOrReason(format: FormatName, sample: Sample): void {
  const decoder = DECODERS[format];
  const message = inboundFrom(sample.value, { key: sample.key, topic: sample.topic, sequence: '7' });
  // detect and fallback are cheap guesses and never throw, not even a DecodeError.
  assert.equal(typeof decoder.detect(message), 'boolean');
  assert.equal(typeof (decoder.fallback?.(message, ctx) ?? false), 'boolean');
  try {
    for (const e of decoder.decode(message, ctx)) assertEvent(e);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.ok(err instanceof DecodeError, `${format} threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    assert.ok(isQuarantineReason(err.reason), `${format} threw the unknown reason "${err.reason}"`);
  }
}

const RUNS = 150;

describe('every decoder returns events or a DecodeError with a known reason, never anything else', () => {
  for (const format of FORMAT_NAMES) {
    const valid = samples(format);

    it(`${format}: decodes each of its ${valid.length} fixtures`, () => {
      assert.ok(valid.length > 0);
      for (const s of valid) decodeOrReason(format, s);
    });

    it(`${format}: arbitrary JSON as key and value`, () => {
      fc.assert(
        fc.property(anyJson, fc.option(anyJson, { nil: null }), (value, key) => decodeOrReason(format, { value, key, topic: null })),
        { numRuns: RUNS },
      );
    });

    it(`${format}: one JSON mutation of a valid message`, () => {
      const cases = fc.nat({ max: valid.length - 1 }).chain((i) => {
        const sample = valid[i] ?? valid[0];
        assert.ok(sample);
        const all = paths(sample.value);
        return fc.record({ sample: fc.constant(sample), path: fc.constantFrom(...all), m: mutation, keyToo: fc.boolean() });
      });
      fc.assert(
        fc.property(cases, ({ sample, path, m, keyToo }) => {
          const value = mutate(sample.value, path, m);
          const key = keyToo ? mutate(sample.key, [], m) : sample.key;
          decodeOrReason(format, { ...sample, value, key });
        }),
        { numRuns: RUNS * 2 },
      );
    });
  }
});

describe('Normalizer.normalize never throws: byte mutations of valid messages', () => {
  const all = FORMAT_NAMES.flatMap((f) => samples(f));
  const normalizers = [
    normalizerFor([{ source: 'public.customers', key: ['id'] }]),
    normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }, { source: 'users', key: ['city', 'id'] }], { kafkaTombstones: 'delete' }),
  ];
  const byteEdit = fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }) }),
  );

  it('returns events or a rejection with a known reason, for any edit of any fixture', () => {
    fc.assert(
      fc.property(fc.nat({ max: all.length - 1 }), fc.array(byteEdit, { minLength: 1, maxLength: 3 }), fc.nat({ max: 1 }), (i, edits, which) => {
        const sample = all[i] ?? all[0];
        assert.ok(sample);
        const record = kafkaRecord(null, { key: sample.key, topic: sample.topic });
        let bytes = new TextEncoder().encode(sample.value === null ? '' : stringifyJson(sample.value));
        for (const edit of edits) {
          const at = bytes.length === 0 ? 0 : edit.at % bytes.length;
          if (edit.kind === 'flip') bytes[at] = edit.byte;
          else if (edit.kind === 'cut') bytes = bytes.slice(0, at);
          else bytes = new Uint8Array([...bytes.slice(0, at), ...edit.bytes, ...bytes.slice(at)]);
        }
        const normalizer = normalizers[which] ?? normalizers[0];
        assert.ok(normalizer);
        const result = normalizer.normalize({ ...record, value: bytes });
        if (result.ok) for (const e of result.events) assertEvent(e);
        else assert.ok(isQuarantineReason(result.reason));
      }),
      { numRuns: 400 },
    );
  });

  it('returns events or a rejection for arbitrary JSON and arbitrary bytes', () => {
    const normalizer = normalizers[1];
    assert.ok(normalizer);
    fc.assert(
      fc.property(fc.oneof(anyJson.map((v) => new TextEncoder().encode(stringifyJson(v))), fc.uint8Array({ maxLength: 64 })), fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null }), (value, key) => {
        const result = normalizer.normalize({ ...kafkaRecord(null, { topic: 'dbserver1.inventory.customers' }), value, key });
        assert.ok(result.ok || isQuarantineReason(result.reason));
      }),
      { numRuns: 300 },
    );
  });
});
