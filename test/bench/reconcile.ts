/**
 * Reconcile benchmark: window and full mode through the local state machine on the embedded
 * emulators, over a table of `keys` keys (each created, half of them updated, a tenth deleted).
 * Reports keys/s, raw events/s and DynamoDB read units per key, and checks that a clean table has
 * no findings. `benchReconcile` is called by `npm run bench`; alone:
 *
 *   node bin/with-loopback.mjs node --import tsx test/bench/reconcile.ts [--keys 100000]
 */
import { fileURLToPath } from 'node:url';
import { runReconcile } from '../../bin/cli/reconcile.js';
import { parseConfig } from '../../lib/config/config.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import { ingestDeps } from '../../functions/composition.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import type { ReconcileReport } from '../../functions/jobs/reconcile/report.js';
import { PgHistory } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

export interface ReconcileBenchOptions {
  /** @default 100000 */
  readonly keys?: number;
  /** Records per ingest batch while loading. @default 500 */
  readonly batch?: number;
  /** Shuffle partitions. @default 16 */
  readonly partitions?: number;
  readonly log?: (line: string) => void;
}

export interface ReconcileModeFigures {
  readonly mode: 'window' | 'full';
  readonly seconds: number;
  readonly keys: number;
  readonly rawEvents: number;
  readonly keysPerSecond: number;
  readonly rawEventsPerSecond: number;
  readonly readUnitsPerKey: number;
  readonly findings: number;
}

export interface ReconcileBenchResult {
  readonly keys: number;
  readonly rawEvents: number;
  readonly loadSeconds: number;
  readonly modes: readonly ReconcileModeFigures[];
  /** One line per mode, for the bench summary. */
  readonly lines: readonly string[];
}

const figures = (mode: 'window' | 'full', seconds: number, r: ReconcileReport): ReconcileModeFigures => ({
  mode,
  seconds,
  keys: r.counts.keys,
  rawEvents: r.counts.rawEvents,
  keysPerSecond: r.counts.keys / seconds,
  rawEventsPerSecond: r.counts.rawEvents / seconds,
  readUnitsPerKey: r.counts.keys > 0 ? r.counts.readUnits / r.counts.keys : 0,
  findings: r.findings.total,
});

/** Loads the table through the ingest path, then reconciles it in both modes. Throws if a clean table has findings. */
export async function benchReconcile(target: Target, options: ReconcileBenchOptions = {}): Promise<ReconcileBenchResult> {
  const keys = options.keys ?? 100_000;
  const batch = options.batch ?? 500;
  const log = options.log ?? (() => {});
  const config = uniqueConfig(
    parseConfig({
      name: 'bench-recon',
      tables: [{ source: 'public.customers', target: 'bench-recon-customers', key: ['id'], keyTypes: { id: 'number' } }],
      raw: { bucket: 'bench-recon-raw' },
      jobs: { reconcile: { partitions: options.partitions ?? 16, scanSegments: 4 } },
    }),
  );
  await target.setup(config);
  try {
    const h = new PgHistory();
    for (let id = 1; id <= keys; id++) h.emit('customers', 'c', { id }, { name: `c${id}`, tier: 'basic' });
    for (let id = 2; id <= keys; id += 2) h.emit('customers', 'u', { id }, { name: `c${id}`, tier: 'gold' });
    for (let id = 10; id <= keys; id += 10) h.emit('customers', 'd', { id }, { name: `c${id}`, tier: 'gold' });
    const deps = ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: silentLog });
    const loadStart = performance.now();
    let sequence = 1_000_000n;
    for (let i = 0; i < h.events.length; i += batch) {
      const records: RawRecord[] = h.events.slice(i, i + batch).map((e) => {
        sequence += 1n;
        return {
          value: Buffer.from(e.value, 'utf8'),
          key: Buffer.from(e.partitionKey, 'utf8'),
          topic: null,
          headers: {},
          transport: { kind: 'kinesis', stream: 'bench', shard: 'shardId-000000000000', sequence: String(sequence), partitionKey: e.partitionKey, arrivalTime: Date.now() },
        };
      });
      const result = await processBatch(records, deps);
      if (result.batchItemFailures.length > 0) throw new Error('bench load: a batch failed');
      if ((i / batch) % 20 === 0) log(`reconcile bench: loaded ${Math.min(i + batch, h.events.length)}/${h.events.length} events`);
    }
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const modes: ReconcileModeFigures[] = [];
    for (const mode of ['window', 'full'] as const) {
      const started = performance.now();
      const report = await runReconcile(config, target.clients, { mode, cutoffSeconds: 0, hours: 2 }, { log: silentLog });
      const f = figures(mode, (performance.now() - started) / 1000, report);
      if (f.findings !== 0) throw new Error(`reconcile ${mode} found ${f.findings} findings on a clean table: ${JSON.stringify(report.findings.byClass)}`);
      if (f.keys !== keys) throw new Error(`reconcile ${mode} checked ${f.keys} keys, expected ${keys}`);
      modes.push(f);
      log(`reconcile bench: ${mode} done in ${f.seconds.toFixed(1)} s`);
    }
    const lines = modes.map(
      (m) =>
        `reconcile ${m.mode.padEnd(6)} ${m.keys} keys, ${m.rawEvents} raw events in ${m.seconds.toFixed(1)} s: ${Math.round(m.keysPerSecond)} keys/s, ${Math.round(m.rawEventsPerSecond)} raw events/s, ${m.readUnitsPerKey.toFixed(3)} read units/key, ${m.findings} findings`,
    );
    return { keys, rawEvents: h.events.length, loadSeconds, modes, lines };
  } finally {
    await target.teardown(config).catch(() => {});
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--keys');
  const keys = i > 0 ? Number(process.argv[i + 1]) : 100_000;
  const target = await openTarget();
  try {
    const result = await benchReconcile(target, { keys, log: (l) => process.stderr.write(`${l}\n`) });
    process.stdout.write(`load: ${result.rawEvents} events in ${result.loadSeconds.toFixed(1)} s\n${result.lines.join('\n')}\n`);
  } finally {
    await target.close();
  }
}
