/**
 * The one pipeline configuration, `tidemark.config.json`, read by the CDK app and the CLI, and
 * resolved here once: every default and every derived name (`<name>-status`, `<name>-cdc`, the
 * consumer group, the record age below retention, the Kafka tombstone treatment per table) is
 * filled in this file and nowhere else, so the constructs, the runtime and the CLI read a complete
 * `TidemarkConfig` and never fall back on their own.
 *
 * Every object is strict: an unknown field is an error with a hint (`keytypes` → "did you mean
 * keyTypes?"), because a silently dropped typo changes behaviour (string keys instead of numbers).
 * All problems are reported together, each with its path: `tables[1].key: must not be empty`.
 *
 * The Lambda does not import this module (zod stays out of its bundle): it reads the resolved
 * config that the CDK app ships in its asset, through `functions/config/runtime.ts`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BATCHING_WINDOW_SECONDS,
  type FormatSetting,
  KAFKA_TOMBSTONES,
  KEY_TYPES,
  type KafkaTombstones,
  type TidemarkConfig,
  tableBySource,
} from '../../functions/config/types.js';
import { ON_FAILURE_PREFIX } from '../../functions/adapters/raw-layout.js';
import { FORMAT_NAMES } from '../../functions/core/formats/names.js';
import { ConfigError, errorMessage } from '../../functions/core/errors.js';
import { ReplayConfigSchema } from './replay.js';
import { JobsConfigSchema } from './jobs.js';
import { HistoryConfigSchema } from './history.js';

const RESERVED_PREFIX = '__';
const FORMATS = ['auto', ...FORMAT_NAMES] as const satisfies readonly FormatSetting[];

/** Lambda accepts a maximum record age of at most 7 days. */
const MAX_RECORD_AGE_LIMIT_SECONDS = 604_800;
/** Kafka's default `log.retention.hours`, assumed for an MSK topic unless told otherwise. */
const KAFKA_DEFAULT_RETENTION_HOURS = 168;

// ---------------------------------------------------------------------------------------------
// Strict objects with a "did you mean" hint

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}

/** The known field closest to `field` (case-insensitive match, or at most 2 edits away), if any. */
export function closestField(field: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.toLowerCase() === field.toLowerCase() ? 0 : editDistance(field, name);
    if (distance <= Math.min(2, Math.floor(name.length / 2)) && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

function unknownFieldMessage(keys: readonly string[], known: readonly string[]): string {
  return keys
    .map((key) => {
      const hint = closestField(key, known);
      return hint ? `unknown field "${key}" (did you mean "${hint}"?)` : `unknown field "${key}" (known fields: ${known.join(', ')})`;
    })
    .join('; ');
}

/** `z.strictObject` whose unknown-field error names the closest known field. */
function strict<T extends z.core.$ZodLooseShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFieldMessage(issue.keys, known) : undefined),
  });
}

// ---------------------------------------------------------------------------------------------
// Names

/**
 * Every S3 general purpose bucket naming rule, as listed in the S3 user guide ("General purpose
 * bucket naming rules"). Returns the broken rules; empty when the name is valid.
 */
export function bucketNameProblems(name: string): string[] {
  const problems: string[] = [];
  if (name.length < 3 || name.length > 63) problems.push('must be 3-63 characters long');
  if (!/^[a-z0-9.-]*$/.test(name)) problems.push('may hold only lowercase letters, digits, "." and "-"');
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name)) problems.push('must begin and end with a letter or digit');
  if (name.includes('..')) problems.push('must not contain two adjacent periods');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) problems.push('must not be formatted as an IP address');
  for (const prefix of ['xn--', 'sthree-', 'amzn-s3-demo-']) {
    if (name.startsWith(prefix)) problems.push(`must not start with the reserved prefix "${prefix}"`);
  }
  for (const suffix of ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3']) {
    if (name.endsWith(suffix)) problems.push(`must not end with the reserved suffix "${suffix}"`);
  }
  return problems;
}

const identifier = z.string().min(1, 'must not be empty');
const dynamoTableName = z.string().regex(/^[a-zA-Z0-9_.-]{3,255}$/, 'must be 3-255 characters of a-z, A-Z, 0-9, _, - and .');
const bucketName = z.string().superRefine((name, ctx) => {
  for (const problem of bucketNameProblems(name)) ctx.addIssue({ code: 'custom', message: `S3 bucket name ${problem}` });
});
/** Kafka topic names: 1-249 of `[a-zA-Z0-9._-]`, and not `.` or `..`. */
const kafkaTopic = z
  .string()
  .regex(/^[a-zA-Z0-9._-]{1,249}$/, 'must be a Kafka topic name (1-249 characters of a-z, A-Z, 0-9, ., _ and -)')
  .refine((t) => t !== '.' && t !== '..', 'must not be "." or ".."');
/** Consumer group ids Lambda accepts (`AmazonManagedKafkaEventSourceConfig.ConsumerGroupId`). */
const CONSUMER_GROUP = /^[a-zA-Z0-9\-/*:_+=.@]{1,200}$/;
/** `arn:<partition>:kafka:<region>:<account>:cluster/<name>/<uuid>`. */
export const MSK_CLUSTER_ARN = /^arn:(aws[a-zA-Z-]*):kafka:([a-z0-9-]+):(\d{12}):cluster\/([^/]+)\/([^/]+)$/;

// ---------------------------------------------------------------------------------------------
// Schema (input) — only fields a user writes; derived values are filled by `resolve` below.

const KeyType = z.enum(KEY_TYPES);

const TableInput = strict({
  /** Source table as the decoders name it, e.g. `public.orders` (Debezium: `<schema>.<table>`). */
  source: identifier,
  /** DynamoDB table holding current state. */
  target: dynamoTableName,
  /** Source primary-key columns, in order. */
  key: z.array(identifier).min(1, 'must not be empty'),
  /** DynamoDB attribute type of each key column. @default "string" for every column */
  keyTypes: z.record(z.string(), KeyType).prefault({}),
  /** How long tombstones are kept. @default 7 */
  tombstoneTtlDays: z.number().positive().max(3650).default(7),
  /** Overrides the pipeline's `kafkaTombstones` for this table. @default the pipeline's setting */
  kafkaTombstones: z.enum(KAFKA_TOMBSTONES).optional(),
});

const KinesisInput = strict({
  type: z.literal('kinesis'),
  /** Stream name. With `create: false` it must exist. @default "<name>-cdc" */
  streamName: z.string().regex(/^[a-zA-Z0-9_.-]{1,128}$/, 'must be a valid Kinesis stream name').optional(),
  /** Create the stream in the stack. @default true */
  create: z.boolean().default(true),
  /** Provisioned shard count; 0 means on-demand. @default 0 */
  shardCount: z.number().int().min(0).max(500).default(0),
  /** Retention in hours. @default 24 */
  retentionHours: z.number().int().min(24).max(8760).default(24),
});

const MskInput = strict({
  type: z.literal('msk'),
  clusterArn: z.string().regex(MSK_CLUSTER_ARN, 'must be an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>)'),
  /** One topic carrying every table. Give exactly one of `topic`, `topics` or `topicPrefix`. */
  topic: kafkaTopic.optional(),
  /** The topics to read; one event source mapping each. */
  topics: z.array(kafkaTopic).min(1, 'must not be empty').optional(),
  /** Debezium's `topic.prefix`: reads `<topicPrefix>.<source>` for every configured table. */
  topicPrefix: kafkaTopic.optional(),
  /** Consumer group id; each topic's mapping joins `<consumerGroupId>.<topic>`. @default "<name>-ingest" */
  consumerGroupId: z.string().regex(CONSUMER_GROUP, 'must be 1-200 characters of a-z, A-Z, 0-9 and -/*:_+=.@').optional(),
  /** The topics' retention (`retention.ms`) in hours, to keep the record age below it. @default 168 */
  retentionHours: z.number().int().min(1).max(87_600).default(KAFKA_DEFAULT_RETENTION_HOURS),
});

const RawInput = strict({
  bucket: bucketName,
  /** @default "raw/" */
  prefix: z.string().default('raw/'),
  /** @default "quarantine/" */
  quarantinePrefix: z.string().default('quarantine/'),
  /** Days before raw objects move to infrequent access. @default 30 */
  infrequentAccessAfterDays: z.number().int().positive().default(30),
  /** Days quarantine objects are kept. @default 90 */
  quarantineRetentionDays: z.number().int().positive().default(90),
});

const ApplyInput = strict({
  /** Concurrent DynamoDB writes of one replay batch. @default 16 */
  concurrency: z.number().int().min(1).max(256).default(16),
  /**
   * DynamoDB requests the ingest keeps in flight per batch, over all of its tables together: guarded
   * writes, pre-reads of stored positions and status-row updates. Latency is hidden once this is
   * above the latency per request divided by the CPU per request (5 ms ÷ about 0.3 ms ≈ 17); the
   * default stays under the 50 sockets the SDK's HTTP handler opens per client, so no request
   * waits for a socket. @default 48
   */
  maxInFlight: z.number().int().min(1).max(1024).default(48),
  /**
   * Columns a row image or patch may carry; a change with more is quarantined (`too-many-columns`)
   * instead of costing the shard its time. PostgreSQL allows 1,600 columns, MySQL 4,096, SQL Server
   * 1,024 (30,000 in a wide table). @default 5000
   */
  maxColumns: z.number().int().min(1).max(1_000_000).default(5000),
  /** Retries on throttling and 5xx before the record is reported failed. @default 6 */
  maxRetries: z.number().int().min(0).max(20).default(6),
  /** Rows above this many bytes are spilled to S3. @default 350000 */
  maxItemBytes: z.number().int().min(1000).max(400_000).default(350_000),
});

/**
 * Transactions applied whole (docs/writes.md): the source transactions of a group's tables that a
 * batch holds complete are applied as one DynamoDB TransactWriteItems (2 write units per KB per row
 * instead of 1), so no reader sees half of one. Opt-in: no group, no transactional writes.
 */
const TransactionsInput = strict({
  /** Named groups of configured tables; a transaction's rows in one group are applied together. @default [] */
  groups: z.array(strict({ name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 characters of A-Z, a-z, 0-9, _, - and .'), tables: z.array(identifier).min(1, 'must list at least one table') })).default([]),
  /** Rows of one TransactWriteItems at most; a larger transaction is applied per key (counted). DynamoDB allows 100. @default 100 */
  maxItems: z.number().int().min(2).max(100).default(100),
  /** Bytes of one TransactWriteItems at most (as tidemark estimates item sizes); DynamoDB allows 4 MB. @default 4000000 */
  maxBytes: z.number().int().min(1024).max(4 * 1024 * 1024).default(4_000_000),
});

const IngestInput = strict({
  /**
   * Records per invocation at most (the mapping's `BatchSize`). Writes per event fall with the batch:
   * one write per distinct key per batch (on the bench's Zipf 1.1 workload over 2,000 keys: 0.39 per
   * event at 500, 0.32 at 1,000, 0.21 at 3,000). 3,000 is what a shard at its 1,000 records/s write
   * limit delivers in the 3 s window, and 3,000 records of the largest average size such a shard
   * carries (1 MB/s ÷ 1,000 = 1,048 B) make a 5.9 MB event, under Lambda's 6 MB payload limit.
   * Larger records are not a problem: the mapping (and `tidemark run`) invokes before the next record
   * would take the event past 6 MB, so the batch is just smaller. @default 3000
   */
  batchSize: z.number().int().min(1).max(10_000).default(DEFAULT_BATCH_SIZE),
  /**
   * Longest wait for a batch to fill (the mapping's MaximumBatchingWindowInSeconds; `tidemark run`
   * honours it too), counted from the batch's first record. A batch that fills sooner goes at once,
   * so a shard at 1,000 records/s waits about 3 s for its 3,000 records; a slower shard waits the
   * full window: at 300 records/s, batches of about 900 records (0.33 writes per event on the bench
   * workload, where 1 s would give 300 records and 0.45). The cost is lag: records wait up to this
   * long before they are applied (about half of it on average). Set 0 to invoke as soon as records
   * are read, at the price of more writes and invocations per event. @default 3
   */
  maxBatchingWindowSeconds: z.number().min(0).max(300).default(DEFAULT_BATCHING_WINDOW_SECONDS),
  /** Kinesis only. @default 1 */
  parallelizationFactor: z.number().int().min(1).max(10).default(1),
  /** Retries of a failing batch before it goes to the on-failure destination. @default 5 */
  retryAttempts: z.number().int().min(0).max(10_000).default(5),
  /** Records older than this go to the on-failure destination; at most half the source's retention. @default half the retention, at most 7 days */
  maxRecordAgeSeconds: z.number().int().min(60).max(MAX_RECORD_AGE_LIMIT_SECONDS).optional(),
  /** @default 1024 */
  memoryMb: z.number().int().min(128).max(10_240).default(1024),
  /** @default 120 */
  timeoutSeconds: z.number().int().min(3).max(900).default(120),
  /** Reserved concurrency of the ingest function. @default - none (unreserved) */
  reservedConcurrency: z.number().int().min(1).max(10_000).optional(),
  /** X-Ray active tracing of the ingest function. @default true */
  tracing: z.boolean().default(true),
  /**
   * How old a container's copy of a table's status row may be before a batch reads the row again
   * (each batch's status write refreshes it, so a busy table is never read). Suspending or resuming
   * a table takes effect within this time. @default 30
   */
  statusMaxAgeSeconds: z.number().int().min(0).max(3600).default(30),
  /**
   * When one table's writes keep failing (throttled past every retry, a server error), the table
   * stops in `error` once its failures have gone on for at least `attempts` failing batches over at
   * least `hours`, Firebolt's retry budget; its records then land but are not applied, so its
   * shards move on. A failure no retry fixes (missing target table, access denied) stops it at once.
   * `tidemark resume` applies what it held from raw. Until then its failing batches are retried by
   * the mapping (`retryAttempts`) and may go to the on-failure destination, as today; raw holds them
   * either way. @default { attempts: 10, hours: 4 }
   */
  errorBudget: strict({
    attempts: z.number().int().min(1).max(1_000_000).default(10),
    hours: z.number().min(0).max(24 * 365).default(4),
  }).prefault({}),
});

const AlarmsInput = strict({
  /** @default 300000 */
  iteratorAgeMs: z.number().positive().default(300_000),
  /** Records behind the latest offset of any Kafka partition (MSK). @default 100000 */
  offsetLag: z.number().positive().default(100_000),
  /** p99 commit-to-apply lag. @default 600000 */
  freshnessLagMs: z.number().positive().default(600_000),
  /** How far behind the source a table may fall (a batch's newest commit, heartbeat or resolved timestamp, to its apply) before `FreshnessBehind` alarms. @default 900000 */
  freshnessBehindMs: z.number().positive().default(900_000),
  /** Quarantined records per 5 minutes. @default 1 */
  quarantined: z.number().min(0).default(1),
  /** @default 1 */
  conflicts: z.number().min(0).default(1),
  /** Stale writes as a share of writes. @default 0.5 */
  staleRate: z.number().min(0).max(1).default(0.5),
  /** Minutes without any received record (heartbeats count) before the pipeline is called stalled; 0 turns the alarm off. @default 60 */
  silenceMinutes: z.number().int().min(0).max(1440).default(60),
  /** Consecutive 5-minute periods with failed records (retried) before alarming. @default 3 */
  failedPeriods: z.number().int().min(1).max(288).default(3),
  /** p99 invocation duration as a share of the function timeout. @default 0.8 */
  durationShare: z.number().positive().max(1).default(0.8),
  /**
   * Schema drift (`tidemark status --schema`): `incompatible` alarms when a column starts carrying a
   * type the target cannot hold as before (a number column carrying text), `any` on every addition,
   * removal or type change, `off` never. @default "off"
   */
  schemaDrift: z.enum(['off', 'incompatible', 'any']).default('off'),
});

const ConfigInputSchema = strict({
  /** Pipeline name; prefixes resource names and keys the status rows. */
  name: z.string().regex(/^[a-z][a-z0-9-]{1,40}$/, 'must be 2-41 characters: lowercase letters, digits and -'),
  /** Wire format of the messages, or `auto` to detect per message. @default "auto" */
  format: z.enum(FORMATS).default('auto'),
  /**
   * What a Kafka tombstone (key, null value) means: `delete` the key, `ignore` it, or `auto`: a
   * delete once the table is known to carry Debezium flattened records (seen by the container, or
   * recorded in the table's status row), ignored before (a `kafka-tombstone` control in raw).
   * @default "delete" when `format` is `debezium-flattened` (deletes arrive only as tombstones), "auto" when it is "auto", else "ignore"
   */
  kafkaTombstones: z.enum(KAFKA_TOMBSTONES).optional(),
  tables: z.array(TableInput).min(1, 'must list at least one table'),
  raw: RawInput,
  /** DynamoDB table of per (pipeline, table) status rows. @default "<name>-status" */
  statusTable: dynamoTableName.optional(),
  /** The unchanged-value marker. @default "__debezium_unavailable_value" */
  placeholder: z.string().min(1).default('__debezium_unavailable_value'),
  dms: strict({ beforeImageField: z.string().min(1).default('before-image') }).prefault({}),
  auroraDsql: strict({
    /**
     * How long the parts of a split Aurora DSQL record (a main record and its fragments) wait for
     * each other, from the first part's arrival; a set still incomplete then is quarantined as
     * `fragment-incomplete` by the next batch's sweep. @default 900 (15 minutes)
     */
    fragmentWaitSeconds: z.number().int().min(1).max(7 * 86_400).default(900),
  }).prefault({}),
  apply: ApplyInput.prefault({}),
  transactions: TransactionsInput.prefault({}),
  /** @default an on-demand Kinesis stream named "<name>-cdc", created in the stack */
  source: z.discriminatedUnion('type', [KinesisInput, MskInput]).prefault({ type: 'kinesis' }),
  ingest: IngestInput.prefault({}),
  alarms: AlarmsInput.prefault({}),
  /** `aws-managed` (S3-managed / AWS-owned keys) or `kms` (one customer-managed key). @default "aws-managed" */
  encryption: z.enum(['aws-managed', 'kms']).default('aws-managed'),
  /** CloudWatch Logs retention. @default 30 */
  logRetentionDays: z.number().int().positive().default(30),
  replay: ReplayConfigSchema,
  jobs: JobsConfigSchema,
  history: HistoryConfigSchema,
});

type Parsed = z.output<typeof ConfigInputSchema>;

// ---------------------------------------------------------------------------------------------
// Resolution: every derived default, in one place.

function resolveSource(parsed: Parsed) {
  const source = parsed.source;
  if (source.type === 'kinesis') {
    return { ...source, streamName: source.streamName ?? `${parsed.name}-cdc` };
  }
  const { topic, topics, topicPrefix, ...rest } = source;
  const resolvedTopics = topics ?? (topic !== undefined ? [topic] : parsed.tables.map((t) => `${topicPrefix ?? ''}.${t.source}`));
  return {
    ...rest,
    /** Every topic read, one event source mapping each. */
    topics: [...new Set(resolvedTopics)],
    /** Set when the topics were derived from Debezium's `topic.prefix`. */
    ...(topicPrefix !== undefined ? { topicPrefix } : {}),
    consumerGroupId: source.consumerGroupId ?? `${parsed.name}-ingest`,
  };
}

function resolve(parsed: Parsed) {
  const kafkaTombstones: KafkaTombstones = parsed.kafkaTombstones ?? (parsed.format === 'debezium-flattened' ? 'delete' : parsed.format === 'auto' ? 'auto' : 'ignore');
  const source = resolveSource(parsed);
  const retentionSeconds = source.retentionHours * 3600;
  return {
    ...parsed,
    kafkaTombstones,
    tables: parsed.tables.map((t) => ({ ...t, kafkaTombstones: t.kafkaTombstones ?? kafkaTombstones })),
    statusTable: parsed.statusTable ?? `${parsed.name}-status`,
    source,
    ingest: {
      ...parsed.ingest,
      maxRecordAgeSeconds: parsed.ingest.maxRecordAgeSeconds ?? Math.min(MAX_RECORD_AGE_LIMIT_SECONDS, Math.floor(retentionSeconds / 2)),
    },
  };
}

export const ConfigSchema = ConfigInputSchema.transform(resolve);

/** What a user writes in `tidemark.config.json`. */
export type ConfigInput = z.input<typeof ConfigSchema>;

/**
 * The schema resolves to exactly the hand-written `TidemarkConfig` the runtime reads
 * (functions/config/types.ts): a field added to one and not the other fails to compile here.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const resolvesToTidemarkConfig: Same<z.output<typeof ConfigSchema>, TidemarkConfig> = true;
void resolvesToTidemarkConfig;

export type {
  ApplyConfig,
  FormatSetting,
  KafkaTombstones,
  KeyType,
  KinesisSourceConfig,
  MskSourceConfig,
  SourceConfig,
  TableConfig,
  TidemarkConfig,
} from '../../functions/config/types.js';
export { DEFAULT_BATCH_SIZE, DEFAULT_BATCHING_WINDOW_SECONDS, KAFKA_TOMBSTONES, ON_FAILURE_PREFIX, tableBySource };

// ---------------------------------------------------------------------------------------------
// Cross-field rules

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

/** What the table rules read of a table; a table that did not parse is `undefined` (its index kept). */
type TableFacts = Pick<TidemarkConfig['tables'][number], 'source' | 'target' | 'key' | 'keyTypes'>;

function tableIssues(tables: readonly (TableFacts | undefined)[], statusTable: string | undefined): string[] {
  const issues: string[] = [];
  const sources = new Map<string, number>();
  const targets = new Map<string, number>();
  tables.forEach((t, i) => {
    if (t === undefined) return;
    const seen = sources.get(t.source);
    if (seen !== undefined) issues.push(`tables[${i}].source: "${t.source}" is already configured at tables[${seen}]`);
    else sources.set(t.source, i);
    const seenTarget = targets.get(t.target);
    if (seenTarget !== undefined) issues.push(`tables[${i}].target: "${t.target}" is already used by tables[${seenTarget}]`);
    else targets.set(t.target, i);
    const keySet = new Set<string>();
    t.key.forEach((col, j) => {
      if (col.startsWith(RESERVED_PREFIX)) {
        issues.push(`tables[${i}].key[${j}]: "${col}" starts with "${RESERVED_PREFIX}", which is reserved for tidemark metadata`);
      }
      if (keySet.has(col)) issues.push(`tables[${i}].key[${j}]: "${col}" is listed twice`);
      keySet.add(col);
    });
    for (const col of Object.keys(t.keyTypes)) {
      if (!keySet.has(col)) {
        const hint = closestField(col, [...keySet]);
        issues.push(`tables[${i}].keyTypes.${col}: "${col}" is not a key column${hint ? ` (did you mean "${hint}"?)` : ''}`);
      }
    }
  });
  if (statusTable !== undefined && targets.has(statusTable)) issues.push(`statusTable: "${statusTable}" is also a target table`);
  return issues;
}

/** Every table of a transaction group is configured and in one group only; group names are distinct. */
function transactionIssues(config: TidemarkConfig): string[] {
  const sources = new Set(config.tables.map((t) => t.source));
  const issues: string[] = [];
  const names = new Map<string, number>();
  const grouped = new Map<string, string>();
  config.transactions.groups.forEach((g, i) => {
    const seen = names.get(g.name);
    if (seen !== undefined) issues.push(`transactions.groups[${i}].name: "${g.name}" is already used by transactions.groups[${seen}]`);
    else names.set(g.name, i);
    g.tables.forEach((t, j) => {
      const path = `transactions.groups[${i}].tables[${j}]`;
      if (!sources.has(t)) {
        const hint = closestField(t, [...sources.keys()]);
        issues.push(`${path}: "${t}" is not a configured table${hint ? ` (did you mean "${hint}"?)` : ''}`);
      }
      const other = grouped.get(t);
      if (other !== undefined) issues.push(`${path}: "${t}" is already in group "${other}"`);
      else grouped.set(t, g.name);
    });
  });
  return issues;
}

/**
 * The key prefixes of the raw bucket must each be non-empty and apart from every other: roles are
 * granted object access by prefix, lifecycle rules expire by prefix, and erase rewrites by prefix,
 * so an empty or overlapping one would widen a grant (an empty `replay.jobsPrefix` once gave the
 * replay and erase roles the whole bucket) or expire raw.
 */
interface PrefixFields {
  readonly raw: Pick<TidemarkConfig['raw'], 'prefix' | 'quarantinePrefix'> & { readonly bucket?: string };
  readonly replay?: Pick<TidemarkConfig['replay'], 'jobsPrefix' | 'onFailureBucket'>;
  readonly jobs?: Pick<TidemarkConfig['jobs'], 'reportPrefix'>;
  readonly history?: Pick<TidemarkConfig['history'], 'prefix'>;
}

function prefixIssues(config: PrefixFields): string[] {
  const { prefix, quarantinePrefix } = config.raw;
  const issues: string[] = [];
  const overlaps = (a: string, b: string) => a.startsWith(b) || b.startsWith(a);
  const prefixes: [string, string][] = [
    ['raw.prefix', prefix],
    ['raw.quarantinePrefix', quarantinePrefix],
  ];
  // Sections that did not parse (partialIssues) are left out.
  if (config.replay) prefixes.push(['replay.jobsPrefix', config.replay.jobsPrefix]);
  if (config.jobs) prefixes.push(['jobs.reportPrefix', config.jobs.reportPrefix]);
  if (config.history) prefixes.push(['history.prefix', config.history.prefix]);
  // Lambda writes failed batches under aws/lambda/ of the on-failure bucket, the raw bucket by default.
  if (config.replay?.onFailureBucket === undefined || config.replay.onFailureBucket === config.raw.bucket) prefixes.push(['the on-failure destination', ON_FAILURE_PREFIX]);
  for (const [field, value] of prefixes) {
    if (value === '') issues.push(`${field}: must not be empty (it would cover the whole bucket)`);
    else if (value.startsWith('/')) issues.push(`${field}: "${value}" must not start with "/"`);
  }
  prefixes.forEach(([field, value], i) => {
    for (const [other, otherValue] of prefixes.slice(0, i)) {
      if (value !== '' && otherValue !== '' && overlaps(value, otherValue)) issues.push(`${field}: "${value}" and ${other} "${otherValue}" must not be equal or a prefix of one another`);
    }
  });
  return issues;
}

function sourceIssues(config: TidemarkConfig, input: unknown): string[] {
  const issues: string[] = [];
  const { source, ingest } = config;
  const retentionSeconds = source.retentionHours * 3600;
  if (ingest.maxRecordAgeSeconds > retentionSeconds / 2) {
    issues.push(
      `ingest.maxRecordAgeSeconds: ${ingest.maxRecordAgeSeconds} must be at most half the source's retention (${source.retentionHours} h = ${retentionSeconds} s), so a batch that ages out is still readable when it reaches the on-failure destination`,
    );
  }
  if (source.type === 'msk') {
    const raw = (input as { source?: Record<string, unknown> }).source ?? {};
    const given = ['topic', 'topics', 'topicPrefix'].filter((f) => raw[f] !== undefined);
    if (given.length !== 1) issues.push(`source: give exactly one of topic, topics or topicPrefix${given.length > 1 ? ` (got ${given.join(', ')})` : ''}`);
    for (const topic of source.topics) {
      if (`${source.consumerGroupId}.${topic}`.length > 200) {
        issues.push(`source.consumerGroupId: "${source.consumerGroupId}.${topic}" (the group of topic ${topic}) is over 200 characters`);
      }
    }
  }
  return issues;
}

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * Validates and resolves a parsed config object. Throws ConfigError listing every problem, e.g.
 * `tables[1].key: must not be empty`, `tables[0]: unknown field "keytypes" (did you mean "keyTypes"?)`.
 */
export function parseConfig(input: unknown, sourceName = 'config'): TidemarkConfig {
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    throw new ConfigError(
      [...result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`), ...partialIssues(input)],
      sourceName,
    );
  }
  const issues = [...tableIssues(result.data.tables, result.data.statusTable), ...transactionIssues(result.data), ...prefixIssues(result.data), ...sourceIssues(result.data, input)];
  if (issues.length > 0) throw new ConfigError(issues, sourceName);
  return result.data;
}

/**
 * The cross-field rules over the parts of an input that did parse, when another part did not, so
 * that one run reports every problem: a duplicate `source` and a `"prefix": "/raw"` show up next to
 * a schema error elsewhere instead of after it is fixed.
 */
function partialIssues(input: unknown): string[] {
  if (typeof input !== 'object' || input === null) return [];
  const fields = input as { tables?: unknown; raw?: unknown; statusTable?: unknown };
  const tables = Array.isArray(fields.tables) ? fields.tables.map((t) => TableInput.safeParse(t).data) : [];
  const raw = RawInput.safeParse(fields.raw).data;
  const statusTable = typeof fields.statusTable === 'string' ? fields.statusTable : undefined;
  return [...tableIssues(tables, statusTable), ...(raw ? prefixIssues({ raw }) : [])];
}

/** Reads and validates a config file. */
export function loadConfigFile(path: string): TidemarkConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read ${path}: ${errorMessage(err)}`], path);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`not valid JSON: ${errorMessage(err)}`], path);
  }
  return parseConfig(parsed, path);
}

/**
 * Reads the config from `TIDEMARK_CONFIG` (JSON) and validates it. Fails fast with the variable's
 * name when it is missing. The deployed Lambda uses `loadRuntimeConfig` (functions/config/runtime.ts) instead.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): TidemarkConfig {
  const text = env.TIDEMARK_CONFIG;
  if (text === undefined || text === '') throw new ConfigError(['Environment variable TIDEMARK_CONFIG is required'], 'environment');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`TIDEMARK_CONFIG is not valid JSON: ${errorMessage(err)}`], 'environment');
  }
  return parseConfig(parsed, 'TIDEMARK_CONFIG');
}
