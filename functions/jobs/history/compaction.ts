/**
 * Hourly compaction (docs/history.md §2, §3): the closed hours of raw go into `history`, each
 * compacted hour is folded into `expected_state` and counted into `table_hours`, objects that
 * landed late in an already compacted hour are compacted by path, and raw past its grace is
 * deleted once its hour is compacted.
 *
 *   Plan    which hours are closed and not compacted (from the frontier, at most maxHoursPerRun),
 *           which compacted hours of the late-scan window hold objects newer than their marker:
 *           the queries, in order (compact, fold, count per hour)
 *   Query   (state machine) each query on Athena, one at a time, in order
 *   Finish  a marker per compacted hour, the frontier moved on, raw past the grace deleted
 *
 * An hour is closed 80 minutes after it began: a batch lands in the hour of its first record, and
 * a Lambda run lasts at most 15 minutes. Every statement is idempotent (compaction skips objects
 * history already holds, the fold only moves a key forward, the count replaces), so a failed run
 * is simply run again.
 *
 * State is in S3 under `<history>state/` (raw-layout.ts): `compaction.json` holds the frontier
 * (`compactedThrough`, the last hour every earlier hour of which is compacted, and
 * `cleanedThrough`, the last hour whose raw past the grace is deleted); one marker per compacted
 * hour (`compactedAt`) tells late objects apart (LastModified after it).
 */
import { DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { compactedHourKey, compactionFrontierKey, jobRunPrefix, parseRawObjectKey, rawTablePrefix, runFile, tableSegments } from '../../adapters/raw-layout.js';
import { CONTROL_TABLE } from '../../adapters/raw-store.js';
import { HOUR_MS } from '../../sql/index.js';
import type { JobDeps } from '../deps.js';
import { configQueryRefs, type QueryRef, s3Uri } from '../sql-run.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { putJson } from '../../adapters/s3-json.js';
import { batchObjectsOfHour, type CompactionFrontier, type HourMarker, isLate, oldestBatchHour, readCompactionFrontier, readHourMarker } from '../../adapters/compaction-state.js';

export type { CompactionFrontier, HourMarker } from '../../adapters/compaction-state.js';

/** How long after its start an hour may still receive batches: then it is closed. */
export const HOUR_CLOSES_AFTER_MS = HOUR_MS + 20 * 60_000;
/** S3 DeleteObjects takes at most 1,000 keys. */
const DELETE_BATCH = 1000;
/** Raw objects past the grace deleted per run at most (the rest next run). */
const MAX_DELETES_PER_RUN = 50_000;

export interface CompactionRequest {
  /** Epoch ms the run takes as now. @default the clock */
  readonly now?: number;
  /** Compact these hour starts (again), whatever the frontier says (the CLI's `--hour`). */
  readonly hours?: readonly number[];
  /**
   * Compact the hours still open too, up to the current one (the embedded default, where nothing
   * waits for an hour to close: `tidemark reconcile` and the demo run it first). Objects that land
   * later in those hours are compacted as late objects by the next run. @default false
   */
  readonly throughNow?: boolean;
  readonly runId?: string;
}

export interface CompactionPlan {
  readonly runId: string;
  readonly startedAt: number;
  /** Hours compacted for the first time, in order. */
  readonly hours: readonly number[];
  /** Compacted hours holding late objects, with how many. */
  readonly late: readonly { readonly hour: number; readonly objects: number }[];
  /** First-layout hours compacted by this run, in order, and how many are left for the next runs. */
  readonly legacy: { readonly hours: readonly number[]; readonly remaining: number } | null;
  /** The queries to run, in order, stored for the query loop. */
  readonly queries: StoredQueries;
  readonly frontier: CompactionFrontier;
}

export interface CompactionSummary {
  readonly runId: string;
  readonly hours: readonly number[];
  readonly lateHours: number;
  readonly lateObjects: number;
  readonly queries: number;
  readonly compactedThrough: number | null;
  /** Raw objects deleted past the grace. */
  readonly rawDeleted: number;
  readonly cleanedThrough: number | null;
  /** First-layout hours compacted by this run, and those left for the next runs. */
  readonly legacyHours: number;
  readonly legacyRemaining: number;
}

const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

export const readFrontier = (deps: JobDeps): Promise<CompactionFrontier> => readCompactionFrontier(deps.s3, deps.config);

/** The batch objects of one hour. */
const hourObjects = (deps: JobDeps, hour: number) => batchObjectsOfHour(deps.s3, deps.config, hour);
const oldestRawHour = (deps: JobDeps) => oldestBatchHour(deps.s3, deps.config);

/** The queries that compact one hour (or, with `objects`, only those late objects of it), fold it and count it. */
function hourQueries(deps: JobDeps, hour: number, objects?: readonly string[]): QueryRef[] {
  const { config } = deps;
  const compact = objects ? configQueryRefs(config, 'compact-objects', { objects: [...objects] }) : configQueryRefs(config, 'compact-hour', { hour });
  return [...compact, ...configQueryRefs(config, 'fold-expected', { hour }), ...configQueryRefs(config, 'count-table-hours', { from: hour, to: hour })];
}

/** Hours to compact for the first time: after the frontier (or from the oldest raw), closed, at most maxHoursPerRun. */
async function newHours(deps: JobDeps, frontier: CompactionFrontier, now: number, throughNow: boolean): Promise<number[]> {
  const lastClosed = throughNow ? hourOf(now) : hourOf(now - HOUR_CLOSES_AFTER_MS);
  const first = frontier.compactedThrough !== null ? frontier.compactedThrough + HOUR_MS : await oldestRawHour(deps);
  if (first === null) return [];
  const out: number[] = [];
  for (let h = first; h <= lastClosed && out.length < deps.config.history.compaction.maxHoursPerRun; h += HOUR_MS) out.push(h);
  return out;
}

/** The tables of the first layout, as compact-legacy-hour takes them: every configured table, and the controls. */
function legacyTables(deps: JobDeps): { table: string; segments: string[]; key: readonly string[] }[] {
  return [...deps.config.tables.map((t) => ({ table: t.source, segments: tableSegments(t.source), key: t.key })), { table: '', segments: [CONTROL_TABLE], key: [] }];
}

/**
 * The first layout's hours after `legacy.through`, per table, from a listing of each table's
 * prefix (a one-time migration: once a run finds none, the frontier says done and nothing is listed
 * again). At most maxHoursPerRun hours per run, the oldest first.
 */
async function legacyHours(deps: JobDeps, frontier: CompactionFrontier): Promise<{ hours: { hour: number; tables: ReturnType<typeof legacyTables> }[]; remaining: number } | null> {
  if (frontier.legacy?.done === true) return null;
  const through = frontier.legacy?.through ?? null;
  const byHour = new Map<number, Set<number>>();
  const tables = legacyTables(deps);
  for (const [i, t] of tables.entries()) {
    for (const segment of t.segments) {
      for await (const hour of legacySegmentHours(deps, segment)) {
        if (through !== null && hour <= through) continue;
        const set = byHour.get(hour) ?? new Set<number>();
        set.add(i);
        byHour.set(hour, set);
      }
    }
  }
  const all = [...byHour.keys()].sort((a, b) => a - b);
  const take = all.slice(0, deps.config.history.compaction.maxHoursPerRun);
  return { hours: take.map((hour) => ({ hour, tables: [...(byHour.get(hour) ?? [])].sort((a, b) => a - b).map((i) => tables[i] as (typeof tables)[number]) })), remaining: all.length - take.length };
}

/** The hour of every first-layout object under one table segment, page by page. */
async function* legacySegmentHours(deps: JobDeps, segment: string): AsyncGenerator<number> {
  const { raw } = deps.config;
  let token: string | undefined;
  do {
    const page = await deps.s3.send(new ListObjectsV2Command({ Bucket: raw.bucket, Prefix: rawTablePrefix(raw.prefix, segment), ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      const parts = o.Key ? parseRawObjectKey(raw.prefix, o.Key) : null;
      if (parts?.layout === 'table') yield parts.hourStart;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** Compacted hours of the late-scan window whose objects include some newer than their marker. */
async function lateHours(deps: JobDeps, frontier: CompactionFrontier): Promise<{ hour: number; objects: string[] }[]> {
  if (frontier.compactedThrough === null) return [];
  const { config } = deps;
  const scan = config.history.compaction.lateScanHours ?? config.history.rawGraceDays * 24;
  const out: { hour: number; objects: string[] }[] = [];
  for (let h = frontier.compactedThrough; h > frontier.compactedThrough - scan * HOUR_MS; h -= HOUR_MS) {
    const marker = await readHourMarker(deps.s3, config, h);
    if (marker === null) continue;
    const late = (await hourObjects(deps, h)).filter((o) => isLate(o, marker));
    if (late.length > 0) out.push({ hour: h, objects: late.map((o) => s3Uri(config.raw.bucket, o.key)) });
  }
  return out.reverse();
}

export async function planCompaction(request: CompactionRequest, deps: JobDeps): Promise<CompactionPlan> {
  const startedAt = request.now ?? deps.now();
  const runId = request.runId ?? `compact-${new Date(startedAt).toISOString().replace(/[:.]/g, '-')}`;
  const frontier = await readFrontier(deps);
  const hours = request.hours ? [...new Set(request.hours.map(hourOf))].sort((a, b) => a - b) : await newHours(deps, frontier, startedAt, request.throughNow === true);
  const late = request.hours ? [] : await lateHours(deps, frontier);
  const legacy = request.hours ? null : await legacyHours(deps, frontier);
  const { config } = deps;
  // The first layout's hours first: folding is order-free (a row only moves forward), and their lines come before the batches'.
  const legacyQueries = (legacy?.hours ?? []).flatMap(({ hour, tables }) => [
    ...tables.flatMap((t) => configQueryRefs(config, 'compact-legacy-hour', { table: t.table, segments: t.segments, key: [...t.key], hour })),
    ...configQueryRefs(config, 'fold-expected', { hour }),
    ...configQueryRefs(config, 'count-table-hours', { from: hour, to: hour }),
  ]);
  const queries = [...legacyQueries, ...late.flatMap((l) => hourQueries(deps, l.hour, l.objects)), ...hours.flatMap((h) => hourQueries(deps, h))];
  deps.log.info('compaction planned', { runId, hours: hours.length, lateHours: late.length, legacyHours: legacy?.hours.length ?? 0, queries: queries.length });
  const stored = await storeQueries(deps, runFile(jobRunPrefix(deps.config.replay.jobsPrefix, 'compaction', runId), 'queries'), queries);
  return {
    runId,
    startedAt,
    hours,
    late: late.map((l) => ({ hour: l.hour, objects: l.objects.length })),
    legacy: legacy ? { hours: legacy.hours.map((h) => h.hour), remaining: legacy.remaining } : null,
    queries: stored,
    frontier,
  };
}

/** The frontier after a run: the last hour of an unbroken run of compacted hours. */
function advance(frontier: CompactionFrontier, hours: readonly number[]): number | null {
  let through = frontier.compactedThrough;
  for (const h of hours) {
    if (through === null || h === through + HOUR_MS) through = h;
    else if (h > through + HOUR_MS) break;
  }
  return through;
}

/** Deletes raw objects of compacted hours past the grace, written before their hour's marker. */
async function cleanRaw(deps: JobDeps, frontier: CompactionFrontier, compactedThrough: number | null, now: number): Promise<{ deleted: number; cleanedThrough: number | null }> {
  const { config } = deps;
  if (compactedThrough === null) return { deleted: 0, cleanedThrough: frontier.cleanedThrough };
  const graceEnd = Math.min(compactedThrough, hourOf(now - config.history.rawGraceDays * 24 * HOUR_MS));
  let cleaned = frontier.cleanedThrough;
  let deleted = 0;
  let h = cleaned !== null ? cleaned + HOUR_MS : await oldestRawHour(deps);
  for (; h !== null && h <= graceEnd && deleted < MAX_DELETES_PER_RUN; h += HOUR_MS) {
    const marker = await readHourMarker(deps.s3, config, h);
    cleaned = h;
    // No marker: nothing says which of its objects history holds, so none is deleted.
    if (marker === null) continue;
    const objects = (await hourObjects(deps, h)).filter((o) => !isLate(o, marker));
    for (let i = 0; i < objects.length; i += DELETE_BATCH) {
      const chunk = objects.slice(i, i + DELETE_BATCH);
      const res = await deps.s3.send(new DeleteObjectsCommand({ Bucket: config.raw.bucket, Delete: { Objects: chunk.map((o) => ({ Key: o.key })), Quiet: true } }));
      if ((res.Errors ?? []).length > 0) throw new Error(`deleting raw past the grace: ${res.Errors?.length} of ${chunk.length} objects of ${new Date(h).toISOString()} failed (${res.Errors?.[0]?.Code})`);
      deleted += chunk.length;
    }
  }
  return { deleted, cleanedThrough: cleaned };
}

/** After every query succeeded: the hours' markers, the frontier, and raw past the grace. */
export async function finishCompaction(input: { plan: CompactionPlan }, deps: JobDeps): Promise<CompactionSummary> {
  const { plan } = input;
  const { config } = deps;
  const done = [...plan.hours, ...plan.late.map((l) => l.hour)];
  for (const hour of done) await putJson(deps.s3, config.raw.bucket, compactedHourKey(config.history.prefix, hour), { hour, compactedAt: plan.startedAt } satisfies HourMarker);
  // Read again: a concurrent run (the CLI while the schedule runs) may have moved it meanwhile.
  const current = await readFrontier(deps);
  const compactedThrough = advance(current, plan.hours);
  const clean = await cleanRaw(deps, current, compactedThrough, deps.now());
  const legacyThrough = plan.legacy && plan.legacy.hours.length > 0 ? Math.max(...plan.legacy.hours) : (current.legacy?.through ?? null);
  const legacy = plan.legacy ? { through: legacyThrough, done: plan.legacy.hours.length === 0 } : current.legacy;
  const frontier: CompactionFrontier = { compactedThrough, cleanedThrough: clean.cleanedThrough, ...(legacy ? { legacy } : {}) };
  await putJson(deps.s3, config.raw.bucket, compactionFrontierKey(config.history.prefix), frontier);
  const summary: CompactionSummary = {
    runId: plan.runId,
    hours: plan.hours,
    lateHours: plan.late.length,
    lateObjects: plan.late.reduce((n, l) => n + l.objects, 0),
    queries: plan.queries.count,
    compactedThrough,
    rawDeleted: clean.deleted,
    cleanedThrough: clean.cleanedThrough,
    legacyHours: plan.legacy?.hours.length ?? 0,
    legacyRemaining: plan.legacy?.remaining ?? 0,
  };
  deps.log.info('compaction finished', { runId: plan.runId, hours: plan.hours.length, rawDeleted: clean.deleted });
  return summary;
}

/** The first hour not compacted yet (hour start): history holds every earlier hour, raw this one and later. */
export async function uncompactedFrom(deps: JobDeps): Promise<number> {
  const f = await readFrontier(deps);
  if (f.compactedThrough !== null) return f.compactedThrough + HOUR_MS;
  return (await oldestRawHour(deps)) ?? hourOf(deps.now());
}
