/**
 * What every job task needs, wired once from the validated config and injected clients: the Lambda
 * handlers build it at cold start, the local runner and tests build it with emulator clients.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableConfig, TidemarkConfig } from '../commons/config.js';
import { stringifyJson } from '../core/json.js';
import { Normalizer } from '../core/normalize.js';
import { DynamoWriter } from '../adapters/dynamo-writer.js';
import { RawStore } from '../adapters/raw-store.js';
import { StatusStore } from '../adapters/status-store.js';
import type { Log, MetricSink } from '../adapters/telemetry.js';
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
  readonly now: () => number;
}

export function buildJobDeps(
  config: TidemarkConfig,
  clients: { readonly s3: S3Client; readonly dynamodb: DynamoDBClient },
  telemetry: { readonly metrics: MetricSink; readonly log: Log; readonly now?: () => number },
): JobDeps {
  const raw = new RawStore(clients.s3, config.raw.bucket, config.raw.prefix, config.raw.quarantinePrefix);
  const now = telemetry.now ?? Date.now;
  return {
    config,
    s3: clients.s3,
    dynamodb: clients.dynamodb,
    normalizer: new Normalizer(config),
    writer: new DynamoWriter({
      client: clients.dynamodb,
      tables: config.tables,
      maxItemBytes: config.apply.maxItemBytes,
      spill: (w) => raw.spill(w.table, w.keyId, w.encodedPosition, stringifyJson(w.effect.kind === 'put' ? w.effect.row : {})),
      now,
    }),
    status: new StatusStore(clients.dynamodb, config.statusTable, config.name),
    metrics: telemetry.metrics,
    log: telemetry.log,
    now,
  };
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
