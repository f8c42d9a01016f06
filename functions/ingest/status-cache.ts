/**
 * What a container knows of its tables' status rows between batches, so that a batch reads no
 * status row in the common case: each batch's one status write returns the row as it was before
 * (ALL_OLD), which, merged with what the batch wrote, is the row as of that write. A table whose
 * copy is older than `maxAgeMs` (`ingest.statusMaxAgeSeconds`) is read again, eventually
 * consistent, before the batch applies.
 *
 * Why a copy up to that old is safe, fact by fact (docs/operations.md, "Status rows"):
 * - `truncateWatermark`: a write below a watermark another shard raised meanwhile may go out; the
 *   batch's own status write then returns the newer watermark and the batch deletes what it wrote
 *   below it (report.ts). Either the truncating batch's sweep sees the write, or the writing
 *   batch's status write sees the watermark, since each does its second step after its first.
 * - `lastPosition` only seeds the pre-read's high-water mark: an old one means a write is sent
 *   instead of read first; the guard decides either way.
 * - `lastSnapshotPosition` and `phase` tell a redelivered snapshot from a re-snapshot for a
 *   counter; an old copy can count a re-snapshot once too often or too rarely, and the snapshot
 *   job judges from raw.
 * - `carriesFlattened` decides whether a Kafka tombstone deletes (`kafkaTombstones: auto`). Only
 *   `true` is kept (it never goes back); a table not known to carry flattened records is read
 *   strongly consistent when a batch holds one of its tombstones (process-batch.ts).
 */
import type { StatusRow, StatusUpdate } from '../adapters/status-store.js';
import { LIFECYCLE } from '../core/lifecycle.js';

interface Entry {
  readonly row: StatusRow;
  /** When the copy was true: the read, or the status write that returned it. */
  readonly at: number;
}

/** The higher of two encoded positions (either may be missing). */
function max(a: unknown, b: unknown): string | undefined {
  const x = typeof a === 'string' ? a : undefined;
  const y = typeof b === 'string' ? b : undefined;
  if (x === undefined) return y;
  if (y === undefined || x >= y) return x;
  return y;
}

/** The lifecycle fields as of a status write (the write's own change on top of the row before it). */
function lifecycleAfter(base: StatusRow, update: StatusUpdate, at: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (update.enteredError) Object.assign(out, { [LIFECYCLE.state]: 'error', [LIFECYCLE.reason]: update.enteredError.reason, [LIFECYCLE.at]: at, [LIFECYCLE.heldFrom]: update.enteredError.from });
  if (update.streak === 'add') Object.assign(out, { [LIFECYCLE.failAttempts]: Number(base[LIFECYCLE.failAttempts] ?? 0) + 1, [LIFECYCLE.failSince]: base[LIFECYCLE.failSince] ?? at });
  if (update.streak === 'clear') Object.assign(out, { [LIFECYCLE.failAttempts]: undefined, [LIFECYCLE.failSince]: undefined });
  return out;
}

export class StatusCache {
  private readonly entries = new Map<string, Entry>();

  constructor(readonly maxAgeMs: number) {}

  /** The copies of `tables` no older than the bound, and the tables to read. */
  view(tables: readonly string[], now: number): { readonly rows: Map<string, StatusRow>; readonly stale: string[] } {
    const rows = new Map<string, StatusRow>();
    const stale: string[] = [];
    for (const t of tables) {
      const e = this.entries.get(t);
      if (e && now - e.at <= this.maxAgeMs) rows.set(t, e.row);
      else stale.push(t);
    }
    return { rows, stale };
  }

  /** The copy of one table, whatever its age. */
  peek(table: string): StatusRow | undefined {
    return this.entries.get(table)?.row;
  }

  /** A row as read at `at`; a table with no row is remembered as an empty one. */
  put(table: string, row: StatusRow | undefined, at: number, pipeline = ''): void {
    this.entries.set(table, { row: row ?? { pipeline, table }, at });
  }

  /** The row as of a status write: as it was before (`before`), plus what the write set. */
  afterRecord(table: string, before: StatusRow | undefined, update: StatusUpdate, at: number): StatusRow {
    const base: StatusRow = before ?? this.entries.get(table)?.row ?? { pipeline: '', table };
    const row: StatusRow = {
      ...base,
      ...(update.phase !== undefined ? { phase: update.phase } : {}),
      ...(update.format !== undefined ? { format: update.format } : {}),
      lastPosition: max(base.lastPosition, update.lastPosition),
      lastSnapshotPosition: max(base.lastSnapshotPosition, update.lastSnapshotPosition),
      carriesFlattened: base.carriesFlattened === true || update.carriesFlattened === true,
      truncateWatermark: max(base.truncateWatermark, this.entries.get(table)?.row.truncateWatermark),
      ...lifecycleAfter(base, update, at),
    };
    this.entries.set(table, { row, at });
    return row;
  }

  /** A truncate this container raised: its copy holds it at once. */
  noteTruncate(table: string, watermark: string, at: number): void {
    const e = this.entries.get(table);
    const row: StatusRow = e?.row ?? { pipeline: '', table };
    if ((row.truncateWatermark ?? '') >= watermark) return;
    this.entries.set(table, { row: { ...row, truncateWatermark: watermark }, at: e?.at ?? at });
  }
}
