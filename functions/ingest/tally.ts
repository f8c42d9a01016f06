/**
 * The one owner of a batch's state while it is processed (Powertools' `BatchProcessingStore`):
 * counters per table and for the batch, the latest facts per table, and which records failed.
 * Records are identified by their index in the delivered batch, and only that: steps that work on
 * events translate event indexes to record indexes before they call in here.
 *
 * Every counter goes through {@link BatchTally.count}, so a table's counters and the batch summary
 * never disagree, and every received unit (a record, or a row of a multi-row record) ends as exactly
 * one outcome of the telemetry contract.
 */
import type { RawRecord } from '../core/normalize.js';
import type { Key } from '../core/types.js';
import { type Counter, type CounterValues, OUTCOMES, zeroCounters } from '../telemetry/contract.js';

/** One batch's totals: every contract counter plus what only a batch has. */
export interface BatchSummary extends CounterValues {
  /** Delivered records (a multi-row record is one record here, and several `received`). */
  records: number;
  /** Normalized events of the accepted records. */
  events: number;
  /** DynamoDB row-write requests. */
  dynamoRequests: number;
  /** Raw and quarantine objects written. */
  s3Puts: number;
}

export const emptySummary = (): BatchSummary => ({ records: 0, events: 0, dynamoRequests: 0, s3Puts: 0, ...zeroCounters() });

/** Adds one batch's summary into running totals. */
export function addSummary(total: BatchSummary, s: BatchSummary): void {
  for (const k of Object.keys(total) as (keyof BatchSummary)[]) total[k] += s[k];
}

/** What one table saw in this batch. */
export class TableTally {
  readonly counters: Partial<Record<Counter, number>> = {};
  lastPosition?: string;
  lastCommitTs?: number;
  readonly strengths = new Set<string>();
  readonly formats = new Set<string>();
  readonly lags: number[] = [];
  resolved?: string;
  snapshotOnly = true;
  lastError?: string;
  /** The highest position of this batch's snapshot reads ('' for reads without a position), if any. */
  snapshotPosition?: string;
  /** The DDL of the last schema-change message for this table. */
  lastDdl?: string;
  /** Why a failed write of this batch stops the table at once (core/lifecycle.ts `permanentFailure`). */
  permanentFailure?: string;
  /** The lowest position among this batch's failed writes of the table. */
  lowestFailed?: string;
  /** The table's lifecycle change of this batch: it stopped in error (written with its status row). */
  enteredError?: { readonly reason: string; readonly by: 'budget' | 'permanent'; readonly from: number };
  /** The failure streak to record: one more failing batch, or cleared by a batch that applied. */
  streak?: 'add' | 'clear';

  noteSnapshotRead(position: string): void {
    if (this.snapshotPosition === undefined || position > this.snapshotPosition) this.snapshotPosition = position;
  }

  get hasChanges(): boolean {
    return this.strengths.size > 0;
  }

  /** The keys and positions of the writes applied (kept only for the truncate re-check after the status write). */
  readonly applied: { readonly key: Key; readonly position: string }[] = [];

  /** Records an applied write's position, commit time and lag. */
  noteApplied(position: string, commitTs: number | null, appliedAt: number, key?: Key): void {
    if (key !== undefined) this.applied.push({ key, position });
    if (this.lastPosition === undefined || position > this.lastPosition) this.lastPosition = position;
    if (commitTs === null) return;
    this.lastCommitTs = Math.max(this.lastCommitTs ?? 0, commitTs);
    this.lags.push(Math.max(0, appliedAt - commitTs));
  }
}

export class BatchTally {
  readonly summary: BatchSummary = emptySummary();
  readonly tables = new Map<string, TableTally>();
  private readonly failed = new Set<number>();
  private readonly failedByTable = new Map<string, Set<number>>();

  constructor(readonly records: readonly RawRecord[]) {
    this.summary.records = records.length;
  }

  table(name: string): TableTally {
    let t = this.tables.get(name);
    if (!t) {
      t = new TableTally();
      this.tables.set(name, t);
    }
    return t;
  }

  count(table: string, counter: Counter, n = 1): void {
    if (!n) return;
    const c = this.table(table).counters;
    c[counter] = (c[counter] ?? 0) + n;
    this.summary[counter] += n;
  }

  /** Marks records failed (they are retried from the lowest one) and remembers the error on the table. */
  fail(table: string, recordIndexes: Iterable<number>, error: string): void {
    let mine = this.failedByTable.get(table);
    if (!mine) {
      mine = new Set();
      this.failedByTable.set(table, mine);
    }
    for (const i of recordIndexes) {
      this.failed.add(i);
      mine.add(i);
    }
    this.table(table).lastError = error;
  }

  /**
   * The table stopped in error during this batch: its failed units count as `held` instead (they
   * are in raw; resume applies them), and its records no longer hold the shard back, unless another
   * table's failed unit is in the same record.
   */
  hold(table: string): void {
    const n = this.table(table).counters.failed ?? 0;
    this.count(table, 'failed', -n);
    this.count(table, 'held', n);
    const mine = this.failedByTable.get(table) ?? new Set<number>();
    this.failedByTable.delete(table);
    const others = new Set([...this.failedByTable.values()].flatMap((s) => [...s]));
    for (const i of mine) if (!others.has(i)) this.failed.delete(i);
  }

  /**
   * The whole batch failed before anything was applied (raw landing): every received unit becomes
   * `failed`, outcomes counted so far are taken back, and nothing describes a table's progress.
   */
  failAll(error: string): void {
    for (const [name, t] of this.tables) {
      for (const o of OUTCOMES) this.count(name, o, -(t.counters[o] ?? 0));
      this.count(name, 'failed', t.counters.received ?? 0);
      t.strengths.clear();
      t.formats.clear();
      t.lags.length = 0;
      t.resolved = undefined;
      t.lastError = error;
    }
    for (let i = 0; i < this.records.length; i++) this.failed.add(i);
  }

  /** The sequence of the lowest failed record: where the event source retries from. */
  failedFrom(): string | undefined {
    if (this.failed.size === 0) return undefined;
    return this.records[Math.min(...this.failed)]?.transport.sequence;
  }
}
