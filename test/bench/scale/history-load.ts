/**
 * Loads the scale workload into a bucket as the ingest would land it: each batch decoded
 * (functions/ingest/decode.ts) and landed by `RawStore.land`, one raw object per batch. While it
 * lands, it folds the lines (highest position per table and key wins) and, after the hours named
 * as checkpoints, writes a table side as the export-to-table-side step produces it (TABLE_SIDE:
 * one gzip JSON line per item, `<tableSide>run_id=<run>/part-N.jsonl.gz`), with a known set of
 * differences so reconcile has something to find:
 *
 * - every key index ≡ 0 (mod 997) has no item: `missing` when its winner is live, else `ok`;
 * - every key index ≡ 1 (mod 991) has the winner's position with another hash: `mismatch`;
 * - `extra` items of ids no change ever named: `extra`;
 * - every other key has the winner's item (a tombstone for a deleted winner): `ok`.
 *
 *   const load = await loadHistory(s3, layout, { ...workload, checkpoints: [3, 19] });
 *   load.checkpoints[0].expected   // { ok: 19_811, missing: 18, mismatch: 20, extra: 50 }
 */
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { encodeSegment } from '../../../functions/adapters/raw-layout.js';
import { RAW_GZIP, RawStore } from '../../../functions/adapters/raw-store.js';
import { Normalizer } from '../../../functions/core/normalize.js';
import { batchCoordinates } from '../../../functions/ingest/land.js';
import type { StoreLayout } from '../../../bin/local/duckdb-store.js';
import { decodeBatch } from './landing.js';
import { type ScaleWorkloadOptions, scaleBatches, scaleConfig, tableName } from './workload.js';

const gzipAsync = promisify(gzip);
const HOUR_MS = 3_600_000;

export interface LoadOptions extends ScaleWorkloadOptions {
  /** Indexes into the workload's event hours after which a table side is written (run `h<index>`). */
  readonly checkpoints: readonly number[];
  /** Extra items per checkpoint (keys no change names). @default 50 */
  readonly extra?: number;
  readonly log?: (line: string) => void;
}

/** The reconcile classes the table side was built to give. */
export type ExpectedCounts = Readonly<Record<'ok' | 'missing' | 'mismatch' | 'extra', number>>;

export interface Checkpoint {
  readonly runId: string;
  /** Index of the last hour landed before the table side was written. */
  readonly afterHour: number;
  /** Items applied after it are in flight: the end of that hour. */
  readonly cutoff: number;
  readonly items: number;
  readonly expected: ExpectedCounts;
  /** Change lines landed so far. */
  readonly events: number;
}

export interface LoadResult {
  readonly events: number;
  readonly records: number;
  readonly keys: number;
  readonly objects: number;
  readonly rawBytes: number;
  readonly quarantined: number;
  /** The hour start of each hour that received batches, in order. */
  readonly hours: readonly number[];
  readonly checkpoints: readonly Checkpoint[];
  readonly seconds: number;
}

interface Winner {
  readonly index: number;
  readonly table: string;
  readonly keyId: string;
  readonly key: string;
  readonly position: string;
  readonly hash: string;
  readonly deleted: boolean;
  readonly applied: number;
}

/** `public.t0003` and id 7 → the workload's key index. */
const keyIndexOf = (tables: number, table: string, key: string): number => {
  const t = Number(table.slice('public.t'.length)) - 1;
  const id = (JSON.parse(key) as { id: number }).id;
  return (id - 1) * tables + t;
};

/** The table side's lines of one checkpoint, in parts of `partLines` lines, and the classes they were built to give. */
function* tableSide(winners: ReadonlyMap<string, Winner>, tables: number, keys: number, extra: number, partLines = 50_000): Generator<{ lines: string[]; counts: ExpectedCounts }> {
  const counts = { ok: 0, missing: 0, mismatch: 0, extra: 0 };
  let lines: string[] = [];
  const flush = () => {
    const out = { lines, counts: { ...counts } };
    lines = [];
    return out;
  };
  for (const w of winners.values()) {
    if (w.index % 997 === 0) {
      counts[w.deleted ? 'ok' : 'missing']++;
      continue;
    }
    const hash = w.index % 991 === 1 ? 'tampered-hash-00000000' : w.hash;
    counts[hash === w.hash ? 'ok' : 'mismatch']++;
    lines.push(JSON.stringify({ source_table: w.table, key_id: w.keyId, key_json: w.key, position: w.position, deleted: w.deleted, erased: false, hash, applied_at: w.applied }));
    if (lines.length >= partLines) yield flush();
  }
  for (let i = 0; i < extra; i++) {
    const id = Math.floor(keys / tables) + 10 + i;
    const table = `public.${tableName(i % tables)}`;
    counts.extra++;
    lines.push(JSON.stringify({ source_table: table, key_id: JSON.stringify([String(id)]), key_json: JSON.stringify({ id }), position: 'a0', deleted: false, erased: false, hash: 'extra', applied_at: 0 }));
  }
  yield flush();
}

/** Lands the workload through RawStore.land into `layout.bucket` and writes the checkpoints' table sides. */
export async function loadHistory(s3: S3Client, layout: StoreLayout, o: LoadOptions): Promise<LoadResult> {
  const started = performance.now();
  const config = scaleConfig(o.tables, layout.bucket);
  const normalizer = new Normalizer(config);
  const store = new RawStore(s3, layout.bucket, layout.rawPrefix, layout.quarantinePrefix);
  const winners = new Map<string, Winner>();
  const hours: number[] = [];
  const checkpoints: Checkpoint[] = [];
  let events = 0;
  let records = 0;
  let objects = 0;
  let rawBytes = 0;
  let quarantined = 0;
  const checkpoint = async (afterHour: number) => {
    const runId = `h${afterHour}`;
    const last = hours[afterHour] as number;
    let part = 0;
    let items = 0;
    let expected: ExpectedCounts = { ok: 0, missing: 0, mismatch: 0, extra: 0 };
    for (const chunk of tableSide(winners, o.tables, o.keys, o.extra ?? 50)) {
      const body = await gzipAsync(Buffer.from(`${chunk.lines.join('\n')}\n`, 'utf8'), RAW_GZIP);
      await s3.send(new PutObjectCommand({ Bucket: layout.bucket, Key: `${layout.tableSidePrefix}run_id=${encodeSegment(runId)}/part-${part++}.jsonl.gz`, Body: body }));
      items += chunk.lines.length;
      expected = chunk.counts;
    }
    checkpoints.push({ runId, afterHour, cutoff: last + HOUR_MS, items, expected, events });
    o.log?.(`checkpoint ${runId}: ${items} items after ${events} events`);
  };
  for (const b of scaleBatches(o)) {
    if (hours.length === 0 || hours[hours.length - 1] !== b.hour) {
      if (hours.length > 0 && o.checkpoints.includes(hours.length - 1)) await checkpoint(hours.length - 1);
      hours.push(b.hour);
    }
    const decoded = decodeBatch(b.records, config, normalizer);
    const landed = await store.land(batchCoordinates(b.records), decoded.lines, decoded.quarantined);
    objects += landed.objects;
    rawBytes += landed.bytes;
    records += b.records.length;
    quarantined += decoded.quarantined.length;
    for (const l of decoded.lines) {
      if (l.kind !== 'change' || l.table === null || l.keyId === null || l.key === null || l.position === null) continue;
      events++;
      const id = `${l.table}\u0000${l.keyId}`;
      const prev = winners.get(id);
      if (prev && prev.position >= l.position) continue;
      winners.set(id, { index: keyIndexOf(o.tables, l.table, l.key), table: l.table, keyId: l.keyId, key: l.key, position: l.position, hash: l.hash ?? '', deleted: l.op === 'd', applied: l.arrivalTs });
    }
    if (b.index % 100 === 0) o.log?.(`loaded ${events} events, ${objects} objects`);
  }
  if (o.checkpoints.includes(hours.length - 1)) await checkpoint(hours.length - 1);
  return { events, records, keys: winners.size, objects, rawBytes, quarantined, hours, checkpoints, seconds: (performance.now() - started) / 1000 };
}
