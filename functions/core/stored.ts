/**
 * The stored-row rule, in one place: what a planned write does against the row current state
 * holds for its key. Pure. Every store calls it — the in-memory store (`tidemark plan`, property
 * tests), the DynamoDB writer after a failed guard, and the writer's pre-read — so the property
 * tests prove the rule production runs.
 *
 * Let `stored` be the position of the stored row, `base` the write's base position (its earliest
 * carried event) and `pos` its own position (the newest event it carries):
 *
 *   no stored row, or stored < base   apply the write as planned
 *   base <= stored < pos              rebase: fold only the chain events newer than stored
 *   stored > pos                      stale: the stored row is newer
 *   stored = pos, same content hash   duplicate (a redelivery)
 *   stored = pos, other content       conflict (two different changes claim one position)
 *
 * The DynamoDB guard `attribute_not_exists(pk) OR #pos < :base` is the first line evaluated by
 * DynamoDB itself; when it fails, the writer asks this function what to do with the stored item
 * returned by ALL_OLD.
 */
import { type PatchEffect, patchMissing } from './effect.js';
import { type PlannedWrite, rebaseWrite } from './plan.js';
import type { Key, Row, RowOp } from './types.js';

/** What the decision needs to know about the stored row. */
export interface StoredMark {
  /** Encoded position of the last write applied to the key. */
  readonly position: string;
  /** Content hash of that write (`__hash`). */
  readonly contentHash: string;
}

export type Resolution =
  /** The stored row is older than everything the write carries: write it as planned. */
  | { readonly kind: 'apply'; readonly write: PlannedWrite }
  /** The stored row holds part of the write's chain: write this rebuilt write instead. */
  | { readonly kind: 'rebase'; readonly write: PlannedWrite }
  | { readonly kind: 'stale' }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'conflict' };

/** `stale`: stored is newer. `duplicate`/`conflict`: stored has the same position, same/different content. */
export type ApplyOutcome = 'applied' | 'stale' | 'duplicate' | 'conflict';

/** Decides what `write` does against `stored` (undefined: the key has no stored item). */
export function resolveAgainstStored(stored: StoredMark | undefined, write: PlannedWrite): Resolution {
  if (stored === undefined || stored.position < write.basePosition) return { kind: 'apply', write };
  if (stored.position > write.encodedPosition) return { kind: 'stale' };
  if (stored.position === write.encodedPosition) return { kind: stored.contentHash === write.contentHash ? 'duplicate' : 'conflict' };
  const rebased = rebaseWrite(write, stored.position);
  // Unreachable while stored < pos (the newest link is always newer), kept so a bad chain is stale, not applied.
  return rebased === null ? { kind: 'stale' } : { kind: 'rebase', write: rebased };
}

/** The outcome a resolution is counted as: a rebased write is an applied one. */
export function outcomeOf(resolution: Resolution): ApplyOutcome {
  return resolution.kind === 'apply' || resolution.kind === 'rebase' ? 'applied' : resolution.kind;
}

/** A stored row, as every store keeps it. */
export interface StoredItem extends StoredMark {
  readonly key: Key;
  readonly row: Row;
  readonly deleted: boolean;
  readonly missing: readonly string[];
  /**
   * True when the row was started by a partial change with no stored row under it: columns it
   * does not hold are unknown, not absent, so a later placeholder on them is missing.
   */
  readonly partial: boolean;
  readonly op: RowOp;
  readonly commitTs: number | null;
}

/** The part of a stored row a patch builds on. */
export type StoredRow = Pick<StoredItem, 'row' | 'deleted' | 'missing' | 'partial'>;

/** The item a write leaves behind, given what was stored (the write already resolved to apply). */
export function nextItem(stored: StoredRow | undefined, write: PlannedWrite): StoredItem {
  const meta = {
    key: write.key,
    position: write.encodedPosition,
    op: write.op,
    commitTs: write.commitTs,
    contentHash: write.contentHash,
  };
  const effect = write.effect;
  switch (effect.kind) {
    case 'tombstone':
      return { ...meta, row: {}, deleted: true, missing: [], partial: false };
    case 'put':
      return { ...meta, row: { ...effect.row }, deleted: false, missing: [...effect.missing], partial: effect.partial };
    case 'patch':
      return { ...meta, ...patchStored(stored, effect) };
  }
}

/**
 * A patch on top of what is stored. On nothing or a tombstone it starts a partial row: what it
 * does not carry is unknown, and its unresolved placeholders are missing.
 */
export function patchStored(stored: StoredRow | undefined, effect: PatchEffect): StoredRow {
  if (!stored || stored.deleted) {
    return { row: { ...effect.set }, deleted: false, missing: [...effect.unresolved].sort(), partial: true };
  }
  const row: Row = { ...stored.row, ...effect.set };
  for (const col of effect.unset) delete row[col];
  return { row, deleted: false, missing: patchMissing(stored, effect), partial: stored.partial };
}
