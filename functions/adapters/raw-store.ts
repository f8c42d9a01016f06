/**
 * Raw in S3: every delivered record lands here before its batch is applied.
 *
 * Layout (Hive-style, queried by Athena through the Glue table with partition projection):
 *   <raw prefix>table=<source table>/dt=<YYYY-MM-DD>/hr=<HH>/<shard>-<first seq>-<last seq>.jsonl.gz
 *   <quarantine prefix>dt=<YYYY-MM-DD>/hr=<HH>/<shard>-<first seq>-<last seq>.jsonl.gz
 * Date and hour are the batch's first arrival time (UTC). The key depends only on the batch, so a
 * retried batch rewrites the same object and never adds a copy.
 */
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TransportMeta } from '../core/types.js';
import { keyFilterMetadata } from '../erase/key-filter.js';

const gzipAsync = promisify(gzip);

export interface BatchCoordinates {
  readonly shard: string;
  readonly firstSequence: string;
  readonly lastSequence: string;
  /** Epoch ms of the batch's first record. */
  readonly firstArrival: number;
}

export const CONTROL_TABLE = '_control';

function datePath(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `dt=${iso.slice(0, 10)}/hr=${iso.slice(11, 13)}`;
}

const safeSegment = (s: string) => s.replace(/[^A-Za-z0-9._=-]/g, '_');

export function rawObjectKey(prefix: string, table: string, batch: BatchCoordinates): string {
  return `${prefix}table=${safeSegment(table)}/${datePath(batch.firstArrival)}/${safeSegment(batch.shard)}-${batch.firstSequence}-${batch.lastSequence}.jsonl.gz`;
}

export function quarantineObjectKey(prefix: string, batch: BatchCoordinates): string {
  return `${prefix}${datePath(batch.firstArrival)}/${safeSegment(batch.shard)}-${batch.firstSequence}-${batch.lastSequence}.jsonl.gz`;
}

/** One raw line: the message untouched (as delivered text), transport metadata, normalized fields. */
export interface RawLine {
  readonly kind: 'change' | 'control';
  readonly format: string;
  readonly op: string | null;
  readonly control: string | null;
  readonly table: string | null;
  /** JSON text of the normalized key. */
  readonly key: string | null;
  readonly position: string | null;
  readonly orderingStrength: string | null;
  readonly commitTs: number | null;
  readonly txid: string | null;
  readonly snapshot: boolean;
  readonly transport: TransportMeta;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The message key and value exactly as delivered (UTF-8 text), or null. */
  readonly messageKey: string | null;
  readonly message: string | null;
}

export interface QuarantineLine {
  readonly reason: string;
  readonly detail: string;
  readonly transport: TransportMeta;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** Original bytes, base64: bad input may not even be text. */
  readonly valueBase64: string | null;
  readonly keyBase64: string | null;
}

export interface LandResult {
  readonly objects: number;
  readonly bytes: number;
  readonly keys: readonly string[];
  /** Compressed bytes landed per source table (control messages under `_control`). */
  readonly bytesByTable: ReadonlyMap<string, number>;
}

export class RawStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly rawPrefix: string,
    private readonly quarantinePrefix: string,
  ) {}

  /** Lands a batch: one object per source table (control messages under `_control`). Throws if any PUT fails. */
  async land(batch: BatchCoordinates, linesByTable: ReadonlyMap<string, readonly RawLine[]>, quarantined: readonly QuarantineLine[]): Promise<LandResult> {
    const puts: Promise<{ table: string | null; key: string; bytes: number }>[] = [];
    for (const [table, lines] of linesByTable) {
      if (lines.length > 0) puts.push(this.put(rawObjectKey(this.rawPrefix, table, batch), lines, keyFilterMetadata(lines)).then((d) => ({ ...d, table })));
    }
    if (quarantined.length > 0) puts.push(this.put(quarantineObjectKey(this.quarantinePrefix, batch), quarantined).then((d) => ({ ...d, table: null })));
    const done = await Promise.all(puts);
    const bytesByTable = new Map<string, number>();
    for (const d of done) if (d.table !== null) bytesByTable.set(d.table, d.bytes);
    return { objects: done.length, bytes: done.reduce((n, d) => n + d.bytes, 0), keys: done.map((d) => d.key), bytesByTable };
  }

  /** Stores a row too large for DynamoDB; returns its s3:// URI. */
  async spill(table: string, keyId: string, position: string, body: string): Promise<string> {
    const digest = Buffer.from(keyId).toString('base64url').slice(0, 200);
    const key = `${this.rawPrefix}spill/table=${safeSegment(table)}/${digest}/${position}.json.gz`;
    const gz = await gzipAsync(Buffer.from(body, 'utf8'));
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: gz, ContentType: 'application/json', ContentEncoding: 'gzip' }));
    return `s3://${this.bucket}/${key}`;
  }

  private async put(key: string, lines: readonly unknown[], metadata?: Record<string, string>): Promise<{ key: string; bytes: number }> {
    const text = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
    const body = await gzipAsync(Buffer.from(text, 'utf8'));
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip', Metadata: metadata }),
    );
    return { key, bytes: body.length };
  }
}
