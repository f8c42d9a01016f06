/**
 * Steps 3 and 4 of a batch: count the plan, enforce truncates, then one guarded write per key, every
 * table at once under the batch's one bound on requests in flight. Every planned event ends as one outcome: the plan's superseded, duplicates
 * and conflicts; one outcome per truncate (`truncates` or `failed`) and per write (`applied`,
 * `stale`, `duplicates`, `conflicts`, `quarantined` or `failed`).
 */
import type { TableConfig } from '../config/types.js';
import type { Limiter } from '../core/concurrency.js';
import { errorMessage } from '../core/errors.js';
import type { BatchPlan, PlannedWrite } from '../core/plan.js';
import { permanentFailure } from '../core/lifecycle.js';
import type { DynamoWriter, PreReadPolicy, WriteResult } from '../adapters/dynamo-writer.js';
import type { RawStore } from '../adapters/raw-store.js';
import type { StatusRow, StatusStore } from '../adapters/status-store.js';
import type { KeyRef, Log } from '../telemetry/sinks.js';
import type { TruncateSweeper } from '../adapters/truncate-sweep.js';
import type { Decoded } from './decode.js';
import { batchCoordinates, type LandingBudget, retryWithinBudget } from './land.js';
import { refusedLineFor } from './raw-lines.js';
import type { BatchTally, TableTally } from './tally.js';
import { NOTHING_PRESETTLED, type Presettled } from './transactions.js';

export interface ApplyDeps {
  readonly tables: ReadonlyMap<string, TableConfig>;
  /** The batch's bound on DynamoDB requests in flight, shared by every table (`apply.maxInFlight`). */
  readonly limiter: Limiter;
  readonly writer: Pick<DynamoWriter, 'writeAll'>;
  /** When to read stored positions before writing (see PreReadPolicy); ingest uses `auto`. */
  readonly preRead: PreReadPolicy;
  readonly status: Pick<StatusStore, 'raiseTruncateWatermark'>;
  readonly sweeper: Pick<TruncateSweeper, 'sweep'>;
  readonly raw: Pick<RawStore, 'quarantine'>;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. */
  readonly keyRef: KeyRef;
  readonly now: () => number;
  /** How long throttled or failed-on-the-server writes may be retried (the invocation's clock, else a fixed budget). @default land.ts's */
  readonly retry?: LandingBudget;
}

/** The plan's own counts: op mix, placeholders, and the events it collapsed. */
export function countPlan(plan: BatchPlan, tally: BatchTally, log: Log, keyRef: KeyRef): void {
  for (const [table, c] of plan.counts) {
    tally.count(table, 'opC', c.byOp.c);
    tally.count(table, 'opU', c.byOp.u);
    tally.count(table, 'opD', c.byOp.d);
    tally.count(table, 'opR', c.byOp.r);
    tally.count(table, 'opT', c.byOp.t);
    tally.count(table, 'superseded', c.superseded + c.truncated);
    tally.count(table, 'duplicates', c.duplicates);
    tally.count(table, 'conflicts', c.conflicts);
    tally.count(table, 'placeholders', c.placeholders);
    tally.count(table, 'snapshotEvents', c.snapshot);
    tally.count(table, 'beforeNullUpdates', c.beforeNullUpdates);
  }
  for (const conflict of plan.conflicts) log.warn('conflicting events at one position; the later one was not applied', { table: conflict.table, keyHash: keyRef(conflict.table, conflict.keyId), position: conflict.encodedPosition });
}

/** Raises and sweeps each truncate's watermark; returns the highest watermark per table (recorded or new). */
export async function applyTruncates(plan: BatchPlan, statusRows: ReadonlyMap<string, StatusRow>, deps: ApplyDeps, tally: BatchTally, decoded: Decoded): Promise<Map<string, string>> {
  const watermarks = new Map<string, string>();
  for (const [table, row] of statusRows) if (row.truncateWatermark) watermarks.set(table, row.truncateWatermark);
  for (const truncate of plan.truncates) {
    try {
      const target = deps.tables.get(truncate.table);
      if (!target) throw new Error(`table ${truncate.table} is not configured`);
      await deps.status.raiseTruncateWatermark(truncate.table, truncate.encodedPosition);
      const swept = await deps.sweeper.sweep(target, truncate.encodedPosition);
      tally.count(truncate.table, 'truncates');
      tally.count(truncate.table, 'truncatedRows', swept);
      deps.log.info('truncate applied', { table: truncate.table, position: truncate.encodedPosition, rowsRemoved: swept });
    } catch (err) {
      tally.count(truncate.table, 'failed');
      tally.fail(truncate.table, decoded.recordsOf(truncate.sources), errorMessage(err));
      deps.log.error('truncate failed; records will be retried', { table: truncate.table, position: truncate.encodedPosition, error: errorMessage(err) });
    }
    if (truncate.encodedPosition > (watermarks.get(truncate.table) ?? '')) watermarks.set(truncate.table, truncate.encodedPosition);
  }
  return watermarks;
}

const BELOW_WATERMARK: WriteResult = { outcome: 'stale', writeUnits: 0, requests: 0, missing: [], spilled: false };

/**
 * One guarded write per key; a write below its table's truncate watermark is stale without a
 * request. Each table's writes go through their own `writeAll` (so the pre-read's read units are
 * counted under their table), all tables at once, every request under the batch's limiter. Keys
 * are distinct within a plan, so running them concurrently changes no per-key order. Writes the
 * transaction step already settled (`presettled`) are only counted.
 */
export async function applyWrites(plan: BatchPlan, watermarks: ReadonlyMap<string, string>, deps: ApplyDeps, tally: BatchTally, decoded: Decoded, presettled: Presettled = NOTHING_PRESETTLED): Promise<void> {
  const results: WriteResult[] = plan.writes.map(() => BELOW_WATERMARK);
  const byTable = new Map<string, number[]>();
  plan.writes.forEach((w, i) => {
    const settled = presettled.results.get(i);
    if (settled) {
      results[i] = settled;
      return;
    }
    const wm = watermarks.get(w.table);
    if (wm !== undefined && w.encodedPosition < wm) return;
    const list = byTable.get(w.table);
    if (list) list.push(i);
    else byTable.set(w.table, [i]);
  });
  await Promise.all(
    [...byTable].map(async ([table, indexes]) => {
      const out = await writeTable(table, indexes.flatMap((i) => plan.writes[i] ?? []), deps, tally);
      out.forEach((r, j) => {
        const i = indexes[j];
        if (i !== undefined) results[i] = r;
      });
    }),
  );
  const appliedAt = deps.now();
  const refused: { write: PlannedWrite; result: WriteResult }[] = [];
  results.forEach((r, i) => {
    const w = plan.writes[i];
    if (!w) return;
    if (r.outcome === 'quarantined') refused.push({ write: w, result: r });
    else countWrite(w, r, tally, appliedAt, deps, decoded);
    countCost(w.table, r, tally);
  });
  if (refused.length > 0) await quarantineRefused(refused, deps, tally, decoded);
}

/** Writes that failed for a reason worth another try (throttling, a server error); one error stands for them. */
class TransientWriteFailures extends Error {
  constructor(
    readonly count: number,
    readonly first: Error | undefined,
  ) {
    super(`${count} writes throttled or failed on the server: ${first?.message ?? ''}`);
  }
}

/** Throttling and 5xx: what the SDK retries, still failing after its attempts. Anything else (access, validation) is not retried here. */
export function transientWriteFailure(r: WriteResult): boolean {
  if (r.outcome !== 'failed') return false;
  const cause = (r.error as { cause?: unknown } | undefined)?.cause as { name?: unknown; $fault?: unknown; $retryable?: unknown } | undefined;
  if (cause === undefined || cause === null) return false;
  const name = typeof cause.name === 'string' ? cause.name : '';
  return cause.$fault === 'server' || cause.$retryable !== undefined || /^(ProvisionedThroughputExceeded|Throttling|RequestLimitExceeded|InternalServerError|ServiceUnavailable)/.test(name.slice(0, 64));
}

/**
 * One table's writes through `writeAll`; those that fail transiently (throttling, 5xx) are sent
 * again, only they, within the invocation's time (land.ts `retryWithinBudget`), so one throttled
 * key does not send the whole rest of the batch back to the event source mapping. A retried write
 * is the same guarded write: applied at most once, by its position. Returns one result per write.
 */
async function writeTable(table: string, writes: readonly PlannedWrite[], deps: ApplyDeps, tally: BatchTally): Promise<WriteResult[]> {
  const results: WriteResult[] = writes.map(() => BELOW_WATERMARK);
  let pending = writes.map((_, i) => i);
  const once = async () => {
    const out = await deps.writer.writeAll(
      pending.flatMap((i) => writes[i] ?? []),
      { preRead: deps.preRead, limiter: deps.limiter },
    );
    tally.summary.dynamoRequests += out.totals.readRequests + out.totals.writeRequests;
    tally.count(table, 'readUnits', out.totals.readUnits);
    tally.count(table, 'preReadSkipped', out.totals.skipped);
    const again: number[] = [];
    out.results.forEach((r, j) => {
      const i = pending[j];
      if (i === undefined) return;
      results[i] = r;
      if (transientWriteFailure(r)) again.push(i);
    });
    pending = again;
    if (again.length > 0) throw new TransientWriteFailures(again.length, results[again[0] ?? 0]?.error);
  };
  try {
    await retryWithinBudget(once, deps.retry ?? {}, (attempt, err, delay) =>
      deps.log.warn('guarded writes failed; retrying them', { table, attempt, writes: pending.length, retryInMs: delay, error: errorMessage(err) }),
    );
  } catch (err) {
    // Out of time: the writes still failing stay `failed` and go back to the mapping from the lowest.
    if (!(err instanceof TransientWriteFailures)) throw err;
  }
  return results;
}

/** What the error budget needs of a failed write: its position, and whether no retry can fix it. */
function noteFailure(t: TableTally, position: string, error: Error | undefined): void {
  if (t.lowestFailed === undefined || position < t.lowestFailed) t.lowestFailed = position;
  t.permanentFailure ??= permanentFailure(error);
}

function countCost(table: string, r: WriteResult, tally: BatchTally): void {
  tally.count(table, 'writeUnits', r.writeUnits);
  if (r.spilled) tally.count(table, 'spilled');
  if (r.missing.length > 0) tally.count(table, 'missingColumns');
}

function countWrite(w: PlannedWrite, r: WriteResult, tally: BatchTally, appliedAt: number, { log, keyRef }: Pick<ApplyDeps, 'log' | 'keyRef'>, decoded: Decoded): void {
  switch (r.outcome) {
    case 'applied':
      tally.count(w.table, 'applied');
      tally.table(w.table).noteApplied(w.encodedPosition, w.commitTs, appliedAt, w.key);
      return;
    case 'stale':
      tally.count(w.table, 'stale');
      return;
    case 'duplicate':
      tally.count(w.table, 'duplicates');
      return;
    case 'conflict':
      tally.count(w.table, 'conflicts');
      log.warn('stored row has the same position with different content; not applied', { table: w.table, keyHash: keyRef(w.table, w.keyId), position: w.encodedPosition });
      return;
    default:
      tally.count(w.table, 'failed');
      tally.fail(w.table, decoded.recordsOf(w.sources), r.error?.message ?? r.outcome);
      noteFailure(tally.table(w.table), w.encodedPosition, r.error);
      log.error('write failed; records will be retried', { table: w.table, keyHash: keyRef(w.table, w.keyId), position: w.encodedPosition, error: r.error?.message });
  }
}

/**
 * Writes DynamoDB refuses for good (the writer says `quarantined`) must not block the shard: their
 * records go to quarantine with the reason, and count as quarantined. If even that landing fails,
 * they count as failed and are retried.
 */
async function quarantineRefused(refused: readonly { write: PlannedWrite; result: WriteResult }[], deps: ApplyDeps, tally: BatchTally, decoded: Decoded): Promise<void> {
  const lines = refused.flatMap(({ write, result }) =>
    decoded.recordsOf(write.sources).flatMap((i) => {
      const record = tally.records[i];
      return record ? [refusedLineFor(record, 'write-refused', result.error?.message ?? 'refused by DynamoDB', write.table)] : [];
    }),
  );
  try {
    await deps.raw.quarantine(batchCoordinates(tally.records), lines);
    tally.summary.s3Puts++;
    for (const { write, result } of refused) {
      tally.count(write.table, 'quarantined');
      deps.log.warn('write refused; records quarantined', { table: write.table, keyHash: deps.keyRef(write.table, write.keyId), position: write.encodedPosition, error: result.error?.message });
    }
  } catch (err) {
    for (const { write } of refused) {
      tally.count(write.table, 'failed');
      tally.fail(write.table, decoded.recordsOf(write.sources), `quarantine failed: ${errorMessage(err)}`);
    }
  }
}
