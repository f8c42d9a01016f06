/**
 * JSON objects of the jobs' runs in S3 (manifests, plans, results, summaries, markers): written
 * whole as `application/json`, read whole. The one place the jobs, replay and erase put and get them.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { asError } from '../core/errors.js';

/** Writes `value` as one JSON object. */
export async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(value), ContentType: 'application/json' }));
}

/** Reads one JSON object; a missing object is an error (NoSuchKey). */
export async function getJson<T>(s3: S3Client, bucket: string, key: string): Promise<T> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as T;
}

/** Reads one JSON object, or null when there is none (NoSuchKey, or a 404 by any name). */
export async function getJsonIfPresent<T>(s3: S3Client, bucket: string, key: string): Promise<T | null> {
  try {
    return await getJson<T>(s3, bucket, key);
  } catch (err) {
    const e = asError(err) as Error & { $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
    throw err;
  }
}
