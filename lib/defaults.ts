/**
 * Every deployment default of the pipeline lives here, in one place, and callers override it
 * (the solutions-constructs `DefaultDynamoEventSourceProps` pattern): `overrideProps(defaults, overrides)`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { KinesisEventSourceProps, ManagedKafkaEventSourceProps } from 'aws-cdk-lib/aws-lambda-event-sources';
import { OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { TidemarkConfig } from '../functions/commons/config.js';

/** The repository root (the folder holding `package.json` and `functions/`). */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The ingest handler's source file. */
export const DEFAULT_INGEST_ENTRY = path.join(REPO_ROOT, 'functions', 'ingest.ts');

/** Namespace and service name of every tidemark metric, and the unknown-table row: from the telemetry contract. */
export { METRICS_NAMESPACE as METRIC_NAMESPACE, SERVICE_NAME, UNKNOWN_TABLE as UNKNOWN_TABLE_DIMENSION } from '../functions/commons/telemetry-contract.js';

/** How long the on-failure queue keeps the failed-batch descriptors. */
export const DLQ_RETENTION = Duration.days(14);

/** Lambda runtime of the ingest function. */
export const INGEST_RUNTIME = lambda.Runtime.NODEJS_22_X;

/** Values CloudWatch Logs accepts as a retention in days. */
export const LOG_RETENTION_DAYS: readonly number[] = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/**
 * esbuild options: one minified ESM file for node22 with source maps, the pinned AWS SDK bundled
 * (no `@aws-sdk/*` externals), and a `require` shim so CommonJS dependencies keep working in ESM.
 */
export const DEFAULT_BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node22',
  minify: true,
  sourceMap: true,
  externalModules: [],
  mainFields: ['module', 'main'],
  banner: "import { createRequire as __tidemarkCreateRequire } from 'node:module'; const require = __tidemarkCreateRequire(import.meta.url);",
};

/**
 * Kinesis event source defaults: partial batch responses, bisect on error, bounded retries and
 * record age, and an on-failure destination that receives the failed batch's shard and sequence range.
 */
export function defaultKinesisEventSourceProps(config: TidemarkConfig, onFailure: lambda.IEventSourceDlq): KinesisEventSourceProps {
  return {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: config.ingest.batchSize,
    maxBatchingWindow: Duration.seconds(1),
    parallelizationFactor: config.ingest.parallelizationFactor,
    retryAttempts: config.ingest.retryAttempts,
    maxRecordAge: Duration.seconds(config.ingest.maxRecordAgeSeconds),
    bisectBatchOnError: true,
    reportBatchItemFailures: true,
    onFailure,
  };
}

/**
 * MSK event source defaults. Lambda honours retries, bisect, record age and partial batch
 * responses for Kafka only in provisioned poller mode, so one to ten pollers are provisioned.
 * Kafka has no parallelization factor: concurrency follows the topic's partitions.
 */
export function defaultKafkaEventSourceProps(
  config: TidemarkConfig,
  source: { readonly clusterArn: string; readonly topic: string; readonly consumerGroupId?: string | undefined },
  onFailure: lambda.IEventSourceDlq,
): ManagedKafkaEventSourceProps {
  return {
    clusterArn: source.clusterArn,
    topic: source.topic,
    consumerGroupId: source.consumerGroupId ?? `${config.name}-ingest`,
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: config.ingest.batchSize,
    maxBatchingWindow: Duration.seconds(1),
    retryAttempts: config.ingest.retryAttempts,
    maxRecordAge: Duration.seconds(config.ingest.maxRecordAgeSeconds),
    bisectBatchOnError: true,
    reportBatchItemFailures: true,
    provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 10 },
    onFailure,
  };
}

/**
 * Shallow merge where an override that is `undefined` keeps the default.
 * `overrideProps({ batchSize: 500 }, { batchSize: 100 })` → `{ batchSize: 100 }`.
 */
export function overrideProps<T extends object>(defaults: T, overrides?: Partial<T>): T {
  const out: T = { ...defaults };
  if (overrides === undefined) return out;
  for (const [name, value] of Object.entries(overrides)) {
    if (value !== undefined) (out as Record<string, unknown>)[name] = value;
  }
  return out;
}
