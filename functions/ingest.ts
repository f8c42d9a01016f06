/**
 * The ingest Lambda: Kinesis or MSK events in, S3 raw + guarded DynamoDB writes out.
 * Config is read and validated once at cold start; clients are created once and reused.
 *
 * Both event sources get a partial-batch response instead of an error, so only what failed is
 * retried: Kinesis names the lowest failed sequence number; Kafka (provisioned-mode event source
 * mappings with `ReportBatchItemFailures`) names, per failed topic-partition, the lowest failed
 * offset as `{ partition: "<topic>-<partition>", offset }`, the partition being the key of the
 * event's `records` map.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent, MSKEvent } from 'aws-lambda';
import { createRuntimeClients } from './adapters/clients.js';
import { loadRuntimeConfig as configFromEnv } from './config/runtime.js';
import { SERVICE_NAME } from './telemetry/contract.js';
import { mskPartitions, recordsFromKinesis } from './adapters/records.js';
import { logFromPowertools, PowertoolsMetricSink } from './telemetry/sinks.js';
import { ingestDeps, ledgerKeyRef } from './composition.js';
import { type IngestDeps, type Invocation, processBatch } from './ingest/process-batch.js';

const log = logFromPowertools(new Logger({ serviceName: SERVICE_NAME }));
let deps: Promise<IngestDeps> | undefined;

/** Config, clients and the ledger key (log lines name keys by its keyed hash), once per container. */
async function coldStart(): Promise<IngestDeps> {
  const config = configFromEnv();
  const clients = createRuntimeClients({ maxAttempts: config.apply.maxRetries + 1 });
  return ingestDeps(config, clients, { metrics: new PowertoolsMetricSink(config.name), log, keyRef: await ledgerKeyRef(config, log) });
}

const isMsk = (event: KinesisStreamEvent | MSKEvent): event is MSKEvent => (event as MSKEvent).eventSource === 'aws:kafka' || 'records' in event;

/** Lambda's Kafka partial-batch response: the lowest failed offset of each failed topic-partition. */
export interface KafkaBatchResponse {
  batchItemFailures: { itemIdentifier: { partition: string; offset: number } }[];
}

export async function handler(event: KinesisStreamEvent | MSKEvent, context?: Context): Promise<KinesisStreamBatchResponse | KafkaBatchResponse> {
  deps ??= coldStart().catch((err: unknown) => {
    deps = undefined;
    throw err;
  });
  return handleEvent(event, await deps, context ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {});
}

/** The handler's body with its dependencies injected: the local runner and tests call it directly. */
export async function handleEvent(event: KinesisStreamEvent, deps: IngestDeps, invocation?: Invocation): Promise<KinesisStreamBatchResponse>;
export async function handleEvent(event: MSKEvent, deps: IngestDeps, invocation?: Invocation): Promise<KafkaBatchResponse>;
export async function handleEvent(event: KinesisStreamEvent | MSKEvent, deps: IngestDeps, invocation?: Invocation): Promise<KinesisStreamBatchResponse | KafkaBatchResponse>;
export async function handleEvent(event: KinesisStreamEvent | MSKEvent, deps: IngestDeps, invocation: Invocation = {}): Promise<KinesisStreamBatchResponse | KafkaBatchResponse> {
  if (isMsk(event)) return handleKafka(event, deps, invocation);
  const result = await processBatch(recordsFromKinesis(event), deps, invocation);
  return { batchItemFailures: result.batchItemFailures };
}

async function handleKafka(event: MSKEvent, deps: IngestDeps, invocation: Invocation): Promise<KafkaBatchResponse> {
  const failures: KafkaBatchResponse['batchItemFailures'] = [];
  for (const partition of mskPartitions(event)) {
    const result = await processBatch(partition.records, deps, invocation);
    const failed = result.batchItemFailures[0]?.itemIdentifier;
    if (failed !== undefined) failures.push({ itemIdentifier: { partition: partition.key, offset: Number(failed) } });
  }
  return { batchItemFailures: failures };
}
