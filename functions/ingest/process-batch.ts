/**
 * One batch, in the order PIPELINE.md requires:
 *   decode and normalize (bad records → quarantine) → land raw in S3 (fail the batch if it fails)
 *   → plan → guarded writes with bounded concurrency → status rows → metrics
 *   → batchItemFailures from the lowest failed sequence.
 */
import type { TidemarkConfig } from '../commons/config.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { planBatch, type PlannedWrite, type TableCounts } from '../core/plan.js';
import type { ChangeEvent } from '../core/types.js';
import type { DynamoWriter, WriteResult } from '../adapters/dynamo-writer.js';
import type { QuarantineLine, RawLine, RawStore } from '../adapters/raw-store.js';
import { type Counter, type StatusStore, UNKNOWN_TABLE } from '../adapters/status-store.js';
import { type Log, type MetricSink, MetricUnit } from '../adapters/telemetry.js';
import { mapLimit } from './concurrency.js';
import { quarantineLineFor, rawLinesFor } from './raw-lines.js';
import { sweepTruncated } from './truncate.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface IngestDeps {
  readonly config: TidemarkConfig;
  readonly normalizer: Normalizer;
  readonly raw: RawStore;
  readonly writer: DynamoWriter;
  readonly status: StatusStore;
  readonly dynamodb: DynamoDBClient;
  readonly metrics: MetricSink;
  readonly log: Log;
  readonly now?: () => number;
  /** Called with every batch's summary (local runner progress, tests, benchmarks). */
  readonly onSummary?: (summary: BatchSummary) => void;
}

export interface BatchSummary {
  records: number;
  events: number;
  changes: number;
  controls: number;
  quarantined: number;
  applied: number;
  stale: number;
  duplicates: number;
  conflicts: number;
  superseded: number;
  failed: number;
  spilled: number;
  missingColumns: number;
  truncatedRows: number;
  writeUnits: number;
  dynamoRequests: number;
  s3Puts: number;
  rawBytes: number;
}

export interface BatchResult {
  readonly batchItemFailures: { itemIdentifier: string }[];
  readonly summary: BatchSummary;
}

export const emptySummary = (): BatchSummary => ({
  records: 0,
  events: 0,
  changes: 0,
  controls: 0,
  quarantined: 0,
  applied: 0,
  stale: 0,
  duplicates: 0,
  conflicts: 0,
  superseded: 0,
  failed: 0,
  spilled: 0,
  missingColumns: 0,
  truncatedRows: 0,
  writeUnits: 0,
  dynamoRequests: 0,
  s3Puts: 0,
  rawBytes: 0,
});

/** Adds one batch's summary into running totals. */
export function addSummary(total: BatchSummary, s: BatchSummary): void {
  for (const k of Object.keys(total) as (keyof BatchSummary)[]) total[k] += s[k];
}

interface TableTally {
  counters: Partial<Record<Counter, number>>;
  lastPosition?: string;
  lastCommitTs?: number;
  strengths: Set<string>;
  formats: Set<string>;
  lags: number[];
  resolved?: string;
  snapshotOnly: boolean;
  lastError?: string;
}

export async function processBatch(records: readonly RawRecord[], deps: IngestDeps): Promise<BatchResult> {
  const now = deps.now ?? Date.now;
  const summary = emptySummary();
  summary.records = records.length;
  if (records.length === 0) {
    deps.onSummary?.(summary);
    return { batchItemFailures: [], summary };
  }

  // 1. Decode and normalize. Nothing here throws for bad input.
  const linesByTable = new Map<string, RawLine[]>();
  const quarantined: QuarantineLine[] = [];
  const changes: ChangeEvent[] = [];
  const changeRecord: number[] = [];
  const tallies = new Map<string, TableTally>();
  const tally = (table: string): TableTally => {
    let t = tallies.get(table);
    if (!t) {
      t = { counters: {}, strengths: new Set(), formats: new Set(), lags: [], snapshotOnly: true };
      tallies.set(table, t);
    }
    return t;
  };
  const bump = (table: string, counter: Counter, n = 1) => {
    const t = tally(table);
    t.counters[counter] = (t.counters[counter] ?? 0) + n;
  };

  records.forEach((record, index) => {
    const result = deps.normalizer.normalize(record);
    if (!result.ok) {
      quarantined.push(quarantineLineFor(record, result.reason, result.detail));
      summary.quarantined++;
      bump(UNKNOWN_TABLE, 'quarantined');
      deps.log.warn('record quarantined', { reason: result.reason, detail: result.detail, shard: record.transport.shard, sequence: record.transport.sequence });
      return;
    }
    for (const { table, line } of rawLinesFor(record, result)) {
      const list = linesByTable.get(table) ?? [];
      list.push(line);
      linesByTable.set(table, list);
    }
    for (const e of result.events) {
      summary.events++;
      if (e.kind === 'control') {
        summary.controls++;
        if (e.control === 'resolved' && typeof e.detail.resolved === 'string') tally(e.table ?? UNKNOWN_TABLE).resolved = e.detail.resolved;
        continue;
      }
      changes.push(e);
      changeRecord.push(index);
      const t = tally(e.table);
      t.strengths.add(e.position.strength);
      t.formats.add(e.format);
      if (!e.snapshot) t.snapshotOnly = false;
    }
  });
  summary.changes = changes.length;

  // 2. Land raw before anything is applied. If it fails, nothing is applied and the whole batch retries.
  const first = records[0]!;
  const last = records[records.length - 1]!;
  try {
    const landed = await deps.raw.land(
      { shard: first.transport.shard, firstSequence: first.transport.sequence, lastSequence: last.transport.sequence, firstArrival: first.transport.arrivalTime },
      linesByTable,
      quarantined,
    );
    summary.s3Puts += landed.objects;
    summary.rawBytes += landed.bytes;
    for (const [table, bytes] of landed.bytesByTable) if (tallies.has(table)) bump(table, 'rawBytes', bytes);
  } catch (err) {
    deps.log.error('raw landing failed; batch will be retried', { error: (err as Error).message, shard: first.transport.shard, firstSequence: first.transport.sequence });
    summary.failed = records.length;
    deps.onSummary?.(summary);
    return { batchItemFailures: [{ itemIdentifier: first.transport.sequence }], summary };
  }

  // 3. Plan, respecting truncate watermarks already recorded.
  const plan = planBatch(changes, (e) => deps.normalizer.keyIdOf(e));
  const statusRows = await deps.status.load([...tallies.keys()].filter((t) => t !== UNKNOWN_TABLE));
  for (const [table, c] of plan.counts) addPlanCounts(tally(table), c, summary);
  for (const conflict of plan.conflicts) deps.log.warn('conflicting events at one position; the later one was not applied', { table: conflict.table, key: conflict.keyId, position: conflict.encodedPosition });

  const failedRecords = new Set<number>();
  for (const truncate of plan.truncates) {
    try {
      const target = deps.config.tables.find((t) => t.source === truncate.table)!;
      await deps.status.raiseTruncateWatermark(truncate.table, truncate.encodedPosition);
      const swept = await sweepTruncated(deps.dynamodb, target, truncate.encodedPosition);
      summary.truncatedRows += swept;
      deps.log.info('truncate applied', { table: truncate.table, position: truncate.encodedPosition, rowsRemoved: swept });
    } catch (err) {
      for (const s of truncate.sources) failedRecords.add(changeRecord[s]!);
      tally(truncate.table).lastError = (err as Error).message;
    }
  }
  // The highest truncate watermark per table: recorded before, or raised by this batch.
  const watermarks = new Map<string, string>();
  for (const [table, row] of statusRows) if (row.truncateWatermark) watermarks.set(table, row.truncateWatermark);
  for (const t of plan.truncates) if (t.encodedPosition > (watermarks.get(t.table) ?? '')) watermarks.set(t.table, t.encodedPosition);

  // 4. One guarded write per key, bounded concurrency.
  const results = await mapLimit(plan.writes, deps.config.apply.concurrency, async (w): Promise<WriteResult> => {
    const wm = watermarks.get(w.table);
    if (wm !== undefined && w.encodedPosition < wm) return { outcome: 'stale', writeUnits: 0, requests: 0, missing: [], spilled: false };
    return deps.writer.write(w);
  });
  const appliedAt = now();
  results.forEach((r, i) => {
    recordWrite(plan.writes[i]!, r, tally(plan.writes[i]!.table), summary, appliedAt, deps.log, failedRecords, changeRecord);
  });

  // 5. Status rows and metrics.
  for (const [table, t] of tallies) {
    const prev = statusRows.get(table);
    if (table !== UNKNOWN_TABLE && prev?.phase === 'streaming' && (t.counters.snapshotEvents ?? 0) > 0) {
      t.counters.resnapshots = 1;
      deps.log.warn('snapshot reads after streaming began: the connector re-snapshotted', { table });
    }
    const hasChanges = t.strengths.size > 0;
    await deps.status
      .record(table, {
        counters: t.counters,
        state: t.lastError ? 'ERROR' : 'RUNNING',
        phase: hasChanges ? (t.snapshotOnly && prev?.phase !== 'streaming' ? 'snapshot' : 'streaming') : undefined,
        lastPosition: t.lastPosition,
        lastCommitTs: t.lastCommitTs,
        lagMs: t.lags.length > 0 ? Math.max(...t.lags) : undefined,
        lastError: t.lastError,
        resolvedWatermark: t.resolved,
        orderingStrength: hasChanges ? [...t.strengths].sort().join('+') : undefined,
        format: t.formats.size > 0 ? [...t.formats].sort().join('+') : undefined,
        now: appliedAt,
      })
      .catch((err: Error) => deps.log.error('status update failed', { table, error: err.message }));
    emitMetrics(deps.metrics, table, t);
  }
  deps.metrics.flush();

  const failedSequences = [...failedRecords].sort((a, b) => a - b);
  const batchItemFailures = failedSequences.length > 0 ? [{ itemIdentifier: records[failedSequences[0]!]!.transport.sequence }] : [];
  deps.log.info('batch processed', { ...summary, failedFrom: batchItemFailures[0]?.itemIdentifier });
  deps.onSummary?.(summary);
  return { batchItemFailures, summary };
}

function addPlanCounts(t: TableTally, c: TableCounts, s: BatchSummary): void {
  const add = (k: Counter, n: number) => {
    if (n) t.counters[k] = (t.counters[k] ?? 0) + n;
  };
  add('opC', c.byOp.c);
  add('opU', c.byOp.u);
  add('opD', c.byOp.d);
  add('opR', c.byOp.r);
  add('opT', c.byOp.t);
  add('superseded', c.superseded + c.truncated);
  add('duplicates', c.duplicates);
  add('conflicts', c.conflicts);
  add('placeholders', c.placeholders);
  add('snapshotEvents', c.snapshot);
  add('beforeNullUpdates', c.beforeNullUpdates);
  s.superseded += c.superseded + c.truncated;
  s.duplicates += c.duplicates;
  s.conflicts += c.conflicts;
}

function recordWrite(
  w: PlannedWrite,
  r: WriteResult,
  t: TableTally,
  s: BatchSummary,
  appliedAt: number,
  log: Log,
  failedRecords: Set<number>,
  changeRecord: readonly number[],
): void {
  const add = (k: Counter, n = 1) => {
    t.counters[k] = (t.counters[k] ?? 0) + n;
  };
  s.writeUnits += r.writeUnits;
  s.dynamoRequests += r.requests;
  add('writeUnits', r.writeUnits);
  switch (r.outcome) {
    case 'applied':
      s.applied++;
      add('applied');
      if (t.lastPosition === undefined || w.encodedPosition > t.lastPosition) t.lastPosition = w.encodedPosition;
      if (w.commitTs !== null) {
        t.lastCommitTs = Math.max(t.lastCommitTs ?? 0, w.commitTs);
        t.lags.push(Math.max(0, appliedAt - w.commitTs));
      }
      break;
    case 'stale':
      s.stale++;
      add('stale');
      break;
    case 'duplicate':
      s.duplicates++;
      add('duplicates');
      break;
    case 'conflict':
      s.conflicts++;
      add('conflicts');
      log.warn('stored row has the same position with different content; not applied', { table: w.table, key: w.keyId, position: w.encodedPosition });
      break;
    case 'quarantined':
    case 'failed':
      s.failed++;
      add('errors');
      t.lastError = r.error?.message ?? r.outcome;
      for (const src of w.sources) failedRecords.add(changeRecord[src]!);
      log.error('write failed; records will be retried', { table: w.table, key: w.keyId, position: w.encodedPosition, error: r.error?.message });
      break;
  }
  if (r.spilled) {
    s.spilled++;
    add('spilled');
  }
  if (r.missing.length > 0) {
    s.missingColumns++;
    add('missingColumns');
  }
}

function emitMetrics(m: MetricSink, table: string, t: TableTally): void {
  const c = t.counters;
  const count = (name: string, v: number | undefined) => {
    if (v) m.add(table, name, MetricUnit.Count, v);
  };
  count('EventsApplied', c.applied);
  count('EventsStale', c.stale);
  count('EventsSuperseded', c.superseded);
  count('Duplicates', c.duplicates);
  count('Conflicts', c.conflicts);
  count('Placeholders', c.placeholders);
  count('MissingColumns', c.missingColumns);
  count('Quarantined', c.quarantined);
  count('SnapshotEvents', c.snapshotEvents);
  count('BeforeImageNullUpdates', c.beforeNullUpdates);
  count('Resnapshots', c.resnapshots);
  count('Spilled', c.spilled);
  count('WriteErrors', c.errors);
  count('EventsInsert', c.opC);
  count('EventsUpdate', c.opU);
  count('EventsDelete', c.opD);
  count('EventsSnapshotRead', c.opR);
  count('EventsTruncate', c.opT);
  count('WriteUnits', c.writeUnits);
  if (c.rawBytes) m.add(table, 'RawBytes', MetricUnit.Bytes, c.rawBytes);
  for (const lag of t.lags) m.add(table, 'FreshnessLagMs', MetricUnit.Milliseconds, lag);
}
