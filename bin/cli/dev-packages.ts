/**
 * The dev dependencies a few commands need, loaded only inside those commands: the local
 * state-machine engine (aws-local-stepfunctions, for `--on local` job runs) and the emulators
 * (DynamoDB Local from amplify-dynamodb-simulator, kinesalite, s3rver, for `local up` and `demo`).
 * An installed tidemark does not carry them; then the command says exactly what to install:
 *
 *   tidemark: the local run of the reconcile state machine needs aws-local-stepfunctions, a dev dependency not installed here
 *     fix: npm install --save-dev aws-local-stepfunctions@3.0.0, or run the deployed one with --on aws
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CliError } from './errors.js';

/** The packages of the local engine and of the emulators. */
export const ENGINE_PACKAGES = ['aws-local-stepfunctions'] as const;
export const EMULATOR_PACKAGES = ['amplify-dynamodb-simulator', 'kinesalite', 's3rver'] as const;
/** The embedded SQL engine the local jobs run their Athena queries on. */
export const SQL_PACKAGES = ['@duckdb/node-api'] as const;

/** `name@version` as tidemark's own package.json pins it (this file sits two levels below it, built or not). */
export function pinned(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies?: Record<string, string> };
    const version = pkg.devDependencies?.[name];
    return version ? `${name}@${version}` : name;
  } catch {
    return name;
  }
}

/** The packages of `names` that cannot be resolved from here. */
export function missingPackages(names: readonly string[]): string[] {
  const require = createRequire(import.meta.url);
  return names.filter((name) => {
    try {
      require.resolve(`${name}/package.json`);
      return false;
    } catch (err) {
      // The package is there, its `exports` just do not list package.json.
      return (err as NodeJS.ErrnoException).code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED';
    }
  });
}

/** Throws the install hint when any of `names` is missing; `what` names the feature, `otherwise` an alternative. */
export function requirePackages(names: readonly string[], what: string, otherwise?: string): void {
  const missing = missingPackages(names);
  if (missing.length === 0) return;
  const plural = missing.length > 1;
  throw new CliError(
    `${what} needs ${missing.join(', ')}, ${plural ? 'dev dependencies' : 'a dev dependency'} not installed here`,
    `npm install --save-dev ${missing.map(pinned).join(' ')}${otherwise ? `, or ${otherwise}` : ''}`,
  );
}

/** The local state-machine engine, or the install hint for `job`. */
export async function localEngine(job: string): Promise<typeof import('../local/stepfunctions.js')> {
  requirePackages(ENGINE_PACKAGES, `the local run of the ${job} state machine`, 'run the deployed one with --on aws');
  return import('../local/stepfunctions.js');
}

/** Throws the install hint unless the embedded SQL engine (DuckDB) is installed, for a local run of `job`. */
export function requireSqlEngine(job: string): void {
  requirePackages(SQL_PACKAGES, `the local run of the ${job} state machine (its queries on DuckDB)`, 'run the deployed one with --on aws');
}
