/**
 * Raw for the jobs, on top of the shared raw reader (`functions/adapters/raw-reader.ts`): list the
 * raw objects of some tables (all of them, or those overlapping an arrival-time range), read one
 * object into delivered records with their lines, and list any prefix (the jobs' scratch space).
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { hourOverlaps, type ParsedRawObject, parseRawObject, readRawObject } from '../adapters/raw-reader.js';
import { hoursBetween, parseRawObjectKey, rawBatchesPrefix, rawHourPrefix, rawTableHourPrefix, rawTablePrefix, segmentNames, tableSegments } from '../adapters/raw-layout.js';

const HOUR_MS = 3_600_000;

export interface ObjectRef {
  readonly key: string;
  /** When S3 last stored the object (epoch ms): a retried batch rewrites it. */
  readonly lastModified: number;
  readonly size: number;
}

/** Every object under a prefix, in key order. */
export async function listObjects(s3: S3Client, bucket: string, prefix: string): Promise<ObjectRef[]> {
  const out: ObjectRef[] = [];
  let token: string | undefined;
  do {
    const res = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of res.Contents ?? []) {
      if (o.Key) out.push({ key: o.Key, lastModified: o.LastModified?.getTime() ?? 0, size: o.Size ?? 0 });
    }
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
  } while (token);
  return out;
}

type ArrivalRange = { readonly fromMs: number; readonly toMs: number };

/** Whether a listed key is a raw object of `table` under `segment` that can hold arrivals in the range. */
function belongs(rawPrefix: string, key: string, table: string, segment: string, range: ArrivalRange | undefined): boolean {
  const parts = parseRawObjectKey(rawPrefix, key);
  if (!parts || parts.tableSegment !== segment) return false;
  if (!segmentNames(segment, table)) return false;
  return !range || hourOverlaps(parts.hourStart, { since: range.fromMs, until: range.toMs + 1 });
}

/** The prefixes to list for one table segment: the whole segment, or the range's hour partitions. */
function segmentPrefixes(rawPrefix: string, segment: string, range: ArrivalRange | undefined): string[] {
  // A batch lands in its first record's hour: one hour of slack before the range.
  return range ? hoursBetween(range.fromMs - HOUR_MS, range.toMs).map((h) => rawTableHourPrefix(rawPrefix, segment, h)) : [rawTablePrefix(rawPrefix, segment)];
}

/**
 * The raw objects of the given tables; with a range, those that can hold records that arrived in
 * it. Listed by plain prefixes (no delimiter listing: s3rver answers those with nothing), and each
 * key is checked against the layout and its table segment (a lossy segment may be shared).
 */
export async function listTablesRaw(s3: S3Client, bucket: string, rawPrefix: string, tables: readonly string[], range?: ArrivalRange): Promise<ObjectRef[]> {
  const out = new Map<string, ObjectRef>();
  for (const o of await listBatchObjects(s3, bucket, rawPrefix, range)) out.set(o.key, o);
  for (const table of tables) {
    for (const segment of tableSegments(table)) {
      for (const prefix of segmentPrefixes(rawPrefix, segment, range)) {
        for (const o of await listObjects(s3, bucket, prefix)) {
          if (!out.has(o.key) && belongs(rawPrefix, o.key, table, segment, range)) out.set(o.key, o);
        }
      }
    }
  }
  return [...out.values()];
}

/** The batch objects (every table's lines) that can hold records that arrived in the range: listed once, whatever the tables. */
async function listBatchObjects(s3: S3Client, bucket: string, rawPrefix: string, range: ArrivalRange | undefined): Promise<ObjectRef[]> {
  const prefixes = range ? hoursBetween(range.fromMs - HOUR_MS, range.toMs).map((h) => rawHourPrefix(rawPrefix, h)) : [rawBatchesPrefix(rawPrefix)];
  const out: ObjectRef[] = [];
  for (const prefix of prefixes) {
    for (const o of await listObjects(s3, bucket, prefix)) {
      const parts = parseRawObjectKey(rawPrefix, o.key);
      if (parts?.layout === 'batch' && (!range || hourOverlaps(parts.hourStart, { since: range.fromMs, until: range.toMs + 1 }))) out.push(o);
    }
  }
  return out;
}

/** Reads one raw object into its delivered records (with the lines each produced) and problems. */
export async function readParsed(s3: S3Client, bucket: string, key: string): Promise<ParsedRawObject> {
  return parseRawObject(await readRawObject(s3, bucket, key), key);
}
