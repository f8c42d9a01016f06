/**
 * Wall time of one batch under real request latency (issue 25): the ingest handler (`processBatch`
 * with real SDK clients, the runtime's client options) against a stub DynamoDB/S3 endpoint on
 * 127.0.0.1 in its own process (test/bench/latency-stub.mjs) that adds a fixed latency to every
 * request. For 1, 10, 100 and 1,000 tables in one 3,000-record batch of distinct-key inserts it
 * prints the wall time of a batch (a warm container: median of a few batches, and its first batch
 * cold), the requests per batch, and the most requests to any one status partition key.
 *
 * Old against new: the same batches through the code as it was before the issue (commit
 * BEFORE_ISSUE_25, taken out of git into `.bench-before/`, the SDK on its public surface already),
 * interleaved batch by batch with the current code against the same stub, so that the load of the
 * machine hits both alike.
 *
 * Then the CPU side of keeping up with a full shard: the handler's CPU per record at 0 ms latency,
 * for 1 write per record (distinct keys) and about 0.2 (the bench's Zipf workload), against what
 * the default memory's vCPU and the parallelization factor give.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { DYNAMODB_OPTIONS, S3_CHECKSUMS } from '../../functions/adapters/clients.js';
import { ingestDeps } from '../../functions/composition.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { pgMessage } from '../helpers/debezium.js';
import { median } from './cpu.js';
import type { Workload } from './workload.js';

/** The last commit before issue 25: the "before" of the old-against-new line. */
export const BEFORE_ISSUE_25 = '00471cd04181b3e715270bb89ad7a5a6a567e6ac';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };

/** Vcpu share Lambda gives a function of `memoryMb` (1,769 MB is one full vCPU; a Node handler uses one thread). */
export const vcpuOf = (memoryMb: number): number => Math.min(1, memoryMb / 1769);

interface StubStats {
  byOperation: Record<string, number>;
  byStatusPartition: Record<string, number>;
  rowWrites: number;
}

interface Stub {
  readonly endpoint: string;
  reset(latencyMs: number, statusTable: string, forget: boolean): Promise<void>;
  stats(): Promise<StubStats>;
  close(): Promise<void>;
}

async function startLatencyStub(): Promise<Stub> {
  const child = spawn(process.execPath, [join(repoRoot, 'test', 'bench', 'latency-stub.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    reset: async (latencyMs, statusTable, forget) => {
      await fetch(`${endpoint}/__stub/reset?latency=${latencyMs}&statusTable=${encodeURIComponent(statusTable)}${forget ? '&forget=1' : ''}`, { method: 'POST' });
    },
    stats: async () => (await (await fetch(`${endpoint}/__stub/stats`)).json()) as StubStats,
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}

function clientsFor(endpoint: string) {
  return {
    dynamodb: new DynamoDBClient({ endpoint, region: 'us-east-1', credentials, ...DYNAMODB_OPTIONS }),
    s3: new S3Client({ endpoint, region: 'us-east-1', credentials, forcePathStyle: true, ...S3_CHECKSUMS }),
  };
}

const configFor = (tables: number): TidemarkConfig =>
  parseConfig({
    name: 'wall',
    format: 'debezium',
    tables: Array.from({ length: tables }, (_, i) => ({ source: `public.t${i}`, target: `wall-t${i}`, key: ['id'], keyTypes: { id: 'number' } })),
    raw: { bucket: 'wall-raw' },
  });

const NOTE = 'yrraof7riyu1ily8f92nud2uswqlmydcwc1a5ke02 6yada63 tm5nih4kx3dm85ajckpjj737mst4mz9y qqd36yed6s6huy7 00qtsqgmrdfimvijpg5ha8umgt1znb55udn1xxg0i7lmgik';

/** Batch `n` of 3,000 (or `size`) inserts of distinct keys, spread round-robin over `tables` tables. */
export function distinctKeyBatch(tables: number, n: number, size = 3000): RawRecord[] {
  return Array.from({ length: size }, (_, i) => {
    const seq = n * size + i;
    const lsn = 1_000_000 + seq * 8;
    const value = pgMessage({ table: `t${i % tables}`, op: 'c', after: { id: seq + 1, customer_id: 19_005, status: 'paid', amount_minor: 408_642, currency: 'GBP', note: NOTE }, lsn, lastCommitLsn: lsn - 4, tsMs: Date.now() - 500 });
    return {
      value: Buffer.from(JSON.stringify(value), 'utf8'),
      key: null,
      topic: null,
      headers: {},
      transport: { kind: 'kinesis' as const, stream: 'wall', shard: 'shardId-000000000000', sequence: String(10n ** 20n + BigInt(seq)), partitionKey: String(seq + 1), arrivalTime: Date.now() },
    };
  });
}

type Process = (records: readonly RawRecord[], deps: unknown) => Promise<unknown>;
interface Build {
  readonly label: string;
  readonly processBatch: Process;
  readonly deps: (config: TidemarkConfig, clients: ReturnType<typeof clientsFor>) => unknown;
}

const current: Build = {
  label: 'now',
  processBatch: (r, d) => processBatch(r, d as IngestDeps),
  deps: (config, clients) => ingestDeps(config, clients, { metrics: new CollectingMetricSink(), log: silentLog }),
};

/** The code of BEFORE_ISSUE_25, taken out of git once into `.bench-before/<commit>/`; null when git cannot. */
async function buildBefore(print: (line: string) => void): Promise<Build | null> {
  const dir = join(repoRoot, '.bench-before', BEFORE_ISSUE_25.slice(0, 12));
  if (!existsSync(join(dir, 'functions', 'composition.ts'))) {
    mkdirSync(dir, { recursive: true });
    const archive = spawnSync('git', ['-C', repoRoot, 'archive', BEFORE_ISSUE_25, 'functions'], { maxBuffer: 256 * 1024 * 1024 });
    if (archive.status !== 0) {
      print(`  (old against new skipped: git archive ${BEFORE_ISSUE_25.slice(0, 12)} failed: ${String(archive.stderr).trim()})`);
      return null;
    }
    const untar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
    if (untar.status !== 0) {
      print('  (old against new skipped: tar failed)');
      return null;
    }
  }
  const composition = (await import(pathToFileURL(join(dir, 'functions', 'composition.ts')).href)) as { ingestDeps: (c: unknown, cl: unknown, t: unknown) => unknown };
  const batch = (await import(pathToFileURL(join(dir, 'functions', 'ingest', 'process-batch.ts')).href)) as { processBatch: Process };
  return {
    label: 'before',
    processBatch: batch.processBatch,
    deps: (config, clients) => composition.ingestDeps(config, clients, { metrics: new CollectingMetricSink(), log: silentLog }),
  };
}

interface BatchFigures {
  readonly wallMs: number;
  readonly requests: number;
  readonly maxPerStatusKey: number;
  readonly rowWrites: number;
  readonly cpuMs: number;
}

async function timedBatch(stub: Stub, build: Build, deps: unknown, records: readonly RawRecord[]): Promise<BatchFigures> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await build.processBatch(records, deps);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const s = await stub.stats();
  return {
    wallMs,
    requests: Object.values(s.byOperation).reduce((a, b) => a + b, 0),
    maxPerStatusKey: Math.max(0, ...Object.values(s.byStatusPartition)),
    rowWrites: s.rowWrites,
    cpuMs: (used.user + used.system) / 1000,
  };
}

export interface WallOptions {
  readonly quick: boolean;
  /** Records per batch. @default 3000 (the ingest default); fewer only where the machine cannot run the reference size in time */
  readonly records?: number;
  /** Workload of the CPU goals: its batches carry about 0.2 writes per record. */
  readonly zipf: Workload;
}

const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => n.toFixed(2);

/** The wall-time section of `npm run bench`. Bounded: a fixed number of batches, then the stub stops. */
export async function reportWallTime(o: WallOptions, print: (line: string) => void): Promise<void> {
  const latencies = o.quick ? [0, 5] : [0, 1, 5, 10];
  const tableCounts = o.quick ? [1, 1000] : [1, 10, 100, 1000];
  const warm = o.quick ? 2 : 3;
  const stub = await startLatencyStub();
  const clients = clientsFor(stub.endpoint);
  let batchNo = 0;
  try {
    print(`wall time of one ${(o.records ?? 3000).toLocaleString('en')}-record batch of distinct-key inserts, processBatch with the SDK clients of the runtime, against a stub`);
    print('        DynamoDB/S3 on 127.0.0.1 (own process) adding a fixed latency per request; warm = median of batches of one container,');
    print('        cold = its first batch; requests and the most requests to one status partition key are per warm batch (cold in brackets)');
    print(`  ${'tables'.padStart(6)} ${'latency'.padStart(7)} ${'warm ms'.padStart(8)} ${'cold ms'.padStart(8)} ${'× 0 ms'.padStart(7)} ${'requests'.padStart(9)} ${'max/status key'.padStart(15)}  CPU ms`);
    const zeroWall = new Map<number, number>();
    for (const tables of tableCounts) {
      const config = configFor(tables);
      for (const latency of latencies) {
        await stub.reset(latency, config.statusTable, true);
        const deps = current.deps(config, clients);
        const cold = await timedBatch(stub, current, deps, distinctKeyBatch(tables, batchNo++, o.records));
        const runs: BatchFigures[] = [];
        for (let i = 0; i < warm; i++) {
          await stub.reset(latency, config.statusTable, false);
          runs.push(await timedBatch(stub, current, deps, distinctKeyBatch(tables, batchNo++, o.records)));
        }
        const wall = median(runs.map((r) => r.wallMs));
        if (latency === 0) zeroWall.set(tables, wall);
        const ratio = wall / (zeroWall.get(tables) ?? wall);
        const last = runs[runs.length - 1] as BatchFigures;
        print(
          `  ${String(tables).padStart(6)} ${`${latency} ms`.padStart(7)} ${f0(wall).padStart(8)} ${f0(cold.wallMs).padStart(8)} ${f2(ratio).padStart(7)} ${`${last.requests} (${cold.requests})`.padStart(9)} ${`${last.maxPerStatusKey} (${cold.maxPerStatusKey})`.padStart(15)}  ${f0(median(runs.map((r) => r.cpuMs)))}`,
        );
      }
    }
    await oldAgainstNew(stub, clients, o, print, () => batchNo++);
    await fullShard(stub, clients, o, print, () => batchNo++);
  } finally {
    clients.dynamodb.destroy();
    clients.s3.destroy();
    await stub.close();
  }
}

/** One table (and 1,000), the code before the issue against now, batch by batch, same stub. */
async function oldAgainstNew(stub: Stub, clients: ReturnType<typeof clientsFor>, o: WallOptions, print: (line: string) => void, next: () => number): Promise<void> {
  print('');
  print(`old against new: the code of ${BEFORE_ISSUE_25.slice(0, 12)} (before issue 25) and now, one container each, warm batches alternating, median`);
  const before = await buildBefore(print);
  if (!before) return;
  const rounds = o.quick ? 3 : 5;
  for (const tables of o.quick ? [1] : [1, 1000]) {
    const config = configFor(tables);
    for (const latency of [0, 5]) {
      const builds = [before, current];
      const deps = builds.map((b) => b.deps(config, clients));
      const figures: BatchFigures[][] = builds.map(() => []);
      for (let r = 0; r <= rounds; r++) {
        for (let i = 0; i < builds.length; i++) {
          await stub.reset(latency, config.statusTable, r === 0);
          const got = await timedBatch(stub, builds[i] as Build, deps[i], distinctKeyBatch(tables, next(), o.records));
          if (r > 0) figures[i]?.push(got); // round 0 warms each container
        }
      }
      const [b, n] = figures.map((f) => ({ wall: median(f.map((x) => x.wallMs)), requests: median(f.map((x) => x.requests)), max: Math.max(...f.map((x) => x.maxPerStatusKey)), cpu: median(f.map((x) => x.cpuMs)) })) as [
        { wall: number; requests: number; max: number; cpu: number },
        { wall: number; requests: number; max: number; cpu: number },
      ];
      print(
        `  ${String(tables).padStart(4)} table${tables === 1 ? ' ' : 's'} ${`${latency} ms`.padStart(5)}: before ${f0(b.wall)} ms (${b.requests} requests, ${b.max} to one status key, CPU ${f0(b.cpu)} ms), now ${f0(n.wall)} ms (${n.requests}, ${n.max}, CPU ${f0(n.cpu)} ms): now ÷ before ${f2(n.wall / b.wall)}`,
      );
    }
  }
}

/** CPU per record of the handler at 0 ms, and what a shard can sustain with the default memory and parallelization. */
async function fullShard(stub: Stub, clients: ReturnType<typeof clientsFor>, o: WallOptions, print: (line: string) => void, next: () => number): Promise<void> {
  const defaults = configFor(1);
  const vcpu = vcpuOf(defaults.ingest.memoryMb);
  const pf = defaults.ingest.parallelizationFactor;
  print('');
  print(`keeping up with a full shard (1,000 records/s): handler CPU per record at 0 ms, one container, median of batches; the default deployment gives`);
  print(`        ${defaults.ingest.memoryMb} MB = ${f2(vcpu)} vCPU per invocation and a parallelization factor of ${pf} (each of the shard's ${pf} lane${pf === 1 ? '' : 's'} one invocation at a time)`);
  const rounds = o.quick ? 2 : 4;
  const zipfBatches = o.zipf.batches.filter((b) => b.length >= 1000).slice(0, rounds + 1);
  const cases: { name: string; batch: (i: number) => readonly RawRecord[]; config: TidemarkConfig }[] = [
    { name: `1 write per record (${(o.records ?? 3000).toLocaleString('en')} distinct keys, 1 table)`, batch: () => distinctKeyBatch(1, next(), o.records), config: defaults },
    {
      name: 'about 0.2 writes per record (the bench workload: Zipf 1.1 over 2,000 keys, 10% redelivered)',
      batch: (i) => zipfBatches[i % Math.max(1, zipfBatches.length)] ?? [],
      config: parseConfig({ name: 'wall', format: 'debezium', tables: [{ source: 'public.orders', target: 'wall-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }], raw: { bucket: 'wall-raw' } }),
    },
  ];
  for (const c of cases) {
    await stub.reset(0, c.config.statusTable, true);
    const deps = current.deps(c.config, clients);
    const runs: { cpuMs: number; records: number; writes: number }[] = [];
    for (let i = 0; i <= rounds; i++) {
      const records = c.batch(i);
      await stub.reset(0, c.config.statusTable, false);
      const fig = await timedBatch(stub, current, deps, records);
      if (i > 0) runs.push({ cpuMs: fig.cpuMs, records: records.length, writes: fig.rowWrites });
    }
    const perRecordUs = median(runs.map((r) => (1000 * r.cpuMs) / r.records));
    const writesPerRecord = median(runs.map((r) => r.writes / r.records));
    const perShard = (pf * vcpu * 1e6) / perRecordUs;
    print(`  ${c.name}: ${f0(perRecordUs)} µs CPU per record (${f2(writesPerRecord)} writes per record) → ${f0(perShard)} records/s per shard (${f2(perShard / 1000)}× a full shard)`);
  }
}
