/**
 * `npm run bench:scale`: issue 21's proof at the reference pipeline's size (SCALE.md, 100 shards,
 * 100k records/s) for 1, 10 and 1,000 tables, after a day and after a year of retention.
 *
 * Measured: raw PUTs per batch (processBatch over the real wiring against a counting S3), byte
 * sizes of raw, history and expected state (the DuckDB engine running compact-hour and
 * fold-expected over a landed sample), the DynamoDB item and export sizes, the CPU of the Lambda
 * steps, and a local full reconcile on DuckDB (s3rver holds the objects; a child process, whose
 * resident memory is the one measured, runs every hour's compaction and fold and the reconciles).
 * Modelled: the Athena, S3, Lambda and DynamoDB bill of each job (model.ts), from those sizes and
 * from what each statement of functions/sql reads (reads.ts), at list prices (prices.ts).
 *
 *   npm run bench:scale                      # landing and the cost tables, no emulator (about 2 min on 2 shared cores)
 *   npm run bench:scale -- --local quick     # … and a local full reconcile of 100k events, 20k keys (about 5 min)
 *   npm run bench:scale -- --local full      # … at the target's size: 1M events, 200k keys (81 min on 2 cores shared at load ~40)
 *
 * s3rver runs among the embedded emulators (test/helpers/target.ts): as root on Linux this script
 * re-executes itself in a loopback-only network namespace (bin/with-loopback.mjs), as `npm run bench` does.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { openTarget } from '../../helpers/target.js';
import { bytes, count, passFail } from './format.js';
import { measureLanding } from './landing.js';
import { LIMIT_BYTES, LOCAL_FULL, LOCAL_QUICK, type LocalResult, localReconcile } from './local-reconcile.js';
import { costReport, type LandingCase, scaleFigures, targetLines } from './report.js';
import { measureSizes } from './sizes.js';
import { scaleBatches, scaleConfig } from './workload.js';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const START = Date.UTC(2026, 10, 30);

function reexecIsolated(): Promise<number> {
  const args = [`${repoRoot}bin/with-loopback.mjs`, process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: repoRoot });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    child.on('error', (err) => {
      process.stderr.write(`bench:scale: cannot re-exec through with-loopback: ${err.message}\n`);
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

/** Landing measured on full batches of the reference sizes: 3,000 records (the ingest default) and 900 (a slower stream's 3 s window). */
export async function landingCases(tableCounts: readonly number[], batchSizes: readonly number[], batchesEach = 3): Promise<LandingCase[]> {
  const out: LandingCase[] = [];
  for (const tables of tableCounts) {
    for (const batch of batchSizes) {
      // One snapshot read per key first, then changes: the measured batches are the full ones of changes, one in 1,000 records malformed.
      const o = { tables, keys: tables, events: tables + batch * batchesEach, batch, start: START, hoursPerDay: 1, rowBytes: 1000, badEvery: 1000 };
      const full = [...scaleBatches(o)].filter((b) => b.records.length === batch);
      out.push({ tables, batch, figures: await measureLanding(full, scaleConfig(tables)) });
    }
  }
  return out;
}

const MIB = 1024 * 1024;

/** The local reconcile's lines, its memory target and whether its memory and inputs stay flat as history grows. */
export function localLines(r: LocalResult): { lines: string[]; ok: boolean; flat: boolean; line: string } {
  const o = r.options;
  const j = r.jobs;
  const lines = [
    `-- local full reconcile on DuckDB (bin/local/duckdb-engine.ts, memory_limit ${o.memoryLimit ?? '512MB'}), objects in s3rver, measured in a child process --`,
    `  history: ${r.load.events.toLocaleString('en-US')} change events of ${r.load.keys.toLocaleString('en-US')} keys over ${o.tables} tables, ${o.days ?? 1} days × ${o.hoursPerDay ?? 24} hours, rows ~${o.rowBytes ?? 1000} B;`,
    `  landed by RawStore.land in ${r.load.objects.toLocaleString('en-US')} objects (${bytes(r.load.rawBytes)} gzip) in ${r.load.seconds.toFixed(0)} s;`,
    `  every hour compact-hour + fold-expected: ${j.compactedRows.toLocaleString('en-US')} lines compacted in ${j.compactSeconds.toFixed(0)} s, folded in ${j.foldSeconds.toFixed(0)} s, peak RSS ${bytes(j.compactPeakRss)}`,
  ];
  for (const c of j.reconciles) {
    const cp = r.load.checkpoints.find((x) => x.runId === c.runId);
    const i = c.inputs;
    lines.push(
      `  reconcile-full ${c.runId} after hour ${c.afterHour + 1} (${(cp?.events ?? 0).toLocaleString('en-US')} events of history): ${c.seconds.toFixed(1)} s, peak RSS ${bytes(c.peakRss)}, ${JSON.stringify(c.counts)} (built to give ${JSON.stringify(cp?.expected ?? {})})`,
    );
    if (i) {
      lines.push(
        `      reads expected_state ${bytes(i.expectedState.bytes)} in ${i.expectedState.objects} files + table side ${bytes(i.tableSide.bytes)} in ${i.tableSide.objects}; not read: history ${bytes(i.history.bytes)} in ${i.history.objects} files, raw ${bytes(i.raw.bytes)} in ${i.raw.objects}`,
      );
    }
  }
  const peak = j.kernelPeakRss ?? j.peakRss;
  const first = j.reconciles[0];
  const last = j.reconciles[j.reconciles.length - 1];
  const readBytes = (c: typeof first) => (c?.inputs ? c.inputs.expectedState.bytes + c.inputs.tableSide.bytes : Number.NaN);
  const historyBytes = (c: typeof first) => c?.inputs?.history.bytes ?? Number.NaN;
  const readRatio = readBytes(last) / readBytes(first);
  const historyRatio = historyBytes(last) / historyBytes(first);
  const rssRatio = (last?.peakRss ?? Number.NaN) / (first?.peakRss ?? Number.NaN);
  // Flat: history grew (≥ 2×) while what reconcile reads and its peak memory grew by at most a quarter.
  const flat = first !== last && historyRatio >= 2 && readRatio <= 1.25 && rssRatio <= 1.25;
  lines.push(
    `  whole child process: peak RSS ${bytes(j.peakRss)} sampled every 25 ms, ${j.kernelPeakRss === null ? 'VmHWM unavailable' : `${bytes(j.kernelPeakRss)} kernel high-water mark (VmHWM)`}; ${j.seconds.toFixed(0)} s in all`,
    `  last vs first reconcile: history × ${historyRatio.toFixed(2)}, bytes reconcile reads × ${readRatio.toFixed(2)}, reconcile peak RSS × ${rssRatio.toFixed(2)}`,
  );
  const sized = r.load.events >= 1_000_000 && r.load.keys >= 200_000;
  const ok = r.correct && peak <= LIMIT_BYTES;
  const line = `local full reconcile, RSS ≤ 1 GiB and classes as built: ${passFail(ok)} (${count(r.load.events)} events, ${count(r.load.keys)} keys, peak ${(peak / MIB).toFixed(0)} MiB, classes ${r.correct ? 'as built' : 'WRONG'})${sized ? ', at the target size (≥ 1M events, ≥ 200k keys)' : ', BELOW the target size of ≥ 1M events and ≥ 200k keys: run with --local full'}`;
  return { lines, ok, flat, line };
}

async function main(): Promise<number> {
  const program = new Command('bench:scale')
    .description('issue 21: raw PUTs, objects a day, and the cost of reconcile, replay and erase at scale; a local full reconcile on DuckDB')
    .addOption(new Option('--local <size>', 'the local full reconcile: none, quick (100k events, 20k keys) or full (1M events, 200k keys, the target size)').choices(['none', 'quick', 'full']).default('none'))
    .option('--sample-events <n>', 'events of the sample the byte sizes are measured on', positiveInt, 20_000)
    .option('--sample-keys <n>', 'keys of that sample', positiveInt, 5_000)
    .parse(process.argv);
  const opts = program.opts<{ local: 'quick' | 'full' | 'none'; sampleEvents: number; sampleKeys: number }>();
  const started = performance.now();
  const log = (line: string) => process.stderr.write(`${line}\n`);

  log(`measuring sizes on ${opts.sampleEvents} events …`);
  const sizes = await measureSizes({ events: opts.sampleEvents, keys: opts.sampleKeys });
  log('measuring landing through processBatch …');
  const landing = await landingCases([1, 10, 1000], [3000, 900]);
  const figures = scaleFigures(sizes, landing);
  for (const l of costReport(sizes, figures)) console.log(l);

  let local: ReturnType<typeof localLines> | undefined;
  if (opts.local !== 'none') {
    const target = await openTarget();
    try {
      const result = await localReconcile(target, opts.local === 'full' ? LOCAL_FULL : LOCAL_QUICK, log);
      local = localLines(result);
      for (const l of local.lines) console.log(l);
      console.log('');
    } finally {
      await target.close();
    }
  }
  console.log('-- targets --');
  const targets = targetLines(figures, local);
  for (const l of targets) console.log(l);
  console.log(`(bench:scale ran in ${Math.round((performance.now() - started) / 1000)} s, --local ${opts.local})`);
  const t = figures.targets;
  return t.onePutPerBatch && t.reconcileFlat && t.eraseUnderADollar && (local === undefined || (local.flat && local.ok)) ? 0 : 1;
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const isolated = process.platform === 'linux' && process.getuid?.() === 0 && process.env.TIDEMARK_NETNS === undefined;
  process.exitCode = isolated ? await reexecIsolated() : await main();
}
