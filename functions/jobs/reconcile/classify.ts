/**
 * The reconcile decision for one key: what raw says the table must hold, against what it holds.
 * Pure; the tasks around it only gather the two sides.
 *
 * Raw side (`Expected`): the highest-positioned event among the raw *settled* before the cutoff
 * (its object was stored at least `cutoffSeconds` before the run, so ingest has long applied it),
 * plus the highest position among *all* raw lines of the key, settled or not.
 * Table side (`Actual`): the stored item's position, tombstone flag, content hash and apply time.
 *
 * Classes (docs/contract.md, "Jobs"; docs/jobs.md):
 *   missing       raw's winner is a live row; the table has no live row for the key
 *   deleted-live  raw's winner is a delete; the table still holds a live row at an older position
 *   stale         both live; the table's position is older than raw's winner
 *   mismatch      same position, different content hash (`__hash`, as the ingest computes it)
 *   ahead         the table holds a position newer than anything in raw: raw lost data (critical)
 *   extra         a live row for a key raw has never seen (critical)
 * `ahead` and `extra` need all of raw, so only the full mode reports them. A row applied after the
 * cutoff is in flight and is left alone; so is a key whose raw winner is not settled yet.
 */

export const FINDING_CLASSES = ['missing', 'deleted-live', 'stale', 'mismatch', 'ahead', 'extra'] as const;
export type FindingClass = (typeof FINDING_CLASSES)[number];

/** Classes meaning raw itself lost data: nothing can repair them from raw. */
export const CRITICAL_CLASSES: ReadonlySet<FindingClass> = new Set(['ahead', 'extra']);
/** Classes a re-apply of raw's winning events fixes (`mismatch` with the same-position guard of repair.ts). */
export const REPAIRABLE_CLASSES: ReadonlySet<FindingClass> = new Set(['missing', 'deleted-live', 'stale', 'mismatch']);

export interface Expected {
  /** Settled winner, or null when every raw line of the key landed after the cutoff. */
  readonly winner: {
    readonly position: string;
    readonly op: string;
    /** Content hash of the winning event, or null when it could not be recomputed. */
    readonly hash: string | null;
    /** Two raw events at the winning position with different content: the stored one is whichever arrived first. */
    readonly conflict: boolean;
  } | null;
  /** Highest position among all raw lines of the key. */
  readonly maxPosition: string;
}

export interface Actual {
  readonly position: string;
  readonly deleted: boolean;
  readonly hash: string;
  /** `__appliedAt`, epoch ms (0 when absent). */
  readonly appliedAt: number;
}

export interface ClassifyContext {
  readonly mode: 'window' | 'full';
  /** Epoch ms: rows applied later are in flight. */
  readonly cutoff: number;
  /** The table's truncate watermark: positions below it count as absent. */
  readonly truncateWatermark?: string;
}

export type Verdict = FindingClass | 'ok' | 'in-flight' | 'unverifiable';

/** No raw line for the key: any live row is unaccounted for (provably so only in full mode). */
function classifyWithoutRaw(stored: Actual | undefined, ctx: ClassifyContext): Verdict {
  if (!stored) return 'ok';
  if (ctx.mode !== 'full') return 'unverifiable';
  return stored.deleted ? 'ahead' : 'extra';
}

/** A stored row at or above the winner's position. */
function classifyAtOrAbove(stored: Actual, winner: NonNullable<Expected['winner']>, expected: Expected, ctx: ClassifyContext): Verdict {
  if (stored.position === winner.position) {
    if (winner.conflict || winner.hash === null) return 'ok';
    return stored.hash === winner.hash ? 'ok' : 'mismatch';
  }
  // The table is newer than raw's settled winner: fine if raw holds that position at all.
  if (stored.position <= expected.maxPosition) return 'ok';
  return ctx.mode === 'full' ? 'ahead' : 'unverifiable';
}

/** Classifies one key. `expected` undefined: raw has no line for it; `actual` undefined: no item. */
export function classify(expected: Expected | undefined, actual: Actual | undefined, ctx: ClassifyContext): Verdict {
  const wm = ctx.truncateWatermark;
  if (actual && actual.appliedAt > ctx.cutoff) return 'in-flight';
  // Below a truncate watermark, a row reads as absent and a raw winner as deleted.
  const stored = actual && wm !== undefined && actual.position < wm ? undefined : actual;
  if (!expected) return classifyWithoutRaw(stored, ctx);
  const winner = expected.winner;
  if (!winner) return 'in-flight';
  const expectDeleted = winner.op === 'd' || (wm !== undefined && winner.position < wm);
  if (!stored) return expectDeleted ? 'ok' : 'missing';
  if (stored.position < winner.position) {
    if (expectDeleted) return stored.deleted ? 'ok' : 'deleted-live';
    return stored.deleted ? 'missing' : 'stale';
  }
  return classifyAtOrAbove(stored, winner, expected, ctx);
}
