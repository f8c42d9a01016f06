/**
 * An in-memory S3 behind aws-sdk-client-mock, enough for the DuckDB engine (bin/local/duckdb-engine.ts)
 * and RawStore: PutObject with any body the SDK takes (bytes, text or a stream, as the engine's
 * `upload` sends a file stream), GetObject answering a stream (the engine pipes it to disk),
 * ListObjectsV2 in pages of 1,000, DeleteObject, and an unversioned ListObjectVersions. It counts
 * every request, so a run's S3 requests can be priced. No network: the unit tests run the scale
 * bench's local reconcile on it; the full bench uses s3rver in another process instead, so that the
 * objects do not count in the measured process's memory.
 *
 *   const s3 = memoryS3();
 *   const engine = new DuckDbEngine({ s3: s3.client, bucket: 'b', … });
 *   s3.requests   // { Put: 12, Get: 30, List: 8, Delete: 4 }
 */
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, ListObjectVersionsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';

export interface MemoryS3 {
  readonly client: S3Client;
  /** Requests by kind: Put, Get, List, Delete. */
  readonly requests: Record<'Put' | 'Get' | 'List' | 'Delete', number>;
  /** Bytes of the objects under a prefix, and how many there are. */
  usage(prefix: string): { objects: number; bytes: number };
  body(key: string): Buffer | undefined;
  keys(prefix?: string): string[];
  restore(): void;
}

class NoSuchKey extends Error {
  override name = 'NoSuchKey';
  $metadata = { httpStatusCode: 404 };
}

async function bytesOf(body: unknown): Promise<Buffer> {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (body instanceof Readable) {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c as Uint8Array));
    return Buffer.concat(chunks);
  }
  throw new Error(`memory S3 cannot read a body of type ${typeof body}`);
}

export function memoryS3(): MemoryS3 {
  const objects = new Map<string, Buffer>();
  const requests = { Put: 0, Get: 0, List: 0, Delete: 0 };
  const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  const at = (bucket: unknown, key: unknown) => `${String(bucket)}/${String(key)}`;
  mock.on(PutObjectCommand).callsFake(async (input) => {
    requests.Put++;
    objects.set(at(input.Bucket, input.Key), await bytesOf(input.Body));
    return { ETag: `"${requests.Put}"` };
  });
  mock.on(GetObjectCommand).callsFake((input) => {
    requests.Get++;
    const body = objects.get(at(input.Bucket, input.Key));
    if (!body) throw new NoSuchKey(`no such key ${input.Key}`);
    const stream = Readable.from([body]);
    return { Body: Object.assign(stream, { transformToByteArray: async () => new Uint8Array(body) }), ContentLength: body.length, ETag: '"1"' };
  });
  mock.on(DeleteObjectCommand).callsFake((input) => {
    requests.Delete++;
    objects.delete(at(input.Bucket, input.Key));
    return {};
  });
  mock.on(ListObjectVersionsCommand).callsFake(() => {
    requests.List++;
    return { Versions: [], IsTruncated: false };
  });
  mock.on(ListObjectsV2Command).callsFake((input) => {
    requests.List++;
    const root = `${String(input.Bucket)}/`;
    const prefix = `${root}${input.Prefix ?? ''}`;
    const keys = [...objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    const from = input.ContinuationToken ? Number(input.ContinuationToken) : 0;
    const size = Math.min(1000, input.MaxKeys ?? 1000);
    const page = keys.slice(from, from + size);
    const truncated = from + size < keys.length;
    return {
      Contents: page.map((k) => ({ Key: k.slice(root.length), Size: objects.get(k)?.length ?? 0 })),
      IsTruncated: truncated,
      ...(truncated ? { NextContinuationToken: String(from + size) } : {}),
    };
  });
  const under = (prefix: string) => [...objects.keys()].filter((k) => k.slice(k.indexOf('/') + 1).startsWith(prefix));
  return {
    client,
    requests,
    usage: (prefix) => {
      const keys = under(prefix);
      return { objects: keys.length, bytes: keys.reduce((n, k) => n + (objects.get(k)?.length ?? 0), 0) };
    },
    body: (key) => [...objects.entries()].find(([k]) => k.slice(k.indexOf('/') + 1) === key)?.[1],
    keys: (prefix = '') => under(prefix).map((k) => k.slice(k.indexOf('/') + 1)).sort(),
    restore: () => mock.restore(),
  };
}
