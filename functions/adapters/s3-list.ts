/**
 * Every object key under a prefix, page by page (ListObjectsV2 with its continuation token), for
 * the readers that walk a prefix: erase's copies, replay --from-dlq's on-failure objects, the local
 * DuckDB store; and the deletion of a prefix (a job run's scratch).
 *
 *   for await (const key of listObjectKeys(s3, bucket, 'quarantine/')) …
 */
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

export async function* listObjectKeys(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<string> {
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) yield o.Key;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** Deletes every object under a prefix, a thousand keys a request; returns how many. */
export async function deleteObjectsUnder(s3: S3Client, bucket: string, prefix: string): Promise<number> {
  let n = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
    n += batch.length;
    batch = [];
  };
  for await (const key of listObjectKeys(s3, bucket, prefix)) {
    batch.push(key);
    if (batch.length === 1000) await flush();
  }
  await flush();
  return n;
}
