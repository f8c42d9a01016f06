/**
 * One batch, in the order the pipeline contract requires, as five named steps over one tally:
 *   decode   bytes → normalized events, raw lines; bad records → quarantine lines
 *   land     raw and quarantine to S3, retried within the invocation's time; if it fails, nothing is applied
 *   truncate raise and sweep truncate watermarks
 *   apply    transactions of a transaction group whole (one TransactWriteItems each), then one
 *            guarded write per key
 *   schema   each table's column set recorded, drift reported (a write only when it changed)
 *   report   one status-row write per table, metrics
 * and returns `batchItemFailures` from the lowest failed record. Every received record (or row of a
 * multi-row record) is counted exactly once as an outcome of the telemetry contract.
 *
 * The tables of a batch are applied and reported concurrently: every DynamoDB request of the batch
 * (writes, pre-reads, status updates) holds a slot of one bound, `apply.maxInFlight`. What the
 * batch needs of its tables' status rows comes from the container's StatusCache (status-cache.ts),
 * read again only when older than `ingest.statusMaxAgeSeconds`.
 */
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { Limiter } from '../core/concurrency.js';
import { errorMessage } from '../core/errors.js';
import { FLATTENED_FORMAT } from '../core/formats/kafka-tombstones.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { planBatch } from '../core/plan.js';
import type { ChangeEvent } from '../core/types.js';
import type { DynamoWriter } from '../adapters/dynamo-writer.js';
import type { RawStore } from '../adapters/raw-store.js';
import { type StatusRow, type StatusStore, UNKNOWN_TABLE } from '../adapters/status-store.js';
import { type KeyRef, type Log, type MetricSink, noKeyRef } from '../telemetry/sinks.js';
import { DISTRIBUTIONS } from '../telemetry/contract.js';
import type { TruncateSweeper } from '../adapters/truncate-sweep.js';
import type { TransactWriter } from '../adapters/transact-writer.js';
import { EMPTY_TX_PLAN } from '../core/transactions.js';
import type { SplitPartsStore } from '../adapters/split-parts-store.js';
import { batchCommitFrontier, type ShardFrontierStore } from '../adapters/shard-frontier.js';
import { applyTruncates, applyWrites, countPlan } from './apply.js';
import { heldTables, judgeFailures, withoutHeld } from './lifecycle.js';
import { applyTransactionUnits, planBatchTransactions } from './transactions.js';
import type { SchemaTracker } from './schema.js';
import { type Decoded, decode } from './decode.js';
import { withSplitRecords } from './dsql-parts.js';
import { type LandingBudget, land } from './land.js';
import { report } from './report.js';
import type { StatusCache } from './status-cache.js';
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
  /** The container's copy of its tables' status rows (one per container, like the clients). */
  readonly statusCache: StatusCache;
  readonly sweeper: Pick<TruncateSweeper, 'sweep' | 'sweepKeys'>;
  /** Where split Aurora DSQL records' parts wait for each other (dsql-parts.ts). @default none: no reassembly */
  readonly splitParts?: SplitPartsStore;
  /** Where each shard's applied commit time is kept (adapters/shard-frontier.ts). @default none */
  readonly frontier?: Pick<ShardFrontierStore, 'record'>;
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
    const limiter = new Limiter(deps.config.apply.maxInFlight);
    await settleAutoTombstones(records, deps);
    const decoded = decode(records, deps, tally);
    const landing = { ...deps.landing, ...(invocation.remainingTimeMs ? { remainingTimeMs: invocation.remainingTimeMs } : {}) };
    const landed = await land(records, decoded, { raw: deps.raw, log: deps.log, landing }, tally);
    const statusRows = await statusOf([...tally.tables.keys()].filter((t) => t !== UNKNOWN_TABLE), deps, now);
    // A fresh container learns where each table stands, so a redelivered window is read, not written.
    for (const [table, row] of statusRows) if (row.lastPosition) deps.writer.seedHighWater(table, row.lastPosition);
    const watermarks = landed ? await applyBatch(records, decoded, statusRows, deps, tally, limiter, landing) : new Map<string, string>();
    const applied = landed && tally.failedFrom() === undefined;
    const frontier = applied ? batchCommitFrontier(decoded.changes, decoded.controls) : undefined;
    if (frontier !== undefined) for (const table of tally.tables.keys()) deps.metrics.add(table, DISTRIBUTIONS.frontierAge.metric, DISTRIBUTIONS.frontierAge.unit, Math.max(0, now() - frontier));
    await report(tally, statusRows, watermarks, { ...deps, now, limiter, tables: tablesOf(deps.config), retry: landing });
    await recordFrontier(records, applied, frontier, deps, now());
  }
  const failedFrom = tally.failedFrom();
  const batchItemFailures = failedFrom === undefined ? [] : [{ itemIdentifier: failedFrom }];
  deps.log.info('batch processed', { ...tally.summary, failedFrom });
  deps.onSummary?.(tally.summary);
  return { batchItemFailures, summary: tally.summary };
}

/** Decoded and landed records applied: split records joined, transactions whole, truncates, guarded writes, schema. Returns the truncate watermarks. */
async function applyBatch(records: readonly RawRecord[], decoded: Decoded, statusRows: ReadonlyMap<string, StatusRow>, deps: IngestDeps, tally: BatchTally, limiter: Limiter, retry: LandingBudget): Promise<Map<string, string>> {
  const now = deps.now ?? Date.now;
  // Split Aurora DSQL records completed by this batch join its changes (dsql-parts.ts).
  const batch = await withSplitRecords(records, decoded, deps, tally, now());
  const keyIdOf = (e: ChangeEvent) => deps.normalizer.keyIdOf(e);
  const fullTxPlan = deps.txWriter ? planBatchTransactions(batch, deps.config, keyIdOf) : EMPTY_TX_PLAN;
  const fullPlan = planBatch(batch.changes, keyIdOf, batch.identity, fullTxPlan.cuts);
  countPlan(fullPlan, tally, deps.log, deps.keyRef ?? noKeyRef);
  // Suspended tables and tables in error: landed above, not applied (lifecycle.ts).
  const held = heldTables(statusRows);
  const { plan, txPlan } = withoutHeld(fullPlan, fullTxPlan, held, tally);
  const apply = { ...applyDeps(deps, now, limiter), retry };
  const watermarks = await applyTruncates(plan, statusRows, apply, tally, batch);
  for (const [table, wm] of watermarks) deps.statusCache.noteTruncate(table, wm, now());
  const settled = deps.txWriter ? await applyTransactionUnits(plan, txPlan, watermarks, { ...deps, txWriter: deps.txWriter, concurrency: deps.config.apply.concurrency }, tally) : undefined;
  await applyWrites(plan, watermarks, apply, tally, batch, settled);
  await deps.schema?.track(batch, tally);
  judgeFailures(tally, statusRows, held, now(), { budget: deps.config.ingest.errorBudget, log: deps.log });
  return watermarks;
}

/** The shard's applied commit time after the batch (or that it is failing); a failure here only logs: freshness is a report, not a step. */
async function recordFrontier(records: readonly RawRecord[], ok: boolean, commitTs: number | undefined, deps: IngestDeps, now: number): Promise<void> {
  const first = records[0];
  if (!deps.frontier || !first) return;
  try {
    await deps.frontier.record(first.transport.stream, first.transport.shard, { ok, ...(commitTs !== undefined ? { commitTs } : {}) }, now);
  } catch (err) {
    deps.log.warn('shard frontier not recorded; freshness shows the previous batch', { shard: first.transport.shard, error: errorMessage(err) });
  }
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
  const flattened = (row: StatusRow | undefined) => row?.carriesFlattened === true || (typeof row?.format === 'string' && row.format.split('+').includes(FLATTENED_FORMAT));
  const unknown = [...open].filter((t) => !flattened(deps.statusCache.peek(t)));
  for (const t of open) if (!unknown.includes(t)) deps.normalizer.noteFlattened(t);
  if (unknown.length === 0) return;
  // The one strongly consistent status read left: a tombstone's meaning must not rest on an old copy.
  const rows = await deps.status.load(unknown, { consistent: true });
  const at = (deps.now ?? Date.now)();
  for (const t of unknown) {
    const row = rows.get(t);
    deps.statusCache.put(t, row, at, deps.config.name);
    if (flattened(row)) deps.normalizer.noteFlattened(t);
  }
}

/** The status rows of the batch's tables: the container's copies, the ones older than the bound read again (eventually consistent). */
async function statusOf(tables: readonly string[], deps: IngestDeps, now: () => number): Promise<Map<string, StatusRow>> {
  const at = now();
  const { rows, stale } = deps.statusCache.view(tables, at);
  if (stale.length === 0) return rows;
  const read = await deps.status.load(stale);
  for (const t of stale) {
    const row = read.get(t);
    deps.statusCache.put(t, row, at, deps.config.name);
    if (row) rows.set(t, row);
  }
  return rows;
}

const tablesOf = (config: TidemarkConfig) => new Map<string, TableConfig>(config.tables.map((t) => [t.source, t]));

function applyDeps(deps: IngestDeps, now: () => number, limiter: Limiter) {
  return { ...deps, tables: tablesOf(deps.config), limiter, preRead: 'auto' as const, now, keyRef: deps.keyRef ?? noKeyRef };
}
