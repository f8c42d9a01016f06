/**
 * The one pipeline configuration, `tidemark.config.json`, read by the CDK app, the Lambda runtime
 * and the CLI. Validated once with zod; every problem is reported together with its path.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../core/errors.js';
import { JobsConfigSchema } from './jobs-config.js';

const RESERVED_PREFIX = '__';
const FORMATS = ['auto', 'generic', 'debezium', 'debezium-flattened', 'debezium-mongodb', 'cockroachdb', 'dms', 'maxwell', 'canal'] as const;
export type FormatSetting = (typeof FORMATS)[number];

const identifier = z.string().min(1, 'must not be empty');
const dynamoTableName = z
  .string()
  .regex(/^[a-zA-Z0-9_.-]{3,255}$/, 'must be 3-255 characters of a-z, A-Z, 0-9, _, - and .');
const bucketName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name (3-63 lowercase characters)');

export const KeyType = z.enum(['string', 'number']);
export type KeyType = z.infer<typeof KeyType>;

export const TableConfigSchema = z.object({
  /** Source table as the decoders name it, e.g. `public.orders` (Debezium: `<schema>.<table>`). */
  source: identifier,
  /** DynamoDB table holding current state. */
  target: dynamoTableName,
  /** Source primary-key columns, in order. */
  key: z.array(identifier).min(1, 'must not be empty'),
  /** DynamoDB attribute type of each key column. @default "string" for every column */
  keyTypes: z.record(z.string(), KeyType).default({}),
  /** How long tombstones are kept. @default 7 */
  tombstoneTtlDays: z.number().positive().max(3650).default(7),
});
export type TableConfig = z.infer<typeof TableConfigSchema>;

export const KinesisSourceSchema = z.object({
  type: z.literal('kinesis'),
  /** Stream name. With `create: false` it must exist. */
  streamName: z.string().regex(/^[a-zA-Z0-9_.-]{1,128}$/, 'must be a valid Kinesis stream name'),
  /** Create the stream in the stack. @default true */
  create: z.boolean().default(true),
  /** Provisioned shard count; 0 means on-demand. @default 0 */
  shardCount: z.number().int().min(0).max(500).default(0),
  /** Retention in hours. @default 24 */
  retentionHours: z.number().int().min(24).max(8760).default(24),
});

export const MskSourceSchema = z.object({
  type: z.literal('msk'),
  clusterArn: z.string().startsWith('arn:', 'must be an MSK cluster ARN'),
  topic: identifier,
  /** Kafka consumer group id. @default "<name>-ingest" */
  consumerGroupId: z.string().optional(),
});

export const ConfigSchema = z.object({
  /** Pipeline name; prefixes resource names and keys the status rows. */
  name: z.string().regex(/^[a-z][a-z0-9-]{1,40}$/, 'must be 2-41 characters: lowercase letters, digits and -'),
  /** Wire format of the messages, or `auto` to detect per message. @default "auto" */
  format: z.enum(FORMATS).default('auto'),
  tables: z.array(TableConfigSchema).min(1, 'must list at least one table'),
  raw: z.object({
    bucket: bucketName,
    /** @default "raw/" */
    prefix: z.string().default('raw/'),
    /** @default "quarantine/" */
    quarantinePrefix: z.string().default('quarantine/'),
    /** Days before raw objects move to infrequent access. @default 30 */
    infrequentAccessAfterDays: z.number().int().positive().default(30),
    /** Days quarantine objects are kept. @default 90 */
    quarantineRetentionDays: z.number().int().positive().default(90),
  }),
  /** DynamoDB table of per (pipeline, table) status rows. @default "<name>-status" */
  statusTable: dynamoTableName.optional(),
  /** The unchanged-value marker. @default "__debezium_unavailable_value" */
  placeholder: z.string().min(1).default('__debezium_unavailable_value'),
  dms: z.object({ beforeImageField: z.string().min(1).default('before-image') }).default({ beforeImageField: 'before-image' }),
  apply: z
    .object({
      /** Concurrent DynamoDB writes per batch. @default 16 */
      concurrency: z.number().int().min(1).max(256).default(16),
      /** Retries on throttling and 5xx before the record is reported failed. @default 6 */
      maxRetries: z.number().int().min(0).max(20).default(6),
      /** Rows above this many bytes are spilled to S3. @default 350000 */
      maxItemBytes: z.number().int().min(1000).max(400_000).default(350_000),
    })
    .default({ concurrency: 16, maxRetries: 6, maxItemBytes: 350_000 }),
  source: z.discriminatedUnion('type', [KinesisSourceSchema, MskSourceSchema]).optional(),
  ingest: z
    .object({
      /** @default 500 */
      batchSize: z.number().int().min(1).max(10_000).default(500),
      /** @default 1 */
      parallelizationFactor: z.number().int().min(1).max(10).default(1),
      /** Retries of a failing batch before it goes to the on-failure destination. @default 5 */
      retryAttempts: z.number().int().min(0).max(10_000).default(5),
      /** @default 86400 */
      maxRecordAgeSeconds: z.number().int().min(60).max(604_800).default(86_400),
      /** @default 1024 */
      memoryMb: z.number().int().min(128).max(10_240).default(1024),
      /** @default 120 */
      timeoutSeconds: z.number().int().min(3).max(900).default(120),
    })
    .default({ batchSize: 500, parallelizationFactor: 1, retryAttempts: 5, maxRecordAgeSeconds: 86_400, memoryMb: 1024, timeoutSeconds: 120 }),
  alarms: z
    .object({
      /** @default 300000 */
      iteratorAgeMs: z.number().positive().default(300_000),
      /** p99 commit-to-apply lag. @default 600000 */
      freshnessLagMs: z.number().positive().default(600_000),
      /** Quarantined records per 5 minutes. @default 1 */
      quarantined: z.number().min(0).default(1),
      /** @default 1 */
      conflicts: z.number().min(0).default(1),
      /** Stale writes as a share of writes. @default 0.5 */
      staleRate: z.number().min(0).max(1).default(0.5),
    })
    .default({ iteratorAgeMs: 300_000, freshnessLagMs: 600_000, quarantined: 1, conflicts: 1, staleRate: 0.5 }),
  /** `aws-managed` (S3-managed / AWS-owned keys) or `kms` (one customer-managed key). @default "aws-managed" */
  encryption: z.enum(['aws-managed', 'kms']).default('aws-managed'),
  /** CloudWatch Logs retention. @default 30 */
  logRetentionDays: z.number().int().positive().default(30),
  jobs: JobsConfigSchema,
});

export type TidemarkConfig = z.infer<typeof ConfigSchema> & { statusTable: string };
export type ConfigInput = z.input<typeof ConfigSchema>;

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

function crossFieldIssues(config: z.infer<typeof ConfigSchema>): string[] {
  const issues: string[] = [];
  const sources = new Map<string, number>();
  const targets = new Map<string, number>();
  config.tables.forEach((t, i) => {
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
      if (!keySet.has(col)) issues.push(`tables[${i}].keyTypes.${col}: "${col}" is not a key column`);
    }
  });
  const status = config.statusTable ?? `${config.name}-status`;
  if (targets.has(status)) issues.push(`statusTable: "${status}" is also a target table`);
  return issues;
}

/**
 * Validates a parsed config object. Throws ConfigError listing every problem, e.g.
 * `tables[1].key: must not be empty`.
 */
export function parseConfig(input: unknown, sourceName = 'config'): TidemarkConfig {
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`),
      sourceName,
    );
  }
  const issues = crossFieldIssues(result.data);
  if (issues.length > 0) throw new ConfigError(issues, sourceName);
  return { ...result.data, statusTable: result.data.statusTable ?? `${result.data.name}-status` };
}

/** Reads and validates a config file. */
export function loadConfigFile(path: string): TidemarkConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read ${path}: ${(err as Error).message}`], path);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`not valid JSON: ${(err as Error).message}`], path);
  }
  return parseConfig(parsed, path);
}

/**
 * Reads the config from the environment at Lambda cold start: `TIDEMARK_CONFIG` holds the JSON.
 * Fails fast with the variable's name when it is missing.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): TidemarkConfig {
  const text = env.TIDEMARK_CONFIG;
  if (text === undefined || text === '') throw new ConfigError(['Environment variable TIDEMARK_CONFIG is required'], 'environment');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`TIDEMARK_CONFIG is not valid JSON: ${(err as Error).message}`], 'environment');
  }
  return parseConfig(parsed, 'TIDEMARK_CONFIG');
}

export function tableBySource(config: TidemarkConfig, source: string): TableConfig | undefined {
  return config.tables.find((t) => t.source === source);
}
