/** s3SpillReader with a mocked S3 client: gzipped and plain bodies, lossless numbers, bad pointers. */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { WriteError } from '../../../../functions/core/errors.js';
import { isLosslessNumber } from '../../../../functions/core/json.js';
import { parseS3Uri, s3SpillReader } from '../../../../functions/adapters/spill-reader.js';
import { spillObjectKey } from '../../../../functions/adapters/raw-layout.js';

const s3 = mockClient(S3Client);
/** The part of an SDK stream body the reader uses. */
const body = (bytes: Buffer) => ({ transformToByteArray: async () => new Uint8Array(bytes) }) as never;

describe('s3SpillReader', () => {
  beforeEach(() => s3.reset());

  it('reads a gzipped spilled row from the pointer, keeping big numbers exact', async () => {
    s3.on(GetObjectCommand, { Bucket: 'b', Key: 'raw/spill/table=t/x/a15.json.gz' }).resolves({ Body: body(gzipSync('{"id":1,"n":12345678901234567890123}')) });
    const row = await s3SpillReader(new S3Client({ region: 'us-east-1' }))('s3://b/raw/spill/table=t/x/a15.json.gz');
    assert.equal(row.id, 1);
    assert.ok(isLosslessNumber(row.n));
  });

  it('reads a body an endpoint already decoded', async () => {
    s3.on(GetObjectCommand).resolves({ Body: body(Buffer.from('{"a":"b"}')) });
    assert.deepEqual(await s3SpillReader(new S3Client({ region: 'us-east-1' }))('s3://b/k'), { a: 'b' });
  });

  it('fails with a WriteError on a bad pointer, a failed read or a body that is not a row', async () => {
    const read = s3SpillReader(new S3Client({ region: 'us-east-1' }));
    assert.throws(() => parseS3Uri('https://b/k'), WriteError);
    s3.on(GetObjectCommand).rejectsOnce(new Error('NoSuchKey')).resolves({ Body: body(Buffer.from('[1]')) });
    await assert.rejects(read('s3://b/k'), (e: unknown) => e instanceof WriteError && /NoSuchKey/.test(e.message));
    await assert.rejects(read('s3://b/k'), /not a JSON object/);
  });

  it('names a spilled row in its errors without the key, which its object key holds in base64url (issue 20, item 8: errors are logged)', async () => {
    const read = s3SpillReader(new S3Client({ region: 'us-east-1' }));
    const keyId = '["ada@example.com"]';
    const pointer = `s3://b/${spillObjectKey('raw/', 'public.café', keyId, 'a15')}`;
    const encoded = Buffer.from(keyId).toString('base64url');
    assert.ok(pointer.includes(encoded), 'the object key holds the key');
    s3.on(GetObjectCommand).rejectsOnce(new Error('AccessDenied')).resolves({ Body: body(Buffer.from('[1]')) });
    for (const message of [/AccessDenied/, /not a JSON object/]) {
      await assert.rejects(read(pointer), (e: unknown) => e instanceof WriteError && message.test(e.message) && !e.message.includes(encoded) && e.message.includes('raw/spill/table=public.caf%C3%A9/<key>/a15.json.gz'));
    }
  });
});
