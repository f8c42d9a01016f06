/** Shared CLI plumbing: config, endpoints (env first, then a running `tidemark local up`), deps, progress. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { type Clients, createClients } from '../local/clients.js';
import { loadConfigFile, type TidemarkConfig } from '../../lib/config/config.js';
import { CollectingMetricSink, type Log, logFromPowertools } from '../../functions/telemetry/sinks.js';
import { ingestDeps } from '../../functions/composition.js';
import type { IngestDeps } from '../../functions/ingest/process-batch.js';
import { endpointsFromEnv, localStatus } from '../local/emulators.js';

export const STATE_DIR = join(process.cwd(), '.tidemark');
export const LOCAL_DIR = join(STATE_DIR, 'local');

export function config(path: string): TidemarkConfig {
  return loadConfigFile(path);
}

/** Clients for the endpoints in the environment, else a running `tidemark local up`, else AWS itself. */
export async function clients(config?: TidemarkConfig): Promise<Clients> {
  const maxAttempts = (config?.apply.maxRetries ?? 6) + 1;
  if (endpointsFromEnv()) return createClients({}, { maxAttempts });
  if (existsSync(join(LOCAL_DIR, 'local.json'))) {
    const status = await localStatus(LOCAL_DIR);
    if (status.running && status.state) {
      process.stderr.write('tidemark: using the local emulators started by `tidemark local up`\n');
      return createClients(status.state.endpoints, { maxAttempts });
    }
  }
  return createClients({}, { maxAttempts });
}

/** CLI logs: warnings and errors to stderr as JSON, without row values. TIDEMARK_LOG_LEVEL=INFO for more. */
export function cliLog(): Log {
  return logFromPowertools(new Logger({ serviceName: 'tidemark-cli', logLevel: (process.env.TIDEMARK_LOG_LEVEL ?? 'ERROR') as 'ERROR' }));
}

export function localDeps(config: TidemarkConfig, c: Clients): IngestDeps {
  return ingestDeps(config, c, { metrics: new CollectingMetricSink(), log: cliLog() });
}
