/**
 * Step 5 of a batch: one status-row update per table (plus its per-hour row), then metrics. Both are
 * derived from the telemetry contract: every counter is a status attribute and a metric.
 */
import { COUNTER_NAMES, COUNTERS, DISTRIBUTIONS, UNKNOWN_TABLE } from '../telemetry/contract.js';
import { errorMessage } from '../core/errors.js';
import { FLATTENED_FORMAT } from '../core/formats/kafka-tombstones.js';
import type { StatusRow, StatusStore } from '../adapters/status-store.js';
import type { Log, MetricSink } from '../telemetry/sinks.js';
import type { BatchTally, TableTally } from './tally.js';

export interface ReportDeps {
  readonly status: Pick<StatusStore, 'record'>;
  readonly metrics: MetricSink;
  readonly log: Log;
  readonly now: () => number;
}

export async function report(tally: BatchTally, statusRows: ReadonlyMap<string, StatusRow>, deps: ReportDeps): Promise<void> {
  const now = deps.now();
  for (const [table, t] of tally.tables) {
    const prev = statusRows.get(table);
    if (table !== UNKNOWN_TABLE && isResnapshot(t, prev)) {
      tally.count(table, 'resnapshots');
      deps.log.warn('snapshot reads after streaming began: the connector re-snapshotted', { table, position: t.snapshotPosition });
    }
    await deps.status.record(table, statusUpdate(t, prev, now)).catch((err: unknown) => deps.log.error('status update failed', { table, error: errorMessage(err) }));
    emitMetrics(deps.metrics, table, t);
  }
  deps.metrics.flush();
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

function statusUpdate(t: TableTally, prev: StatusRow | undefined, now: number) {
  const recordedSnapshot = typeof prev?.lastSnapshotPosition === 'string' ? prev.lastSnapshotPosition : undefined;
  const phase = t.snapshotOnly && prev?.phase !== 'streaming' ? ('snapshot' as const) : ('streaming' as const);
  return {
    counters: t.counters,
    state: t.lastError ? ('ERROR' as const) : ('RUNNING' as const),
    phase: t.hasChanges ? phase : undefined,
    lastPosition: t.lastPosition,
    lastCommitTs: t.lastCommitTs,
    lagMs: t.lags.length > 0 ? Math.max(...t.lags) : undefined,
    lastError: t.lastError,
    resolvedWatermark: t.resolved,
    orderingStrength: t.hasChanges ? [...t.strengths].sort().join('+') : undefined,
    format: t.formats.size > 0 ? [...t.formats].sort().join('+') : undefined,
    lastSnapshotPosition: t.snapshotPosition !== undefined && (recordedSnapshot === undefined || t.snapshotPosition > recordedSnapshot) ? t.snapshotPosition : undefined,
    lastDdl: t.lastDdl,
    carriesFlattened: t.formats.has(FLATTENED_FORMAT) || undefined,
    now,
  };
}

/** Every non-zero counter under its contract metric, and one freshness sample per applied key. */
export function emitMetrics(m: MetricSink, table: string, t: TableTally): void {
  for (const counter of COUNTER_NAMES) {
    const v = t.counters[counter];
    if (v) m.add(table, COUNTERS[counter].metric, COUNTERS[counter].unit, v);
  }
  for (const lag of t.lags) m.add(table, DISTRIBUTIONS.freshnessLag.metric, DISTRIBUTIONS.freshnessLag.unit, lag);
}
