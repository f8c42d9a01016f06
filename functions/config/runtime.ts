/**
 * The Lambda's config at cold start, without zod: the CDK app validates and resolves the config
 * once (config.ts) and ships the result as `tidemark.config.json` next to the bundle in the
 * function's asset, so the runtime only reads trusted JSON. This keeps the environment far below
 * Lambda's 4 KB cap whatever the number of tables, and keeps zod out of the bundle.
 *
 *   const config = loadRuntimeConfig();   // <bundle dir>/tidemark.config.json, else TIDEMARK_CONFIG
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, errorMessage } from '../core/errors.js';
import type { TidemarkConfig } from './types.js';

/** File name of the resolved config inside the function's asset. */
export const RUNTIME_CONFIG_FILE = 'tidemark.config.json';

/** Environment variable naming another resolved-config file (tests, custom packaging). */
export const RUNTIME_CONFIG_FILE_ENV = 'TIDEMARK_CONFIG_FILE';

function parse(text: string, source: string): TidemarkConfig {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || !('name' in parsed) || !('tables' in parsed)) {
      throw new Error('it is not a resolved tidemark config (no name or tables)');
    }
    return parsed as TidemarkConfig;
  } catch (err) {
    throw new ConfigError([`${source} is not a resolved config: ${errorMessage(err)}`], source);
  }
}

/**
 * Loads the resolved config: the file named by `TIDEMARK_CONFIG_FILE`, else `tidemark.config.json`
 * in the bundle's own folder, else the JSON in `TIDEMARK_CONFIG`. Fails fast naming all three.
 */
export function loadRuntimeConfig(env: NodeJS.ProcessEnv = process.env, bundleDir = path.dirname(fileURLToPath(import.meta.url))): TidemarkConfig {
  const named = env[RUNTIME_CONFIG_FILE_ENV];
  const file = named !== undefined && named !== '' ? named : path.join(bundleDir, RUNTIME_CONFIG_FILE);
  if (existsSync(file)) return parse(readFileSync(file, 'utf8'), file);
  const inline = env.TIDEMARK_CONFIG;
  if (inline !== undefined && inline !== '') return parse(inline, 'TIDEMARK_CONFIG');
  throw new ConfigError(
    [`no config: ${file} does not exist, and neither ${RUNTIME_CONFIG_FILE_ENV} nor the environment variable TIDEMARK_CONFIG is set`],
    'runtime',
  );
}
