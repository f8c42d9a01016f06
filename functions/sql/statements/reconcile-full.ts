/**
 * reconcile-full: every key of the tables, expected state FULL OUTER JOIN the table side (a DynamoDB
 * export of each table), classified as classify.ts does in full mode (reconcile-classes.ts).
 *
 * Invariant: each key of either side is classified exactly once, with the same class classify.ts
 * gives it in full mode (and `erased` for an erased item with no live winner). Its cost grows with
 * the tables (expected state and the export), never with the length of history.
 *
 *   reconcileFull({ tables: ['public.orders'], runId, cutoff, part: 'findings', output: 's3://…/findings/' })
 *   // UNLOAD (WITH w AS (…), e AS (…), a AS (…), x AS (…), j AS (… FULL OUTER JOIN …), c AS (…) SELECT … WHERE c.class IN (…)) TO …
 */
import { RECONCILE_COUNTS, RECONCILE_FINDINGS } from '../schemas.js';
import { selectStatement, type Statement } from '../statement.js';
import { classified, countsSelect, findingsSelect, type ReconcileArgs } from './reconcile-classes.js';

export interface ReconcileFullArgs extends ReconcileArgs {
  /** `findings`: one row per finding; `counts`: keys per table and class (findings and the counted classes). */
  readonly part: 'findings' | 'counts';
  /** An `s3://` prefix to UNLOAD the rows to (gzip JSON Lines); absent: a plain SELECT. */
  readonly output?: string;
}

export function reconcileFull(args: ReconcileFullArgs): Statement {
  const { query, reads } = classified(args, null);
  const findings = args.part === 'findings';
  return selectStatement(findings ? 'reconcile-full' : 'reconcile-full/counts', query(findings ? findingsSelect() : countsSelect()), {
    reads,
    columns: findings ? RECONCILE_FINDINGS.columns : RECONCILE_COUNTS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
