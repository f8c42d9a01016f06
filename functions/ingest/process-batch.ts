/**
 * One batch, in the order the pipeline contract requires, as five named steps over one tally:
 *   decode   bytes → normalized events, raw lines; bad records → quarantine lines
 *   land     raw and quarantine to S3, retried within the invocation's time; if it fails, nothing is applied
 *   truncate raise and sweep truncate watermarks
 *   apply    transactions of a transaction group whole (one TransactWriteItems each), then one
 *            guarded write per key, bounded concurrency
 *   schema   each table's column set recorded, drift reported (a write only when it changed)
 *   report   status rows (and per-hour rows), metrics
 * and returns `batchItemFailures` from the lowest failed record. Every received record (or row of a
 * multi-row record) is counted exactly once as an outcome of the telemetry contract.
 */
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { FLATTENED_FORMAT } from '../core/formats/kafka-tombstones.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { planBatch } from '../core/plan.js';
import type { ChangeEvent } from '../core/types.js';
import type { DynamoWriter } from '../adapters/dynamo-writer.js';
import type { RawStore } from '../adapters/raw-store.js';
import { type StatusStore, UNKNOWN_TABLE } from '../adapters/status-store.js';
import { type KeyRef, type Log, type MetricSink, noKeyRef } from '../telemetry/sinks.js';
import type { TruncateSweeper } from '../adapters/truncate-sweep.js';
import type { TransactWriter } from '../adapters/transact-writer.js';
import { EMPTY_TX_PLAN } from '../core/transactions.js';
import type { SplitPartsStore } from '../adapters/split-parts-store.js';
import { applyTruncates, applyWrites, countPlan } from './apply.js';
import { applyTransactionUnits, planBatchTransactions } from './transactions.js';
import type { SchemaTracker } from './schema.js';
import { decode } from './decode.js';
import { withSplitRecords } from './dsql-parts.js';
import { type LandingBudget, land } from './land.js';
import { report } from './report.js';
import { BatchTally, type BatchSummary } from './tally.js';

export { addSummary, type BatchSummary, emptySummary } from './tally.js';

export interface IngestDeps {
  readonly config: TidemarkConfig;
  readonly normalizer: Normalizer;
  readonly raw: Pick<RawStore, 'land' | 'quarantine'>;
  readonly writer: Pick<DynamoWriter, 'write' | 'writeAll' | 'seedHighWater'>;
  /** Applies transactions of the config's transaction groups whole. @default none: every write per key */
  readonly txWriter?: Pick<TransactWriter, 'applyUnit'>;
  /** Records each table's column set and reports drift. @default none */
  readonly schema?: Pick<SchemaTracker, 'track'>;
  readonly status: Pick<StatusStore, 'load' | 'record' | 'raiseTruncateWatermark'>;
  readonly sweeper: Pick<TruncateSweeper, 'sweep'>;
  /** Where split Aurora DSQL records' parts wait for each other (dsql-parts.ts). @default none: no reassembly */
  readonly splitParts?: SplitPartsStore;
  readonly metrics: MetricSink;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. @default none: lines carry table and position */
  readonly keyRef?: KeyRef;
  readonly now?: () => number;
  /** How long raw landing may retry when there is no invocation clock. */
  readonly landing?: Omit<LandingBudget, 'remainingTimeMs'>;
  /** Called with every batch's summary (local runner progress, tests, benchmarks). */
  readonly onSummary?: (summary: BatchSummary) => void;
}

/** What one invocation adds: Lambda's clock, so raw landing can retry as long as the function may run. */
export interface Invocation {
  readonly remainingTimeMs?: () => number;
}

export interface BatchResult {
  readonly batchItemFailures: { itemIdentifier: string }[];
  readonly summary: BatchSummary;
}

export async function processBatch(records: readonly RawRecord[], deps: IngestDeps, invocation: Invocation = {}): Promise<BatchResult> {
  const tally = new BatchTally(records);
  const now = deps.now ?? Date.now;
  if (records.length > 0) {
    await settleAutoTombstones(records, deps);
    const decoded = decode(records, deps, tally);
    const landing = { ...deps.landing, ...(invocation.remainingTimeMs ? { remainingTimeMs: invocation.remainingTimeMs } : {}) };
    const landed = await land(records, decoded, { raw: deps.raw, log: deps.log, landing }, tally);
    const statusRows = await deps.status.load([...tally.tables.keys()].filter((t) => t !== UNKNOWN_TABLE));
    // A fresh container learns where each table stands, so a redelivered window is read, not written.
    for (const [table, row] of statusRows) if (row.lastPosition) deps.writer.seedHighWater(table, row.lastPosition);
    if (landed) {
      // Split Aurora DSQL records completed by this batch join its changes (dsql-parts.ts).
      const batch = await withSplitRecords(records, decoded, deps, tally, now());
      const keyIdOf = (e: ChangeEvent) => deps.normalizer.keyIdOf(e);
      const txPlan = deps.txWriter ? planBatchTransactions(batch, deps.config, keyIdOf) : EMPTY_TX_PLAN;
      const plan = planBatch(batch.changes, keyIdOf, batch.identity, txPlan.cuts);
      countPlan(plan, tally, deps.log, deps.keyRef ?? noKeyRef);
      const apply = applyDeps(deps, now);
      const watermarks = await applyTruncates(plan, statusRows, apply, tally, batch);
      const settled = deps.txWriter ? await applyTransactionUnits(plan, txPlan, watermarks, { ...deps, txWriter: deps.txWriter, concurrency: deps.config.apply.concurrency }, tally) : undefined;
      await applyWrites(plan, watermarks, apply, tally, batch, settled);
      await deps.schema?.track(batch, tally);
    }
    await report(tally, statusRows, { ...deps, now });
  }
  const failedFrom = tally.failedFrom();
  const batchItemFailures = failedFrom === undefined ? [] : [{ itemIdentifier: failedFrom }];
  deps.log.info('batch processed', { ...tally.summary, failedFrom });
  deps.onSummary?.(tally.summary);
  return { batchItemFailures, summary: tally.summary };
}

/**
 * Under `kafkaTombstones: auto` a tombstone deletes its key once the table is known to carry
 * Debezium flattened records. A container that has not seen one of the table's records yet reads
 * what the table's status row recorded (its `format`), once per table, before it decodes.
 */
async function settleAutoTombstones(records: readonly RawRecord[], deps: IngestDeps): Promise<void> {
  const open = new Set<string>();
  for (const r of records) {
    const table = deps.normalizer.openTombstoneTable(r);
    if (table !== null) open.add(table);
  }
  if (open.size === 0) return;
  for (const [table, row] of await deps.status.load([...open])) {
    if (row.carriesFlattened === true || (typeof row.format === 'string' && row.format.split('+').includes(FLATTENED_FORMAT))) deps.normalizer.noteFlattened(table);
  }
}

function applyDeps(deps: IngestDeps, now: () => number) {
  const tables = new Map<string, TableConfig>(deps.config.tables.map((t) => [t.source, t]));
  return { ...deps, tables, concurrency: deps.config.apply.concurrency, preRead: 'auto' as const, now, keyRef: deps.keyRef ?? noKeyRef };
}
