/**
 * When a replay must not run. A delete leaves a tombstone for `tombstoneTtlDays`; once it has
 * expired, re-applying an older update of that key into the live table would bring the deleted row
 * back. So a live replay whose oldest record landed before `now - tombstoneTtlDays` is refused
 * unless forced; a fresh table has no tombstones to lose and is always allowed.
 *
 * Judged by landing time (when raw received the record), which is what raw is partitioned by and
 * what bounds how long ago the key's later delete could have expired.
 */
import type { TidemarkConfig } from '../config/types.js';
import { TidemarkError } from '../core/errors.js';

const DAY_MS = 86_400_000;

export class ReplayRefusedError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayRefusedError';
  }
}

export type ReplayTarget = { readonly kind: 'live' } | { readonly kind: 'fresh'; readonly target: string };

/** Parses `--into live` or `--into fresh:<table>`. */
export function parseTarget(text: string): ReplayTarget {
  if (text === 'live') return { kind: 'live' };
  const m = /^fresh:([a-zA-Z0-9_.-]{3,255})$/.exec(text);
  if (m?.[1]) return { kind: 'fresh', target: m[1] };
  throw new ReplayRefusedError(`--into must be "live" or "fresh:<new DynamoDB table name>", not "${text}"`);
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
      'Replay into a fresh table (--into fresh:<table>), narrow --since, or pass --force if you know no such delete exists.',
  );
}
