/**
 * The CPU-side report of `npm run bench`: one figure per goal of the performance issue, each as a
 * ratio with its workload and how it was measured. Needs no emulator (only a stub HTTP server on
 * 127.0.0.1 for the SDK client measurement).
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import { parseJson } from '../../functions/core/json.js';
import { Normalizer } from '../../functions/core/normalize.js';
import { CONTENT_HASH_LENGTH } from '../../functions/core/plan.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { legacyParseJson } from '../helpers/legacy-json.js';
import { rawLineFor, recordPart } from '../../functions/ingest/raw-lines.js';
import { type CostColumn, costTable, PRICES, perRecordUsage, tidemarkUsage } from './cost.js';
import { decodePlanChunks, type GzipLevelCost, interleaved, measureDecodePlan, median, measureGzipLevels, toBase64Records } from './cpu.js';
import { adversarialTable, measureAdversarial } from './adversarial.js';
import { bundleTable, measureBundles } from './bundle.js';
import { defaultVariant, dynamodbVariants, measureClients, profileClient, s3Variants, startStub, tidemarkVariant } from './sdk.js';
import { generateWorkload, type Workload } from './workload.js';

const f = (n: number, d = 2) => n.toFixed(d);
const pct = (n: number) => `${(100 * n).toFixed(0)}%`;

/** The first `records` records of a workload, in its batches. */
const firstRecords = (w: Workload, records: number): Workload['batches'] => {
  const out: Workload['batches'][number][] = [];
  let left = records;
  for (const b of w.batches) {
    if (left <= 0) break;
    out.push(b.slice(0, left));
    left -= b.length;
  }
  return out;
};

/** Simulated Powertools BatchProcessor loop: every record through the handler, failures collected. */
async function simulatedBatchProcessor<R>(records: readonly R[], handler: (r: R) => Promise<unknown>, idOf: (r: R) => string): Promise<{ itemIdentifier: string }[]> {
  const failures: { itemIdentifier: string }[] = [];
  const successes: unknown[] = [];
  await Promise.all(
    records.map(async (r) => {
      try {
        successes.push(['success', await handler(r), r]);
      } catch (err) {
        failures.push({ itemIdentifier: idOf(r) });
        successes.push(['fail', err, r]);
      }
    }),
  );
  return failures;
}

export interface GoalOptions {
  readonly config: TidemarkConfig;
  readonly seed: number;
  readonly batch: number;
  /** Records in the CPU measurements (narrow rows); the wide-row workload uses half. */
  readonly cpuRecords: number;
  readonly quick: boolean;
}

export async function reportGoals(narrow: Workload, o: GoalOptions, print: (line: string) => void): Promise<void> {
  const table = o.config.tables[0];
  if (!table) throw new Error('bench config has no table');
  const wide = generateWorkload({ events: Math.max(1_000, Math.round(o.cpuRecords / 2)), keys: 1_000, batch: o.batch, zipf: 1.1, redelivery: 0.1, seed: o.seed + 1, noteLength: [690, 730] });
  const rounds = o.quick ? 5 : 7;
  const workloads = [
    { name: 'narrow', w: narrow, batches: firstRecords(narrow, o.cpuRecords) },
    { name: 'wide', w: wide, batches: wide.batches },
  ];
  print('== CPU goals (one process; medians of interleaved rounds; ratios are the figures to compare) ==');
  for (const { name, w, batches } of workloads) {
    const records = batches.reduce((n, b) => n + b.length, 0);
    print(`workload ${name}: ${records} Debezium 3.x records (with ts_us/ts_ns), avg row ${w.avgRowBytes} B, batch ${o.batch}, 10% redelivered`);
  }

  // Goal 1.
  print('');
  print('goal 1: decode + normalize + plan rate / bare base64+JSON.parse rate of the same records (target ≥ 0.25)');
  const decodeCost = new Map<string, ReturnType<typeof measureDecodePlan>>();
  for (const { name, batches } of workloads) {
    const normalizer = new Normalizer(o.config);
    const c = measureDecodePlan(toBase64Records(batches), normalizer, rounds);
    decodeCost.set(name, c);
    print(
      `  ${name.padEnd(6)} ratio ${f(c.ratio)}  (bare ${f(c.bareMicros)} µs/record; pipeline ${f(c.pipelineMicros)} µs = normalize ${f(c.normalizeMicros)} + plan ${f(c.planMicros)})`,
    );
  }
  {
    const texts = firstRecords(narrow, o.cpuRecords).flatMap((b) => b.map((r) => Buffer.from(r.value ?? new Uint8Array()).toString('utf8')));
    let sink = 0;
    const [bare, fresh, legacy] = interleaved(
      [
        () => {
          for (const t of texts) sink += JSON.parse(t) === null ? 1 : 0;
        },
        () => {
          for (const t of texts) sink += parseJson(t) === null ? 1 : 0;
        },
        () => {
          for (const t of texts) sink += legacyParseJson(t) === null ? 1 : 0;
        },
      ],
      rounds,
    ) as [number, number, number];
    if (sink < 0) throw new Error('unreachable');
    print(`  parse alone, narrow: parseJson ${f(bare / fresh)}x the JSON.parse rate; the lossless-json parser it replaces ${f(bare / legacy)}x (${f(legacy / fresh, 1)}x slower than parseJson)`);
  }

  // Goal 5.
  print('');
  print(`goal 5: __hash is ${CONTENT_HASH_LENGTH} base64url characters (132 bits) instead of 43: ${43 - CONTENT_HASH_LENGTH} bytes less on every item`);
  const identifyWith = (n: Normalizer) => (e: ChangeEvent) => n.keyIdOf(e);
  const usages = workloads.map(({ name, batches }) => {
    const n = new Normalizer(o.config);
    const events = batches.map((b) =>
      b.flatMap((r) => {
        const res = n.normalize(r);
        return res.ok ? res.events.filter((e): e is ChangeEvent => e.kind === 'change') : [];
      }),
    );
    return { name, events, tidemark: tidemarkUsage(events, identifyWith(n), table), perRecord: perRecordUsage(events, identifyWith(n)) };
  });
  for (const u of usages) {
    print(
      `  ${u.name.padEnd(6)} avg item ${Math.round(u.tidemark.avgItemBytes)} B → ${f(u.tidemark.writeUnits / Math.max(1, u.tidemark.writeRequests))} WCU per tidemark write; one write per event: avg item ${Math.round(u.perRecord.avgItemBytes)} B, ${f(u.perRecord.writeUnits / u.perRecord.writeRequests)} WCU per write`,
    );
  }

  // Goal 2.
  print('');
  print('goal 2: raw landing (raw lines built, NDJSON, gzip) / decode+normalize+plan of the same batches, timed in the same interleaved rounds, per gzip level (target ≤ 1);');
  print('        first-year $ per million records:');
  print('        Lambda CPU at 1769 MB + S3 storage (30 days Standard, then Infrequent Access, as the raw bucket lifecycle does)');
  const yearDollars = (l: GzipLevelCost) => {
    const gb = (l.compressedBytes * 1e6) / 1024 ** 3;
    return l.micros * PRICES.lambdaMemoryGb * PRICES.lambdaGbSecond + gb * (PRICES.s3StandardGbMonth + 11 * PRICES.s3InfrequentGbMonth);
  };
  const landing = new Map<string, GzipLevelCost>();
  for (const { name, batches } of workloads) {
    const cost = decodeCost.get(name);
    if (!cost) continue;
    const lineNormalizer = new Normalizer(o.config);
    // Normalized outside the timer (decode + plan is the other side of the ratio); the lines are built inside it.
    const normalized = batches.map((b) => b.map((r) => ({ r, res: lineNormalizer.normalize(r) })));
    const buildLines = (b: (typeof normalized)[number]) =>
      b.flatMap(({ r, res }) => {
        if (!res.ok) return [];
        const part = recordPart(r, res.texts);
        return res.events.map((e, i) => rawLineFor(part, e, i === 0));
      });
    const records = batches.reduce((n, b) => n + b.length, 0);
    const decodePlan = decodePlanChunks(toBase64Records(batches), new Normalizer(o.config));
    const levels = measureGzipLevels(normalized, buildLines, records, decodePlan, [1, 3, 6, 9], o.quick ? 3 : 5);
    for (const l of levels) {
      print(
        `  ${name.padEnd(6)} level ${l.level}: ratio ${f(l.vsDecodePlan)}  (${f(l.micros)} µs/record against decode+plan ${f(l.decodePlanMicros)} in the same rounds; gzip ${f(l.micros - l.serializeMicros)}; ${Math.round(l.compressedBytes)} B/record = ${pct(l.compression)} of the text; first year $${yearDollars(l).toFixed(4)}/million)`,
      );
    }
    const fitting = levels.filter((l) => l.vsDecodePlan <= 1);
    const best = fitting.length > 0 ? fitting.reduce((a, b) => (yearDollars(b) < yearDollars(a) ? b : a)) : levels.reduce((a, b) => (b.micros < a.micros ? b : a));
    landing.set(name, best);
    const serialize = levels[0]?.serializeMicros ?? 0;
    print(
      fitting.length > 0
        ? `  ${name.padEnd(6)} recommended: level ${best.level} (cheapest first year among the levels within the target)`
        : `  ${name.padEnd(6)} no level within the target: building and serializing the lines alone takes ${f(serialize)} µs/record (${f(serialize / (levels[0]?.decodePlanMicros ?? 1))} of decode+plan); fastest: level ${best.level}`,
    );
  }

  // Bundles and node CPU per write side by side, on the SDK's public surface (issue 19 retired the
  // 400,000-byte and 0.5 targets).
  print('');
  print('adversarial records through the Normalizer (issue 20): µs per input byte, best of 3, 10 KB to 1 MB');
  for (const line of adversarialTable(measureAdversarial(o.quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]))) print(`  ${line}`);
  print('');
  const bundleRuns = o.quick ? 3 : 9;
  print('bundles as cdk synth builds them (AWS SDK as published), cold start in a fresh node, median:');
  for (const line of bundleTable(measureBundles(bundleRuns), bundleRuns)) print(`  ${line}`);
  print('');
  print('SDK: node CPU per DynamoDB PutItem (guarded, ~300 B item), to a stub HTTP server on 127.0.0.1 (separate process), 16 in flight;');
  print('        every variant interleaved in chunks of 100 in one run, median of rounds, CPU ÷ the default client');
  const stub = await startStub();
  let writeCpu = 0;
  try {
    const variants = o.quick ? [defaultVariant, tidemarkVariant] : [defaultVariant, ...dynamodbVariants];
    const costs = await measureClients(stub.endpoint, variants, o.quick ? 300 : 500, o.quick ? 5 : 9);
    const def = costs[0] as (typeof costs)[number];
    const tuned = costs[variants.indexOf(tidemarkVariant)] as (typeof costs)[number];
    writeCpu = tuned.cpuMicros;
    print(`  ${'variant'.padEnd(52)} CPU ÷ default`);
    costs.forEach((c, i) => {
      const note = variants[i]?.note;
      print(`  ${c.name.padEnd(52)} ${f(c.cpuMicros / def.cpuMicros).padStart(5)}  (${f(c.cpuMicros, 0)} µs${note !== undefined ? `; ${note}` : ''})`);
    });
    print(`  tidemark ÷ default client (public options only): ${f(tuned.cpuMicros / def.cpuMicros)}  (wall ${f(def.wallMicros, 0)} / ${f(tuned.wallMicros, 0)} µs per write)`);
    if (!o.quick) {
      const s3 = await measureClients(stub.endpoint, s3Variants, 300, 9);
      const s3def = s3[0] as (typeof s3)[number];
      print('  S3 PutObject of a 64 KiB raw batch, same method:');
      for (const c of s3) print(`  ${c.name.padEnd(52)} ${f(c.cpuMicros / s3def.cpuMicros).padStart(5)}  (${f(c.cpuMicros, 0)} µs)`);
    }
    for (const v of [defaultVariant, tidemarkVariant]) {
      const shares = await profileClient(stub.endpoint, v, o.quick ? 300 : 1500);
      print(`  where the time goes (${v.name}): ${shares.filter(([, s]) => s >= 0.01).map(([k, s]) => `${k} ${pct(s)}`).join(', ')}`);
    }
  } finally {
    await stub.close();
  }

  // Goal 7.
  print('');
  print('goal 7: cost per million delivered records (us-east-1 on-demand list prices; request units from an in-memory replay with the guard;');
  print('        Lambda GB-s = measured CPU at 1769 MB, a CPU-bound lower bound; Powertools not installed: its BatchProcessor loop is simulated)');
  for (const u of usages) {
    const cost = decodeCost.get(u.name);
    if (!cost) continue;
    const gzip = landing.get(u.name)?.micros ?? 0;
    const recordsN = u.tidemark.records;
    const tidemarkCpu = cost.pipelineMicros + gzip + ((u.tidemark.writeRequests + u.tidemark.s3Puts) / recordsN) * writeCpu;
    const perRecordCpu = cost.normalizeMicros + writeCpu;
    // The simulated BatchProcessor's own overhead per record, on top of the same handler work.
    const flat = u.events.flat();
    let sink = 0;
    const plainTimes: number[] = [];
    const wrappedTimes: number[] = [];
    for (let r = 0; r < 4; r++) {
      let started = performance.now();
      for (const e of flat) sink += await Promise.resolve(e.op.length);
      plainTimes.push(performance.now() - started);
      started = performance.now();
      sink += (await simulatedBatchProcessor(flat, async (e) => e.op.length, (e) => e.table)).length;
      wrappedTimes.push(performance.now() - started);
    }
    const plain = median(plainTimes.slice(1));
    const wrapped = median(wrappedTimes.slice(1));
    const overhead = Math.max(0, ((wrapped - plain) * 1000) / Math.max(1, flat.length));
    if (sink < 0) throw new Error('unreachable');
    const columns: CostColumn[] = [
      { name: 'tidemark', usage: u.tidemark, cpuMicros: tidemarkCpu },
      { name: '1 cond. write/event', usage: u.perRecord, cpuMicros: perRecordCpu },
      { name: 'Powertools-style/record', usage: u.perRecord, cpuMicros: perRecordCpu + overhead },
    ];
    print(`  workload ${u.name} (${recordsN} records):`);
    for (const line of costTable(columns)) print(`    ${line}`);
  }
}
