/**
 * The bucket's key layout (functions/adapters/raw-layout.ts), the one module that builds and parses
 * raw, spill, quarantine and job keys: segment encodings (current injective, first lossy), and the
 * keys each reader and writer derives from them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeSegment,
  encodeSegment,
  jobRunPrefix,
  legacySegment,
  mayHoldKeys,
  parseRawObjectKey,
  quarantineObjectKey,
  rawBatchKey,
  rawObjectKey,
  rawObjectOfShard,
  segmentNames,
  spillObjectKey,
  spillPrefixes,
  tableSegments,
  unloadPrefix,
} from '../../../../functions/adapters/raw-layout.js';

const batch = { shard: 'shardId-000000000000', firstSequence: '100', lastSequence: '200', firstArrival: Date.parse('2026-11-30T06:15:00Z') };

describe('raw layout: segment encodings', () => {
  it('keeps plain names as they are and percent-encodes the rest', () => {
    assert.equal(encodeSegment('public.orders'), 'public.orders');
    assert.equal(encodeSegment('public.café'), 'public.caf%C3%A9');
    assert.equal(encodeSegment('dbo.Order Details'), 'dbo.Order%20Details');
    assert.equal(encodeSegment('public.caf_'), 'public.caf_');
    assert.equal(encodeSegment('a/b=c%d'), 'a%2Fb%3Dc%25d');
    assert.equal(encodeSegment('x\ud800y'), 'x%uD800y', 'a lone surrogate has no UTF-8 form');
  });

  it('encodes injectively (property): distinct names never share a segment, and decoding inverts it', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        assert.equal(decodeSegment(encodeSegment(a)), a);
        assert.match(encodeSegment(a), /^[A-Za-z0-9._%u-]*$/);
        if (a !== b) assert.notEqual(encodeSegment(a), encodeSegment(b));
      }),
      { numRuns: 500 },
    );
  });

  it('decodes %XX bytes and %uXXXX surrogates, and leaves what is no encoding as it is', () => {
    assert.equal(decodeSegment('public.caf%C3%A9'), 'public.café');
    assert.equal(decodeSegment('a%uD800b%25'), 'a\uD800b%');
    assert.equal(decodeSegment('bad%ZZ'), 'bad%ZZ');
  });

  it('knows the first, lossy form, and looks under both', () => {
    assert.equal(legacySegment('public.café'), 'public.caf_');
    assert.deepEqual(tableSegments('public.café'), ['public.caf%C3%A9', 'public.caf_']);
    assert.deepEqual(tableSegments('public.orders'), ['public.orders']);
    assert.ok(segmentNames('public.caf_', 'public.café') && segmentNames('public.caf%C3%A9', 'public.café'));
    assert.ok(!segmentNames('public.caf%C3%A9', 'public.caf_'));
  });
});

describe('raw layout: keys', () => {
  it('names raw and quarantine objects by table, arrival hour, shard, sequences and digest, and parses raw keys back', () => {
    const key = rawObjectKey('raw/', 'public.café', batch, 'abc');
    assert.equal(key, 'raw/table=public.caf%C3%A9/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    assert.equal(quarantineObjectKey('quarantine/', batch, 'abc'), 'quarantine/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    const parts = parseRawObjectKey('raw/', key);
    assert.deepEqual(parts, { layout: 'table', tableSegment: 'public.caf%C3%A9', hourStart: Date.parse('2026-11-30T06:00:00Z'), name: 'shardId-000000000000-100-200-abc' });
    assert.ok(parts && rawObjectOfShard(parts, 'shardId-000000000000'));
    assert.ok(parts && !rawObjectOfShard(parts, 'shardId-000000000001'));
    const batchKey = rawBatchKey('raw/', batch, 'abc');
    assert.equal(batchKey, 'raw/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    const batchParts = parseRawObjectKey('raw/', batchKey);
    assert.deepEqual(batchParts, { layout: 'batch', tableSegment: null, hourStart: Date.parse('2026-11-30T06:00:00Z'), name: 'shardId-000000000000-100-200-abc' });
    assert.ok(batchParts && rawObjectOfShard(batchParts, 'shardId-000000000000'));
    assert.equal(parseRawObjectKey('raw/', 'raw/spill/table=t/abc/a11.json.gz'), null);
    assert.equal(parseRawObjectKey('raw/', 'other/table=t/dt=2026-11-30/hr=06/x.jsonl.gz'), null);
  });

  it('finds a spilled row of a table with a space or a non-ASCII letter under the prefix its writer used', () => {
    for (const table of ['public.café', 'dbo.Order Details', 'public.orders']) {
      const keyId = '["42"]';
      const written = spillObjectKey('raw/', table, keyId, 'a15');
      assert.ok(
        spillPrefixes('raw/', table, keyId).some((p) => written.startsWith(p)),
        `${written} is under ${spillPrefixes('raw/', table, keyId).join(', ')}`,
      );
    }
    assert.deepEqual(spillPrefixes('raw/', 'dbo.Order Details', '["1"]'), ['raw/spill/table=dbo.Order%20Details/WyIxIl0/', 'raw/spill/table=dbo.Order_Details/WyIxIl0/']);
  });

  it('keeps each job run under its own prefix', () => {
    assert.equal(jobRunPrefix('jobs/', 'erase', 'r1'), 'jobs/erase/r1/');
    assert.equal(jobRunPrefix('jobs/', 'replay', 'r1'), 'jobs/replay/r1/');
  });

  it('tells the job outputs that can hold keys from those that hold only counts', () => {
    const keyed = ['findings', 'window-keys', 'export', 'repair', 'orphans'];
    for (const part of keyed) assert.equal(mayHoldKeys('history/', `${unloadPrefix('history/', 'reconcile', 'r1', part)}x/0.json.gz`), true, part);
    for (const part of ['counts', 'anomalies', 'resnapshots']) assert.equal(mayHoldKeys('history/', `${unloadPrefix('history/', 'snapshot', 's1', part)}0.json.gz`), false, part);
    // Anything of another shape is read, to be safe.
    assert.equal(mayHoldKeys('history/', 'history/unload/stray.json.gz'), true);
    assert.equal(mayHoldKeys('history/', 'history/unload/reconcile/r1/counts'), true);
    assert.equal(mayHoldKeys('history/', 'reports/reconcile/r1/report.json'), true);
  });
});
