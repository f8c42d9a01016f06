/**
 * Re-applies delivered records rebuilt from raw, through the same steps as ingest: the Normalizer
 * (same decoders), planBatch (same fold and collapse per key), the same guarded DynamoWriter. Raw
 * is not landed again: it is where the records come from.
 *
 *   normalize → select (tables, landing time, positions, keys) → drop what the erase ledger forbids
 *   → plan → truncates → pre-read stored positions → write only what the stored row lacks
 *
 * Pre-read: the writer's `writeAll(writes, { preRead: 'always' })` reads `__pos`/`__hash` with one
 * BatchGetItem per 100 keys; a key already at or past the planned write (resolveAgainstStored:
 * stale, duplicate or conflict) is not written at all, so replaying a window that is already
 * applied costs read units only and 0 write units.
 *
 * A dry run stops after the pre-read and says, per key, the stored position, the replayed winner
 * and the action a real run would take.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { type PlannedTruncate, type PlannedWrite, planBatch } from '../core/plan.js';
import { encodePosition } from '../core/position.js';
import { outcomeOf, resolveAgainstStored } from '../core/stored.js';
import type { ChangeEvent, NormalizedEvent } from '../core/types.js';
import type { DynamoWriter } from '../adapters/dynamo-writer.js';
import { readStoredPositions, type StoredPosition } from '../adapters/stored-positions.js';
import type { KeyRef, Log } from '../telemetry/sinks.js';
import type { LedgerView } from '../adapters/erase-ledger.js';
import { TruncateSweeper } from '../adapters/truncate-sweep.js';
import { inArrivalRange, type ReplaySelection, selects } from './selection.js';

/** Counts of one replay (or of a part of it: they add up). Every record and event is counted once. */
export interface ReplayTally {
  /** Records read from raw (after dropping copies repeated across objects). */
  records: number;
  /** Copies of a record found again in another object (partial-batch retries): read once. */
  copies: number;
  /** Raw lines that could not be read back (see raw-reader.ts problems). */
  badLines: number;
  /** Records outside the landing-time range. */
  outOfRange: number;
  /** Records the normalizer rejects now (config changed since landing). */
  rejected: number;
  events: number;
  controls: number;
  /** Changes of tables, positions or keys outside the selection. */
  unselected: number;
  /** Changes at or before an erasure of their key (the erase ledger). */
  erased: number;
  /** Selected changes planned: superseded + duplicates/conflicts in the batch + one write per key. */
  selected: number;
  superseded: number;
  /** Keys written (guarded write applied). */
  applied: number;
  stale: number;
  duplicates: number;
  conflicts: number;
  failed: number;
  /** Keys the pre-read showed to be current already: not written. */
  skippedByPreRead: number;
  truncates: number;
  truncatedRows: number;
  readUnits: number;
  readRequests: number;
  writeRequests: number;
  writeUnits: number;
}

export const emptyTally = (): ReplayTally => ({
  records: 0,
  copies: 0,
  badLines: 0,
  outOfRange: 0,
  rejected: 0,
  events: 0,
  controls: 0,
  unselected: 0,
  erased: 0,
  selected: 0,
  superseded: 0,
  applied: 0,
  stale: 0,
  duplicates: 0,
  conflicts: 0,
  failed: 0,
  skippedByPreRead: 0,
  truncates: 0,
  truncatedRows: 0,
  readUnits: 0,
  readRequests: 0,
  writeRequests: 0,
  writeUnits: 0,
});

export function addTally(total: ReplayTally, part: ReplayTally): ReplayTally {
  for (const k of Object.keys(total) as (keyof ReplayTally)[]) total[k] += part[k];
  return total;
}

export type KeyAction = 'write' | 'stale' | 'duplicate' | 'conflict' | 'below-truncate';

/** One line of a dry run: what a real run would do to one key. */
export interface DryRunLine {
  readonly table: string;
  /** Canonical key text, e.g. `["42"]`. */
  readonly key: string;
  readonly stored: string | null;
  readonly storedDeleted: boolean;
  readonly winner: string;
  readonly op: string;
  readonly action: KeyAction;
}

export interface ReplayEngineDeps {
  readonly normalizer: Normalizer;
  readonly dynamodb: DynamoDBClient;
  /** A writer over `tables` (for a fresh replay, with the fresh table as target). */
  readonly writer: DynamoWriter;
  /** Source table → its config, with the target the replay writes to. */
  readonly tables: ReadonlyMap<string, TableConfig>;
  /** Records and reads truncate watermarks (see deps.ts `statusWatermarks`); null keeps them in memory. */
  readonly watermarks: TruncateWatermarks | null;
  readonly ledger: LedgerView | null;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. */
  readonly keyRef: KeyRef;
  readonly concurrency: number;
}

/** The status table's truncate watermarks, as the live tables use them. */
export interface TruncateWatermarks {
  load(tables: readonly string[]): Promise<Map<string, string>>;
  raise(table: string, position: string): Promise<void>;
}

export interface ReplayResult {
  readonly tally: ReplayTally;
  readonly dryRun: readonly DryRunLine[];
  /** Keys whose write failed (table, canonical key, position), for the report and a retry. */
  readonly failures: readonly { table: string; key: string; position: string; error: string }[];
}

export class ReplayEngine {
  private watermarks: Map<string, string> | null = null;

  constructor(private readonly deps: ReplayEngineDeps) {}

  /** Replays one chunk of records. Chunks are independent: the guard makes any split converge. */
  async replay(records: readonly RawRecord[], selection: ReplaySelection, options: { dryRun?: boolean } = {}): Promise<ReplayResult> {
    const tally = emptyTally();
    const changes = this.select(records, selection, tally);
    const plan = planBatch(changes, (e) => this.deps.normalizer.keyIdOf(e));
    for (const c of plan.counts.values()) {
      tally.superseded += c.superseded + c.truncated;
      tally.duplicates += c.duplicates;
      tally.conflicts += c.conflicts;
    }
    tally.selected = changes.length;
    const watermarks = await this.loadWatermarks(selection.tables);
    for (const t of plan.truncates) await this.truncate(t, watermarks, tally, options.dryRun === true);

    const below = (w: PlannedWrite) => {
      const wm = watermarks.get(w.table);
      return wm !== undefined && w.encodedPosition < wm;
    };
    const candidates = plan.writes.filter((w) => !below(w));
    if (options.dryRun) return { tally, dryRun: await this.dryRun(plan.writes, candidates, below, tally), failures: [] };
    const skippedBelow = plan.writes.length - candidates.length;
    tally.stale += skippedBelow;
    tally.skippedByPreRead += skippedBelow;
    const failures = await this.write(candidates, tally);
    await this.recheckWatermarks(candidates, watermarks, tally);
    return { tally, dryRun: [], failures };
  }

  /**
   * A truncate met by another batch of the run may have been recorded while this batch wrote.
   * Reading the watermarks again after writing closes that race: either the other batch's sweep
   * runs after these writes, or this batch sees the new watermark here and sweeps below it itself.
   */
  private async recheckWatermarks(written: readonly PlannedWrite[], watermarks: Map<string, string>, tally: ReplayTally): Promise<void> {
    if (!this.deps.watermarks || written.length === 0) return;
    const tables = [...new Set(written.map((w) => w.table))];
    for (const [table, wm] of await this.deps.watermarks.load(tables)) {
      if (wm <= (watermarks.get(table) ?? '')) continue;
      watermarks.set(table, wm);
      const config = this.deps.tables.get(table);
      if (config) tally.truncatedRows += await new TruncateSweeper(this.deps.dynamodb).sweep(config, wm);
    }
  }

  /** Per key: the stored position (one BatchGetItem per 100 keys), the winner, the action a run would take. */
  private async dryRun(writes: readonly PlannedWrite[], candidates: readonly PlannedWrite[], below: (w: PlannedWrite) => boolean, tally: ReplayTally): Promise<DryRunLine[]> {
    const stored = await this.preRead(candidates, tally);
    return writes.map((w) => {
      const s = stored.get(storedKey(w));
      const known = s === 'unread' ? undefined : s;
      const action: KeyAction = below(w) ? 'below-truncate' : s === 'unread' ? 'write' : actionOf(s, w);
      return { table: w.table, key: w.keyId, stored: known?.position ?? null, storedDeleted: known?.deleted ?? false, winner: w.encodedPosition, op: w.op, action };
    });
  }

  private select(records: readonly RawRecord[], selection: ReplaySelection, tally: ReplayTally): ChangeEvent[] {
    const changes: ChangeEvent[] = [];
    for (const record of records) {
      tally.records++;
      if (!inArrivalRange(selection, record.transport.arrivalTime)) {
        tally.outOfRange++;
        continue;
      }
      const n = this.deps.normalizer.normalize(record);
      if (!n.ok) {
        tally.rejected++;
        this.deps.log.warn('raw record no longer normalizes; not replayed', { reason: n.reason, shard: record.transport.shard, sequence: record.transport.sequence });
        continue;
      }
      for (const e of n.events) this.selectEvent(e, selection, tally, changes);
    }
    return changes;
  }

  /** Keeps a change event the selection names and the erase ledger does not block; counts the rest. */
  private selectEvent(e: NormalizedEvent, selection: ReplaySelection, tally: ReplayTally, changes: ChangeEvent[]): void {
    tally.events++;
    if (e.kind === 'control') {
      tally.controls++;
      return;
    }
    const canonical = this.deps.normalizer.keyIdOf(e);
    const position = encodePosition(e.position.tuple);
    if (!selects(selection, e, canonical, position)) tally.unselected++;
    else if (e.op !== 't' && this.deps.ledger?.blocks(e.table, canonical, position)) tally.erased++;
    else changes.push(e);
  }

  private async loadWatermarks(tables: readonly string[]): Promise<Map<string, string>> {
    if (this.watermarks === null) this.watermarks = this.deps.watermarks ? await this.deps.watermarks.load(tables) : new Map();
    return this.watermarks;
  }

  private async truncate(t: PlannedTruncate, watermarks: Map<string, string>, tally: ReplayTally, dryRun: boolean): Promise<void> {
    tally.truncates++;
    if (t.encodedPosition <= (watermarks.get(t.table) ?? '')) return;
    watermarks.set(t.table, t.encodedPosition);
    const table = this.deps.tables.get(t.table);
    if (dryRun || !table) return;
    await this.deps.watermarks?.raise(t.table, t.encodedPosition);
    tally.truncatedRows += await new TruncateSweeper(this.deps.dynamodb).sweep(table, t.encodedPosition);
  }

  private async preRead(writes: readonly PlannedWrite[], tally: ReplayTally): Promise<Map<string, StoredPosition | 'unread' | undefined>> {
    const out = new Map<string, StoredPosition | 'unread' | undefined>();
    const byTable = new Map<string, PlannedWrite[]>();
    for (const w of writes) byTable.set(w.table, [...(byTable.get(w.table) ?? []), w]);
    for (const [source, list] of byTable) {
      const table = this.deps.tables.get(source);
      if (!table) continue;
      const read = await readStoredPositions(this.deps.dynamodb, table, list);
      tally.readUnits += read.readUnits;
      tally.readRequests += read.requests;
      for (const w of list) out.set(storedKey(w), read.unread.has(w.keyId) ? 'unread' : read.byKey.get(w.keyId));
    }
    return out;
  }

  /** The writer's pre-read (`always`): keys already current are settled by one read, never written. */
  private async write(writes: readonly PlannedWrite[], tally: ReplayTally): Promise<ReplayResult['failures']> {
    const { results, totals } = await this.deps.writer.writeAll(writes, { preRead: 'always', concurrency: this.deps.concurrency });
    tally.applied += totals.applied;
    tally.stale += totals.stale;
    tally.duplicates += totals.duplicate;
    tally.conflicts += totals.conflict;
    tally.failed += totals.failed + totals.quarantined;
    tally.skippedByPreRead += totals.skipped;
    tally.readUnits += totals.readUnits;
    tally.readRequests += totals.readRequests;
    tally.writeUnits += totals.writeUnits;
    tally.writeRequests += totals.writeRequests;
    const failures: { table: string; key: string; position: string; error: string }[] = [];
    results.forEach((r, i) => {
      const w = writes[i];
      if (!w || (r.outcome !== 'failed' && r.outcome !== 'quarantined')) return;
      failures.push({ table: w.table, key: w.keyId, position: w.encodedPosition, error: r.error?.message ?? r.outcome });
      this.deps.log.error('replay write failed', { table: w.table, keyHash: this.deps.keyRef(w.table, w.keyId), position: w.encodedPosition, error: r.error?.message });
    });
    return failures;
  }
}

const storedKey = (w: PlannedWrite) => `${w.table}\0${w.keyId}`;

function actionOf(stored: StoredPosition | undefined, w: PlannedWrite): KeyAction {
  const outcome = outcomeOf(resolveAgainstStored(stored ? { position: stored.position, contentHash: stored.hash } : undefined, w));
  return outcome === 'applied' ? 'write' : outcome;
}
