/**
 * Raw in S3: every delivered record lands here before its batch is applied. The key layout is
 * raw-layout.ts's (Hive-style, queried by Athena through the Glue table with partition projection);
 * date and hour are the batch's first arrival time (UTC). `<digest>` is the first 16 hex digits of
 * the SHA-256 of the object's uncompressed content: a retried batch has the same content and so
 * rewrites the same object, while a different batch with the same coordinates (two `tidemark apply`
 * runs in one hour) gets its own object instead of overwriting the first.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TransportMeta } from '../core/types.js';
import { keyFilterMetadata } from '../core/key-filter.js';
import { type BatchCoordinates, quarantineObjectKey, rawBatchKey, spillObjectKey } from './raw-layout.js';

export type { BatchCoordinates } from './raw-layout.js';

const gzipAsync = promisify(gzip);
/**
 * The gzip settings of raw and quarantine objects (`npm run bench`, goal 2; docs/performance.md):
 * - level 1: about 40% of the CPU of zlib's default 6 for objects about 15% larger, and 3% larger
 *   than level 3's. With batches of 3,000 records only level 1 keeps raw landing within the cost of
 *   decoding; the extra storage is a thousandth of a cent per million records.
 * - `memLevel` 9 (a 256 KiB hash table instead of 128 KiB: fewer collisions for the fast matcher)
 *   and 64 KiB output chunks instead of 16 KiB: together 15–25% less gzip CPU for the same bytes.
 */
export const RAW_GZIP = { level: 1, memLevel: 9, chunkSize: 64 * 1024 } as const;

export const CONTROL_TABLE = '_control';

/** First 16 hex characters of the SHA-256 of the object's NDJSON (its UTF-8 bytes, or the text, which hashes the same). */
export const contentDigest = (ndjson: string | Uint8Array): string => createHash('sha256').update(ndjson).digest('hex').slice(0, 16);

/**
 * The lines as NDJSON bytes: each line's JSON encoded as UTF-8 straight into one growing buffer as
 * soon as it is made, each followed by a newline. Byte for byte what
 * `Buffer.from(lines.map(JSON.stringify).join('\n') + '\n')` gives, without the joined string and
 * without holding every line's text until the end: a batch of 3,000 wide lines is about 7 MB of
 * text, and keeping it all alive until it is encoded moved it to the old generation, which doubled
 * the serialization cost (test/bench goal 2).
 */
export function ndjsonBytes<T>(lines: readonly T[], groupOf?: (line: T) => string): { bytes: Buffer; byGroup: Map<string, number> } {
  const byGroup = new Map<string, number>();
  // The joined text of no lines is the final newline alone.
  if (lines.length === 0) return { bytes: Buffer.from('\n'), byGroup };
  let out = Buffer.allocUnsafe(Math.max(4096, lines.length * 512));
  let at = 0;
  for (const line of lines) {
    const text = JSON.stringify(line) ?? '';
    const need = Buffer.byteLength(text, 'utf8') + 1;
    if (at + need > out.length) {
      const grown = Buffer.allocUnsafe(Math.max(out.length * 2, at + need));
      out.copy(grown, 0, 0, at);
      out = grown;
    }
    at += out.write(text, at, 'utf8');
    out[at++] = 0x0a;
    if (groupOf) {
      const g = groupOf(line);
      byGroup.set(g, (byGroup.get(g) ?? 0) + need);
    }
  }
  return { bytes: out.subarray(0, at), byGroup };
}

/** The version of the raw line layout this code writes (docs/history.md §1). */
export const RAW_LINE_VERSION = 2;

/**
 * One raw line: the message as delivered, transport metadata, and as top-level fields what the jobs'
 * SQL reads (table, key id, encoded position, op, content hash, commit and arrival time), so no query
 * parses a message. docs/history.md §1 lists every field.
 *
 * A message that holds several rows (CockroachDB webhook batches, Canal, Maxwell bootstrap) gives one
 * line per row. Its first line in an object carries the message; the record's later lines in the
 * same object carry `message: null` and `messageRef: true` (read the message from the earlier line
 * with the same `transport.shard` and `transport.sequence`). That keeps raw, and the Lambda's
 * memory, proportional to the input rather than to rows × message size. `parseRawObject`
 * (raw-reader.ts) is the one reader that rebuilds the delivered records from these lines.
 */
export interface RawLine {
  /** The layout version: 2. Lines of the first layout have none. */
  readonly v: typeof RAW_LINE_VERSION;
  readonly kind: 'change' | 'control';
  readonly format: string;
  readonly op: string | null;
  readonly control: string | null;
  readonly table: string | null;
  /** Canonical key text (`keyId`, functions/core/keys.ts): what the jobs group and join by. */
  readonly keyId: string | null;
  /** JSON text of the normalized key. */
  readonly key: string | null;
  readonly position: string | null;
  readonly orderingStrength: string | null;
  /** Content hash of the event (as `__hash` on items): tells a duplicate from a conflict, and a mismatch. */
  readonly hash: string | null;
  readonly commitTs: number | null;
  /** Arrival at the stream, epoch ms (a copy of `transport.arrivalTime`, for SQL). */
  readonly arrivalTs: number;
  readonly txid: string | null;
  readonly snapshot: boolean;
  /** An update delivered without a before image. */
  readonly beforeNull: boolean;
  /** The event carries placeholders or is a patch. */
  readonly partial: boolean;
  readonly transport: TransportMeta;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The message key as delivered, when it is valid UTF-8; else null and `messageKeyBase64` holds the bytes. */
  readonly messageKey: string | null;
  /** The message value as delivered, when it is valid UTF-8; else null and `messageBase64` holds the bytes. */
  readonly message: string | null;
  /** Present (base64 of the exact bytes) only when the key is not valid UTF-8. */
  readonly messageKeyBase64?: string;
  /** Present (base64 of the exact bytes) only when the value is not valid UTF-8 (and not on a `messageRef` line). */
  readonly messageBase64?: string;
  /** True on a multi-row record's later lines in one object: the message is on its first line. */
  readonly messageRef?: true;
}

export interface QuarantineLine {
  readonly reason: string;
  readonly detail: string;
  /** The source table when the record named a configured one; null when it is unknown. */
  readonly table?: string | null;
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
  /**
   * Compressed bytes landed per source table (control messages under `_control`): the batch
   * object's bytes shared out by each table's share of its uncompressed lines.
   */
  readonly bytesByTable: ReadonlyMap<string, number>;
}

export class RawStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly rawPrefix: string,
    private readonly quarantinePrefix: string,
  ) {}

  /**
   * Lands a batch: one raw object holding every line (all tables and the control messages), and one
   * quarantine object when records were refused. Throws if either PUT fails.
   */
  async land(batch: BatchCoordinates, lines: readonly RawLine[], quarantined: readonly QuarantineLine[]): Promise<LandResult> {
    const puts: Promise<{ key: string; bytes: number }>[] = [];
    const encoded = lines.length > 0 ? ndjsonBytes(lines, (line) => line.table ?? CONTROL_TABLE) : null;
    if (encoded) puts.push(this.putBody((d) => rawBatchKey(this.rawPrefix, batch, d), encoded.bytes, keyFilterMetadata(lines)));
    if (quarantined.length > 0) puts.push(this.quarantine(batch, quarantined));
    const done = await Promise.all(puts);
    const bytesByTable = new Map<string, number>();
    const rawBytes = encoded ? (done[0]?.bytes ?? 0) : 0;
    if (encoded) for (const [table, n] of encoded.byGroup) bytesByTable.set(table, Math.round((rawBytes * n) / Math.max(1, encoded.bytes.length)));
    return { objects: done.length, bytes: done.reduce((n, d) => n + d.bytes, 0), keys: done.map((d) => d.key), bytesByTable };
  }

  /** Lands quarantine lines on their own (records refused after raw landing, e.g. by DynamoDB's limits). */
  quarantine(batch: BatchCoordinates, lines: readonly QuarantineLine[]): Promise<{ key: string; bytes: number }> {
    return this.put((d) => quarantineObjectKey(this.quarantinePrefix, batch, d), lines);
  }

  /** Stores a row too large for DynamoDB; returns its s3:// URI. */
  async spill(table: string, keyId: string, position: string, body: string): Promise<string> {
    const key = spillObjectKey(this.rawPrefix, table, keyId, position);
    const gz = await gzipAsync(Buffer.from(body, 'utf8'), RAW_GZIP);
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: gz, ContentType: 'application/json', ContentEncoding: 'gzip' }));
    return `s3://${this.bucket}/${key}`;
  }

  private put(keyFor: (digest: string) => string, lines: readonly unknown[], metadata?: Record<string, string>): Promise<{ key: string; bytes: number }> {
    return this.putBody(keyFor, ndjsonBytes(lines).bytes, metadata);
  }

  private async putBody(keyFor: (digest: string) => string, ndjson: Buffer, metadata?: Record<string, string>): Promise<{ key: string; bytes: number }> {
    const key = keyFor(contentDigest(ndjson));
    const body = await gzipAsync(ndjson, RAW_GZIP);
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip', ...(metadata ? { Metadata: metadata } : {}) }),
    );
    return { key, bytes: body.length };
  }
}
