/**
 * Reads back a row spilled to S3 (see RawStore.spill: gzipped JSON of the row at
 * `s3://<bucket>/<raw prefix>spill/…`). The DynamoDB writer uses it to merge a patch with the
 * spilled copy of its row, so a TOAST update of a large row keeps the columns it does not carry.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { asError, WriteError } from '../core/errors.js';
import { isJsonObject, parseJson } from '../core/json.js';
import type { Row } from '../core/types.js';
import type { ReadSpill } from './dynamo-writer.js';
import { shownSpillKey } from './raw-layout.js';

const gunzipAsync = promisify(gunzip);

/** Splits `s3://bucket/key` into its parts; throws WriteError on anything else. */
export function parseS3Uri(pointer: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(pointer);
  if (!m?.[1] || !m[2]) throw new WriteError(`not an s3:// spill pointer: "${shownSpillKey(pointer).slice(0, 200)}"`);
  return { bucket: m[1], key: m[2] };
}

/** A {@link ReadSpill} over S3: gets the object, gunzips it (when gzipped) and parses the row losslessly. */
export function s3SpillReader(s3: S3Client): ReadSpill {
  return async (pointer: string): Promise<Row> => {
    const { bucket, key } = parseS3Uri(pointer);
    let bytes: Buffer;
    try {
      const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      bytes = Buffer.from((await res.Body?.transformToByteArray()) ?? []);
    } catch (err) {
      throw new WriteError(`reading the spilled row ${shownSpillKey(pointer)} failed: ${asError(err).message}`, { cause: err });
    }
    // Some S3 endpoints decode Content-Encoding: gzip on the way out; gzip starts with 1f 8b.
    const text = (bytes[0] === 0x1f && bytes[1] === 0x8b ? await gunzipAsync(bytes) : bytes).toString('utf8');
    const row = parseJson(text);
    if (!isJsonObject(row)) throw new WriteError(`the spilled row ${shownSpillKey(pointer)} is not a JSON object`);
    return row;
  };
}
