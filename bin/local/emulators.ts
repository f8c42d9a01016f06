/**
 * Local AWS-API emulators as plain child processes (no Docker): DynamoDB Local (the real jar from
 * `amplify-dynamodb-simulator`), kinesalite and s3rver. Used by the integration tests (embedded,
 * in-memory) and, through local-state.ts, by `tidemark local up|down` (detached, persistent, fixed ports).
 *
 * DynamoDB Local binds every interface and cannot be told otherwise: run it inside a network
 * namespace with only loopback (`node bin/with-loopback.mjs …`). The Node emulators are forced onto
 * 127.0.0.1 by the `loopback-only.cjs` preload.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ListStreamsCommand } from '@aws-sdk/client-kinesis';
import { ListBucketsCommand } from '@aws-sdk/client-s3';
import { createClients, destroyClients, type Endpoints } from './clients.js';

export type { Endpoints } from './clients.js';

/** The three emulated services. */
export type EmulatorName = 'dynamodb' | 'kinesis' | 's3';
/** A port or PID per emulator. */
export type PerEmulator<T> = { dynamodb: T; kinesis: T; s3: T };

/** Options of `startEmulators`. */
export interface StartOptions {
  /** Holds `logs/<name>.log` and, when persistent, the data of each emulator. */
  dataDir: string;
  /** Ports to listen on; 0 or absent picks a free port. */
  ports?: Partial<PerEmulator<number>>;
  /** Keep DynamoDB and Kinesis data in memory (s3rver always writes under `dataDir/s3`). */
  inMemory?: boolean;
  log?: (line: string) => void;
  /** Start the processes in their own session and unref them, so they outlive this process. */
  detached?: boolean;
}

/** Running emulators: where they answer, their PIDs, and how to stop them. */
export interface RunningEmulators {
  endpoints: Endpoints;
  pids: PerEmulator<number>;
  /** SIGTERM each process, SIGKILL after 3 s, and wait until all have exited. Idempotent. */
  stop(): Promise<void>;
}

/** The emulators, in start order. */
export const NAMES: readonly EmulatorName[] = ['dynamodb', 'kinesis', 's3'];
/** Default ports of `localUp`. */
export const LOCAL_DEFAULT_PORTS: PerEmulator<number> = { dynamodb: 8000, kinesis: 4567, s3: 4569 };
const READY_TIMEOUT_MS: PerEmulator<number> = { dynamodb: 60_000, kinesis: 20_000, s3: 20_000 };
/** Which command line belongs to which emulator, checked before signalling a recorded PID. */
const CMDLINE_MARK: PerEmulator<string> = { dynamodb: 'DynamoDBLocal', kinesis: 'kinesalite', s3: 's3rver' };
const CREDENTIALS = { region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
const JAVA_MISSING =
  'Java 17+ is required for DynamoDB Local: install it (e.g. `apt-get install openjdk-17-jre-headless`) or point AWS_ENDPOINT_URL_DYNAMODB at another DynamoDB';

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));
const PRELOAD = join(dirname(fileURLToPath(import.meta.url)), 'loopback-only.cjs');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A free TCP port on 127.0.0.1 (listen on port 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** True when something listens on `port` of 127.0.0.1. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(true));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

function findOnPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return join(dir, command);
    } catch {
      // not here
    }
  }
  return null;
}

/** True when `pid` is a live (not zombie) process. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false; // never signal a process group or every process
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** True when `pid` is alive and its command line is that emulator's. */
export function isEmulatorProcess(pid: number, name: EmulatorName): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(CMDLINE_MARK[name]);
  } catch {
    return process.platform !== 'linux';
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once every PID has exited. */
export async function killPids(candidates: readonly number[], graceMs = 3000): Promise<void> {
  const signal = (pid: number, sig: NodeJS.Signals): void => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  const pids = candidates.filter(isAlive);
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < deadline) await sleep(50);
  for (const pid of pids.filter(isAlive)) signal(pid, 'SIGKILL');
  const hardDeadline = Date.now() + 5000;
  while (pids.some(isAlive) && Date.now() < hardDeadline) await sleep(50);
}

function logTail(path: string, lines = 20): string {
  try {
    const text = readFileSync(path, 'utf8').trimEnd();
    return text === '' ? '(log is empty)' : text.split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function command(name: EmulatorName, port: number, dataDir: string, inMemory: boolean): { cmd: string; args: string[]; cwd?: string } {
  if (name === 'dynamodb') {
    const dir = join(packageDir('amplify-dynamodb-simulator'), 'emulator');
    const storage = inMemory ? ['-inMemory'] : ['-dbPath', join(dataDir, 'dynamodb')];
    const args = [`-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`, '-jar', join(dir, 'DynamoDBLocal.jar')];
    return { cmd: 'java', args: [...args, '-sharedDb', '-disableTelemetry', '-port', String(port), ...storage], cwd: dir };
  }
  if (name === 'kinesis') {
    const cli = join(packageDir('kinesalite'), 'cli.js');
    const timing = ['--createStreamMs', '0', '--deleteStreamMs', '0', '--updateStreamMs', '0'];
    // kinesalite's default account limit is 10 shards: a test suite (one stream per test) or a few local pipelines exceed it.
    const limits = ['--shardLimit', '200'];
    const storage = inMemory ? [] : ['--path', join(dataDir, 'kinesis')];
    return { cmd: process.execPath, args: ['--require', PRELOAD, cli, '--port', String(port), ...timing, ...limits, ...storage] };
  }
  const cli = join(packageDir('s3rver'), 'bin', 's3rver.js');
  const flags = ['-d', join(dataDir, 's3'), '-a', '127.0.0.1', '-p', String(port), '--no-vhost-buckets', '--silent'];
  return { cmd: process.execPath, args: ['--openssl-legacy-provider', '--require', PRELOAD, cli, ...flags] };
}

/** One API call per service, bounded by `timeoutMs`; resolves true when it answered. */
export async function answers(name: EmulatorName, endpoints: Endpoints, timeoutMs = 2000): Promise<boolean> {
  const clients = createClients(endpoints, { maxAttempts: 1 });
  const options = { abortSignal: AbortSignal.timeout(timeoutMs) };
  try {
    if (name === 'dynamodb') await clients.dynamodb.send(new ListTablesCommand({ Limit: 1 }), options);
    else if (name === 'kinesis') await clients.kinesis.send(new ListStreamsCommand({ Limit: 1 }), options);
    else await clients.s3.send(new ListBucketsCommand({}), options);
    return true;
  } catch {
    return false;
  } finally {
    destroyClients(clients);
  }
}

async function waitReady(name: EmulatorName, child: ChildProcess, endpoints: Endpoints, logPath: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS[name];
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const how = child.exitCode !== null ? `exit code ${child.exitCode}` : child.signalCode;
      throw new Error(`${name} emulator exited during startup (${how}); last lines of ${logPath}:\n${logTail(logPath)}`);
    }
    if (await answers(name, endpoints)) return;
    if (Date.now() > deadline) {
      throw new Error(`${name} emulator did not answer within ${READY_TIMEOUT_MS[name] / 1000} s; last lines of ${logPath}:\n${logTail(logPath)}`);
    }
    await sleep(name === 'dynamodb' ? 250 : 100);
  }
}

/**
 * Starts DynamoDB Local, kinesalite and s3rver and resolves once each answers a real API call
 * (ListTables, ListStreams, ListBuckets). On any failure the others are stopped and the error
 * carries the tail of the failing emulator's log. Credentials are S3RVER/S3RVER, region us-east-1.
 */
export async function startEmulators(opts: StartOptions): Promise<RunningEmulators> {
  const { dataDir, inMemory = false, detached = false } = opts;
  const log = opts.log ?? (() => {});
  if (findOnPath('java') === null) throw new Error(JAVA_MISSING);
  for (const sub of ['logs', 's3', ...(inMemory ? [] : ['dynamodb', 'kinesis'])]) mkdirSync(join(dataDir, sub), { recursive: true });

  const ports = {} as PerEmulator<number>;
  for (const name of NAMES) ports[name] = opts.ports?.[name] || (await freePort());
  const endpoints: Endpoints = {
    dynamodb: `http://127.0.0.1:${ports.dynamodb}`,
    kinesis: `http://127.0.0.1:${ports.kinesis}`,
    s3: `http://127.0.0.1:${ports.s3}`,
    ...CREDENTIALS,
  };

  const children = {} as PerEmulator<ChildProcess>;
  const pids = {} as PerEmulator<number>;
  const killOnExit = (): void => {
    for (const child of Object.values(children)) child.kill('SIGKILL');
  };
  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      process.removeListener('exit', killOnExit);
      await killPids(Object.values(pids));
      log('emulators stopped');
    })();
    return stopped;
  };

  const started = Date.now();
  for (const name of NAMES) {
    const { cmd, args, cwd } = command(name, ports[name], dataDir, inMemory);
    const logPath = join(dataDir, 'logs', `${name}.log`);
    const fd = openSync(logPath, 'a');
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', fd, fd], detached });
    closeSync(fd);
    child.on('error', (err) => writeFileSync(logPath, `spawn ${cmd} failed: ${err.message}\n`, { flag: 'a' }));
    children[name] = child;
    pids[name] = child.pid ?? 0;
  }
  if (!detached) process.once('exit', killOnExit);

  try {
    await Promise.all(
      NAMES.map(async (name) => {
        await waitReady(name, children[name], endpoints, join(dataDir, 'logs', `${name}.log`));
        log(`${name} ready at ${endpoints[name]} (pid ${pids[name]}) after ${Date.now() - started} ms`);
      }),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  if (detached) for (const child of Object.values(children)) child.unref();
  return { endpoints, pids, stop };
}

/** A word for a POSIX shell: as it is when plain, else single-quoted. */
export const shellQuote = (value: string): string => (/^[\w./:@%+,=-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`);

/** `export NAME=value` lines (POSIX shell) pointing the AWS SDK and CLI at `endpoints`. */
export function envExports(endpoints: Endpoints): string {
  const vars: [string, string][] = [
    ['AWS_ENDPOINT_URL_DYNAMODB', endpoints.dynamodb],
    ['AWS_ENDPOINT_URL_KINESIS', endpoints.kinesis],
    ['AWS_ENDPOINT_URL_S3', endpoints.s3],
    ['AWS_REGION', endpoints.region],
    ['AWS_DEFAULT_REGION', endpoints.region],
    ['AWS_ACCESS_KEY_ID', endpoints.accessKeyId],
    ['AWS_SECRET_ACCESS_KEY', endpoints.secretAccessKey],
  ];
  return `${vars.map(([name, value]) => `export ${name}=${shellQuote(value)}`).join('\n')}\n`;
}

/**
 * The endpoints named by `AWS_ENDPOINT_URL_DYNAMODB`, `_KINESIS` and `_S3` (all three required,
 * else null); region and credentials from the usual variables, defaulting to us-east-1 and S3RVER.
 */
export function endpointsFromEnv(env: NodeJS.ProcessEnv = process.env): Endpoints | null {
  const get = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const dynamodb = get('AWS_ENDPOINT_URL_DYNAMODB');
  const kinesis = get('AWS_ENDPOINT_URL_KINESIS');
  const s3 = get('AWS_ENDPOINT_URL_S3');
  if (dynamodb === undefined || kinesis === undefined || s3 === undefined) return null;
  return {
    dynamodb,
    kinesis,
    s3,
    region: get('AWS_REGION') ?? get('AWS_DEFAULT_REGION') ?? CREDENTIALS.region,
    accessKeyId: get('AWS_ACCESS_KEY_ID') ?? CREDENTIALS.accessKeyId,
    secretAccessKey: get('AWS_SECRET_ACCESS_KEY') ?? CREDENTIALS.secretAccessKey,
  };
}
