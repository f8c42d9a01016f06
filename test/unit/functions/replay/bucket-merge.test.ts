/**
 * bucket-merge.ts's parts: text ordered by code point as the engines order it, the k-way merge
 * (sorted, stable, refusing a stream out of order), rows read back from UNLOAD's gzip JSON Lines
 * with a specific error per bad field, and records rebuilt as raw-reader.ts rebuilds them.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareRows, compareText, jsonLines, mergeSorted, recordOf, ReplayRowError, rowOf } from '../../../../functions/replay/bucket-merge.js';

async function* each<T>(values: readonly T[]): AsyncGenerator<T> {
  for (const v of values) yield v;
}
async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

const line = {
  source_table: 'public.orders',
  key_id: '["1"]',
  key_json: '{"id":1}',
  position: 'a11',
  op: 'u',
  arrival_ts: 5,
  transport_kind: 'kinesis',
  stream: 's',
  shard: 'shardId-0',
  sequence: '9',
  partition_key: 'pk',
  topic: null,
  headers: { h: 'v', n: 1 },
  message_key: 'pk',
  message_key_base64: null,
  message: '{"m":1}',
  message_base64: null,
  raw_object: 's3://b/raw/x.jsonl.gz',
};

describe('bucket merge', () => {
  it('orders text by code point, as UTF-8 bytes order', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        assert.equal(Math.sign(compareText(a, b)), Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
    );
    assert.ok(compareText('\uffff', '😀') < 0, 'a BMP character above the surrogates sorts before an astral one');
  });

  it('merges sorted streams into one sorted stream, ties in stream order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 8 }), { maxLength: 5 }), async (lists) => {
        const sorted = lists.map((l) => [...l].sort((a, b) => a - b));
        const merged = await all(mergeSorted(sorted.map(each), (a, b) => a - b));
        assert.deepEqual(merged, sorted.flat().sort((a, b) => a - b));
      }),
    );
    const tagged = await all(mergeSorted([each([{ k: 1, s: 'a' }]), each([{ k: 1, s: 'b' }, { k: 2, s: 'b' }])], (x, y) => x.k - y.k));
    assert.deepEqual(tagged.map((t) => t.s), ['a', 'b', 'b']);
    await assert.rejects(all(mergeSorted([each([2, 1])], (a, b) => a - b)), ReplayRowError);
  });

  it('reads rows from gzip JSON Lines, and compares them as replay-select orders them', async () => {
    const body = Readable.from([gzipSync(`${JSON.stringify(line)}\n\n${JSON.stringify({ ...line, key_id: null, op: 't' })}\n`)]);
    const rows = (await all(jsonLines(body, 'f'))).map((l) => rowOf(l, 'f'));
    assert.equal(rows.length, 2);
    assert.deepEqual({ ...rows[0]?.headers }, { h: 'v' });
    const [keyed, truncate] = rows;
    assert.ok(keyed && truncate);
    assert.ok(compareRows(truncate, keyed) < 0, 'a truncate sorts before the keys of its table');
    assert.ok(compareRows(keyed, { ...keyed, arrival_ts: 6 }) < 0);
    assert.ok(compareRows(keyed, { ...keyed, sequence: '90' }) < 0);
    await assert.rejects(all(jsonLines(Readable.from([gzipSync('{"a":\n')]), 'f')), /f line 1 is not JSON/);
    await assert.rejects(all(jsonLines(Readable.from([gzipSync('[1]\n')]), 'f')), /not a JSON object/);
  });

  it('refuses a row field by name, never by value', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ ...line, position: 7 }, /position must be text/],
      [{ ...line, arrival_ts: 'x' }, /arrival_ts must be an integer/],
      [{ ...line, transport_kind: 'pigeon' }, /transport_kind/],
      [{ ...line, key_id: null }, /only a truncate has no key_id/],
    ];
    for (const [l, re] of bad) assert.throws(() => rowOf(l, 'f:1'), re);
  });

  it('rebuilds the record: text or base64 bytes, a null message a tombstone', () => {
    const r = recordOf(rowOf(line, 'f'));
    assert.equal(Buffer.from(r.value ?? []).toString(), '{"m":1}');
    assert.deepEqual(r.transport, { kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: '9', partitionKey: 'pk', arrivalTime: 5 });
    const b64 = recordOf(rowOf({ ...line, message: null, message_base64: Buffer.from([0xff, 0]).toString('base64'), message_key: null, message_key_base64: 'AA==' }, 'f'));
    assert.deepEqual([...(b64.value ?? [])], [0xff, 0]);
    assert.deepEqual([...(b64.key ?? [])], [0]);
    assert.equal(recordOf(rowOf({ ...line, message: null }, 'f')).tombstone, 'delete');
    for (const bad of ['A', 'AA=A', '@@@@', 'A==='])
      assert.throws(() => recordOf(rowOf({ ...line, message_base64: bad }, 'f')), /message_base64 is not valid base64/, bad);
  });
});
