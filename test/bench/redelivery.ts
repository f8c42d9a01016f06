/**
 * Goal 3 of the performance work: redelivery and replay cost no write capacity.
 *
 * The same original events are planned batch by batch and applied with the real `DynamoWriter`
 * (the ingest's `auto` pre-read: writes at or below the table's running high-water mark are checked
 * with one eventually consistent BatchGetItem first) against `FakeDynamoDB`, which evaluates the
 * guard expressions and charges write units as DynamoDB does (the larger of the old and the new
 * item, per started KB; a failed condition still costs a write). Four runs, side by side:
 *
 *   clean          the stream without redelivery;
 *   same batches   each clean batch plus the copies redelivered among its records (the issue's
 *                  "the same batch with 10% redelivery");
 *   redelivered    the redelivered stream cut every 500 records (the bench workload): more
 *                  batches than the clean stream, so keys split across more batches;
 *   no pre-read    the redelivered stream with the pre-read off (what every write costs otherwise);
 *   re-applied     the whole redelivered stream applied a second time onto the state it produced;
 *   two shards     the redelivered stream split into two shards by key, their batches interleaved,
 *                  one writer (one container serving both shards).
 *
 * Targets: same batches ÷ clean write units ≤ 1.02; re-applied 0 write units.
 *
 *   node --import tsx test/bench/redelivery.ts [--events N --keys K --batch B]
 */
import { fileURLToPath } from 'node:url';
import { DynamoWriter, type PreReadPolicy } from '../../functions/adapters/dynamo-writer.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { Normalizer } from '../../functions/core/normalize.js';
import { planBatch } from '../../functions/core/plan.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { FakeDynamoDB } from '../helpers/fake-dynamodb.js';
import { generateWorkload, type Workload } from './workload.js';

export interface RedeliveryRun {
  readonly label: string;
  readonly records: number;
  readonly writeRequests: number;
  readonly writeUnits: number;
  readonly readRequests: number;
  readonly readUnits: number;
  readonly skipped: number;
  readonly failed: number;
}

export interface RedeliveryOptions {
  readonly config: TidemarkConfig;
  readonly events: number;
  readonly keys: number;
  readonly batch: number;
  readonly seed: number;
}

type EventBatch = readonly ChangeEvent[];

function eventBatches(config: TidemarkConfig, batches: Workload['batches']): EventBatch[] {
  const normalizer = new Normalizer(config);
  return batches.map((batch) =>
    batch.flatMap((r) => {
      const res = normalizer.normalize(r);
      if (!res.ok) throw new Error(`bench record did not decode: ${res.reason}: ${res.detail}`);
      return res.events.filter((e): e is ChangeEvent => e.kind === 'change');
    }),
  );
}

/** Applies the batches in order with one writer (one warm container), summing the writer's totals. */
async function applyAll(label: string, config: TidemarkConfig, writer: DynamoWriter, batches: readonly EventBatch[], preRead: PreReadPolicy): Promise<RedeliveryRun> {
  const normalizer = new Normalizer(config);
  const identify = (e: ChangeEvent) => normalizer.keyIdOf(e);
  const run = { label, records: 0, writeRequests: 0, writeUnits: 0, readRequests: 0, readUnits: 0, skipped: 0, failed: 0 };
  for (const batch of batches) {
    run.records += batch.length;
    const { totals } = await writer.writeAll(planBatch(batch, identify).writes, { preRead, concurrency: 16 });
    run.writeRequests += totals.writeRequests;
    run.writeUnits += totals.writeUnits;
    run.readRequests += totals.readRequests;
    run.readUnits += totals.readUnits;
    run.skipped += totals.skipped;
    run.failed += totals.failed;
  }
  return run;
}

const newWriter = (config: TidemarkConfig) => {
  const fake = new FakeDynamoDB(config.tables);
  return { fake, writer: new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: config.apply.maxItemBytes }) };
};

/**
 * The redelivered stream cut where the clean stream's batches end: each batch is the clean batch
 * plus the copies redelivered among its records (a record whose bytes were seen before is a copy;
 * copies always follow their original). This is "the same batch with 10% redelivery".
 */
function sameBatchesWithCopies(w: Workload, batch: number): Workload['batches'] {
  const seen = new Set<string>();
  const out: Workload['batches'][number][] = [];
  let current: Workload['records'][number][] = [];
  let originals = 0;
  for (const r of w.records) {
    const text = Buffer.from(r.value ?? new Uint8Array()).toString('latin1');
    const original = !seen.has(text);
    if (original && originals > 0 && originals % batch === 0 && current.length > 0) {
      out.push(current);
      current = [];
    }
    if (original) {
      seen.add(text);
      originals++;
    }
    current.push(r);
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Splits a stream's batches into two shards by partition key, then interleaves the shards' batches. */
function twoShards(w: Workload, batch: number): Workload['batches'] {
  const shards: Workload['records'][number][][] = [[], []];
  for (const r of w.records) shards[Number(r.transport.partitionKey ?? '0') % 2]?.push(r);
  const split = shards.map((records) => {
    const out: (typeof records)[] = [];
    for (let i = 0; i < records.length; i += batch) out.push(records.slice(i, i + batch));
    return out;
  });
  const [a = [], b = []] = split;
  const interleaved: Workload['batches'][number][] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x) interleaved.push(x);
    if (y) interleaved.push(y);
  }
  return interleaved;
}

/** Final state of a fake table as `key → __pos`, to check that every run converged to the same rows. */
const positions = (fake: FakeDynamoDB, target: string) =>
  new Map(fake.items(target).map((item) => [JSON.stringify(item.order_id), JSON.stringify(item.__pos) + JSON.stringify(item.__deleted ?? null)]));

export async function measureRedelivery(o: RedeliveryOptions): Promise<{ runs: RedeliveryRun[]; converged: boolean; lines: string[] }> {
  const table = o.config.tables[0];
  if (!table) throw new Error('bench config has no table');
  const base = { events: o.events, keys: o.keys, batch: o.batch, zipf: 1.1, seed: o.seed };
  const clean = generateWorkload({ ...base, redelivery: 0 });
  const redelivered = generateWorkload({ ...base, redelivery: 0.1 });
  const cleanBatches = eventBatches(o.config, clean.batches);
  const redeliveredBatches = eventBatches(o.config, redelivered.batches);

  const a = newWriter(o.config);
  const b = newWriter(o.config);
  const c = newWriter(o.config);
  const d = newWriter(o.config);
  const e = newWriter(o.config);
  const runs = [
    await applyAll('clean', o.config, a.writer, cleanBatches, 'auto'),
    await applyAll('same batches', o.config, e.writer, eventBatches(o.config, sameBatchesWithCopies(redelivered, o.batch)), 'auto'),
    await applyAll('redelivered', o.config, b.writer, redeliveredBatches, 'auto'),
    await applyAll('no pre-read', o.config, c.writer, redeliveredBatches, 'never'),
    await applyAll('re-applied', o.config, b.writer, redeliveredBatches, 'auto'),
    await applyAll('two shards', o.config, d.writer, eventBatches(o.config, twoShards(redelivered, o.batch)), 'auto'),
  ];
  const states = [a, b, c, d, e].map((x) => positions(x.fake, table.target));
  const reference = states[0] ?? new Map();
  const converged = states.every((s) => s.size === reference.size && [...s].every(([k, v]) => reference.get(k) === v));

  const by = new Map(runs.map((r) => [r.label, r]));
  const units = (label: string) => by.get(label)?.writeUnits ?? Number.NaN;
  const per = (n: number, records: number) => (n / Math.max(1, records)).toFixed(3);
  const lines = [
    `goal 3: write units with redelivery / without, same ${o.events} original events (${redelivered.redelivered} redelivered), batch ${o.batch}, zipf 1.1;`,
    '        real DynamoWriter (pre-read auto) on the guard-evaluating fake DynamoDB (units as DynamoDB charges them)',
    `  ${'run'.padEnd(12)} ${'records'.padStart(7)} ${'write req'.padStart(9)} ${'write units'.padStart(11)} ${'WU/record'.padStart(9)} ${'read req'.padStart(8)} ${'read units'.padStart(10)} ${'skipped'.padStart(7)}`,
    ...runs.map(
      (r) =>
        `  ${r.label.padEnd(12)} ${String(r.records).padStart(7)} ${String(r.writeRequests).padStart(9)} ${String(r.writeUnits).padStart(11)} ${per(r.writeUnits, r.records).padStart(9)} ${String(r.readRequests).padStart(8)} ${r.readUnits.toFixed(1).padStart(10)} ${String(r.skipped).padStart(7)}`,
    ),
    `  same batches with their redeliveries / clean write units: ${(units('same batches') / units('clean')).toFixed(3)} (target ≤ 1.02)`,
    `  the redelivered stream re-cut into ${o.batch}-record batches / clean: ${(units('redelivered') / units('clean')).toFixed(3)}; without the pre-read: ${(units('no pre-read') / units('clean')).toFixed(3)}`,
    `  re-applied window: ${units('re-applied')} write units (target 0); two shards interleaved / clean: ${(units('two shards') / units('clean')).toFixed(3)}`,
    `  every run ends in the same rows (key → position, tombstone): ${converged ? 'yes' : 'NO'}; failed writes: ${runs.reduce((n, r) => n + r.failed, 0)}`,
  ];
  return { runs, converged, lines };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { parseConfig } = await import('../../lib/config/config.js');
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const config = parseConfig({
    name: 'bench',
    format: 'debezium',
    tables: [{ source: 'public.orders', target: 'bench-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
    raw: { bucket: 'bench-raw' },
  });
  const result = await measureRedelivery({ config, events: arg('events', 20_000), keys: arg('keys', 2_000), batch: arg('batch', 500), seed: arg('seed', 20_250_101) });
  for (const l of result.lines) console.log(l);
  process.exitCode = result.converged ? 0 : 1;
}
