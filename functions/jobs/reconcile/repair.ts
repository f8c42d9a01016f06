/**
 * `reconcile --repair` on SQL: the repairable findings' keys (missing, deleted-live, stale,
 * mismatch) re-applied from what history and raw hold of them, through the guarded writer.
 *
 *   RepairPlan     the classify query's findings of repairable classes (less erased keys) → the
 *                  keys per table (`<run>repair-keys.json`) and the replay-select statement
 *                  restricted to them (functions/sql/statements/replay-select.ts: history before
 *                  compaction's frontier, raw from it), UNLOADing under the run's `repair/`
 *   RepairQueries  the query loop (Athena on AWS, DuckDB locally)
 *   Repair         the selected rows merged in key and position order (functions/replay/bucket-merge.ts),
 *                  each key's events folded by planBatch as ingest folds them, and written: through
 *                  the ingest's guard (`stored < base`), or for a mismatch (same position, other
 *                  content) with the same-bad-row guard (repair-write.ts). Outcomes per key go to
 *                  `<run>repair-outcomes.json`, which the report puts on each finding.
 *
 * Critical classes (ahead, extra) are never repaired: raw does not have what would repair them.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { errorMessage } from '../../core/errors.js';
import { encodePosition } from '../../core/position.js';
import { planBatch } from '../../core/plan.js';
import type { ChangeEvent } from '../../core/types.js';
import { runFile, unloadPrefix } from '../../adapters/raw-layout.js';
import { listObjectKeys } from '../../adapters/s3-list.js';
import { compareRows, jsonLines, mergeSorted, type ReplayRow, recordOf, rowOf } from '../../replay/bucket-merge.js';
import { eventName } from '../../replay/selection.js';
import { HOUR_MS } from '../../sql/index.js';
import type { JobDeps } from '../deps.js';
import { readFrontier } from '../history/compaction.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { configQueryRefs, s3Uri } from '../sql-run.js';
import { REPAIRABLE_CLASSES } from './classify.js';
import { replaceMismatch } from './repair-write.js';
import { getJson, putJson } from '../../adapters/s3-json.js';

/** Keys per replay-select query: its text names each key id, and stays far below Athena's query size. */
export const REPAIR_KEYS_PER_QUERY = 1000;

/** A key to repair: its finding's class and, for a mismatch, the content hash the table held. */
export interface RepairKey {
  readonly table: string;
  readonly keyId: string;
  readonly class: string;
  readonly actualHash: string | null;
}

/** What the Repair task needs: the stored queries, where their output goes, and the keys' list. */
export interface RepairPlan extends StoredQueries {
  readonly bucket: string;
  readonly prefix: string;
  readonly keysKey: string;
  readonly keys: number;
}

/** What a repair did: keys applied, keys not repaired, and where each key's outcome is. */
export interface RepairOutcome {
  readonly repaired: number;
  readonly failed: number;
  readonly outcomesKey: string;
}

/** The run fields the repair reads (functions/jobs/reconcile/run.ts `ReconcileRun`). */
export interface RepairRun {
  readonly runId: string;
  readonly startedAt: number;
  readonly tables: readonly string[];
  readonly prefix: string;
  readonly bucket: string;
}

export const repairKeyId = (table: string, keyId: string): string => `${table}\u0000${keyId}`;

/** The first hour history does not hold: after compaction's frontier, or (nothing compacted) the epoch, so raw is read whole. */
async function uncompactedFrom(deps: JobDeps): Promise<number> {
  const frontier = await readFrontier(deps);
  return frontier.compactedThrough === null ? 0 : frontier.compactedThrough + HOUR_MS;
}

/** The keys of the repairable findings, in the order found. */
export function repairKeysOf(findings: Iterable<{ source_table: string; key_id: string; class: string; actual_hash: string | null }>): RepairKey[] {
  const seen = new Set<string>();
  const out: RepairKey[] = [];
  for (const f of findings) {
    if (!REPAIRABLE_CLASSES.has(f.class as never)) continue;
    const id = repairKeyId(f.source_table, f.key_id);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ table: f.source_table, keyId: f.key_id, class: f.class, actualHash: f.actual_hash ?? null });
  }
  return out;
}

/** The replay-select queries of the keys, `REPAIR_KEYS_PER_QUERY` at a time, each to its own part of the output. */
export function repairQueries(deps: Pick<JobDeps, 'config'>, run: RepairRun, keys: readonly RepairKey[], from: number): ReturnType<typeof configQueryRefs> {
  const prefix = unloadPrefix(deps.config.history.prefix, 'reconcile', run.runId, 'repair');
  const refs: ReturnType<typeof configQueryRefs> = [];
  for (let i = 0; i < keys.length; i += REPAIR_KEYS_PER_QUERY) {
    const byTable = new Map<string, string[]>();
    for (const k of keys.slice(i, i + REPAIR_KEYS_PER_QUERY)) byTable.set(k.table, [...(byTable.get(k.table) ?? []), k.keyId]);
    const part = String(i / REPAIR_KEYS_PER_QUERY).padStart(5, '0');
    refs.push(
      ...configQueryRefs(deps.config, 'replay-select', {
        tables: [...byTable.keys()],
        since: 0,
        until: run.startedAt + 1,
        buckets: 1,
        uncompactedFrom: from,
        keys: [...byTable].map(([table, keyIds]) => ({ table, keyIds })),
        output: s3Uri(run.bucket, `${prefix}part=${part}/`),
      }),
    );
  }
  return refs;
}

/** RepairPlan: the repairable keys (given by the report's reading of the findings) and their queries, stored. */
export async function planRepairOf(deps: JobDeps, run: RepairRun, keys: readonly RepairKey[]): Promise<RepairPlan> {
  const keysKey = runFile(run.prefix, 'repairKeys');
  await putJson(deps.s3, run.bucket, keysKey, keys);
  const refs = keys.length === 0 ? [] : repairQueries(deps, run, keys, await uncompactedFrom(deps));
  const stored = await storeQueries(deps, runFile(run.prefix, 'repairQueries'), refs);
  deps.log.info('reconcile repair planned', { runId: run.runId, keys: keys.length, queries: refs.length });
  return { ...stored, bucket: run.bucket, prefix: unloadPrefix(deps.config.history.prefix, 'reconcile', run.runId, 'repair'), keysKey, keys: keys.length };
}

async function* rowsOfFile(s3: S3Client, bucket: string, key: string): AsyncGenerator<ReplayRow> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const body = got.Body instanceof Readable ? got.Body : Readable.from([Buffer.from((await got.Body?.transformToByteArray()) ?? [])]);
  let n = 0;
  for await (const line of jsonLines(body, key)) yield rowOf(line, `${key} row ${++n}`);
}

/** One key's selected rows → its events (only those the rows name), in the rows' order. */
export function eventsOfRows(deps: Pick<JobDeps, 'normalizer'>, rows: readonly ReplayRow[]): ChangeEvent[] {
  const names = new Set(rows.map((r) => eventName(r.source_table, r.key_id, r.position)));
  const seen = new Set<string>();
  const events: ChangeEvent[] = [];
  for (const row of rows) {
    const record = recordOf(row);
    const id = JSON.stringify([row.transport_kind, row.stream, row.shard, row.sequence]);
    if (seen.has(id)) continue;
    seen.add(id);
    const n = deps.normalizer.normalize(record);
    if (!n.ok) continue;
    for (const e of n.events) {
      if (e.kind === 'control' || e.op === 't') continue;
      const name = eventName(e.table, deps.normalizer.keyIdOf(e), encodePosition(e.position.tuple));
      if (names.has(name)) {
        names.delete(name);
        events.push(e);
      }
    }
  }
  return events;
}

/** Folds a key's events and writes the result; the write's outcome (`applied`, `stale`, …) or why it could not. */
export async function repairWrite(deps: JobDeps, key: RepairKey, events: readonly ChangeEvent[]): Promise<string> {
  if (events.length === 0) return 'unrepairable: no event of the key in history or raw';
  const write = planBatch(events, (e) => deps.normalizer.keyIdOf(e)).writes[0];
  if (!write) return 'unrepairable: nothing to write';
  if (key.class === 'mismatch' && key.actualHash !== null) return replaceMismatch(deps, write, key.actualHash);
  const result = await deps.writer.write(write);
  if (result.outcome === 'failed') deps.log.warn('reconcile repair failed', { table: key.table, keyHash: deps.keyRef(key.table, key.keyId), position: write.encodedPosition, error: result.error ? errorMessage(result.error) : 'unknown' });
  return result.outcome;
}

/** Repair: every selected row of the run's repair output, merged by key and position, each key folded and written. */
export async function applyRepair(input: { run: RepairRun; repairPlan: RepairPlan }, deps: JobDeps): Promise<RepairOutcome> {
  const { run, repairPlan } = input;
  const keys = await getJson<RepairKey[]>(deps.s3, run.bucket, repairPlan.keysKey);
  const wanted = new Map(keys.map((k) => [repairKeyId(k.table, k.keyId), k]));
  const outcomes: Record<string, string> = {};
  const files: string[] = [];
  if (keys.length > 0) for await (const key of listObjectKeys(deps.s3, repairPlan.bucket, repairPlan.prefix)) files.push(key);
  let current = null as { id: string; rows: ReplayRow[] } | null;
  const flush = async () => {
    if (current === null) return;
    const k = wanted.get(current.id);
    if (k) outcomes[current.id] = await repairWrite(deps, k, eventsOfRows(deps, current.rows)).catch((err: unknown) => `failed: ${errorMessage(err)}`);
    current = null;
  };
  for await (const row of mergeSorted(files.map((f) => rowsOfFile(deps.s3, repairPlan.bucket, f)), compareRows)) {
    if (row.key_id === null) continue;
    const id = repairKeyId(row.source_table, row.key_id);
    if (current?.id !== id) {
      await flush();
      current = { id, rows: [] };
    }
    current.rows.push(row);
  }
  await flush();
  for (const id of wanted.keys()) outcomes[id] ??= 'unrepairable: no event of the key in history or raw';
  const repaired = Object.values(outcomes).filter((o) => o === 'applied').length;
  const outcomesKey = runFile(run.prefix, 'repairOutcomes');
  await putJson(deps.s3, run.bucket, outcomesKey, outcomes);
  deps.log.info('reconcile repaired', { runId: run.runId, keys: keys.length, repaired });
  return { repaired, failed: keys.length - repaired, outcomesKey };
}

/** The outcome of each repaired key, by `repairKeyId`. */
export async function readRepairOutcomes(s3: S3Client, bucket: string, key: string): Promise<Map<string, string>> {
  return new Map(Object.entries(await getJson<Record<string, string>>(s3, bucket, key)));
}
