/**
 * What every job task needs (built by `jobDeps` in functions/composition.ts: the Lambda handlers at
 * cold start, the local runner and tests with emulator clients), and the jobs' input errors.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import type { Normalizer } from '../core/normalize.js';
import type { DynamoWriter } from '../adapters/dynamo-writer.js';
import type { StatusStore } from '../adapters/status-store.js';
import type { KeyRef, Log, MetricSink } from '../telemetry/sinks.js';
import { TidemarkError } from '../core/errors.js';

export interface JobDeps {
  readonly config: TidemarkConfig;
  readonly s3: S3Client;
  readonly dynamodb: DynamoDBClient;
  readonly normalizer: Normalizer;
  /** The ingest's guarded writer: repairs and orphan tombstones go through the same guard. */
  readonly writer: DynamoWriter;
  readonly status: StatusStore;
  readonly metrics: MetricSink;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. */
  readonly keyRef: KeyRef;
  readonly now: () => number;
}

/** A job was asked for something the config does not allow (an unknown table, a bad window). */
export class JobInputError extends TidemarkError {
  constructor(message: string, options?: ErrorOptions & { context?: { table?: string } }) {
    super(message, options);
    this.name = 'JobInputError';
  }
}

export function tableConfig(config: TidemarkConfig, source: string): TableConfig {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new JobInputError(`table "${source}" is not configured (configured: ${config.tables.map((x) => x.source).join(', ')})`, { context: { table: source } });
  return t;
}
