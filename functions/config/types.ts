/**
 * The resolved pipeline config, as the runtime reads it: every field present, every default and
 * derived name filled. Written out here by hand, with no validation library, so that the Lambda
 * code depends on a plain TypeScript shape; the zod schema that validates `tidemark.config.json`
 * and resolves it (lib/config/config.ts) is checked at compile time to produce exactly this type.
 * What each field means and its default are documented on the schema.
 *
 *   const config: TidemarkConfig = loadRuntimeConfig();   // functions/config/runtime.ts
 *   config.tables[0].key            // ['order_id']
 *   config.statusTable              // 'shop-status' (derived from the name)
 */
import type { FormatName } from '../core/formats/names.js';
import { TOMBSTONE_SETTINGS, type TombstoneSetting } from '../core/formats/kafka-tombstones.js';
import { KEY_TYPES, type KeyType } from '../core/keys.js';

export { KEY_TYPES, type KeyType };

/** `auto` or one format name. */
export type FormatSetting = 'auto' | FormatName;

/** What a Kafka tombstone (a record with a key and a null value) means for a table: `ignore`, `delete` or `auto`. */
export const KAFKA_TOMBSTONES = TOMBSTONE_SETTINGS;
export type KafkaTombstones = TombstoneSetting;

/** Default `ingest.batchSize` (the event source mapping's `BatchSize`). */
export const DEFAULT_BATCH_SIZE = 3000;
/** Default `ingest.maxBatchingWindowSeconds` (`MaximumBatchingWindowInSeconds`). */
export const DEFAULT_BATCHING_WINDOW_SECONDS = 3;

export interface TableConfig {
  source: string;
  target: string;
  key: string[];
  keyTypes: Record<string, KeyType>;
  tombstoneTtlDays: number;
  /** Resolved: the table's own setting, else the pipeline's. */
  kafkaTombstones: KafkaTombstones;
}

export interface KinesisSourceConfig {
  type: 'kinesis';
  streamName: string;
  create: boolean;
  shardCount: number;
  retentionHours: number;
}

export interface MskSourceConfig {
  type: 'msk';
  clusterArn: string;
  /** Every topic read, one event source mapping each. */
  topics: string[];
  /** Set when the topics were derived from Debezium's `topic.prefix`. */
  topicPrefix?: string | undefined;
  consumerGroupId: string;
  retentionHours: number;
}

export type SourceConfig = KinesisSourceConfig | MskSourceConfig;

export interface RawConfig {
  bucket: string;
  prefix: string;
  quarantinePrefix: string;
  infrequentAccessAfterDays: number;
  quarantineRetentionDays: number;
}

export interface ApplyConfig {
  concurrency: number;
  maxInFlight: number;
  maxColumns: number;
  maxRetries: number;
  maxItemBytes: number;
}

/** Transactions applied whole (docs/writes.md); no group means none. */
export interface TransactionsConfig {
  groups: { name: string; tables: string[] }[];
  maxItems: number;
  maxBytes: number;
}

export interface IngestConfig {
  batchSize: number;
  maxBatchingWindowSeconds: number;
  parallelizationFactor: number;
  retryAttempts: number;
  maxRecordAgeSeconds: number;
  memoryMb: number;
  timeoutSeconds: number;
  reservedConcurrency?: number | undefined;
  tracing: boolean;
  statusMaxAgeSeconds: number;
  /** How long one table's write failures may go on before it stops in error (functions/core/lifecycle.ts). */
  errorBudget: { attempts: number; hours: number };
}

export interface AlarmsConfig {
  iteratorAgeMs: number;
  offsetLag: number;
  freshnessLagMs: number;
  freshnessBehindMs: number;
  quarantined: number;
  conflicts: number;
  staleRate: number;
  silenceMinutes: number;
  failedPeriods: number;
  durationShare: number;
  schemaDrift: 'off' | 'incompatible' | 'any';
}

export interface EraseConfig {
  /** `env:<VARIABLE>` or `secretsmanager:<secret id or ARN>`. */
  ledgerKeySecret: string;
  keepTombstone: boolean;
}

export interface ReplayConfig {
  maxConcurrency: number;
  toleratedFailurePercentage: number;
  objectsPerBatch: number;
  jobsPrefix: string;
  jobsRetentionDays: number;
  onFailurePrefix: string;
  onFailureBucket?: string | undefined;
  erase: EraseConfig;
}

export interface ScheduleConfig {
  schedule: string;
  enabled: boolean;
}

export interface AnomalyThresholds {
  historyHours: number;
  recentHours: number;
  minEvents: number;
  deleteShare: number;
  beforeNullRateJump: number;
  placeholderRateJump: number;
  quarantineRateJump: number;
  updateStormFactor: number;
  silentMinHourlyEvents: number;
  silentHours: number;
}

export interface JobsConfig {
  reportPrefix: string;
  reportRetentionDays: number;
  reconcile: {
    window: ScheduleConfig & { hours: number };
    full: ScheduleConfig;
    partitions: number;
    scanSegments: number;
    cutoffSeconds: number;
    maxKeysInMemory: number;
  };
  snapshot: ScheduleConfig & { anomalies: AnomalyThresholds };
}

export interface HistoryConfig {
  prefix: string;
  database?: string | undefined;
  rawGraceDays: number;
  compaction: ScheduleConfig & { maxHoursPerRun: number; lateScanHours?: number | undefined };
  /** OPTIMIZE and VACUUM of the Iceberg tables; `snapshotRetentionDays` bounds VACUUM (lib/config/history.ts). */
  maintenance: ScheduleConfig & { snapshotRetentionDays: number };
  replayBuckets: number;
  workGroup?: string | undefined;
  /** Per-query bytes-scanned cutoff of the workgroup tidemark creates, in MB (lib/config/history.ts). */
  bytesScannedCutoffMb?: number | undefined;
}

/** The Glue database of the history tables: `history.database`, else `tidemark_<name with - as _>`. */
export const historyDatabase = (config: Pick<TidemarkConfig, 'name' | 'history'>): string => config.history.database ?? `tidemark_${config.name.replace(/-/g, '_')}`;

/** The Athena workgroup the jobs' queries run in: `history.workGroup`, else `<name>-jobs`. */
export const historyWorkGroup = (config: Pick<TidemarkConfig, 'name' | 'history'>): string => config.history.workGroup ?? `${config.name}-jobs`;

export interface TidemarkConfig {
  name: string;
  format: FormatSetting;
  /** Resolved: `delete` when `format` is `debezium-flattened`, `auto` when it is `auto`, else `ignore`, unless set. */
  kafkaTombstones: KafkaTombstones;
  tables: TableConfig[];
  raw: RawConfig;
  statusTable: string;
  placeholder: string;
  dms: { beforeImageField: string };
  /** Aurora DSQL CDC: how long the parts of a split record wait for each other (docs/formats.md). */
  auroraDsql: { fragmentWaitSeconds: number };
  apply: ApplyConfig;
  transactions: TransactionsConfig;
  source: SourceConfig;
  ingest: IngestConfig;
  alarms: AlarmsConfig;
  encryption: 'aws-managed' | 'kms';
  logRetentionDays: number;
  replay: ReplayConfig;
  jobs: JobsConfig;
  history: HistoryConfig;
}

/** The configured table of a source table name, if any. */
export function tableBySource(config: Pick<TidemarkConfig, 'tables'>, source: string): TableConfig | undefined {
  return config.tables.find((t) => t.source === source);
}

/**
 * The Secrets Manager secret the deployed stack generates the erase ledger key in when
 * `replay.erase.ledgerKeySecret` is `env:<VARIABLE>` (the default). An operator running
 * `tidemark erase` or `replay` locally against that stack exports it:
 *
 *   export TIDEMARK_ERASE_KEY="$(aws secretsmanager get-secret-value \
 *     --secret-id tidemark/shop/erase-ledger-key --query SecretString --output text)"
 */
export function ledgerKeySecretName(pipelineName: string): string {
  return `tidemark/${pipelineName}/erase-ledger-key`;
}

/**
 * The reserved name prefix of the tables `replay --into fresh:<table>` may create: `<pipeline>-fresh-`.
 * The replay role may create, fill and scan only tables under it (lib/replay/jobs.ts), and the
 * target parser refuses any other name (functions/replay/safety.ts).
 *
 *   freshTablePrefix('shop') === 'shop-fresh-'   // fresh:shop-fresh-orders is accepted, fresh:shop-payments is not
 */
export function freshTablePrefix(pipelineName: string): string {
  return `${pipelineName}-fresh-`;
}
