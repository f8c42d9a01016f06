/**
 * An in-memory current-state store with exactly the guarded-write semantics of the DynamoDB
 * writer: both decide with `resolveAgainstStored` and build the next row with `nextItem`
 * (stored.ts). Truncate watermarks are kept here as the status row keeps them in production. Used by
 * `tidemark plan` (a dry run from empty state), property tests and benchmarks.
 */
import type { PlannedTruncate, PlannedWrite } from './plan.js';
import { type ApplyOutcome, nextItem, outcomeOf, resolveAgainstStored, type StoredItem } from './stored.js';

export type { ApplyOutcome, StoredItem } from './stored.js';
export { nextItem, patchStored } from './stored.js';

export class MemoryStore {
  private readonly tables = new Map<string, Map<string, StoredItem>>();
  private readonly watermarks = new Map<string, string>();

  apply(write: PlannedWrite): ApplyOutcome {
    const watermark = this.watermarks.get(write.table);
    if (watermark !== undefined && write.encodedPosition < watermark) return 'stale';
    const items = this.itemsOf(write.table);
    const stored = items.get(write.keyId);
    const resolution = resolveAgainstStored(stored, write);
    if (resolution.kind === 'apply' || resolution.kind === 'rebase') items.set(write.keyId, nextItem(stored, resolution.write));
    return outcomeOf(resolution);
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
