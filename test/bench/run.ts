/**
 * Benchmark. First the CPU goals of the performance work (test/bench/goals.ts: decode+plan against a
 * bare parse, gzip levels, SDK client CPU per write, cost per million events), then tidemark's
 * processBatch against the obvious one-conditional-write-per-event build, on
 * embedded emulators (DynamoDB Local, kinesalite, s3rver), with a correctness check of both final
 * states and the CPU cost of planning on its own.
 *
 *   npm run bench [-- --quick | --cpu-only | --rate-only | --wall-only | --no-rate | --no-wall | --events N --keys K --batch B --seed S --cpu-records R]
 *
 * After the CPU goals, the wall time of one 3,000-record batch under a fixed latency per request
 * (test/bench/wall.ts, issue 25): the ingest handler against a stub endpoint that adds 0, 1, 5 or
 * 10 ms to every request, for 1, 10, 100 and 1,000 tables.
 *
 * The last section (test/bench/rate.ts, goal 4) feeds a stream at 1,000 and 300 records/s for
 * `--rate-seconds` each and applies it with the real local runner, under the config's batching
 * defaults and the former ones (500 records, 1 s).
 *
 * DynamoDB Local binds every interface, so as root on Linux this script re-executes itself inside
 * a loopback-only network namespace (`bin/with-loopback.mjs`) unless it is already in one.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import { DEFAULT_BATCH_SIZE, parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { keyId } from '../../functions/core/keys.js';
import { Normalizer } from '../../functions/core/normalize.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { ingestDeps } from '../../functions/composition.js';
import { emptySummary, processBatch } from '../../functions/ingest/process-batch.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { runBaseline } from './baseline.js';
import { replayBench } from './replay.js';
import { reportGoals } from './goals.js';
import { reportWallTime } from './wall.js';
import { payloadLines, RATE_HEADER, rateBench } from './rate.js';
import { measureRedelivery } from './redelivery.js';
import { countSends } from './count-sends.js';
import { comparisonTable, measurePlanning } from './report.js';
import { checkState, expectedState } from './state.js';
import { generateWorkload, type Workload } from './workload.js';
import { startupSection } from './startup.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Re-runs this script through bin/with-loopback.mjs and resolves with its exit code. */
function reexecIsolated(): Promise<number> {
  const args = [`${repoRoot}bin/with-loopback.mjs`, process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: repoRoot });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    child.on('error', (err) => {
      process.stderr.write(`bench: cannot re-exec through with-loopback: ${err.message}\n`);
      resolve(127);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + 15 : 1)));
  });
}

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

const total = (counts: Map<string, number>): number => [...counts.values()].reduce((a, b) => a + b, 0);
const describeCounts = (counts: Map<string, number>): string => [...counts].map(([k, v]) => `${k.replace(/Command$/, '')} ${v}`).join(', ');

async function main(): Promise<number> {
  const program = new Command('bench')
    .description('tidemark vs a one-write-per-event baseline on embedded emulators')
    .option('--events <n>', 'original change events', positiveInt, 20_000)
    .option('--keys <n>', 'distinct keys', positiveInt, 2_000)
    .option('--batch <n>', `records per batch (default: the ingest default, ${DEFAULT_BATCH_SIZE}; the figures before it changed used 500)`, positiveInt, DEFAULT_BATCH_SIZE)
    .option('--seed <n>', 'PRNG seed', positiveInt, 20_250_101)
    .option('--quick', 'a quick run: 5,000 events over 500 keys, fewer rounds')
    .option('--cpu-only', 'only the CPU goals (no emulator)')
    .option('--cpu-records <n>', 'records in the CPU measurements (default: all 22,000 of the workload, the size the issue profiled)', positiveInt, 22_000)
    .option('--no-jobs', 'skip the replay lines')
    .option('--no-rate', 'skip the fixed-rate runs of the local runner (goal 4)')
    .option('--rate-only', 'only the fixed-rate runs of the local runner (goal 4)')
    .option('--rate-seconds <n>', 'how long the producer runs at each rate', positiveInt, 20)
    .option('--no-wall', 'skip the wall time under a fixed latency per request (issue 25)')
    .option('--wall-only', 'only the wall time under a fixed latency per request (issue 25)')
    .option('--wall-records <n>', 'records per batch of the wall-time section (default 3,000, the ingest default)', positiveInt, 3_000)
    .parse(process.argv);
  const opts = program.opts<{
    events: number;
    keys: number;
    batch: number;
    seed: number;
    quick?: boolean;
    cpuOnly?: boolean;
    cpuRecords: number;
    jobs: boolean;
    rate: boolean;
    rateOnly?: boolean;
    rateSeconds: number;
    wall: boolean;
    wallOnly?: boolean;
    wallRecords: number;
  }>();
  if (opts.quick) {
    if (program.getOptionValueSource('events') === 'default') opts.events = 5_000;
    if (program.getOptionValueSource('keys') === 'default') opts.keys = 500;
    if (program.getOptionValueSource('cpuRecords') === 'default') opts.cpuRecords = 4_000;
    if (program.getOptionValueSource('rateSeconds') === 'default') opts.rateSeconds = 8;
  }
  if (opts.rateOnly) return rateSection(opts);

  if (opts.wallOnly) {
    await wallSection(generateWorkload({ events: opts.events, keys: opts.keys, batch: opts.batch, zipf: 1.1, redelivery: 0.1, seed: opts.seed }), opts.quick === true, opts.wallRecords);
    return 0;
  }

  const genStarted = performance.now();
  const workload = generateWorkload({ events: opts.events, keys: opts.keys, batch: opts.batch, zipf: 1.1, redelivery: 0.1, seed: opts.seed });
  const records = workload.records.length;
  const { c, u, d } = workload.ops;
  console.log(
    `workload: ${opts.events} events + ${workload.redelivered} redelivered = ${records} records, ${opts.keys} keys (${workload.distinctKeys} touched), zipf 1.1, ` +
      `10% redelivered, batch ${opts.batch} (${workload.batches.length} batches), seed ${opts.seed}`,
  );
  console.log(`          ops c/u/d ${c}/${u}/${d}, avg row ${workload.avgRowBytes} bytes, generated in ${Math.round(performance.now() - genStarted)} ms`);

  const base = benchBase();
  const goalsStarted = performance.now();
  await reportGoals(workload, { config: base, seed: opts.seed, batch: opts.batch, cpuRecords: opts.cpuRecords, quick: opts.quick === true }, (line) => console.log(line));
  console.log('');
  const redelivery = await measureRedelivery({ config: base, events: opts.events, keys: opts.keys, batch: opts.batch, seed: opts.seed });
  for (const line of redelivery.lines) console.log(line);
  console.log('');
  startupSection((line) => console.log(line), opts.quick ? 5 : 15);
  console.log(`(CPU goals measured in ${Math.round((performance.now() - goalsStarted) / 1000)} s)`);
  if (opts.wall) await wallSection(workload, opts.quick === true, opts.wallRecords);
  if (opts.cpuOnly) return 0;
  console.log('');
  console.log('== end to end on embedded emulators (DynamoDB Local, kinesalite, s3rver) ==');

  const configA = uniqueConfig(base);
  const configB = uniqueConfig(base);
  const tableA = configA.tables[0]!;
  const tableB = configB.tables[0]!;

  // Normalize once (outside every timer) for the expected state and the planning measurement.
  const normalizer = new Normalizer(configA);
  const identify = (e: ChangeEvent) => normalizer.keyIdOf(e);
  const normalizeBatch = (n: Normalizer, batch: Workload['batches'][number]): ChangeEvent[] =>
    batch.flatMap((r) => {
      const res = n.normalize(r);
      if (!res.ok) throw new Error(`bench record did not decode: ${res.reason}: ${res.detail}`);
      return res.events.filter((e): e is ChangeEvent => e.kind === 'change');
    });
  const eventBatches = workload.batches.map((b) => normalizeBatch(normalizer, b));
  const expected = expectedState(eventBatches.flat(), identify);
  const keyOfRow = (row: Record<string, unknown>) => keyId(tableA, { order_id: row.order_id as number });

  const openStarted = performance.now();
  const target = await openTarget();
  const interrupted = (signal: NodeJS.Signals) => {
    void target.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  let failed = false;
  try {
    const network = process.env.TIDEMARK_NETNS === '1' ? 'loopback-only network namespace' : 'host network, not isolated';
    console.log(`target: ${target.name} (${network}), opened in ${Math.round(performance.now() - openStarted)} ms`);
    await target.setup(configA);
    await target.setup(configB);
    const dynamoCounts = countSends(target.clients.dynamodb);
    const s3Counts = countSends(target.clients.s3);

    // Run A: tidemark.
    const metrics = new CollectingMetricSink();
    const deps = ingestDeps(configA, target.clients, { metrics, log: silentLog });
    const sum = emptySummary();
    let failedBatches = 0;
    const startedA = performance.now();
    for (const batch of workload.batches) {
      const { batchItemFailures, summary } = await processBatch(batch, deps);
      if (batchItemFailures.length > 0) failedBatches++;
      for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += summary[k];
    }
    const wallA = performance.now() - startedA;
    const dynamoA = new Map(dynamoCounts);
    const s3A = new Map(s3Counts);
    dynamoCounts.clear();
    s3Counts.clear();
    console.log(`run A (tidemark): ${(wallA / 1000).toFixed(1)} s; failed batches ${failedBatches}, failed writes ${sum.failed}, quarantined ${sum.quarantined}`);

    // Run B: baseline (decoding included in its wall time, like tidemark's).
    const normalizerB = new Normalizer(configB);
    const startedB = performance.now();
    const baselineBatches = workload.batches.map((b) => normalizeBatch(normalizerB, b));
    const baseline = await runBaseline(target.clients.dynamodb, tableB, baselineBatches, (e) => normalizerB.keyIdOf(e), 16);
    const wallB = performance.now() - startedB;
    console.log(`run B (baseline): ${(wallB / 1000).toFixed(1)} s; applied ${baseline.applied}, rejected by the guard ${baseline.rejected}`);

    const checkA = await checkState(target.clients.dynamodb, tableA, expected, keyOfRow);
    const checkB = await checkState(target.clients.dynamodb, tableB, expected, keyOfRow);
    const planning = measurePlanning(eventBatches, identify);

    console.log('');
    for (const line of comparisonTable(
      records,
      { wallMs: wallA, requests: sum.dynamoRequests, writeUnits: sum.writeUnits, s3Puts: sum.s3Puts },
      { wallMs: wallB, requests: baseline.requests, writeUnits: baseline.writeUnits, s3Puts: 0 },
    ))
      console.log(line);
    console.log('(t/b = tidemark/baseline, b/t = baseline/tidemark; per event = per delivered record)');
    console.log(`applied / stale / superseded / duplicates   tidemark ${sum.applied} / ${sum.stale} / ${sum.superseded} / ${sum.duplicates} (conflicts ${sum.conflicts})`);
    console.log(`                                            baseline ${baseline.applied} applied / ${baseline.rejected} rejected by the guard`);
    console.log(`all DynamoDB calls, tidemark (incl. status rows): ${total(dynamoA)} (${describeCounts(dynamoA)}); summary.dynamoRequests counts the ${sum.dynamoRequests} row writes`);
    console.log(`all S3 calls, tidemark: ${total(s3A)} (${describeCounts(s3A)})`);
    console.log(
      `planning: ${planning.microsPerEvent.toFixed(2)} µs/event (${Math.round(planning.eventsPerSecond).toLocaleString('en-US')} events/s on one core); ` +
        `${planning.bigBatchEvents.toLocaleString('en-US')}-event batch planned in ${planning.bigBatchMs.toFixed(1)} ms`,
    );
    for (const [name, check] of [['tidemark', checkA], ['baseline', checkB]] as const) {
      console.log(`state matches (${name}): ${check.matches ? 'yes' : 'no'} (${check.items} items, ${check.expected} keys expected)`);
      for (const diff of check.differences) console.log(`  ${diff}`);
    }
    failed = !checkA.matches;

    if (opts.jobs) {
      console.log('');
      console.log('== replay from raw (cold: into a fresh table; warm: the live table, already applied) ==');
      for (const l of (await replayBench(target, workload, base)).lines) console.log(l);
    }
    if (opts.rate) failed = !(await printRate(target, opts)) || failed;
  } finally {
    await target.close();
  }
  return failed ? 1 : 0;
}

/** The workload's config with no batching settings given, so `ingest` holds the defaults. */
const benchBase = (): TidemarkConfig =>
  parseConfig({
    name: 'bench',
    format: 'debezium',
    tables: [{ source: 'public.orders', target: 'bench-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
    raw: { bucket: 'bench-raw' },
  });

/** Goal 4: the fixed-rate runs. Quick mode runs only the defaults, for fewer seconds. */
/** The wall-time section (test/bench/wall.ts): a stub endpoint of its own, no emulator. */
async function wallSection(zipf: Workload, quick: boolean, records: number): Promise<void> {
  console.log('');
  console.log('== wall time under a fixed latency per request (stub DynamoDB/S3 on 127.0.0.1) ==');
  const started = performance.now();
  await reportWallTime({ quick, zipf, records }, (line) => console.log(line));
  console.log(`(wall time measured in ${Math.round((performance.now() - started) / 1000)} s)`);
}

async function printRate(target: Target, opts: { seed: number; quick?: boolean; rateSeconds: number }): Promise<boolean> {
  const base = benchBase();
  const rates = [1_000, 300];
  const keys = 2_000;
  const workload = generateWorkload({ events: Math.ceil(Math.max(...rates) * opts.rateSeconds), keys, batch: 500, zipf: 1.1, redelivery: 0.1, seed: opts.seed });
  const settings = [{ label: 'default', batchSize: base.ingest.batchSize, windowSeconds: base.ingest.maxBatchingWindowSeconds }];
  if (!opts.quick) settings.push({ label: 'former', batchSize: 500, windowSeconds: 1 });
  console.log('');
  console.log(`== goal 4: tidemark run fed at a fixed rate (${opts.rateSeconds} s per run, one shard; the bench workload: Zipf 1.1 over ${keys} keys, 10% redelivered) ==`);
  for (const l of payloadLines(workload)) console.log(l);
  console.log(RATE_HEADER);
  const { ok } = await rateBench(target, base, workload, { rates, settings, seconds: opts.rateSeconds }, (l) => console.log(l));
  console.log('(per event = per record applied; bound = one write per distinct key in each batch the runner formed; +status = status-row writes;');
  console.log(' gather = PutRecords sent → its batch handed to the handler (the wait the settings cause); apply = handler time per batch, mostly DynamoDB Local;');
  console.log(' busy = handler time ÷ run time: near 1 the emulators cannot keep up, a backlog builds and gather and lag grow with it;');
  console.log(' lag = PutRecords sent → its batch applied; achieved/s = records sent ÷ time from the first to the last PutRecords; each rate runs the default first)');
  return ok;
}

/** `--rate-only`: the emulators and the goal 4 runs, nothing else. */
async function rateSection(opts: { seed: number; quick?: boolean; rateSeconds: number }): Promise<number> {
  const target = await openTarget();
  try {
    return (await printRate(target, opts)) ? 0 : 1;
  } finally {
    await target.close();
  }
}

const isolated = process.platform === 'linux' && process.getuid?.() === 0 && process.env.TIDEMARK_NETNS === undefined;
process.exitCode = isolated ? await reexecIsolated() : await main();
