/**
 * Every deployment default of the pipeline lives here, in one place, and callers override it
 * (the solutions-constructs `DefaultDynamoEventSourceProps` pattern): `overrideProps(defaults, overrides)`.
 * Config-derived values (names, record age, consumer group) are already resolved in the config;
 * nothing here falls back on its own.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { TidemarkConfig } from './config/config.js';

/** The package root: the nearest folder above this file holding `package.json` (the repo, or the installed package). */
export const PACKAGE_ROOT = ((): string => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
})();

/** The repository root when run from a clone (same as PACKAGE_ROOT). */
export const REPO_ROOT = PACKAGE_ROOT;

/** The ingest handler's source file (absent from the installed package, which ships it prebuilt). */
export const DEFAULT_INGEST_ENTRY = path.join(PACKAGE_ROOT, 'functions', 'ingest.ts');

/** Where `npm pack` puts the prebuilt handlers: `dist/handlers/<name>/index.mjs`. */
export const PREBUILT_HANDLERS_DIR = path.join(PACKAGE_ROOT, 'dist', 'handlers');

/** Namespace and service name of every tidemark metric, and the unknown-table row: from the telemetry contract. */
export { METRICS_NAMESPACE as METRIC_NAMESPACE, SERVICE_NAME, UNKNOWN_TABLE as UNKNOWN_TABLE_DIMENSION } from '../functions/telemetry/contract.js';

/** How long the failed-batch queue keeps its notifications. */
export const DLQ_RETENTION = Duration.days(14);

/** Lambda runtime of the ingest function. */
export const INGEST_RUNTIME = lambda.Runtime.NODEJS_22_X;

/** Lambda caps a function's environment variables at 4 KB in total. */
export const MAX_ENVIRONMENT_BYTES = 4096;

/** `require` shim so CommonJS dependencies keep working inside an ESM bundle. */
export const ESM_REQUIRE_BANNER = "import { createRequire as __tidemarkCreateRequire } from 'node:module'; const require = __tidemarkCreateRequire(import.meta.url);";

/**
 * esbuild options for `NodejsFunction`s: one minified ESM file for node22, the pinned AWS SDK
 * bundled (no `@aws-sdk/*` externals). The ingest function uses `handlerCode` (handler-asset.ts),
 * which bundles the same way and also ships the resolved config.
 */
export const DEFAULT_BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node22',
  minify: true,
  sourceMap: false,
  externalModules: [],
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
};

/** Values CloudWatch Logs accepts as a retention in days. */
export const LOG_RETENTION_DAYS: readonly number[] = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/**
 * Up to this many target tables (or Kafka topics) live in the pipeline's own stack; beyond it they
 * go into nested stacks of `RESOURCES_PER_NESTED_STACK`, so no stack nears CloudFormation's
 * 500-resource limit.
 */
export const INLINE_RESOURCE_LIMIT = 100;
export const RESOURCES_PER_NESTED_STACK = 200;

/** Minimum and maximum provisioned pollers of each Kafka mapping (provisioned mode, so retries, bisect and record age apply). */
export const KAFKA_POLLERS = { minimumPollers: 1, maximumPollers: 10 } as const;

/**
 * Settings shared by the Kinesis and Kafka mappings, from the resolved `ingest` section. The mapping
 * invokes when `batchSize` records are gathered, the batching window has passed since the first, or
 * one more record would take the event past Lambda's 6 MB payload (see `ingest.batchSize`).
 */
function commonEventSourceProps(ingest: TidemarkConfig['ingest'], onFailure: lambda.IEventSourceDlq) {
  return {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: ingest.batchSize,
    maxBatchingWindow: Duration.seconds(ingest.maxBatchingWindowSeconds),
    retryAttempts: ingest.retryAttempts,
    maxRecordAge: Duration.seconds(ingest.maxRecordAgeSeconds),
    bisectBatchOnError: true,
    reportBatchItemFailures: true,
    onFailure,
  };
}

/**
 * Kinesis event source mapping defaults: partial batch responses, bisect on error, bounded retries,
 * a record age well below retention, and an on-failure destination that keeps the whole records.
 */
export function defaultKinesisMappingProps(ingest: TidemarkConfig['ingest'], onFailure: lambda.IEventSourceDlq): Omit<lambda.EventSourceMappingOptions, 'eventSourceArn'> {
  return { ...commonEventSourceProps(ingest, onFailure), parallelizationFactor: ingest.parallelizationFactor };
}

/**
 * Kafka (MSK) mapping defaults. Lambda honours retries, bisect, record age and partial batch
 * responses for Kafka only in provisioned poller mode, so pollers are provisioned. Kafka has no
 * parallelization factor: concurrency follows the topic's partitions.
 */
export function defaultKafkaMappingProps(ingest: TidemarkConfig['ingest'], onFailure: lambda.IEventSourceDlq): Omit<lambda.EventSourceMappingOptions, 'eventSourceArn'> {
  return { ...commonEventSourceProps(ingest, onFailure), provisionedPollerConfig: { ...KAFKA_POLLERS } };
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
