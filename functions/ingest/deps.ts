/** Wires the ingest path from a validated config and injected clients. Used by Lambda and the CLI alike. */
import type { TidemarkConfig } from '../commons/config.js';
import type { RuntimeClients } from '../commons/clients.js';
import { stringifyJson } from '../core/json.js';
import { Normalizer } from '../core/normalize.js';
import { DynamoWriter } from '../adapters/dynamo-writer.js';
import { RawStore } from '../adapters/raw-store.js';
import { s3SpillReader } from '../adapters/spill-reader.js';
import { StatusStore } from '../adapters/status-store.js';
import type { Log, MetricSink } from '../adapters/telemetry.js';
import { TruncateSweeper } from '../adapters/truncate-sweep.js';
import type { IngestDeps } from './process-batch.js';

export function buildIngestDeps(config: TidemarkConfig, clients: RuntimeClients, telemetry: { metrics: MetricSink; log: Log; now?: () => number }): IngestDeps {
  const raw = new RawStore(clients.s3, config.raw.bucket, config.raw.prefix, config.raw.quarantinePrefix);
  const writer = new DynamoWriter({
    client: clients.dynamodb,
    tables: config.tables,
    maxItemBytes: config.apply.maxItemBytes,
    spill: (w) => raw.spill(w.table, w.keyId, w.encodedPosition, stringifyJson(w.effect.kind === 'put' ? w.effect.row : {})),
    readSpill: s3SpillReader(clients.s3),
    now: telemetry.now,
  });
  return {
    config,
    normalizer: new Normalizer(config),
    raw,
    writer,
    status: new StatusStore(clients.dynamodb, config.statusTable, config.name),
    sweeper: new TruncateSweeper(clients.dynamodb),
    metrics: telemetry.metrics,
    log: telemetry.log,
    now: telemetry.now,
  };
}
