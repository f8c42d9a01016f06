/**
 * Step 5 of a batch: one status-row write per table (status-store.ts), all tables at once under the
 * batch's limiter, then metrics. Both are derived from the telemetry contract: every counter is a
 * status attribute and a metric.
 *
 * A status write that fails (throttled past the SDK's own retries) is tried again with backoff for
 * as long as the invocation's time allows (the same budget as raw landing), then counted as
 * `StatusUpdatesFailed`, which alarms, and logged: never dropped without a trace. The metrics of the
 * batch are emitted either way.
 *
 * Each write returns the row as it was, which refreshes the container's StatusCache; when it shows
 * a truncate watermark above the one this batch's writes were held against, the rows the batch
 * wrote below it are deleted (the race with another shard's truncate, see status-cache.ts).
 */
import { lagHistogram } from '../core/lag-histogram.js';
import type { TableConfig } from '../config/types.js';
import type { Limiter } from '../core/concurrency.js';
import { errorMessage } from '../core/errors.js';
import { FLATTENED_FORMAT } from '../core/formats/kafka-tombstones.js';
import type { RecordResult, StatusRow, StatusStore, StatusUpdate } from '../adapters/status-store.js';
import type { TruncateSweeper } from '../adapters/truncate-sweep.js';
import { COUNTER_NAMES, COUNTERS, DISTRIBUTIONS, HEALTH, UNKNOWN_TABLE } from '../telemetry/contract.js';
import type { Log, MetricSink } from '../telemetry/sinks.js';
import { type LandingBudget, retryWithinBudget } from './land.js';
import type { StatusCache } from './status-cache.js';
import type { BatchTally, TableTally } from './tally.js';

export interface ReportDeps {
  readonly status: Pick<StatusStore, 'record'>;
  readonly statusCache: StatusCache;
  readonly sweeper: Pick<TruncateSweeper, 'sweepKeys'>;
  readonly tables: ReadonlyMap<string, TableConfig>;
  readonly metrics: MetricSink;
  readonly log: Log;
  readonly now: () => number;
  readonly limiter: Limiter;
  /** How long a failed status write may be retried (the invocation's clock, else a fixed budget). */
  readonly retry?: LandingBudget;
}

/** Kept free at the end of the invocation when retrying a status write. */
const STATUS_RETRY_RESERVE_MS = 1_000;

/**
 * `statusRows`: the rows the batch was applied against; `watermarks`: the truncate watermark each
 * table's writes were held against.
 */
export async function report(tally: BatchTally, statusRows: ReadonlyMap<string, StatusRow>, watermarks: ReadonlyMap<string, string>, deps: ReportDeps): Promise<void> {
  const now = deps.now();
  await Promise.all(
    [...tally.tables].map(async ([table, t]) => {
      const prev = statusRows.get(table);
      if (table !== UNKNOWN_TABLE && isResnapshot(t, prev)) {
        tally.count(table, 'resnapshots');
        deps.log.warn('snapshot reads after streaming began: the connector re-snapshotted', { table, position: t.snapshotPosition });
      }
      const update = statusUpdate(t, prev, now);
      const written = await recordWithRetry(table, update, deps);
      if (written) await afterWrite(tally, table, written, update, watermarks.get(table), deps);
    }),
  );
  for (const [table, t] of tally.tables) emitMetrics(deps.metrics, table, t);
  deps.metrics.flush();
}

/** The status write, retried within the budget; undefined (counted, logged) when it still failed. */
async function recordWithRetry(table: string, update: StatusUpdate, deps: ReportDeps): Promise<RecordResult | undefined> {
  try {
    return await retryWithinBudget(() => deps.limiter.run(() => deps.status.record(table, update)), { reserveMs: STATUS_RETRY_RESERVE_MS, ...deps.retry }, (attempt, err, delay) =>
      deps.log.warn('status update failed; retrying', { table, attempt, retryInMs: delay, error: errorMessage(err) }),
    );
  } catch (err) {
    deps.metrics.add(table, HEALTH.statusUpdatesFailed.metric, HEALTH.statusUpdatesFailed.unit, 1);
    deps.log.error("status update failed after the invocation's retries; this batch's counters are missing from the status row (StatusUpdatesFailed)", {
      table,
      error: errorMessage(err),
    });
    return undefined;
  }
}

/** Refreshes the container's copy, and deletes what the batch wrote below a truncate it had not seen. */
async function afterWrite(tally: BatchTally, table: string, written: RecordResult, update: StatusUpdate, heldAgainst: string | undefined, deps: ReportDeps): Promise<void> {
  const row = deps.statusCache.afterRecord(table, written.before, update, deps.now());
  const watermark = row.truncateWatermark;
  const target = deps.tables.get(table);
  if (watermark === undefined || watermark <= (heldAgainst ?? '') || !target) return;
  const below = tally.table(table).applied.filter((w) => w.position < watermark).map((w) => w.key);
  if (below.length === 0) return;
  try {
    const removed = await deps.limiter.run(() => deps.sweeper.sweepKeys(target, below, watermark));
    tally.count(table, 'truncatedRows', removed);
    deps.log.info('rows written below a truncate another shard raised meanwhile were removed', { table, watermark, rowsRemoved: removed });
  } catch (err) {
    // Reads and reconcile treat rows below the watermark as absent; the next truncate sweep removes them.
    deps.log.warn('rows written below a newer truncate watermark could not be removed now', { table, watermark, rows: below.length, error: errorMessage(err) });
  }
}

/**
 * Snapshot reads after streaming began are a re-snapshot, unless every one of them is at or below
 * the highest snapshot position already recorded: that is a redelivery of the earlier snapshot (a
 * connector restart, a replayed window), not a new one. Reads without a position (incremental
 * snapshots, Maxwell bootstrap) cannot be told apart that way; the snapshot-check job judges them from
 * raw.
 */
function isResnapshot(t: TableTally, prev: StatusRow | undefined): boolean {
  if (prev?.phase !== 'streaming' || t.snapshotPosition === undefined) return false;
  const recorded = typeof prev.lastSnapshotPosition === 'string' ? prev.lastSnapshotPosition : undefined;
  return recorded === undefined || t.snapshotPosition > recorded;
}

function statusUpdate(t: TableTally, prev: StatusRow | undefined, now: number): StatusUpdate {
  const recordedSnapshot = typeof prev?.lastSnapshotPosition === 'string' ? prev.lastSnapshotPosition : undefined;
  const phase = t.snapshotOnly && prev?.phase !== 'streaming' ? ('snapshot' as const) : ('streaming' as const);
  return {
    counters: t.counters,
    state: t.lastError ? 'ERROR' : 'RUNNING',
    ...(t.hasChanges ? { phase } : {}),
    ...(t.lastPosition !== undefined ? { lastPosition: t.lastPosition } : {}),
    ...(t.lastCommitTs !== undefined ? { lastCommitTs: t.lastCommitTs } : {}),
    ...(t.lags.length > 0 ? { lagMs: t.lags.reduce((a, b) => Math.max(a, b), 0), lagHistogram: lagHistogram(t.lags) } : {}),
    ...(t.lastError !== undefined ? { lastError: t.lastError } : {}),
    ...(t.resolved !== undefined ? { resolvedWatermark: t.resolved } : {}),
    ...(t.hasChanges ? { orderingStrength: [...t.strengths].sort().join('+') } : {}),
    ...(t.formats.size > 0 ? { format: [...t.formats].sort().join('+') } : {}),
    ...(t.snapshotPosition !== undefined && (recordedSnapshot === undefined || t.snapshotPosition > recordedSnapshot) ? { lastSnapshotPosition: t.snapshotPosition } : {}),
    ...(t.lastDdl !== undefined ? { lastDdl: t.lastDdl } : {}),
    ...(t.formats.has(FLATTENED_FORMAT) ? { carriesFlattened: true } : {}),
    ...lifecycleUpdate(t),
    now,
  };
}

/** The lifecycle's part of the status update (ingest/lifecycle.ts decided it). */
function lifecycleUpdate(t: TableTally): Pick<StatusUpdate, 'enteredError' | 'streak'> {
  const position = t.lowestFailed !== undefined ? { position: t.lowestFailed } : {};
  return { ...(t.enteredError ? { enteredError: { ...t.enteredError, ...position } } : {}), ...(t.streak ? { streak: t.streak } : {}) };
}

/** Every non-zero counter under its contract metric, and one freshness sample per applied key. */
export function emitMetrics(m: MetricSink, table: string, t: TableTally): void {
  for (const counter of COUNTER_NAMES) {
    const v = t.counters[counter];
    if (v) m.add(table, COUNTERS[counter].metric, COUNTERS[counter].unit, v);
  }
  for (const lag of t.lags) m.add(table, DISTRIBUTIONS.freshnessLag.metric, DISTRIBUTIONS.freshnessLag.unit, lag);
}
