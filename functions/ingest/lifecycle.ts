/**
 * The batch step of table lifecycles (core/lifecycle.ts decides): tables held (suspended or in
 * error) leave the plan before anything is applied, and tables whose writes failed are judged
 * against the error budget before their status rows are written.
 *
 * - Held: each of the table's planned writes and truncates counts as `held` (its records are in raw
 *   already: landing comes first), and its transactions lose the held table's rows, which resume
 *   applies from raw.
 * - Judged: one more failing batch for the table's streak; when the streak has spent
 *   `ingest.errorBudget`, or a failure is one no retry fixes, the table stops in error in this
 *   batch: its failed units count as `held` instead and no longer hold the shard back, and its
 *   status write records the state, the reason and when its failures began (where resume starts).
 *   A batch that applied the table's writes with no failure clears the streak.
 */
import type { ErrorBudget } from '../core/lifecycle.js';
import { budgetSpent, isHeld, nextStreak } from '../core/lifecycle.js';
import type { BatchPlan } from '../core/plan.js';
import type { TxPlan } from '../core/transactions.js';
import type { StatusRow } from '../adapters/status-store.js';
import type { KeyRef, Log } from '../telemetry/sinks.js';
import type { BatchTally } from './tally.js';

/** The tables of the batch that are held, from the status rows it was applied against. */
export function heldTables(statusRows: ReadonlyMap<string, StatusRow>): Set<string> {
  return new Set([...statusRows].filter(([, row]) => isHeld(row)).map(([table]) => table));
}

/** The plan and transaction plan without the held tables; their writes and truncates counted `held`. */
export function withoutHeld(plan: BatchPlan, txPlan: TxPlan, held: ReadonlySet<string>, tally: BatchTally): { plan: BatchPlan; txPlan: TxPlan } {
  if (held.size === 0) return { plan, txPlan };
  for (const w of plan.writes) if (held.has(w.table)) tally.count(w.table, 'held');
  for (const t of plan.truncates) if (held.has(t.table)) tally.count(t.table, 'held');
  return {
    plan: { ...plan, writes: plan.writes.filter((w) => !held.has(w.table)), truncates: plan.truncates.filter((t) => !held.has(t.table)) },
    txPlan: { ...txPlan, units: txPlan.units.map((u) => ({ ...u, cuts: u.cuts.filter((c) => !held.has(c.table)) })).filter((u) => u.cuts.length >= 2) },
  };
}

export interface JudgeDeps {
  readonly budget: ErrorBudget;
  readonly log: Log;
  readonly keyRef?: KeyRef;
}

/** Each table's streak after this batch, and the tables that stop in error now. */
export function judgeFailures(tally: BatchTally, statusRows: ReadonlyMap<string, StatusRow>, held: ReadonlySet<string>, now: number, deps: JudgeDeps): void {
  for (const [table, t] of tally.tables) {
    if (held.has(table)) continue;
    const row = statusRows.get(table);
    const failed = (t.counters.failed ?? 0) > 0 && t.lowestFailed !== undefined;
    if (!failed) {
      if ((t.counters.applied ?? 0) > 0 && row?.failAttempts !== undefined) t.streak = 'clear';
      continue;
    }
    const streak = nextStreak(row, now);
    const spent = budgetSpent(streak, deps.budget, now);
    if (t.permanentFailure === undefined && !spent) {
      t.streak = 'add';
      continue;
    }
    const reason = t.permanentFailure ?? `writes kept failing: ${streak.attempts} failing batches since ${new Date(streak.since).toISOString()} (last: ${(t.lastError ?? 'unknown').slice(0, 300)})`;
    t.enteredError = { reason, by: t.permanentFailure ? 'permanent' : 'budget', from: streak.since };
    tally.hold(table);
    tally.count(table, 'enteredError');
    deps.log.error('table stopped in error: its records land in raw and are not applied until `tidemark resume`', { table, reason, position: t.lowestFailed });
  }
}
