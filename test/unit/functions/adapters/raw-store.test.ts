/** Raw object keys: injective table encoding, a content digest, deterministic per batch; gzip JSON Lines bodies. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { rawObjectKey } from '../../../../functions/adapters/raw-layout.js';
import { contentDigest, ndjsonBytes, type RawLine, RawStore } from '../../../../functions/adapters/raw-store.js';

const batch = { shard: 'shardId-000000000000', firstSequence: '100', lastSequence: '200', firstArrival: Date.UTC(2026, 10, 30, 6, 15) };
const line = (message: string): RawLine => ({
  kind: 'change',
  format: 'test',
  op: 'c',
  control: null,
  table: 't',
  key: '{"id":1}',
  position: '0001',
  orderingStrength: 'source',
  commitTs: null,
  txid: null,
  snapshot: false,
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
  it('names objects by table, arrival hour, shard, sequence range and a content digest', async () => {
    const { raw, mock } = store();
    const landed = await raw.land(batch, new Map([['public.café', [line('a')]]]), []);
    assert.match(landed.keys[0] ?? '', /^raw\/table=public\.caf%C3%A9\/dt=2026-11-30\/hr=06\/shardId-000000000000-100-200-[0-9a-f]{16}\.jsonl\.gz$/);
    const put = mock.commandCalls(PutObjectCommand)[0]?.args[0].input;
    assert.equal(put?.ContentEncoding, 'gzip');
    assert.equal(gunzipSync(put?.Body as Uint8Array).toString('utf8'), `${JSON.stringify(line('a'))}\n`);
    assert.equal(rawObjectKey('raw/', 'public.café', batch, 'abc'), 'raw/table=public.caf%C3%A9/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
  });

  it('gives a retried batch the same key, and different content with the same coordinates a different key', async () => {
    const { raw } = store();
    const first = await raw.land(batch, new Map([['t', [line('a')]]]), []);
    const retried = await raw.land(batch, new Map([['t', [line('a')]]]), []);
    const other = await raw.land(batch, new Map([['t', [line('b')]]]), []);
    assert.deepEqual(retried.keys, first.keys);
    assert.notDeepEqual(other.keys, first.keys);
  });

  it('lands quarantine lines under the quarantine prefix and counts compressed bytes per table', async () => {
    const { raw, mock } = store();
    const q = { reason: 'invalid-json', detail: 'd', transport: batch as never, topic: null, headers: {}, valueBase64: 'AA==', keyBase64: null };
    const landed = await raw.land(batch, new Map([['a', [line('1')]], ['b', [line('2')]]]), [q]);
    assert.equal(landed.objects, 3);
    assert.equal(mock.commandCalls(PutObjectCommand).length, 3);
    assert.ok(landed.keys.some((k) => k.startsWith('quarantine/dt=2026-11-30/hr=06/shardId-000000000000-100-200-')));
    assert.deepEqual([...landed.bytesByTable.keys()].sort(), ['a', 'b']);
    const tableBytes = [...landed.bytesByTable.values()].reduce((x, y) => x + y, 0);
    assert.ok(tableBytes > 0 && landed.bytes > tableBytes, 'the total also counts the quarantine object');
  });

  it('fails the landing when any PUT fails', async () => {
    const { raw, mock } = store();
    mock.on(PutObjectCommand).rejects(new Error('S3 down'));
    await assert.rejects(raw.land(batch, new Map([['t', [line('a')]]]), []), /S3 down/);
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
        const bytes = ndjsonBytes(lines);
        assert.deepEqual(bytes, Buffer.from(joined, 'utf8'));
        assert.equal(contentDigest(bytes), contentDigest(joined));
      }),
      { numRuns: 400 },
    );
  });
});
