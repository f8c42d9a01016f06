/**
 * Running the `tidemark` CLI as a child process against the integration target, as the CLI
 * integration tests do: bin/tidemark.mjs, the environment that points it at the target's endpoints,
 * the two ways of running it (awaited, rejecting on a non-zero exit as `execFile` does; or
 * synchronously, the exit status in the result), and the `--json` lines of its output.
 *
 *   const env = cliEnv(target.endpoints);
 *   const { stdout } = await execTidemark(['replay', '--json'], { cwd: dir, env, config: configFile });
 *   const lines = jsonLines(stdout);
 */
import { execFile, type SpawnSyncOptionsWithStringEncoding, type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Endpoints } from '../../bin/local/clients.js';

/** The CLI's entry point, bin/tidemark.mjs. */
export const CLI = fileURLToPath(new URL('../../bin/tidemark.mjs', import.meta.url));

/**
 * This process's environment with the AWS endpoint URLs (DynamoDB, Kinesis, S3), region and
 * credentials of `endpoints` (none on real AWS, `null`), then `extra`.
 */
export function cliEnv(endpoints: Endpoints | null, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...(endpoints
      ? {
          AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
          AWS_ENDPOINT_URL_KINESIS: endpoints.kinesis,
          AWS_ENDPOINT_URL_S3: endpoints.s3,
          AWS_REGION: endpoints.region,
          AWS_ACCESS_KEY_ID: endpoints.accessKeyId,
          AWS_SECRET_ACCESS_KEY: endpoints.secretAccessKey,
        }
      : {}),
    ...extra,
  };
}

/** The JSON objects of the lines of `text` that start with `{` (what `--json` prints), in order. */
export const jsonLines = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const execFileAsync = promisify(execFile);

/**
 * Runs `tidemark <args> -c <config>` in `cwd` with `env` (16 MiB of output at most); rejects, with
 * `stdout`, `stderr` and `code` on the error, when it exits non-zero.
 */
export function execTidemark(args: readonly string[], options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly config: string }): Promise<{ stdout: string; stderr: string }> {
  return execFileAsync(process.execPath, [CLI, ...args, '-c', options.config], { cwd: options.cwd, env: options.env, maxBuffer: 1 << 24 });
}

/** Runs `tidemark <args>` (nothing added) and waits for it; output as text. */
export function spawnTidemark(args: readonly string[], options: Omit<SpawnSyncOptionsWithStringEncoding, 'encoding'>): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], { ...options, encoding: 'utf8' });
}
