/**
 * When a replay must not run. A delete leaves a tombstone for `tombstoneTtlDays`; once it has
 * expired, re-applying an older update of that key into the live table would bring the deleted row
 * back. So a live replay whose oldest record landed before `now - tombstoneTtlDays` is refused
 * unless forced; a fresh table has no tombstones to lose and is always allowed.
 *
 * Judged by landing time (when raw received the record), which is what raw is partitioned by and
 * what bounds how long ago the key's later delete could have expired.
 *
 * Where a fresh replay may write: only a table under the reserved prefix `<pipeline>-fresh-`
 * (`freshTablePrefix`), the one the replay role's IAM allows, so `fresh:shop-payments` or
 * `fresh:shop-eu-customers` are refused before anything is read or created:
 *
 *   parseTarget('fresh:shop-fresh-orders', 'shop')        // { kind: 'fresh', target: 'shop-fresh-orders' }
 *   parseTarget('fresh:shop-fresh-orders@replay-1', 'shop') // continue run replay-1's rebuild (its catch-up)
 *   parseTarget('fresh:shop-payments', 'shop')            // ReplayRefusedError
 */
import { freshTablePrefix, type TidemarkConfig } from '../config/types.js';
import { TidemarkError } from '../core/errors.js';

const DAY_MS = 86_400_000;

export class ReplayRefusedError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayRefusedError';
  }
}

export type ReplayTarget =
  | { readonly kind: 'live' }
  | {
      readonly kind: 'fresh';
      readonly target: string;
      /**
       * The run that created the table, when this run continues that run's rebuild
       * (`fresh:<table>@<run>`, the catch-up after a rebuild). Absent: this run creates the table,
       * or reuses it only if it created it itself (a retried plan step).
       */
      readonly createdBy?: string;
    };

/** Why `name` cannot be a fresh table of `pipeline`, or null when it can. */
export function freshTableNameProblem(pipeline: string, name: string): string | null {
  const prefix = freshTablePrefix(pipeline);
  if (name.startsWith(prefix) && name.length > prefix.length) return null;
  return `a fresh table must be named ${prefix}<suffix> (the only tables the replay role may create and fill), not "${name}"`;
}

const FRESH_TARGET = /^fresh:([a-zA-Z0-9_.-]{3,255})(?:@([a-zA-Z0-9_.:-]{1,128}))?$/;

/**
 * Parses `--into live`, `--into fresh:<pipeline>-fresh-<suffix>`, or
 * `--into fresh:<table>@<run id>` (continue filling the table that run created).
 */
export function parseTarget(text: string, pipeline: string): ReplayTarget {
  if (text === 'live') return { kind: 'live' };
  const m = FRESH_TARGET.exec(text);
  const table = m?.[1];
  if (!table) throw new ReplayRefusedError(`--into must be "live" or "fresh:${freshTablePrefix(pipeline)}<suffix>" (a new DynamoDB table), not "${text}"`);
  const problem = freshTableNameProblem(pipeline, table);
  if (problem) throw new ReplayRefusedError(`--into ${text}: ${problem}`);
  const createdBy = m?.[2];
  return createdBy ? { kind: 'fresh', target: table, createdBy } : { kind: 'fresh', target: table };
}

/**
 * The oldest landing time a live replay of these tables may reach without `--force`:
 * now minus the shortest tombstone TTL among them.
 */
export function oldestSafeLanding(config: TidemarkConfig, tables: readonly string[], now: number): number {
  const ttls = config.tables.filter((t) => tables.includes(t.source)).map((t) => t.tombstoneTtlDays);
  return now - Math.min(...ttls) * DAY_MS;
}

/**
 * Throws ReplayRefusedError when a live replay reaches records that landed before the tombstone
 * horizon. `oldestLanding` is the earliest landing time the replay will read (null: nothing to read).
 */
export function checkReplaySafety(opts: {
  readonly config: TidemarkConfig;
  readonly tables: readonly string[];
  readonly target: ReplayTarget;
  readonly oldestLanding: number | null;
  readonly now: number;
  readonly force: boolean;
}): void {
  if (opts.target.kind !== 'live' || opts.force || opts.oldestLanding === null || opts.tables.length === 0) return;
  const horizon = oldestSafeLanding(opts.config, opts.tables, opts.now);
  if (opts.oldestLanding >= horizon) return;
  throw new ReplayRefusedError(
    `refusing a live replay reaching records that landed at ${new Date(opts.oldestLanding).toISOString()}, before the tombstone horizon ` +
      `${new Date(horizon).toISOString()} (now - tombstoneTtlDays): a delete whose tombstone has expired could be undone. ` +
      `Replay into a fresh table (--into fresh:${freshTablePrefix(opts.config.name)}<suffix>), narrow --since, or pass --force if you know no such delete exists.`,
  );
}
