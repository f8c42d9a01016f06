/**
 * The hash-partition shuffle in S3 that lets a job join raw with a table with bounded memory: map
 * tasks write each key's record to partition `hash(table, key) mod P`, one object per task and
 * flush; a reduce task reads one partition, so it holds about keys / P keys at a time.
 *
 *   <run prefix>shuffle/p=0007/raw-0003-01.jsonl.gz    (map task "raw-0003", second flush)
 *
 * A retried task rewrites the same objects (names depend only on its item), so retries never
 * double-count.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listObjects } from './raw-scan.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The partition of a key: the first 4 bytes of SHA-1 over `table \0 keyId`, modulo `partitions`. */
export function partitionOf(table: string, keyId: string, partitions: number): number {
  const digest = createHash('sha1').update(table).update('\u0000').update(keyId).digest();
  return digest.readUInt32BE(0) % partitions;
}

export const partitionPrefix = (runPrefix: string, partition: number): string => `${runPrefix}shuffle/p=${String(partition).padStart(4, '0')}/`;

/** Buffers records per partition and writes them as gzipped JSON Lines objects. */
export class PartitionWriter<T> {
  private readonly buffers = new Map<number, string[]>();
  private flushes = 0;
  objectsWritten = 0;
  recordsWritten = 0;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly runPrefix: string,
    private readonly partitions: number,
    /** Unique per map task and item, e.g. `raw-0003`. */
    private readonly taskId: string,
  ) {}

  add(table: string, keyId: string, record: T): void {
    const p = partitionOf(table, keyId, this.partitions);
    let list = this.buffers.get(p);
    if (!list) {
      list = [];
      this.buffers.set(p, list);
    }
    list.push(JSON.stringify(record));
  }

  /** Writes every buffered partition as one object and empties the buffers. */
  async flush(): Promise<void> {
    const flush = this.flushes++;
    const puts: Promise<unknown>[] = [];
    for (const [p, lines] of this.buffers) {
      if (lines.length === 0) continue;
      const key = `${partitionPrefix(this.runPrefix, p)}${this.taskId}-${String(flush).padStart(2, '0')}.jsonl.gz`;
      const body = await gzipAsync(Buffer.from(`${lines.join('\n')}\n`, 'utf8'));
      puts.push(this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' })));
      this.objectsWritten++;
      this.recordsWritten += lines.length;
    }
    await Promise.all(puts);
    this.buffers.clear();
  }
}

/** Reads every record of one partition, object by object. */
export async function* readPartition<T>(s3: S3Client, bucket: string, runPrefix: string, partition: number): AsyncGenerator<T> {
  for (const object of await listObjects(s3, bucket, partitionPrefix(runPrefix, partition))) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.key }));
    const bytes = got.Body ? await got.Body.transformToByteArray() : new Uint8Array();
    const text = (await gunzipAsync(bytes)).toString('utf8');
    for (const line of text.split('\n')) if (line !== '') yield JSON.parse(line) as T;
  }
}

/** Writes one JSON object (plans, partition summaries, reports). */
export async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(value), ContentType: 'application/json' }));
}

export async function getJson<T>(s3: S3Client, bucket: string, key: string): Promise<T> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const text = got.Body ? await got.Body.transformToString() : '';
  return JSON.parse(text) as T;
}
