/**
 * The S3 side of the embedded engine (duckdb-engine.ts): which objects a statement reads, fetched
 * into a local directory that mirrors their keys; and the Parquet files standing in for the Iceberg
 * tables, one directory per partition:
 *
 *   <warehouse>history/source_table=public.caf%C3%A9/dt=2026-11-30/g00000001-<id>.parquet
 *   <warehouse>expected_state/source_table=public.orders/g00000004-<id>.parquet
 *   <warehouse>truncates/g00000002-<id>.parquet      <warehouse>table_hours/dt=2026-11-30/g00000001-<id>.parquet
 *
 * A partition's current files are those of its highest generation: an INSERT adds files at the
 * current generation, a rewrite (MERGE, DELETE) writes the next one and then removes the older files
 * with every version, so a reader never sees half of a rewrite and an erased row is physically gone.
 */
import { createReadStream, createWriteStream, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { encodeSegment, quarantineHourPrefix, rawHourPrefix, rawTableHourPrefix, runPartitionPrefix } from '../../functions/adapters/raw-layout.js';
import { mapLimit } from '../../functions/core/concurrency.js';
import { deleteOlderVersions } from '../../functions/erase/erase.js';
import type { TableName } from '../../functions/sql/schemas.js';
import type { PartitionFilter } from '../../functions/sql/statement.js';
import { HOUR_MS } from '../../functions/sql/time.js';
import type { PlainValue } from './duckdb-values.js';
import { listObjectKeys } from '../../functions/adapters/s3-list.js';

/** Where everything the engine reads and writes sits in the bucket. */
export interface StoreLayout {
  readonly bucket: string;
  readonly rawPrefix: string;
  readonly quarantinePrefix: string;
  /** The Parquet stand-ins of the Iceberg tables: `<warehouse>history/…`. */
  readonly warehousePrefix: string;
  /** The table side files reconcile reads: `<tableSide>run_id=<run>/…`. */
  readonly tableSidePrefix: string;
  /** The erase runs' keys: `<eraseKeys>run_id=<run>/…` (raw-layout.ts eraseKeysPrefix). Needed by the erase statements only. */
  readonly eraseKeysPrefix?: string;
}

export type IcebergTable = Extract<TableName, 'history' | 'expected_state' | 'truncates' | 'table_hours'>;
export const ICEBERG_TABLES: readonly IcebergTable[] = ['history', 'expected_state', 'truncates', 'table_hours'];

/** The current files of one partition of a stand-in table. */
export interface Partition {
  /** `<warehouse><table>/<col>=<value>/…/`, ending in `/`. */
  readonly dir: string;
  readonly generation: number;
  readonly keys: readonly string[];
}


const hoursOf = (f: PartitionFilter): number[] => {
  const out: number[] = [];
  if (f.hours) for (let h = f.hours.from; h <= f.hours.to; h += HOUR_MS) out.push(h);
  return out;
};

async function collect(s3: S3Client, bucket: string, prefixes: readonly string[], keep: (key: string) => boolean = () => true): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of prefixes) for await (const key of listObjectKeys(s3, bucket, prefix)) if (keep(key)) out.push(key);
  return out;
}

/** `s3://bucket/key` → key, for an object of the layout's bucket. */
function keyOfUri(layout: StoreLayout, uri: string): string {
  const root = `s3://${layout.bucket}/`;
  if (!uri.startsWith(root)) throw new Error(`${uri} is not in the bucket ${layout.bucket}`);
  return uri.slice(root.length);
}

/** The keys of a JSON source (raw_lines, raw_events, quarantine_lines, table_side, erase_keys) a statement reads. */
export async function sourceKeys(s3: S3Client, layout: StoreLayout, table: TableName, f: PartitionFilter): Promise<string[]> {
  const gz = (k: string) => k.endsWith('.jsonl.gz');
  switch (table) {
    case 'raw_lines':
      if (f.objects) return f.objects.map((u) => keyOfUri(layout, u));
      return collect(s3, layout.bucket, hoursOf(f).map((h) => rawHourPrefix(layout.rawPrefix, h)), gz);
    case 'raw_events':
      return collect(s3, layout.bucket, (f.segments ?? []).flatMap((seg) => hoursOf(f).map((h) => rawTableHourPrefix(layout.rawPrefix, seg, h))), gz);
    case 'quarantine_lines':
      return collect(s3, layout.bucket, hoursOf(f).map((h) => quarantineHourPrefix(layout.quarantinePrefix, h)), gz);
    case 'table_side':
      return collect(s3, layout.bucket, [runPartitionPrefix(layout.tableSidePrefix, f.runId ?? '')]);
    case 'erase_keys':
      if (layout.eraseKeysPrefix === undefined) throw new Error('the engine was built without eraseKeysPrefix, which the erase statements read');
      return collect(s3, layout.bucket, [runPartitionPrefix(layout.eraseKeysPrefix, f.runId ?? '')]);
    default:
      throw new Error(`${table} is not a JSON source`);
  }
}

const PARTITION_COLUMNS: Readonly<Record<IcebergTable, readonly string[]>> = { history: ['source_table', 'dt'], expected_state: ['source_table'], truncates: [], table_hours: ['dt'] };

export const tableRoot = (layout: StoreLayout, table: IcebergTable): string => `${layout.warehousePrefix}${table}/`;

/** The partition directory of a row's partition values. */
export function partitionDir(layout: StoreLayout, table: IcebergTable, values: Readonly<Record<string, PlainValue>>): string {
  return `${tableRoot(layout, table)}${PARTITION_COLUMNS[table].map((c) => `${c}=${encodeSegment(String(values[c] ?? ''))}/`).join('')}`;
}

export const partitionColumns = (table: IcebergTable): readonly string[] => PARTITION_COLUMNS[table];

/** `g00000003-…parquet` → 3; null for anything else. */
function generationOf(key: string): number | null {
  const name = key.slice(key.lastIndexOf('/') + 1);
  if (!name.endsWith('.parquet') || name.charAt(0) !== 'g') return null;
  const n = Number(name.slice(1, 9));
  return Number.isInteger(n) ? n : null;
}

/** A partition directory's `dt=` value, if it has one. */
function dtOf(dir: string): string | null {
  const at = dir.indexOf('/dt=');
  return at < 0 ? null : dir.slice(at + 4, at + 14);
}

/** The current partitions of a stand-in table the filter selects (tables and days). */
export async function partitions(s3: S3Client, layout: StoreLayout, table: IcebergTable, f: PartitionFilter): Promise<Partition[]> {
  const root = tableRoot(layout, table);
  const prefixes = f.tables && PARTITION_COLUMNS[table].includes('source_table') ? f.tables.map((t) => `${root}source_table=${encodeSegment(t)}/`) : [root];
  const byDir = new Map<string, { generation: number; keys: string[] }>();
  for (const prefix of prefixes) {
    for await (const key of listObjectKeys(s3, layout.bucket, prefix)) {
      const generation = generationOf(key);
      const dir = key.slice(0, key.lastIndexOf('/') + 1);
      const dt = dtOf(dir.slice(root.length - 1));
      if (generation === null || (f.days && dt !== null && (dt < f.days.from || dt > f.days.to))) continue;
      const p = byDir.get(dir);
      if (!p || generation > p.generation) byDir.set(dir, { generation, keys: [key] });
      else if (generation === p.generation) p.keys.push(key);
    }
  }
  return [...byDir.entries()].map(([dir, p]) => ({ dir, ...p }));
}

/** The current files of one partition directory, or null when it has none. */
export async function partitionAt(s3: S3Client, layout: StoreLayout, dir: string): Promise<Partition | null> {
  let generation = -1;
  let keys: string[] = [];
  for await (const key of listObjectKeys(s3, layout.bucket, dir)) {
    const g = generationOf(key);
    if (g === null || key.lastIndexOf('/') !== dir.length - 1 || g < generation) continue;
    if (g > generation) keys = [];
    generation = g;
    keys.push(key);
  }
  return generation < 0 ? null : { dir, generation, keys };
}

/** Fetches objects into `localRoot`, each at its key (bounded concurrency, streamed to disk). */
export async function download(s3: S3Client, bucket: string, keys: readonly string[], localRoot: string): Promise<void> {
  await mapLimit(keys, 8, async (key) => {
    const file = join(localRoot, key);
    mkdirSync(dirname(file), { recursive: true });
    const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    if (!res.Body) throw new Error(`${key} has no body`);
    await pipeline(res.Body as Readable, createWriteStream(file));
  });
}

/** Stores a local file at a key, streamed. */
export async function upload(s3: S3Client, bucket: string, key: string, file: string, contentType: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: createReadStream(file), ContentLength: statSync(file).size, ContentType: contentType }));
}

/** Removes an object with every version (erase.ts deleteOlderVersions), or plainly where the store keeps none. */
export async function removeEverywhere(s3: S3Client, bucket: string, key: string): Promise<number> {
  const versions = await deleteOlderVersions(s3, bucket, key, undefined, true);
  if (versions !== null && versions > 0) return versions;
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  return 1;
}
