/** Raw object keys: injective table encoding, a content digest, deterministic per batch; gzip JSON Lines bodies. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { rawBatchKey, rawObjectKey } from '../../../../functions/adapters/raw-layout.js';
import { contentDigest, ndjsonBytes, type RawLine, RawStore } from '../../../../functions/adapters/raw-store.js';

const batch = { shard: 'shardId-000000000000', firstSequence: '100', lastSequence: '200', firstArrival: Date.UTC(2026, 10, 30, 6, 15) };
const line = (message: string, table = 't'): RawLine => ({
  v: 2,
  kind: 'change',
  format: 'test',
  op: 'c',
  control: null,
  table,
  keyId: '["1"]',
  key: '{"id":1}',
  position: '0001',
  orderingStrength: 'source',
  hash: 'h',
  commitTs: null,
  arrivalTs: batch.firstArrival,
  txid: null,
  snapshot: false,
  beforeNull: false,
  partial: false,
  transport: { kind: 'kinesis', stream: 's', shard: batch.shard, sequence: '100', partitionKey: null, arrivalTime: batch.firstArrival },
  topic: null,
  headers: {},
  messageKey: null,
  message,
});

function store() {
  const s3 = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(s3);
  mock.on(PutObjectCommand).resolves({});
  return { raw: new RawStore(s3, 'bucket', 'raw/', 'quarantine/'), mock };
}

describe('raw-store', () => {
  it('names the batch object by arrival hour, shard, sequence range and a content digest, with every table in it', async () => {
    const { raw, mock } = store();
    const lines = [line('a', 'public.café'), line('b', 'other')];
    const landed = await raw.land(batch, lines, []);
    assert.equal(landed.objects, 1);
    assert.match(landed.keys[0] ?? '', /^raw\/dt=2026-11-30\/hr=06\/shardId-000000000000-100-200-[0-9a-f]{16}\.jsonl\.gz$/);
    const put = mock.commandCalls(PutObjectCommand)[0]?.args[0].input;
    assert.equal(put?.ContentEncoding, 'gzip');
    assert.equal(gunzipSync(put?.Body as Uint8Array).toString('utf8'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    assert.equal(rawBatchKey('raw/', batch, 'abc'), 'raw/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    // The first layout's per-table key is still what readers of older raw parse.
    assert.equal(rawObjectKey('raw/', 'public.café', batch, 'abc'), 'raw/table=public.caf%C3%A9/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
  });

  it('gives a retried batch the same key, and different content with the same coordinates a different key', async () => {
    const { raw } = store();
    const first = await raw.land(batch, [line('a')], []);
    const retried = await raw.land(batch, [line('a')], []);
    const other = await raw.land(batch, [line('b')], []);
    assert.deepEqual(retried.keys, first.keys);
    assert.notDeepEqual(other.keys, first.keys);
  });

  it('lands quarantine lines under the quarantine prefix and counts compressed bytes per table', async () => {
    const { raw, mock } = store();
    const q = { reason: 'invalid-json', detail: 'd', transport: batch as never, topic: null, headers: {}, valueBase64: 'AA==', keyBase64: null };
    const landed = await raw.land(batch, [line('1', 'a'), line('22222222', 'b')], [q]);
    assert.equal(landed.objects, 2);
    assert.equal(mock.commandCalls(PutObjectCommand).length, 2);
    assert.ok(landed.keys.some((k) => k.startsWith('quarantine/dt=2026-11-30/hr=06/shardId-000000000000-100-200-')));
    assert.deepEqual([...landed.bytesByTable.keys()].sort(), ['a', 'b']);
    const tableBytes = [...landed.bytesByTable.values()].reduce((x, y) => x + y, 0);
    assert.ok(tableBytes > 0 && landed.bytes > tableBytes, 'the total also counts the quarantine object');
    // Shared by each table's share of the uncompressed lines: b's longer message gets more.
    assert.ok((landed.bytesByTable.get('b') ?? 0) > (landed.bytesByTable.get('a') ?? 0));
  });

  it('fails the landing when any PUT fails', async () => {
    const { raw, mock } = store();
    mock.on(PutObjectCommand).rejects(new Error('S3 down'));
    await assert.rejects(raw.land(batch, [line('a')], []), /S3 down/);
  });

  it('spills a row under an encoded table path and returns its s3:// URI', async () => {
    const { raw, mock } = store();
    const uri = await raw.spill('public.café', '{"id":1}', '0001', '{"big":true}');
    assert.match(uri, /^s3:\/\/bucket\/raw\/spill\/table=public\.caf%C3%A9\/[A-Za-z0-9_-]+\/0001\.json\.gz$/);
    assert.equal(mock.commandCalls(PutObjectCommand).length, 1);
  });
});

describe('ndjsonBytes', () => {
  it('is byte for byte the joined JSON Lines text encoded as UTF-8, and hashes to the same digest', () => {
    // Strings of every kind: multi-byte characters, astral pairs, lone surrogates (escaped by JSON.stringify), controls.
    // Long ones too, so the buffer has to grow (it starts at 4 KiB or 512 bytes a line).
    const text = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom('café', '𝄞', '\uD800', 'a\u0000b', '"quoted"\n'),
      fc.string({ unit: 'grapheme', minLength: 1_000, maxLength: 6_000 }),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(text, tie('v'), { maxKeys: 4 })),
    })).v;
    fc.assert(
      fc.property(fc.array(value, { maxLength: 20 }), (lines) => {
        const joined = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
        const { bytes } = ndjsonBytes(lines);
        assert.deepEqual(bytes, Buffer.from(joined, 'utf8'));
        assert.equal(contentDigest(bytes), contentDigest(joined));
      }),
      { numRuns: 400 },
    );
  });
});
