/**
 * The telemetry contract: every count tidemark keeps, named once.
 *
 * One row per counter gives its status-row attribute (the key), its CloudWatch metric name and its
 * unit; `COUNTER_DESCRIPTIONS`, right below it and checked to cover every counter, says what each
 * means (a separate constant so that the Lambda bundle, which never reads them, leaves the
 * descriptions out). Everything else is derived from this table: the status rows
 * (`adapters/status-store.ts`), the batch summary and EMF emission (`ingest/`), the CDK metric
 * factory, alarms and dashboard (`lib/metrics.ts`, `lib/monitoring.ts`), the `tidemark status`
 * columns (`bin/cli/state.ts`) and the metrics list in `docs/operations.md`. Adding a counter is
 * one row here and its description (the type check asks for it);
 * `test/unit/functions/telemetry/contract.test.ts` fails if the dashboard or alarms do not read it.
 *
 * Example: `COUNTERS.applied` → status attribute `applied`, metric `EventsApplied` (Count).
 *
 * This module is pure (no SDK, no CDK), so the Lambda, the CDK app and the CLI all import it.
 */

/** CloudWatch namespace of every tidemark metric (Powertools `POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = 'Tidemark';

/** Powertools service name of the ingest runtime: the `service` dimension of every metric. */
export const SERVICE_NAME = 'tidemark-ingest';

/** The status row and `table` dimension of records whose source table is unknown or not configured. */
export const UNKNOWN_TABLE = '*';

/** The TTL attribute of every tidemark table (tombstones, closed hour rows of the status table). */
export const EXPIRES_AT_ATTRIBUTE = '__expiresAt';

/** Metric dimensions: per table, and the pipeline-level roll-up that alarms read (any table count). */
export const DIMENSIONS = { service: 'service', pipeline: 'pipeline', table: 'table' } as const;

export type CounterUnit = 'Count' | 'Bytes';

/** The dashboard graph a counter is drawn on (pipeline-level, one line per counter). */
export type Panel = 'outcomes' | 'ops' | 'rows' | 'cost';

export interface CounterSpec {
  /** CloudWatch metric name. */
  readonly metric: string;
  readonly unit: CounterUnit;
  /**
   * One of the outcomes of the accounting identity: every received record (or row of a multi-row
   * message) ends as exactly one of these, in every batch and every status row.
   */
  readonly outcome: boolean;
  /** Shown as a `tidemark status` column. */
  readonly column: boolean;
  readonly panel: Panel;
}

const count = (metric: string, panel: Panel, flags: { outcome?: boolean; column?: boolean } = {}): CounterSpec => ({
  metric,
  unit: 'Count',
  outcome: flags.outcome ?? false,
  column: flags.column ?? false,
  panel,
});
const outcome = (metric: string): CounterSpec => count(metric, 'outcomes', { outcome: true, column: true });

/** Every counter: status attribute → metric. Order is the order of status columns and docs. */
export const COUNTERS = {
  received: count('EventsReceived', 'outcomes', { column: true }),
  applied: outcome('EventsApplied'),
  stale: outcome('EventsStale'),
  duplicates: outcome('Duplicates'),
  conflicts: outcome('Conflicts'),
  superseded: outcome('EventsSuperseded'),
  quarantined: outcome('Quarantined'),
  controls: outcome('ControlEvents'),
  truncates: outcome('TruncatesApplied'),
  failed: outcome('EventsFailed'),
  held: outcome('EventsHeld'),
  enteredError: count('TablesEnteredError', 'outcomes'),
  placeholders: count('Placeholders', 'rows', { column: true }),
  missingColumns: count('MissingColumns', 'rows'),
  spilled: count('Spilled', 'rows'),
  opC: count('EventsInsert', 'ops'),
  opU: count('EventsUpdate', 'ops'),
  opD: count('EventsDelete', 'ops'),
  opR: count('EventsSnapshotRead', 'ops'),
  opT: count('EventsTruncate', 'ops'),
  snapshotEvents: count('SnapshotEvents', 'ops'),
  beforeNullUpdates: count('BeforeImageNullUpdates', 'ops'),
  resnapshots: count('Resnapshots', 'ops'),
  truncatedRows: count('TruncatedRows', 'rows'),
  writeUnits: count('WriteUnits', 'cost'),
  readUnits: count('ReadUnits', 'cost'),
  preReadSkipped: count('PreReadSkips', 'cost'),
  rawBytes: { metric: 'RawBytes', unit: 'Bytes', outcome: false, column: false, panel: 'cost' },
  txWhole: count('TransactionsWhole', 'ops'),
  txIncomplete: count('TransactionsIncomplete', 'ops'),
  txTooLarge: count('TransactionsTooLarge', 'ops'),
  txUnordered: count('TransactionsUnordered', 'ops'),
  txRefused: count('TransactionsRefused', 'ops'),
  schemaChanges: count('SchemaChanges', 'rows'),
  schemaIncompatible: count('SchemaIncompatibleChanges', 'rows'),
} as const satisfies Record<string, CounterSpec>;

export type Counter = keyof typeof COUNTERS;

/** What each counter means, as docs/operations.md's table says it: exactly one entry per counter. */
export const COUNTER_DESCRIPTIONS = {
  received: 'records received, one per row of a multi-row message; equals the sum of the outcomes',
  applied: 'written to current state',
  stale: 'rejected by the position guard: the stored row is newer (or a truncate is)',
  duplicates: 'the same position and content again (redelivery)',
  conflicts: 'the same position with different content: not applied',
  superseded: 'collapsed inside a batch by a newer event of the same key or a truncate',
  quarantined: 'sent to the quarantine prefix with a reason (counted under its table when known)',
  controls: 'control messages: transaction markers, heartbeats, resolved timestamps, schema changes, Kafka tombstones',
  truncates: 'truncate events that raised the table watermark',
  failed: 'not applied because a write, truncate or raw landing failed; the batch is retried from the lowest such record',
  held: 'landed in raw but not applied because the table is suspended or in error; `tidemark resume` applies them from raw',
  enteredError: 'a table stopped in error: its write failures outlasted ingest.errorBudget, or no retry could fix them',
  placeholders: 'events carrying unchanged-value placeholders or patches',
  missingColumns: 'writes that left columns unknown (no stored row to take them from)',
  spilled: 'rows over the item size limit spilled to S3',
  opC: 'insert events',
  opU: 'update events',
  opD: 'delete events',
  opR: 'snapshot read events',
  opT: 'truncate events',
  snapshotEvents: 'snapshot (bootstrap) reads',
  beforeNullUpdates: 'updates delivered without a before image',
  resnapshots: 'batches with snapshot reads after streaming had begun: the connector re-snapshotted',
  truncatedRows: 'rows removed by truncate sweeps',
  writeUnits: 'DynamoDB write capacity units consumed by row writes',
  readUnits: 'DynamoDB read capacity units spent reading stored positions before writing (redelivered or replayed windows)',
  preReadSkipped: 'writes never sent because a pre-read showed the stored row already at or past them',
  rawBytes: 'compressed bytes landed in raw',
  txWhole: 'source transactions of a transaction group applied whole: one TransactWriteItems, or one write for a one-row transaction (counted under the table of their first event)',
  txIncomplete: 'transactions of a group applied per key because the batch did not hold all of them: END not in the batch or never seen, or events missing',
  txTooLarge: 'transactions of a group applied per key because they hold more rows than transactions.maxItems, more bytes than transactions.maxBytes, or a spilled row',
  txUnordered: "transactions of a group applied per key because their events interleave on a row with another transaction's",
  txRefused: 'transactions of a group applied per key because DynamoDB refused the TransactWriteItems',
  schemaChanges: 'columns added, removed or changing type, counted once when first recorded (tidemark status --schema)',
  schemaIncompatible: 'of those, changes the target cannot hold as before (a number column carrying text, a column back with another type, a decimal over 38 digits as text): named, never coerced',
} as const satisfies Readonly<Record<Counter, string>>;

export type CounterValues = Record<Counter, number>;
export type CounterMetricName = (typeof COUNTERS)[Counter]['metric'];

export const COUNTER_NAMES = Object.keys(COUNTERS) as Counter[];

/** The outcomes of the accounting identity: `received = Σ OUTCOMES`. */
export const OUTCOMES: readonly Counter[] = COUNTER_NAMES.filter((c) => COUNTERS[c].outcome);

/** Distributions: one sample per applied key, so percentiles work. */
export const DISTRIBUTIONS = {
  freshnessLag: { metric: 'FreshnessLagMs', unit: 'Milliseconds' },
  frontierAge: { metric: 'FrontierAgeMs', unit: 'Milliseconds' },
} as const;

export type DistributionName = keyof typeof DISTRIBUTIONS;

/** What each distribution means: exactly one entry per distribution. */
export const DISTRIBUTION_DESCRIPTIONS = {
  freshnessLag: 'source commit to apply, per applied key',
  frontierAge: "how far behind the source a batch left its tables: apply time less the newest commit (or heartbeat, or resolved timestamp) of a batch that applied in full, per table of the batch",
} as const satisfies Readonly<Record<DistributionName, string>>;
export type DistributionMetricName = (typeof DISTRIBUTIONS)[DistributionName]['metric'];

/**
 * Pipeline-health metrics: counts about the pipeline itself, not kept in any status row (a status
 * row cannot count its own failed updates). Emitted under the table they concern, like the others.
 */
export const HEALTH = {
  statusUpdatesFailed: { metric: 'StatusUpdatesFailed', unit: 'Count' },
} as const;

export type HealthName = keyof typeof HEALTH;

/** What each health metric means: exactly one entry per metric. */
export const HEALTH_DESCRIPTIONS = {
  statusUpdatesFailed: "status-row updates that still failed after the retries the invocation's time allowed: that batch's counters are missing from the row (the metrics above still have them)",
} as const satisfies Readonly<Record<HealthName, string>>;
export type HealthMetricName = (typeof HEALTH)[HealthName]['metric'];

/** Every metric the runtime emits. */
export type MetricName = CounterMetricName | DistributionMetricName | HealthMetricName;
export const METRIC_NAMES: readonly MetricName[] = [
  ...COUNTER_NAMES.map((c) => COUNTERS[c].metric),
  ...Object.values(DISTRIBUTIONS).map((d) => d.metric),
  ...Object.values(HEALTH).map((h) => h.metric),
];

export const zeroCounters = (): CounterValues => Object.fromEntries(COUNTER_NAMES.map((c) => [c, 0])) as CounterValues;

/**
 * How far a set of counters is from the identity: `received − Σ outcomes`, 0 when every record
 * was counted exactly once. Works on batch summaries and on status rows (missing counters are 0).
 */
export function identityGap(counters: Partial<Record<Counter, unknown>>): number {
  const n = (c: Counter) => {
    const v = Number(counters[c] ?? 0);
    return Number.isFinite(v) ? v : 0;
  };
  return n('received') - OUTCOMES.reduce((sum, c) => sum + n(c), 0);
}

/** How `tidemark status` names a table's schema row among the status rows: `schema#<source table>` (status-layout.ts `SCHEMA_ROW`). */
export const SCHEMA_ROW_PREFIX = 'schema#';
