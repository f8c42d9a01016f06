/**
 * Arbitrary JSON and byte mutations of valid messages of every format (the corpus's good records):
 * normalizing never throws, a rejection always has a specific reason (never the catch-all
 * `decoder-error`), and every accepted change satisfies the limits (its position encodes, its
 * commit time is a safe integer, its values are within DynamoDB's limits).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isJsonObject, type JsonValue, parseJson, stringifyJson } from '../../../../functions/core/json.js';
import { checkCommitTs, checkPosition, checkRow } from '../../../../functions/core/limits.js';
import { Normalizer, type RawRecord } from '../../../../functions/core/normalize.js';
import { encodePosition } from '../../../../functions/core/position.js';
import { corpusConfig, goodRecords } from '../../../corpus/bad-input.js';

const normalizer = new Normalizer(corpusConfig);
const goods = goodRecords(1);

const record = (value: Uint8Array): RawRecord => ({
  value,
  key: null,
  topic: null,
  headers: {},
  transport: { kind: 'kinesis', stream: 's', shard: 'shardId-000000000000', sequence: '49590000000000000000000000000000000000000000000000000007', partitionKey: null, arrivalTime: 0 },
});

function check(value: Uint8Array): void {
  const r = normalizer.normalize(record(value));
  if (!r.ok) {
    assert.notEqual(r.reason, 'decoder-error', `generic rejection: ${r.detail}`);
    assert.ok(r.detail.length > 0);
    return;
  }
  for (const e of r.events) {
    if (e.position) encodePosition(e.position.tuple);
    checkCommitTs(e.commitTs);
    if (e.kind !== 'change') continue;
    checkPosition(e.format, e.position);
    if (e.after) checkRow(e.after, 'after image');
    stringifyJson(e.key);
  }
}

/** Replaces the value at a random path of a JSON document. */
function replaceAt(doc: JsonValue, path: readonly number[], replacement: JsonValue): JsonValue {
  if (path.length === 0) return replacement;
  const [step, ...rest] = path as [number, ...number[]];
  if (Array.isArray(doc) && doc.length > 0) {
    const i = step % doc.length;
    return doc.map((v, j) => (j === i ? replaceAt(v, rest, replacement) : v));
  }
  if (isJsonObject(doc)) {
    const keys = Object.keys(doc);
    if (keys.length === 0) return replacement;
    const k = keys[step % keys.length] as string;
    return { ...doc, [k]: replaceAt(doc[k] as JsonValue, rest, replacement) };
  }
  return replacement;
}

describe('normalize under mutation (property)', () => {
  it('every good record of every format is accepted unmutated', () => {
    for (const g of goods) {
      const r = normalizer.normalize(record(g.value));
      assert.ok(r.ok, `${g.name}: ${r.ok ? '' : `${r.reason} ${r.detail}`}`);
    }
  });

  it('byte mutations: flips, cuts and insertions', () => {
    fc.assert(
      fc.property(fc.constantFrom(...goods), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert')), { minLength: 1, maxLength: 4 }), (g, edits) => {
        let bytes = Buffer.from(g.value);
        for (const [at, byte, op] of edits) {
          const i = at % (bytes.length + 1);
          if (op === 'flip' && bytes.length > 0) bytes[i % bytes.length] = byte;
          else if (op === 'cut') bytes = bytes.subarray(0, i);
          else bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
        }
        check(bytes);
      }),
      { numRuns: 1500 },
    );
  });

  it('JSON mutations: any value at any path', () => {
    fc.assert(
      fc.property(fc.constantFrom(...goods), fc.array(fc.nat(), { maxLength: 5 }), fc.jsonValue({ maxDepth: 3 }), (g, path, replacement) => {
        const doc = parseJson(Buffer.from(g.value).toString('utf8'));
        const mutated = replaceAt(doc, path, parseJson(JSON.stringify(replacement) ?? 'null'));
        check(Buffer.from(stringifyJson(mutated), 'utf8'));
      }),
      { numRuns: 1500 },
    );
  });
});
