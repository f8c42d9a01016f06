/**
 * Step 1 of reconcile: fix the run (id, cutoff, window, tables) and cut the work into items: groups
 * of raw objects for the shuffle, table scan segments (full mode), the manifest reader, and the
 * reduce partitions. Item lists are written to S3; the state carries only their indexes.
 */
import { randomBytes } from 'node:crypto';
import { listTablesRaw, type ObjectRef } from '../raw-scan.js';
import { putJson } from '../shuffle.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import type { ManifestItem, PlanOutput, RawItem, ReconcileRequest, RunContext, TableItem } from './types.js';
import { reportRunPrefix } from '../../adapters/raw-layout.js';
import { validateReconcileRequest } from '../inputs.js';

/** A shuffle task reads at most this much compressed raw, or this many objects. */
export const ITEM_MAX_BYTES = 16 * 1024 * 1024;
export const ITEM_MAX_OBJECTS = 200;
const HOUR_MS = 3_600_000;

export const rawItemKey = (run: RunContext, index: number): string => `${run.prefix}items/raw-${String(index).padStart(5, '0')}.json`;

function parseS3Uri(uri: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!m?.[1] || !m[2]) throw new JobInputError(`manifest must be an s3://bucket/key URI, got "${uri}"`);
  return { bucket: m[1], key: m[2] };
}

/** Groups objects (in key order) into items bounded in bytes and count. */
export function groupObjects(objects: readonly ObjectRef[]): ObjectRef[][] {
  const groups: ObjectRef[][] = [];
  let current: ObjectRef[] = [];
  let bytes = 0;
  for (const o of [...objects].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    if (current.length > 0 && (current.length >= ITEM_MAX_OBJECTS || bytes + o.size > ITEM_MAX_BYTES)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(o);
    bytes += o.size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

const isoMs = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new JobInputError(`${name} must be an ISO 8601 time, got "${text}"`);
  return ms;
};

function modeOf(request: ReconcileRequest): 'window' | 'full' {
  const mode = request.mode ?? 'window';
  if (mode !== 'window' && mode !== 'full') throw new JobInputError(`mode must be "window" or "full", got "${String(mode)}"`);
  return mode;
}

function runIdOf(request: ReconcileRequest, mode: string, startedAt: number): string {
  const runId = request.runId ?? `${mode}-${new Date(startedAt).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9._-]{1,80}$/.test(runId)) throw new JobInputError(`runId must be 1-80 characters of A-Z a-z 0-9 . _ -, got "${runId}"`);
  return runId;
}

/** The arrival-time window of a window-mode run: since/until, or the last `hours` before the cutoff. */
function windowOf(request: ReconcileRequest, mode: 'window' | 'full', hours: number, cutoff: number, startedAt: number): RunContext['window'] {
  const since = isoMs('since', request.since);
  const until = isoMs('until', request.until);
  if (since !== undefined && until !== undefined && since >= until) throw new JobInputError(`since (${request.since}) must be before until (${request.until})`);
  // The window names which keys to check; their raw is read up to now, so late events count.
  return mode === 'window' ? { fromMs: since ?? (until ?? cutoff) - hours * HOUR_MS, toMs: until ?? startedAt } : null;
}

/** Full mode scans every table in segments; a manifest is one more item. */
function tableItemsOf(run: RunContext, scanSegments: number): (TableItem | ManifestItem)[] {
  const tableItems: (TableItem | ManifestItem)[] = [];
  if (run.mode === 'full') {
    for (const table of run.tables) {
      for (let segment = 0; segment < scanSegments; segment++) tableItems.push({ kind: 'table', table, segment, totalSegments: scanSegments });
    }
  }
  if (run.manifest) tableItems.push({ kind: 'manifest' });
  return tableItems;
}

export async function planReconcile(request: ReconcileRequest, deps: JobDeps): Promise<PlanOutput> {
  const { config } = deps;
  validateReconcileRequest(config, request);
  const settings = config.jobs.reconcile;
  const mode = modeOf(request);
  const tables = request.tables && request.tables.length > 0 ? [...request.tables] : config.tables.map((t) => t.source);
  for (const t of tables) tableConfig(config, t);
  const hours = request.hours ?? settings.window.hours;
  if (!Number.isInteger(hours) || hours < 1) throw new JobInputError(`hours must be a positive integer, got ${hours}`);
  const startedAt = deps.now();
  const cutoff = startedAt - (request.cutoffSeconds ?? settings.cutoffSeconds) * 1000;
  const runId = runIdOf(request, mode, startedAt);
  const window = windowOf(request, mode, hours, cutoff, startedAt);
  const run: RunContext = {
    runId,
    mode,
    startedAt,
    cutoff,
    window,
    tables,
    partitions: settings.partitions,
    repair: request.repair === true,
    manifest: request.manifest ? parseS3Uri(request.manifest) : null,
    prefix: reportRunPrefix(config.jobs.reportPrefix, 'reconcile', runId),
  };
  const objects = await listTablesRaw(deps.s3, config.raw.bucket, config.raw.prefix, tables, window ?? undefined);
  const groups = groupObjects(objects);
  const rawItems: RawItem[] = [];
  for (const [index, group] of groups.entries()) {
    await putJson(deps.s3, config.raw.bucket, rawItemKey(run, index), group);
    rawItems.push({ kind: 'raw', index });
  }
  const tableItems = tableItemsOf(run, settings.scanSegments);
  await putJson(deps.s3, config.raw.bucket, `${run.prefix}run.json`, run);
  deps.log.info('reconcile planned', { runId, mode, tables: tables.length, rawObjects: objects.length, rawItems: rawItems.length, partitions: run.partitions });
  return { run, rawItems, tableItems, partitionItems: Array.from({ length: run.partitions }, (_, i) => i), rawObjects: objects.length };
}
