/**
 * Split Aurora DSQL records, reassembled as the Aurora DSQL user guide says ("Understanding CDC
 * records", "Handling oversized records",
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html#cdc-oversized-records):
 * buffer fragments by chunk_id, wait for total_fragments of each chunk the main record names, join
 * the data by index, check the CRC32C, parse. The main record is the docs' example with its
 * placeholders filled in: the docs' INSERT row split into the docs' 3 fragments.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { assembleFragments, decideSplit, type FragmentPart, fragmentPart } from '../../../../../functions/core/formats/aurora-dsql-fragments.js';
import { crc32c } from '../../../../../functions/core/formats/crc32c.js';
import { cloneJson, type JsonObject, stringifyJson } from '../../../../../functions/core/json.js';
import type { ControlEvent } from '../../../../../functions/core/types.js';
import { readFixture } from '../../../../helpers/messages.js';
import { storeView } from './delivery-kit.js';
import { applyBatches, changesOf, kinesisRecord, normalizerFor } from './normalizer-kit.js';

const utf8 = (s: string) => new TextEncoder().encode(s);
const fixture = (name: string) => cloneJson(readFixture('aurora-dsql', name).message_value) as JsonObject;

/** The docs' INSERT record, and its after image split into `count` fragments of one chunk. */
function split(count: number, chunkId = 'c-7f3a', after: JsonObject = fixture('insert').after as JsonObject) {
  const text = stringifyJson(after);
  // Split on character boundaries, as Aurora DSQL does: each piece is valid UTF-8 on its own.
  const chars = Array.from(text);
  const size = Math.ceil(chars.length / count);
  const parts: FragmentPart[] = Array.from({ length: count }, (_, index) => ({ chunkId, index, data: chars.slice(index * size, (index + 1) * size).join('') }));
  const main = fixture('chunked-main');
  (main.source as JsonObject).cluster = 'kmabugltfmjdaj2siqr2qbxgju';
  main.chunked = { after: { chunk_id: chunkId, total_fragments: count, crc32c: String(crc32c(utf8(text))) } };
  return { main, parts, after };
}

const reason = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (e) {
    if (e instanceof DecodeError) return e.reason;
    throw e;
  }
};

describe('crc32c', () => {
  it('gives the RFC 3720 check values', () => {
    assert.equal(crc32c(utf8('123456789')), 0xe3069283);
    assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
    assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  });
});

describe('assembleFragments', () => {
  it('rebuilds the full record from fragments in any order, with duplicates', () => {
    const { main, parts, after } = split(3);
    fc.assert(
      fc.property(fc.shuffledSubarray(parts, { minLength: 3, maxLength: 3 }), fc.subarray(parts), (order, again) => {
        const assembly = assembleFragments(main, [...order, ...again]);
        assert.ok(assembly.complete);
        assert.equal(assembly.record.type, 'full');
        assert.deepEqual(assembly.record.after, after);
        assert.equal('chunked' in assembly.record, false);
        assert.deepEqual(assembly.record.source, main.source);
      }),
    );
  });

  it('says which fragments are missing while some are', () => {
    const { main, parts } = split(3);
    assert.deepEqual(assembleFragments(main, [parts[1] as FragmentPart]), { complete: false, missing: [{ chunkId: 'c-7f3a', indexes: [0, 2] }] });
  });

  it('joins text split on UTF-8 character boundaries and checks the CRC32C over its UTF-8 bytes', () => {
    const { main, parts, after } = split(4, 'c-utf8', { order_id: 1, item_id: 2, note: 'prix: 29,99 € — 寿司 🍣' });
    const assembly = assembleFragments(main, parts);
    assert.ok(assembly.complete);
    assert.deepEqual(assembly.record.after, after);
  });

  it('reassembles a record whose before and after images are both split', () => {
    const a = split(2, 'c-after');
    const b = split(3, 'c-before', { order_id: 1001, item_id: 42 });
    const main = { ...a.main, op: 'd', chunked: { before: (b.main.chunked as JsonObject).after, after: (a.main.chunked as JsonObject).after } } as JsonObject;
    const assembly = assembleFragments(main, [...b.parts, ...a.parts].reverse());
    assert.ok(assembly.complete);
    assert.deepEqual(assembly.record.before, { order_id: 1001, item_id: 42 });
  });

  it('refuses parts that do not fit as fragment-invalid', () => {
    const { main, parts } = split(3);
    const [p0, p1, p2] = parts as [FragmentPart, FragmentPart, FragmentPart];
    assert.equal(reason(() => assembleFragments(main, [p0, p1, p2, { ...p1, index: 3 }])), 'fragment-invalid', 'index outside the count');
    assert.equal(reason(() => assembleFragments(main, [p0, p1, p2, { ...p1, data: 'X' }])), 'fragment-invalid', 'two texts for one index');
    assert.equal(reason(() => assembleFragments(main, [p0, p1, p2, { ...p1, chunkId: 'other' }])), 'fragment-invalid', 'a chunk the main record does not name');
    assert.equal(reason(() => assembleFragments(main, [p0, { ...p1, data: p1.data.toUpperCase() }, p2])), 'fragment-invalid', 'CRC32C mismatch');
    const notObject = split(1, 'c-array', {} as JsonObject);
    notObject.parts[0] = { chunkId: 'c-array', index: 0, data: '[1]' };
    (notObject.main.chunked as JsonObject).after = { chunk_id: 'c-array', total_fragments: 1, crc32c: String(crc32c(utf8('[1]'))) };
    assert.equal(reason(() => assembleFragments(notObject.main, notObject.parts)), 'fragment-invalid', 'an image that is not a row');
    assert.equal(reason(() => assembleFragments({ ...main, chunked: {} }, parts)), 'fragment-invalid', 'no split image');
  });

  it('reads a fragment record and refuses a malformed one', () => {
    assert.deepEqual(fragmentPart(fixture('fragment')), { chunkId: '{{chunk-id}}', index: 0, data: '{{partial-JSON-text}}' });
    for (const bad of [{ ...fixture('fragment'), chunk_id: '' }, { ...fixture('fragment'), index: 1.5 }, { ...fixture('fragment'), index: 10_000 }]) {
      assert.equal(reason(() => fragmentPart(bad)), 'fragment-invalid');
    }
  });
});

describe('decideSplit: complete, wait, or quarantine after a bounded window', () => {
  const WINDOW = 15 * 60_000;

  it('completes as soon as every part is there, waits until the window closes, then is fragment-incomplete', () => {
    const { main, parts } = split(3);
    assert.equal(decideSplit({ main, parts, firstSeenMs: 0 }, 1, WINDOW).kind, 'complete');
    assert.deepEqual(decideSplit({ main, parts: parts.slice(0, 2), firstSeenMs: 1_000 }, 5_000, WINDOW), { kind: 'wait', untilMs: 1_000 + WINDOW });
    assert.throws(
      () => decideSplit({ main, parts: parts.slice(0, 2), firstSeenMs: 1_000 }, 1_000 + WINDOW, WINDOW),
      (e: unknown) => e instanceof DecodeError && e.reason === 'fragment-incomplete' && /chunk c-7f3a misses fragment 2/.test(e.message),
    );
    assert.throws(
      () => decideSplit({ main: null, parts, firstSeenMs: 0 }, WINDOW, WINDOW),
      (e: unknown) => e instanceof DecodeError && e.reason === 'fragment-incomplete' && /main record never arrived \(3 fragments held\)/.test(e.message),
    );
  });
});

describe('a record split in two, with the halves in different batches, is applied once and whole', () => {
  const n = normalizerFor([{ source: 'public.order_items', key: ['order_id', 'item_id'], keyTypes: { order_id: 'number', item_id: 'number' } }]);

  it('decodes the main record and the fragments as control events, and the assembled record as the row', () => {
    const { main, parts } = split(2);
    const fragmentRecord = (p: FragmentPart) => kinesisRecord({ type: 'fragment', chunk_id: p.chunkId, index: p.index, data: p.data }, 'shardId-000000000003');
    // Batch 1 (shard 0): the main record and fragment 1; batch 2 (shard 3): fragment 0. No row yet.
    const batch1 = [kinesisRecord(main), fragmentRecord(parts[1] as FragmentPart)];
    const batch2 = [fragmentRecord(parts[0] as FragmentPart)];
    for (const r of [...batch1, ...batch2]) assert.equal(changesOf(n.normalize(r)).length, 0);
    const held = [...batch1, ...batch2].flatMap((r) => {
      const result = n.normalize(r);
      return result.ok ? (result.events as ControlEvent[]) : [];
    });
    const pieces = held.filter((c) => c.control === 'fragment').map((c) => fragmentPart({ type: 'fragment', chunk_id: c.detail.chunkId ?? null, index: c.detail.index ?? null, data: c.detail.data ?? null }));
    const decision = decideSplit({ main, parts: pieces, firstSeenMs: 0 }, 1, 60_000);
    assert.equal(decision.kind, 'complete');
    if (decision.kind !== 'complete') return;
    const store = applyBatches(n, [[kinesisRecord(decision.record)], [kinesisRecord(decision.record)]]);
    const whole = applyBatches(n, [[kinesisRecord(fixture('insert'))]]);
    assert.deepEqual(storeView(store), storeView(whole), 'the same row as the unsplit INSERT, applied once (the redelivery is a duplicate)');
  });
});
