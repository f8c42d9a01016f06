/**
 * The rules a replay request must meet before anything is listed, written or started: the CLI
 * checks them before it runs (or starts) the state machine, and the replay's plan step (its first
 * task) checks them again for a run started by hand on AWS. Pure: no I/O, every problem at once.
 *
 *   replayInputProblems(config, { runId: 'r1', tables: ['public.orders'], into: 'live',
 *                                 since: Date.parse('2026-12-01'), until: Date.parse('2026-11-30') })
 *     → ['since (2026-12-01T00:00:00.000Z) must be before until (2026-11-30T00:00:00.000Z)']
 *   validateReplayRequest(config, request)   // throws SelectionError with those lines
 */
import type { TidemarkConfig } from '../config/types.js';
import { decodePosition } from '../core/position.js';
import type { ReplayRequest } from './job.js';
import { parseTarget, ReplayRefusedError } from './safety.js';
import { SelectionError } from './selection.js';

const RUN_ID = /^[A-Za-z0-9._-]{1,120}$/;

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const iso = (ms: number) => new Date(ms).toISOString();

function positionProblem(field: string, value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string') return `${field} must be an encoded position, got ${String(value)}`;
  try {
    decodePosition(value);
    return null;
  } catch {
    return `${field} must be an encoded position (a JSON array such as [1000,1002] on the command line), got "${value}"`;
  }
}

function rangeProblems(r: Partial<ReplayRequest>): string[] {
  const problems: string[] = [];
  for (const field of ['since', 'until'] as const) {
    if (r[field] !== undefined && !isTime(r[field])) problems.push(`${field} must be a time (epoch ms), got ${String(r[field])}`);
  }
  if (isTime(r.since) && isTime(r.until) && r.since >= r.until) problems.push(`since (${iso(r.since)}) must be before until (${iso(r.until)})`);
  const from = positionProblem('fromPosition', r.fromPosition);
  const to = positionProblem('toPosition', r.toPosition);
  for (const p of [from, to]) if (p !== null) problems.push(p);
  // Encoded positions compare as strings exactly as their tuples do.
  if (from === null && to === null && r.fromPosition !== undefined && r.toPosition !== undefined && r.fromPosition > r.toPosition) {
    problems.push(`fromPosition ${r.fromPosition} is above toPosition ${r.toPosition}: the range selects nothing`);
  }
  return problems;
}

/** Every problem of a replay request; empty when it may run. */
export function replayInputProblems(config: TidemarkConfig, request: Partial<ReplayRequest>): string[] {
  const problems: string[] = [];
  if (typeof request.runId !== 'string' || !RUN_ID.test(request.runId)) problems.push(`runId must be 1-120 characters of A-Z a-z 0-9 . _ -, got ${String(request.runId)}`);
  const known = config.tables.map((t) => t.source);
  if (request.tables !== undefined && !Array.isArray(request.tables)) problems.push('tables must be a list of configured source tables');
  for (const t of Array.isArray(request.tables) ? request.tables : []) {
    if (!known.includes(t)) problems.push(`table "${t}" is not configured (configured: ${known.join(', ')})`);
  }
  try {
    parseTarget(typeof request.into === 'string' ? request.into : String(request.into), config.name);
  } catch (err) {
    problems.push(err instanceof Error ? err.message : String(err));
  }
  problems.push(...rangeProblems(request));
  return problems;
}

/** Throws SelectionError listing every problem of a replay request. */
export function validateReplayRequest(config: TidemarkConfig, request: Partial<ReplayRequest>): void {
  const problems = replayInputProblems(config, request);
  // A target outside this pipeline's tables is a refusal, not a typo: it keeps its own error.
  if (typeof request.into === 'string') {
    try {
      parseTarget(request.into, config.name);
    } catch (err) {
      if (err instanceof ReplayRefusedError) throw err;
    }
  }
  if (problems.length > 0) throw new SelectionError(problems.length === 1 ? (problems[0] ?? '') : `replay input is invalid: ${problems.join('; ')}`);
}
