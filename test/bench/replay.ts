/**
 * Replay benchmark: the bench workload is ingested (raw landed, state applied), then replayed from
 * raw through the replay state machine's definition, run locally:
 *   cold  into a fresh, empty table: every key written once;
 *   warm  into the live table, already current: the pre-read finds every key current, 0 writes.
 * Figures per run: events/s (raw records replayed per second of wall time), read units, write
 * requests and write units, each also per event. Units are DynamoDB Local's consumed capacity.
 *
 * The lead wires `replayBench` into test/bench/run.ts; standalone:
 *   node bin/with-loopback.mjs node --import tsx test/bench/replay.ts [--events N --keys K --batch B]
 */
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { runReplayLocally } from '../../bin/cli/replay.js';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { freshTablePrefix } from '../../functions/config/types.js';
import { ingestDeps } from '../../functions/composition.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import type { JobContext } from '../../functions/replay/job.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { generateWorkload, type Workload } from './workload.js';
import { replayContext } from '../../functions/composition.js';

export interface ReplayRun {
  readonly label: 'cold' | 'warm';
  readonly wallMs: number;
  readonly records: number;
  readonly applied: number;
  readonly readUnits: number;
  readonly writeRequests: number;
  readonly writeUnits: number;
}

export interface ReplayBenchResult {
  readonly cold: ReplayRun;
  readonly warm: ReplayRun;
  readonly lines: string[];
}

const perEvent = (n: number, records: number) => (records === 0 ? '0' : (n / records).toFixed(3));

function line(r: ReplayRun): string {
  const eps = r.records / (r.wallMs / 1000);
  return (
    `${r.label.padEnd(4)}  ${Math.round(eps).toLocaleString('en-US').padStart(8)} events/s  ` +
    `read units ${r.readUnits} (${perEvent(r.readUnits, r.records)}/event)  write requests ${r.writeRequests} (${perEvent(r.writeRequests, r.records)}/event)  ` +
    `write units ${r.writeUnits} (${perEvent(r.writeUnits, r.records)}/event)  applied ${r.applied}`
  );
}

async function run(ctx: JobContext, label: ReplayRun['label'], into: string, table: string): Promise<ReplayRun> {
  const started = performance.now();
  const out = await runReplayLocally(ctx, { runId: `bench-${label}-${Date.now()}`, tables: [table], into, force: true });
  const wallMs = performance.now() - started;
  const t = (out.summary as { tally: Record<string, number> }).tally;
  return { label, wallMs, records: t.records ?? 0, applied: t.applied ?? 0, readUnits: t.readUnits ?? 0, writeRequests: t.writeRequests ?? 0, writeUnits: t.writeUnits ?? 0 };
}

/**
 * Ingests `workload` into a fresh copy of `base` on `target`, then replays it cold (fresh table)
 * and warm (live table). The workload's records must be Debezium PostgreSQL `public.orders` changes.
 */
export async function replayBench(target: Target, workload: Workload, base: TidemarkConfig): Promise<ReplayBenchResult> {
  const config = uniqueConfig(base);
  await target.setup(config);
  const [table] = config.tables;
  if (!table) throw new Error('the bench config needs a table');
  const deps = ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: silentLog });
  for (const batch of workload.batches) await processBatch(batch, deps);
  const ctx: JobContext = replayContext(config, target.clients, silentLog);
  const cold = await run(ctx, 'cold', `fresh:${freshTablePrefix(config.name)}cold`, table.source);
  const warm = await run(ctx, 'warm', 'live', table.source);
  return {
    cold,
    warm,
    lines: [
      `replay of ${workload.records.length} raw records (${workload.distinctKeys} keys), objects per batch ${config.replay.objectsPerBatch}:`,
      line(cold),
      line(warm),
      `warm/cold: write units ${cold.writeUnits === 0 ? '-' : (warm.writeUnits / cold.writeUnits).toFixed(3)}, read units ${cold.readUnits === 0 ? '-' : (warm.readUnits / cold.readUnits).toFixed(2)}, wall ${(warm.wallMs / cold.wallMs).toFixed(2)}`,
    ],
  };
}

/** The bench table, as test/bench/run.ts configures it. */
export const benchConfig = (): TidemarkConfig =>
  parseConfig({
    name: 'benchr',
    format: 'debezium',
    tables: [{ source: 'public.orders', target: 'benchr-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
    raw: { bucket: 'benchr-raw' },
  });

async function main(): Promise<void> {
  const o = new Command('bench-replay')
    .option('--events <n>', 'original change events', Number, 5_000)
    .option('--keys <n>', 'distinct keys', Number, 500)
    .option('--batch <n>', 'records per batch', Number, 500)
    .parse(process.argv)
    .opts<{ events: number; keys: number; batch: number }>();
  const workload = generateWorkload({ events: o.events, keys: o.keys, batch: o.batch, zipf: 1.1, redelivery: 0.1, seed: 20_250_101 });
  const target = await openTarget();
  try {
    for (const l of (await replayBench(target, workload, benchConfig())).lines) console.log(l);
  } finally {
    await target.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
