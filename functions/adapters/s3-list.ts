/**
 * Every object key under a prefix, page by page (ListObjectsV2 with its continuation token), for
 * the readers that walk a prefix: erase's copies, replay --from-dlq's on-failure objects, the local
 * DuckDB store.
 *
 *   for await (const key of listObjectKeys(s3, bucket, 'quarantine/')) …
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

export async function* listObjectKeys(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<string> {
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) yield o.Key;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}
