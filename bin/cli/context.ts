/**
 * Shared CLI plumbing: the config file (a JSON mistake named by line and column, then every schema
 * problem at once), the clients (endpoints from the environment first, then a running
 * `tidemark local up`, else AWS itself), and the ingest dependencies of local runs.
 *
 *   const cfg = config('tidemark.config.json');
 *   const c = await clients(cfg);
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { type Clients, createClients } from '../local/clients.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { ConfigError, errorMessage } from '../../functions/core/errors.js';
import { CollectingMetricSink, type Log, logFromPowertools } from '../../functions/telemetry/sinks.js';
import { ingestDeps } from '../../functions/composition.js';
import type { IngestDeps } from '../../functions/ingest/process-batch.js';
import { endpointsFromEnv, shellQuote } from '../local/emulators.js';
import { type LocalState, localStatus, nsenterCommand } from '../local/local-state.js';
import { CliError } from './errors.js';
import { jsonErrorText } from './json-input.js';

export const STATE_DIR = join(process.cwd(), '.tidemark');
export const LOCAL_DIR = join(STATE_DIR, 'local');

export function config(path: string): TidemarkConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CliError(`cannot read the config ${path}: ${missing ? 'no such file' : errorMessage(err)}`, missing ? 'pass the pipeline config with -c <file> (see the README, "Configuration")' : undefined);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([jsonErrorText('the file', text, err)], path);
  }
  return parseConfig(parsed, path);
}

/** Clients for the endpoints in the environment, else a running `tidemark local up`, else AWS itself. */
export async function clients(config?: TidemarkConfig): Promise<Clients> {
  const maxAttempts = (config?.apply.maxRetries ?? 6) + 1;
  if (endpointsFromEnv()) return createClients({}, { maxAttempts });
  if (existsSync(join(LOCAL_DIR, 'local.json'))) {
    const status = await localStatus(LOCAL_DIR);
    if (status.running && status.state) {
      if (process.stderr.isTTY) process.stderr.write('tidemark: using the local emulators recorded in .tidemark/local/ (tidemark local up, or npm start -- --keep)\n');
      return createClients(status.state.endpoints, { maxAttempts });
    }
    if (status.elsewhere && status.state) throw elsewhereError(status.state);
  }
  return createClients({}, { maxAttempts });
}

/** The emulators of `npm start -- --keep` run in the demo's network namespace: the command to run there. */
export function elsewhereError(state: LocalState): CliError {
  const args = process.argv.slice(2).map(shellQuote);
  return new CliError(
    'the local emulators run in another network namespace (npm start runs them there as root): their 127.0.0.1 endpoints do not reach them from this shell',
    `run it in their namespace: ${nsenterCommand(state.pids.dynamodb, `npx tidemark ${args.join(' ')}`)}   (or stop them: npx tidemark local down)`,
  );
}

/** CLI logs: warnings and errors to stderr as JSON, without row values. TIDEMARK_LOG_LEVEL=INFO for more. */
export function cliLog(): Log {
  return logFromPowertools(new Logger({ serviceName: 'tidemark-cli', logLevel: (process.env.TIDEMARK_LOG_LEVEL ?? 'ERROR') as 'ERROR' }));
}

export function localDeps(config: TidemarkConfig, c: Clients): IngestDeps {
  return ingestDeps(config, c, { metrics: new CollectingMetricSink(), log: cliLog() });
}
