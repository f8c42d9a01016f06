/**
 * A table's lifecycle (docs/operations.md, "Suspend, resume and tables in error"), in the manner of
 * Firebolt's CDC tables:
 *
 *   running    its records land in raw and are applied
 *   suspended  an operator stopped applying it (`tidemark suspend -t T`); its records still land
 *   error      its writes kept failing past the error budget, or failed for a reason no retry
 *              fixes (its target table is missing, access is denied, the key schema differs); its
 *              records still land, and `resume` is refused with the recorded reason until --force
 *
 * A held table (suspended or in error) never blocks its shard: its records land, count as `held`,
 * and `resume` applies them from raw. The state lives in the table's status row (fields below); the
 * ingest reads it through its status cache, so a change takes effect within
 * `ingest.statusMaxAgeSeconds`.
 *
 * This module is pure: what the state is, whether a failure streak has spent the budget, which
 * failures are permanent.
 */

export type TableLifecycle = 'running' | 'suspended' | 'error';

/** Status-row attributes of the lifecycle. */
export const LIFECYCLE = {
  state: 'lifecycle',
  reason: 'lifecycleReason',
  /** When it changed (epoch ms). */
  at: 'lifecycleAt',
  /** The table's last applied position when it changed (encoded). */
  position: 'lifecyclePosition',
  /** Who changed it: `operator`, `budget` (the failures outlasted it) or `permanent`. */
  by: 'lifecycleBy',
  /** From when its records may not have been applied (epoch ms): the suspension, or the first failure before the error. Resume replays raw from here. */
  heldFrom: 'heldFrom',
  /** Batches in a row whose writes of the table failed (ADDed by each). */
  failAttempts: 'failAttempts',
  /** When the first of them failed (epoch ms). */
  failSince: 'failSince',
} as const;

/** How long one table's failures may go on before it stops in error (Firebolt: 10 attempts over 4 hours). */
export interface ErrorBudget {
  readonly attempts: number;
  readonly hours: number;
}

export interface FailureStreak {
  readonly attempts: number;
  readonly since: number;
}

const LIFECYCLES: readonly string[] = ['running', 'suspended', 'error'];

/** The lifecycle a status row records (`running` when it records none). */
export function lifecycleOf(row: Readonly<Record<string, unknown>> | undefined): TableLifecycle {
  const v = row?.[LIFECYCLE.state];
  return typeof v === 'string' && LIFECYCLES.includes(v) ? (v as TableLifecycle) : 'running';
}

/** Whether the table's records are landed but not applied. */
export const isHeld = (row: Readonly<Record<string, unknown>> | undefined): boolean => lifecycleOf(row) !== 'running';

/** The streak after one more failing batch, from what the status row recorded. */
export function nextStreak(row: Readonly<Record<string, unknown>> | undefined, now: number): FailureStreak {
  const attempts = Number(row?.[LIFECYCLE.failAttempts] ?? 0);
  const since = Number(row?.[LIFECYCLE.failSince] ?? Number.NaN);
  return { attempts: (Number.isSafeInteger(attempts) && attempts > 0 ? attempts : 0) + 1, since: Number.isFinite(since) && since <= now ? since : now };
}

/** Whether a streak has spent the budget: at least `attempts` failing batches over at least `hours`. */
export function budgetSpent(streak: FailureStreak, budget: ErrorBudget, now: number): boolean {
  return streak.attempts >= budget.attempts && now - streak.since >= budget.hours * 3_600_000;
}

/** SDK error names that no retry fixes for a whole table. */
const PERMANENT: Readonly<Record<string, string>> = {
  ResourceNotFoundException: 'the target table does not exist',
  AccessDeniedException: 'access to the target table is denied',
  UnrecognizedClientException: 'the credentials are not valid',
};

/**
 * Why a failed write's error stops the whole table at once, or undefined when a retry may help (or
 * when only that record is at fault: those go to quarantine, not here). Reads the SDK error the
 * writer keeps as the `cause`.
 */
export function permanentFailure(error: unknown): string | undefined {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  if (cause === null || typeof cause !== 'object') return undefined;
  const name = (cause as { name?: unknown }).name;
  const message = String((cause as { message?: unknown }).message ?? '').slice(0, 300);
  if (typeof name !== 'string') return undefined;
  const reason = PERMANENT[name];
  if (reason) return `${reason} (${name})`;
  // Every key of the table is refused, not one record's item.
  if (name === 'ValidationException' && message.includes('key element does not match the schema')) return `the target table's key schema differs from the configured key (${name})`;
  return undefined;
}

/**
 * How the jobs' reports label a held table: `suspended` by an operator, or `stopped` in error;
 * `heldFrom` (epoch ms) is from when its records may not have been applied.
 */
export interface HeldLabel {
  readonly state: 'suspended' | 'stopped';
  readonly heldFrom: number;
  readonly reason?: string;
}

/** The label of a held table's status row; null for a running table. */
export function heldLabelOf(row: Readonly<Record<string, unknown>> | undefined): HeldLabel | null {
  const state = lifecycleOf(row);
  if (state === 'running') return null;
  const from = Number(row?.[LIFECYCLE.heldFrom] ?? row?.[LIFECYCLE.at] ?? Number.NaN);
  const reason = row?.[LIFECYCLE.reason];
  return { state: state === 'error' ? 'stopped' : 'suspended', heldFrom: Number.isFinite(from) ? from : 0, ...(typeof reason === 'string' ? { reason } : {}) };
}

/** Margin after the ingest's timeout: a batch lands in raw, then reads the table's state. */
export const HELD_LANDING_MARGIN_MS = 5_000;

/**
 * The first arrival time whose records a held table may not have applied: `heldFrom` less the
 * ingest's timeout and a margin (a batch that landed just before the hold may have read the state
 * after it). Resume replays raw from here; reconcile labels a key held when its raw arrived here or later.
 */
export const heldRawSince = (heldFrom: number, ingestTimeoutSeconds: number): number => heldFrom - ingestTimeoutSeconds * 1000 - HELD_LANDING_MARGIN_MS;
