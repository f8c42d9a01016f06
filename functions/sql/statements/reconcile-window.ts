/**
 * reconcile-window: the keys whose changes arrived in a window of compacted hours (window-keys),
 * expected state and the table side of just those keys (fetched by BatchGetItem), classified as
 * classify.ts does in window mode (reconcile-classes.ts).
 *
 * Invariant: each key with a change in the window is classified exactly once, as classify.ts does in
 * window mode: what needs the whole table (`extra`, `ahead`) is `unverifiable`, never reported.
 * Expected state holds each key's winner over all history, so a key is judged against its true
 * winner, not only the window's.
 *
 *   reconcileWindow({ tables, runId, cutoff, from: h0, to: h2, part: 'counts' })
 */
import { RECONCILE_COUNTS, RECONCILE_FINDINGS } from '../schemas.js';
import { selectStatement, type Statement } from '../statement.js';
import { hourRange } from '../time.js';
import { classified, countsSelect, findingsSelect, type ReconcileArgs } from './reconcile-classes.js';

export interface ReconcileWindowArgs extends ReconcileArgs {
  /** First and last compacted hour of the window, hour starts (epoch ms), inclusive. */
  readonly from: number;
  readonly to: number;
  readonly part: 'findings' | 'counts';
  readonly output?: string;
}

export function reconcileWindow(args: ReconcileWindowArgs): Statement {
  const { query, reads } = classified(args, hourRange(args.from, args.to));
  const findings = args.part === 'findings';
  return selectStatement(findings ? 'reconcile-window' : 'reconcile-window/counts', query(findings ? findingsSelect() : countsSelect()), {
    reads,
    columns: findings ? RECONCILE_FINDINGS.columns : RECONCILE_COUNTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
