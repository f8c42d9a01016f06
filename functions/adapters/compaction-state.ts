/**
 * What hourly compaction records of its progress in S3 (`<history>state/`, raw-layout.ts), read by
 * compaction itself and by the jobs that must know which hours of raw history already holds
 * (reconcile, repair, erase's Find):
 *
 *   compaction.json         the frontier: `compactedThrough`, the last hour every earlier hour of
 *                           which is compacted, and `cleanedThrough`, the last hour whose raw past
 *                           the grace is deleted
 *   hours/<dt>/<hr>.json    one marker per compacted hour: `compactedAt`, when the run that
 *                           compacted it planned. An object of the hour modified after it (less a
 *                           skew) is late: history may not hold its lines yet
 *
 *   const frontier = await readCompactionFrontier(s3, config);
 *   const marker = await readHourMarker(s3, config, hour);
 *   const late = marker ? (await batchObjectsOfHour(s3, config, hour)).filter((o) => isLate(o, marker)) : [];
 *   const any = marker ? await hasLateObject(s3, config, hour, marker) : true;
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../config/types.js';
import { compactedHourKey, compactionFrontierKey, parseRawObjectKey, rawBatchesPrefix, rawHourPrefix } from './raw-layout.js';
import { getJsonIfPresent } from './s3-json.js';

export interface CompactionFrontier {
  /** Every hour up to and including this one is compacted (hour start, epoch ms); null before the first. */
  readonly compactedThrough: number | null;
  /** Raw of every hour up to this one is deleted past its grace. */
  readonly cleanedThrough: number | null;
  /**
   * The first raw layout (`<raw>table=<segment>/dt=…/hr=…/`, one object per table per batch, written
   * before batches landed once): every hour up to `through` is compacted (`compact-legacy-hour`);
   * `done` once a run found none left, after which it is never listed again. Absent before the first run.
   */
  readonly legacy?: { readonly through: number | null; readonly done: boolean };
}

export interface HourMarker {
  readonly hour: number;
  /** When the run that compacted it planned: objects modified after it (less a skew) are late. */
  readonly compactedAt: number;
}

/** An object as a listing gives it. */
export interface Listed {
  readonly key: string;
  readonly lastModified: number;
}

/** LastModified is the end of a PUT: an object written while its hour was compacted counts as late (compaction skips what it already holds). */
export const LATE_SKEW_MS = 5 * 60_000;

type Config = Pick<TidemarkConfig, 'raw' | 'history'>;

export async function readCompactionFrontier(s3: S3Client, config: Config): Promise<CompactionFrontier> {
  return (await getJsonIfPresent<CompactionFrontier>(s3, config.raw.bucket, compactionFrontierKey(config.history.prefix))) ?? { compactedThrough: null, cleanedThrough: null };
}

/** The marker of a compacted hour, or null when it has none. */
export async function readHourMarker(s3: S3Client, config: Config, hour: number): Promise<HourMarker | null> {
  return getJsonIfPresent<HourMarker>(s3, config.raw.bucket, compactedHourKey(config.history.prefix, hour));
}

/** Whether history may not hold the object's lines yet: it was modified after its hour's marker (less the skew). */
export const isLate = (o: Listed, marker: HourMarker): boolean => o.lastModified >= marker.compactedAt - LATE_SKEW_MS;

/** Every object under a prefix, page by page. */
export async function listAll(s3: S3Client, bucket: string, prefix: string): Promise<Listed[]> {
  const out: Listed[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) out.push({ key: o.Key, lastModified: o.LastModified?.getTime() ?? 0 });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** The batch objects of one hour (the first layout's are compacted apart, and never deleted by compaction). */
export async function batchObjectsOfHour(s3: S3Client, config: Config, hour: number): Promise<Listed[]> {
  const { raw } = config;
  return (await listAll(s3, raw.bucket, rawHourPrefix(raw.prefix, hour))).filter((o) => parseRawObjectKey(raw.prefix, o.key)?.layout === 'batch');
}

/** Whether an hour holds a batch object modified after its marker (less the skew): page by page, stopping at the first. */
export async function hasLateObject(s3: S3Client, config: Config, hour: number, marker: HourMarker): Promise<boolean> {
  const { raw } = config;
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: raw.bucket, Prefix: rawHourPrefix(raw.prefix, hour), ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (!o.Key || parseRawObjectKey(raw.prefix, o.Key)?.layout !== 'batch') continue;
      if (isLate({ key: o.Key, lastModified: o.LastModified?.getTime() ?? 0 }, marker)) return true;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return false;
}

/** The hour of the oldest object of one layout under a prefix whose keys sort by date and hour (one LIST), or null when it holds none. */
export async function oldestHourUnder(s3: S3Client, raw: Config['raw'], prefix: string, layout: 'batch' | 'table'): Promise<number | null> {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: raw.bucket, Prefix: prefix, MaxKeys: 50 }));
  for (const o of page.Contents ?? []) {
    const parts = o.Key ? parseRawObjectKey(raw.prefix, o.Key) : null;
    if (parts?.layout === layout) return parts.hourStart;
  }
  return null;
}

/** The hour of the oldest batch object, or null when raw holds none. */
export const oldestBatchHour = (s3: S3Client, config: Config): Promise<number | null> => oldestHourUnder(s3, config.raw, rawBatchesPrefix(config.raw.prefix), 'batch');
