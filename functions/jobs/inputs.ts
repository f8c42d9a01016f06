/**
 * The rules a reconcile or snapshot-detection input must meet, checked before anything is written
 * or started: by the CLI before it runs the state machine, and by each job's plan step (the state
 * machine's first task) for runs started by the scheduler or by hand. Pure: no I/O, every problem
 * listed at once.
 *
 *   reconcileInputProblems(config, { since: 'yesterday', cutoffSeconds: Number('abc') })
 *     → ['since must be an ISO 8601 time (2026-11-30T06:00:00Z), got "yesterday"',
 *        'cutoffSeconds must be a whole number of seconds from 0 to 31536000, got NaN']
 *   validateReconcileRequest(config, request)   // throws JobInputError with those lines
 */
import type { TidemarkConfig } from '../config/types.js';
import { JobInputError } from './deps.js';
import type { ReconcileRequest } from './reconcile/types.js';
import type { SnapshotRequest } from './snapshot/types.js';

const RUN_ID = /^[A-Za-z0-9._-]{1,80}$/;
/** A year: the longest window, look-back or cutoff that makes sense for a job. */
const MAX_HOURS = 8784;
const MAX_SECONDS = 31_536_000;

const wholeIn = (value: unknown, min: number, max: number): boolean => typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
const shown = (value: unknown): string => (typeof value === 'string' ? `"${value}"` : String(value));

/** Epoch ms of an ISO 8601 time, or null when it is not one. */
export function isoTime(value: unknown): number | null {
  if (typeof value !== 'string' || value.length > 40) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

function tableProblems(config: TidemarkConfig, tables: unknown): string[] {
  if (tables === undefined) return [];
  if (!Array.isArray(tables)) return ['tables must be a list of configured source tables'];
  const known = config.tables.map((t) => t.source);
  return tables.filter((t) => typeof t !== 'string' || !known.includes(t)).map((t) => `table ${shown(t)} is not configured (configured: ${known.join(', ')})`);
}

function commonProblems(config: TidemarkConfig, request: { readonly tables?: unknown; readonly runId?: unknown; readonly hours?: unknown }): string[] {
  const problems = tableProblems(config, request.tables);
  if (request.runId !== undefined && (typeof request.runId !== 'string' || !RUN_ID.test(request.runId))) {
    problems.push(`runId must be 1-80 characters of A-Z a-z 0-9 . _ -, got ${shown(request.runId)}`);
  }
  if (request.hours !== undefined && !wholeIn(request.hours, 1, MAX_HOURS)) problems.push(`hours must be a whole number from 1 to ${MAX_HOURS}, got ${shown(request.hours)}`);
  return problems;
}

/** Every problem of a reconcile input; empty when it may run. */
export function reconcileInputProblems(config: TidemarkConfig, request: ReconcileRequest): string[] {
  const problems = commonProblems(config, request);
  const r = request as Record<string, unknown>;
  if (r.mode !== undefined && r.mode !== 'window' && r.mode !== 'full') problems.push(`mode must be "window" or "full", got ${shown(r.mode)}`);
  if (r.cutoffSeconds !== undefined && !wholeIn(r.cutoffSeconds, 0, MAX_SECONDS)) {
    problems.push(`cutoffSeconds must be a whole number of seconds from 0 to ${MAX_SECONDS}, got ${shown(r.cutoffSeconds)}`);
  }
  const since = r.since === undefined ? undefined : isoTime(r.since);
  const until = r.until === undefined ? undefined : isoTime(r.until);
  if (since === null) problems.push(`since must be an ISO 8601 time (2026-11-30T06:00:00Z), got ${shown(r.since)}`);
  if (until === null) problems.push(`until must be an ISO 8601 time (2026-11-30T07:00:00Z), got ${shown(r.until)}`);
  if (typeof since === 'number' && typeof until === 'number' && since >= until) problems.push(`since (${String(r.since)}) must be before until (${String(r.until)})`);
  if (r.manifest !== undefined && (typeof r.manifest !== 'string' || !r.manifest.startsWith('s3://') || r.manifest.indexOf('/', 5) < 6)) {
    problems.push(`manifest must be an s3://bucket/key URI, got ${shown(r.manifest)}`);
  }
  if (r.repair !== undefined && typeof r.repair !== 'boolean') problems.push(`repair must be true or false, got ${shown(r.repair)}`);
  return problems;
}

/** Every problem of a snapshot-detection input; empty when it may run. */
export function snapshotInputProblems(config: TidemarkConfig, request: SnapshotRequest): string[] {
  const problems = commonProblems(config, request);
  const apply = (request as Record<string, unknown>).apply;
  if (apply !== undefined && typeof apply !== 'boolean') problems.push(`apply must be true or false, got ${shown(apply)}`);
  return problems;
}

const fail = (job: string, problems: readonly string[]): void => {
  if (problems.length > 0) throw new JobInputError(`${job} input is invalid: ${problems.join('; ')}`);
};

/** Throws JobInputError listing every problem of a reconcile input. */
export const validateReconcileRequest = (config: TidemarkConfig, request: ReconcileRequest): void => fail('reconcile', reconcileInputProblems(config, request));

/** Throws JobInputError listing every problem of a snapshot-detection input. */
export const validateSnapshotRequest = (config: TidemarkConfig, request: SnapshotRequest): void => fail('snapshot-check', snapshotInputProblems(config, request));
