/**
 * The ingest Lambda: Kinesis or MSK events in, S3 raw + guarded DynamoDB writes out.
 * Config is read and validated once at cold start; clients are created once and reused.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent, MSKEvent } from 'aws-lambda';
import { createClients } from './commons/clients.js';
import { loadRuntimeConfig as configFromEnv } from './commons/runtime-config.js';
import { recordsFromKinesis, recordsFromMsk } from './adapters/records.js';
import { PowertoolsMetricSink } from './adapters/telemetry.js';
import { buildIngestDeps } from './ingest/deps.js';
import { type IngestDeps, processBatch } from './ingest/process-batch.js';

const logger = new Logger({ serviceName: 'tidemark-ingest' });
const log = {
  debug: (m: string, extra?: Record<string, unknown>) => logger.debug(m, extra ?? {}),
  info: (m: string, extra?: Record<string, unknown>) => logger.info(m, extra ?? {}),
  warn: (m: string, extra?: Record<string, unknown>) => logger.warn(m, extra ?? {}),
  error: (m: string, extra?: Record<string, unknown>) => logger.error(m, extra ?? {}),
};
let deps: IngestDeps | undefined;

function coldStart(): IngestDeps {
  const config = configFromEnv();
  const clients = createClients({}, { maxAttempts: config.apply.maxRetries + 1 });
  return buildIngestDeps(config, clients, { metrics: new PowertoolsMetricSink(config.name), log });
}

const isMsk = (event: KinesisStreamEvent | MSKEvent): event is MSKEvent => (event as MSKEvent).eventSource === 'aws:kafka' || 'records' in event;

export async function handler(event: KinesisStreamEvent | MSKEvent): Promise<KinesisStreamBatchResponse> {
  deps ??= coldStart();
  return handleEvent(event, deps);
}

/** The handler's body with its dependencies injected: the local runner and tests call it directly. */
export async function handleEvent(event: KinesisStreamEvent | MSKEvent, deps: IngestDeps): Promise<KinesisStreamBatchResponse> {
  if (isMsk(event)) {
    // Kafka batches have no partial-batch response: any failure fails the batch, which is retried.
    for (const partition of recordsFromMsk(event)) {
      const result = await processBatch(partition, deps);
      if (result.batchItemFailures.length > 0) throw new Error(`batch failed from offset ${result.batchItemFailures[0]!.itemIdentifier} of ${partition[0]?.transport.stream}`);
    }
    return { batchItemFailures: [] };
  }
  const result = await processBatch(recordsFromKinesis(event), deps);
  return { batchItemFailures: result.batchItemFailures };
}
