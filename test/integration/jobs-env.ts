/**
 * Shared setup of the jobs integration tests: a fresh pipeline on the integration target, and a way
 * to push Debezium PostgreSQL messages through the ingest's own `processBatch` (raw landed, then
 * guarded writes), as the Lambda would.
 */
import assert from 'node:assert/strict';
import type { SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localDeps } from '../../bin/cli/context.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { processBatch, type BatchSummary } from '../../functions/ingest/process-batch.js';
import { cliEnv, spawnTidemark } from '../helpers/cli-env.js';
import { type Target, uniqueConfig } from '../helpers/target.js';

/** Logs kept in memory, so tests can assert nothing went wrong without spamming stderr. */
export function memoryLog(): Log & { readonly errors: string[]; readonly warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  return { debug: () => {}, info: () => {}, warn: (m) => warnings.push(m), error: (m) => errors.push(m), errors, warnings };
}

export interface Delivery {
  readonly value: string;
  readonly partitionKey: string;
}

export class JobsEnv {
  private sequence = 1_000_000n;
  constructor(
    readonly target: Target,
    readonly config: TidemarkConfig,
  ) {}

  static async create(target: Target, base: TidemarkConfig): Promise<JobsEnv> {
    const config = uniqueConfig(base);
    await target.setup(config);
    return new JobsEnv(target, config);
  }

  /** Delivers the messages as one Kinesis batch through the ingest path; asserts nothing failed. */
  async ingest(deliveries: readonly Delivery[], arrivalTime = Date.now()): Promise<BatchSummary> {
    const records: RawRecord[] = deliveries.map((d) => {
      this.sequence += 1n;
      return {
        value: Buffer.from(d.value, 'utf8'),
        key: Buffer.from(d.partitionKey, 'utf8'),
        topic: null,
        headers: {},
        transport: { kind: 'kinesis', stream: 'jobs-test', shard: 'shardId-000000000000', sequence: String(this.sequence), partitionKey: d.partitionKey, arrivalTime },
      };
    });
    const result = await processBatch(records, { ...localDeps(this.config, this.target.clients), log: memoryLog() });
    assert.deepEqual(result.batchItemFailures, []);
    assert.equal(result.summary.quarantined, 0);
    return result.summary;
  }
}

/**
 * Runs `tidemark <args>` as a child process against the target's endpoints, with the config written
 * to a temporary file (`-c` is added). Returns exit status, stdout and stderr.
 */
export function runCli(target: Target, config: TidemarkConfig, args: readonly string[]): SpawnSyncReturns<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-jobs-cli-'));
  try {
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(config));
    const [command, ...rest] = args;
    return spawnTidemark([command ?? '--help', '-c', configFile, ...rest], { env: cliEnv(target.endpoints), timeout: 180_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
