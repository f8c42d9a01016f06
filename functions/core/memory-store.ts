/**
 * An in-memory current-state store with exactly the guarded-write semantics of the DynamoDB
 * writer: a write applies only if the key is absent or its stored position is lower. Used by
 * `tidemark plan` (a dry run from empty state), property tests and benchmarks.
 */
import { type PatchEffect, patchMissing } from './effect.js';
import { type PlannedTruncate, type PlannedWrite, rebaseWrite, sameContent } from './plan.js';
import type { Key, Row, RowOp } from './types.js';

export interface StoredItem {
  readonly key: Key;
  readonly row: Row;
  readonly position: string;
  readonly deleted: boolean;
  readonly missing: readonly string[];
  /**
   * True when the row was started by a partial change with no stored row under it: columns it
   * does not hold are unknown, not absent, so a later placeholder on them is missing.
   */
  readonly partial: boolean;
  readonly op: RowOp;
  readonly commitTs: number | null;
  readonly contentHash: string;
}

/** `stale`: stored is newer. `duplicate`/`conflict`: stored has the same position, same/different content. */
export type ApplyOutcome = 'applied' | 'stale' | 'duplicate' | 'conflict';

/** The guard, as DynamoDB evaluates it: `attribute_not_exists(pk) OR #pos < :pos`. */
export function guardOutcome(stored: Pick<StoredItem, 'position' | 'contentHash'> | undefined, write: Pick<PlannedWrite, 'encodedPosition' | 'contentHash'>): ApplyOutcome {
  if (!stored || stored.position < write.encodedPosition) return 'applied';
  if (stored.position > write.encodedPosition) return 'stale';
  // sameContent: a row stored before the digest was shortened holds the full 43-character digest.
  return sameContent(stored.contentHash, write.contentHash) ? 'duplicate' : 'conflict';
}

/** The item a write leaves behind, given what was stored. */
export function nextItem(stored: StoredItem | undefined, write: PlannedWrite): StoredItem {
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
    default:
      return unreachable(effect);
  }
}

/**
 * A patch on top of what is stored. On nothing or a tombstone it starts a partial row: what it
 * does not carry is unknown, and its unresolved placeholders are missing.
 */
export function patchStored(stored: Pick<StoredItem, 'row' | 'deleted' | 'missing' | 'partial'> | undefined, effect: PatchEffect): Pick<StoredItem, 'row' | 'deleted' | 'missing' | 'partial'> {
  if (!stored || stored.deleted) {
    return { row: { ...effect.set }, deleted: false, missing: [...effect.unresolved].sort(), partial: true };
  }
  const row: Row = { ...stored.row, ...effect.set };
  for (const col of effect.unset) delete row[col];
  return { row, deleted: false, missing: patchMissing(stored, effect), partial: stored.partial };
}

export class MemoryStore {
  private readonly tables = new Map<string, Map<string, StoredItem>>();
  private readonly watermarks = new Map<string, string>();

  apply(write: PlannedWrite): ApplyOutcome {
    const watermark = this.watermarks.get(write.table);
    if (watermark !== undefined && write.encodedPosition < watermark) return 'stale';
    const items = this.itemsOf(write.table);
    const stored = items.get(write.keyId);
    const outcome = guardOutcome(stored, write);
    if (outcome !== 'applied') return outcome;
    // The guard proper is `stored < basePosition`; between base and winner, rebase the chain.
    const effective = stored && stored.position >= write.basePosition ? rebaseWrite(write, stored.position) : write;
    if (effective === null) return 'stale';
    items.set(write.keyId, nextItem(stored, effective));
    return outcome;
  }

  /** Records the truncate watermark and removes every row of the table below it. */
  truncate(truncate: PlannedTruncate): ApplyOutcome {
    const current = this.watermarks.get(truncate.table);
    if (current !== undefined && current >= truncate.encodedPosition) return 'stale';
    this.watermarks.set(truncate.table, truncate.encodedPosition);
    const items = this.itemsOf(truncate.table);
    for (const [id, item] of items) if (item.position < truncate.encodedPosition) items.delete(id);
    return 'applied';
  }

  get(table: string, keyId: string): StoredItem | undefined {
    return this.tables.get(table)?.get(keyId);
  }

  /** Every stored item of a table, tombstones included, in key order. */
  entries(table: string): [string, StoredItem][] {
    return [...(this.tables.get(table)?.entries() ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  tableNames(): string[] {
    return [...this.tables.keys()].sort();
  }

  watermark(table: string): string | undefined {
    return this.watermarks.get(table);
  }

  private itemsOf(table: string): Map<string, StoredItem> {
    let items = this.tables.get(table);
    if (!items) {
      items = new Map();
      this.tables.set(table, items);
    }
    return items;
  }
}

function unreachable(x: never): never {
  throw new Error(`unexpected effect ${JSON.stringify(x)}`);
}
