/**
 * The integration-test target, chosen by `TIDEMARK_TARGET`, so the same tests run on embedded
 * emulators (default), LocalStack, or a real AWS account:
 * - `embedded`: DynamoDB Local (in-memory), kinesalite and s3rver started in a temp dir;
 * - `localstack`: `TIDEMARK_ENDPOINT` (default http://127.0.0.1:4566), credentials test/test;
 * - `aws`: the SDK default credential chain and endpoints.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningEmulators, startEmulators } from '../../bin/local/emulators.js';
import { deprovision, type ProvisionReport, provision, streamNameOf } from '../../bin/local/provision.js';
import { type Clients, createClients, destroyClients, type Endpoints } from '../../bin/local/clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';

/** Target names accepted in `TIDEMARK_TARGET`. */
export type TargetName = 'embedded' | 'localstack' | 'aws';

/** Where integration tests run. */
export interface Target {
  name: TargetName;
  /** Custom endpoints, or null on real AWS. */
  endpoints: Endpoints | null;
  clients: Clients;
  /** The embedded emulators (their PIDs), or null on other targets. */
  emulators: RunningEmulators | null;
  /** Provisions the config's stream, tables and bucket (idempotent). */
  setup(config: TidemarkConfig): Promise<ProvisionReport>;
  /** Deletes what `setup` created (a no-op once closed). */
  teardown(config: TidemarkConfig): Promise<void>;
  /** Releases the clients and, for `embedded`, stops the emulators and removes their directory. Idempotent. */
  close(): Promise<void>;
}

/** Opens the target named by `TIDEMARK_TARGET` (default `embedded`). */
export async function openTarget(env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const name = (env.TIDEMARK_TARGET ?? 'embedded') as TargetName;
  let endpoints: Endpoints | null = null;
  let emulators: RunningEmulators | null = null;
  let dataDir: string | null = null;
  if (name === 'embedded') {
    dataDir = mkdtempSync(join(tmpdir(), 'tidemark-it-'));
    try {
      emulators = await startEmulators({ dataDir, inMemory: true });
    } catch (err) {
      rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }
    endpoints = emulators.endpoints;
  } else if (name === 'localstack') {
    const url = env.TIDEMARK_ENDPOINT ?? 'http://127.0.0.1:4566';
    const region = env.AWS_REGION ?? 'us-east-1';
    endpoints = { dynamodb: url, kinesis: url, s3: url, region, accessKeyId: 'test', secretAccessKey: 'test' };
  } else if (name !== 'aws') {
    throw new Error(`TIDEMARK_TARGET must be embedded, localstack or aws, not "${name}"`);
  }
  const clients = createClients(endpoints ?? {});
  let closed: Promise<void> | null = null;
  return {
    name,
    endpoints,
    clients,
    emulators,
    setup: (config) => provision(config, clients),
    teardown: async (config) => {
      if (closed === null) await deprovision(config, clients);
    },
    close: () => {
      closed ??= (async () => {
        destroyClients(clients);
        await emulators?.stop();
        if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}

const suffixed = (base: string, id: string, max: number): string => `${base.slice(0, max - id.length - 1)}-${id}`;

/**
 * A copy of `base` whose pipeline name, target tables, status table, bucket and stream carry a
 * short random suffix, so concurrent or repeated tests never collide.
 */
export function uniqueConfig(base: TidemarkConfig, id: string = randomBytes(3).toString('hex')): TidemarkConfig {
  const name = suffixed(base.name, id, 41);
  const statusTable = base.statusTable === `${base.name}-status` ? `${name}-status` : suffixed(base.statusTable, id, 255);
  const source =
    base.source?.type === 'kinesis' ? { ...base.source, streamName: suffixed(streamNameOf(base), id, 128) } : base.source;
  return {
    ...base,
    name,
    statusTable,
    tables: base.tables.map((t) => ({ ...t, target: suffixed(t.target, id, 255) })),
    raw: { ...base.raw, bucket: suffixed(base.raw.bucket, id, 63) },
    ...(source !== undefined ? { source } : {}),
  };
}
