/**
 * The composition root: the one module that builds the dependencies of every handler from the
 * resolved config, the SDK clients and the telemetry sinks. The Lambda entries call it at cold
 * start; the CLI, the local runner, the benchmarks and the tests call it with emulator or mocked
 * clients. Every handler's writer, raw store and status store come from the same `buildStorage`,
 * so they cannot drift apart (the jobs once wrote without reading spilled rows back).
 *
 *   const deps = ingestDeps(config, createRuntimeClients(), { metrics, log });
 *   await processBatch(records, deps);
 */
import type { TidemarkConfig } from './config/types.js';
import type { RuntimeClients } from './adapters/clients.js';
import { buildStorage, type Storage } from './adapters/storage.js';
import { type KeyRef, keyRefOf, type Log, type MetricSink, noKeyRef } from './telemetry/sinks.js';
import { loadLedgerKeys } from './adapters/ledger-keys.js';
import { errorMessage } from './core/errors.js';
import type { IngestDeps } from './ingest/process-batch.js';
import { StatusCache } from './ingest/status-cache.js';
import { SchemaTracker } from './ingest/schema.js';
import { SchemaStore } from './adapters/schema-store.js';
import { ShardFrontierStore } from './adapters/shard-frontier.js';
import type { JobDeps } from './jobs/deps.js';
import type { JobContext } from './replay/job.js';
import type { EraseContext } from './erase/erase.js';

/** Where a handler reports, how it names keys in log lines, and its clock (tests fix it). */
export interface Telemetry {
  readonly metrics: MetricSink;
  readonly log: Log;
  /** @default no key names in log lines, only tables and positions */
  readonly keyRef?: KeyRef;
  readonly now?: () => number;
}

/**
 * The keyed hash log lines name keys by: the erase ledger's, under its current key. Without a
 * readable ledger key (a local run with none exported) log lines name no key at all; that is said
 * once, and the handler runs on.
 */
export async function ledgerKeyRef(config: TidemarkConfig, log: Log, env: NodeJS.ProcessEnv = process.env): Promise<KeyRef> {
  try {
    return keyRefOf((await loadLedgerKeys(config.replay.erase.ledgerKeySecret, env)).current.secret);
  } catch (err) {
    log.warn('no erase ledger key: log lines name no keys, only tables and positions', { reason: errorMessage(err) });
    return noKeyRef;
  }
}

/** The ingest path: decode, land raw, apply under the guard, report. */
export function ingestDeps(config: TidemarkConfig, clients: RuntimeClients, telemetry: Telemetry, storage: Storage = buildStorage(config, clients, telemetry.now)): IngestDeps {
  storage.status.onRegistryFailure = (table, err) => telemetry.log.warn('registry row not written; the table is still listed through the config', { table, error: errorMessage(err) });
  const writer = storage.writer();
  return {
    config,
    normalizer: storage.normalizer,
    raw: storage.raw,
    writer,
    ...(config.transactions.groups.length > 0 ? { txWriter: storage.transactWriter(writer) } : {}),
    schema: new SchemaTracker(new SchemaStore(clients.dynamodb, config.statusTable, config.name), config, telemetry.log, telemetry.now),
    status: storage.status,
    statusCache: new StatusCache(config.ingest.statusMaxAgeSeconds * 1000),
    sweeper: storage.sweeper,
    ...(storage.splitParts ? { splitParts: storage.splitParts } : {}),
    frontier: new ShardFrontierStore(clients.dynamodb, config.statusTable, config.name),
    metrics: telemetry.metrics,
    log: telemetry.log,
    keyRef: telemetry.keyRef ?? noKeyRef,
    now: telemetry.now,
  };
}

/** Every task of reconcile and snapshot detection. */
export function jobDeps(config: TidemarkConfig, clients: RuntimeClients, telemetry: Telemetry): JobDeps {
  const storage = buildStorage(config, clients, telemetry.now);
  return {
    config,
    s3: clients.s3,
    dynamodb: clients.dynamodb,
    normalizer: storage.normalizer,
    writer: storage.writer(),
    status: storage.status,
    metrics: telemetry.metrics,
    log: telemetry.log,
    keyRef: telemetry.keyRef ?? noKeyRef,
    now: storage.now,
  };
}

/** Every step of a replay run (its engine is built per batch over `storage`). */
export function replayContext<C extends RuntimeClients>(config: TidemarkConfig, clients: C, log: Log, env?: NodeJS.ProcessEnv, keyRef: KeyRef = noKeyRef): JobContext & { readonly clients: C } {
  return { config, clients, storage: buildStorage(config, clients), log, keyRef, ...(env !== undefined ? { env } : {}) };
}

/** Every step of an erase run. */
export function eraseContext(config: TidemarkConfig, clients: RuntimeClients, log: Log, env?: NodeJS.ProcessEnv): EraseContext {
  return { config, clients, log, ...(env !== undefined ? { env } : {}) };
}
