/**
 * Goal 4: do the batching defaults reach the write bound in live traffic? A producer PutRecords the
 * bench workload into a one-shard stream at a fixed rate for a bounded time while the real local
 * runner (`runPoller`, the code behind `tidemark run`) applies it with a given `BatchSize` and
 * batching window. Per run: the rate achieved, the batches the runner formed, DynamoDB write
 * requests and write units per event (counted on the client, per table), the bound (one write per
 * distinct key per batch, over the batches actually formed), the end-to-end lag (PutRecords sent →
 * the batch holding the record applied), and a check of the final table against the expected state.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PutRecordsCommand, type _Record } from '@aws-sdk/client-kinesis';
import { eventBytes, MAX_PAYLOAD_BYTES, runPoller } from '../../bin/cli/runner.js';
import { kinesisEvent } from '../../bin/cli/kinesis-shape.js';
import { streamNameOf } from '../../bin/local/provision.js';
import { CollectingMetricSink, silentLog } from '../../functions/telemetry/sinks.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { keyId } from '../../functions/core/keys.js';
import { Normalizer } from '../../functions/core/normalize.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { ingestDeps } from '../../functions/composition.js';
import type { Target } from '../helpers/target.js';
import { uniqueConfig } from '../helpers/target.js';
import { checkState, expectedState } from './state.js';
import type { Workload } from './workload.js';
import { countSends } from './count-sends.js';

/** A BatchSize and batching window to run with. */
export interface BatchingSetting {
  readonly label: string;
  readonly batchSize: number;
  readonly windowSeconds: number;
}

export interface RateOptions {
  /** Records per second the producer aims at, one run each. */
  readonly rates: readonly number[];
  readonly settings: readonly BatchingSetting[];
  /** How long the producer runs at each rate. */
  readonly seconds: number;
}

/** What one (rate, setting) run measured. */
export interface RateRun {
  readonly rate: number;
  readonly setting: BatchingSetting;
  readonly achieved: number;
  readonly records: number;
  readonly batches: number;
  readonly rowWrites: number;
  readonly statusWrites: number;
  readonly reads: number;
  readonly writeUnits: number;
  readonly bound: number;
  readonly lagP50: number;
  readonly lagP95: number;
  /** PutRecords sent → its batch handed to the handler: the wait the batching settings cause. */
  readonly gatherP50: number;
  readonly gatherP95: number;
  /** Mean handler time per batch (on the emulators, most of it DynamoDB Local). */
  readonly applyMs: number;
  /** Handler time ÷ run time: near 1, the runner cannot keep up and lag grows with the run's length. */
  readonly busy: number;
  readonly stateOk: boolean;
  readonly complete: boolean;
}

const WRITE_COMMANDS = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand', 'TransactWriteItemsCommand']);
const READ_COMMANDS = new Set(['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand', 'ScanCommand', 'TransactGetItemsCommand']);
/** PutRecords takes at most 500 records a call. */
const PUT_RECORDS_MAX = 500;
const TICK_MS = 50;

/** Counts every command a DynamoDB client sends by `<command> <table>` (BatchGetItem counts once per call). */
function countByTable(client: { send(command: object, ...rest: unknown[]): unknown }): Map<string, number> {
  return countSends(client, (name, raw) => {
    const input = (raw ?? {}) as { TableName?: string; RequestItems?: Record<string, unknown> };
    return `${name} ${input.TableName ?? Object.keys(input.RequestItems ?? {}).join('+')}`;
  });
}

const sumWhere = (counts: Map<string, number>, pred: (command: string, table: string) => boolean): number => {
  let n = 0;
  for (const [key, v] of counts) {
    const [command = '', table = ''] = key.split(' ');
    if (pred(command, table)) n += v;
  }
  return n;
};

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;

/** Records of the workload's size (and larger) that one 6 MB event holds, from the runner's own byte count. */
export function payloadLines(workload: Workload): string[] {
  const sample = workload.records.slice(0, 2_000);
  const avg = sample.reduce((n, r) => n + (r.value?.length ?? 0), 0) / Math.max(1, sample.length);
  const sequence = '4'.repeat(56);
  const perRecord = (bytes: number): number => eventBytes(kinesisEvent('tidemark-bench-cdc-abcdef', 'shardId-000000000000', [{ data: new Uint8Array(bytes), partitionKey: '1234', sequenceNumber: sequence, arrival: new Date() }]).Records) - eventBytes([]);
  const fits = (bytes: number): number => Math.floor((MAX_PAYLOAD_BYTES - eventBytes([])) / perRecord(bytes));
  const size = Math.round(avg);
  const lines = [
    `event size: a record of D bytes takes 4*ceil(D/3) (base64) + ${perRecord(0)} bytes (JSON fields, 56-digit sequence number) in the Lambda event; a 6 MB (${MAX_PAYLOAD_BYTES.toLocaleString('en-US')} B) event holds:`,
    `  ${[476, size, 1_048, 2_048, 4_096, 102_400, 1_048_576].map((b) => `${fits(b).toLocaleString('en-US')} × ${b.toLocaleString('en-US')} B${b === size ? ' (this workload)' : ''}`).join(', ')}`,
  ];
  return lines;
}

/** Runs every (rate, setting) pair in turn, each on its own stream and tables. */
export async function rateBench(target: Target, base: TidemarkConfig, workload: Workload, opts: RateOptions, print: (line: string) => void): Promise<{ runs: RateRun[]; ok: boolean }> {
  const counts = countByTable(target.clients.dynamodb);
  const runs: RateRun[] = [];
  for (const rate of opts.rates) {
    for (const setting of opts.settings) {
      const run = await oneRun(target, base, workload, rate, setting, opts.seconds, counts);
      runs.push(run);
      print(runLine(run));
    }
  }
  return { runs, ok: runs.every((r) => r.stateOk && r.complete) };
}

export const RATE_HEADER =
  'rate/s  setting           achieved/s  records  batches  mean batch  row writes/ev  bound/ev  writes÷bound  +status/ev  reads/ev  WCU/ev  gather p50/p95  apply/batch  busy  lag p50/p95   state';

const sec = (ms: number): string => (ms / 1000).toFixed(2);

function runLine(r: RateRun): string {
  const per = (n: number) => (n / Math.max(1, r.records)).toFixed(3);
  const cols = [
    String(r.rate).padEnd(7),
    `${r.setting.label} ${r.setting.batchSize}/${r.setting.windowSeconds}s`.padEnd(17),
    r.achieved.toFixed(0).padStart(10),
    String(r.records).padStart(8),
    String(r.batches).padStart(8),
    (r.records / Math.max(1, r.batches)).toFixed(0).padStart(11),
    per(r.rowWrites).padStart(14),
    per(r.bound).padStart(9),
    (r.rowWrites / Math.max(1, r.bound)).toFixed(3).padStart(13),
    per(r.statusWrites).padStart(11),
    per(r.reads).padStart(9),
    per(r.writeUnits).padStart(7),
    `${sec(r.gatherP50)}/${sec(r.gatherP95)} s`.padStart(15),
    `${sec(r.applyMs)} s`.padStart(12),
    r.busy.toFixed(2).padStart(5),
    `${sec(r.lagP50)}/${sec(r.lagP95)} s`.padStart(13),
    `  ${r.stateOk ? 'ok' : 'WRONG'}${r.complete ? '' : ' (not all applied)'}`,
  ];
  return cols.join(' ');
}

async function oneRun(target: Target, base: TidemarkConfig, workload: Workload, rate: number, setting: BatchingSetting, seconds: number, counts: Map<string, number>): Promise<RateRun> {
  const config = uniqueConfig({ ...base, ingest: { ...base.ingest, batchSize: setting.batchSize, maxBatchingWindowSeconds: setting.windowSeconds } });
  const table = config.tables[0];
  if (!table) throw new Error('the rate bench needs one table');
  await target.setup(config);
  const stream = streamNameOf(config);
  const stateDir = mkdtempSync(join(tmpdir(), 'tidemark-rate-'));
  const deps = ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: silentLog });
  const before = new Map(counts);

  const putAt = new Map<string, number>();
  const applied = new Set<string>();
  const lags: number[] = [];
  const gathers: number[] = [];
  let applyMs = 0;
  let batches = 0;
  let bound = 0;
  let writeUnits = 0;
  let current: readonly _Record[] = [];
  let invokedAt = 0;
  const controller = new AbortController();
  const runner = runPoller({
    kinesis: target.clients.kinesis,
    deps,
    streamName: stream,
    stateDir,
    batchSize: setting.batchSize,
    maxBatchingWindowMs: setting.windowSeconds * 1000,
    maxRetries: 3,
    signal: controller.signal,
    beforeInvoke: (_shard, records) => {
      current = records;
      invokedAt = performance.now();
    },
    onBatch: (_shard, summary) => {
      // A crashed invocation reports an empty summary and is retried: count the batch once it applied.
      if (summary.records !== current.length || summary.failed > 0) return;
      const now = performance.now();
      batches++;
      applyMs += now - invokedAt;
      bound += new Set(current.map((r) => r.PartitionKey)).size;
      writeUnits += summary.writeUnits;
      for (const r of current) {
        const seq = r.SequenceNumber ?? '';
        if (applied.has(seq)) continue;
        applied.add(seq);
        const at = putAt.get(seq);
        if (at === undefined) continue;
        lags.push(now - at);
        gathers.push(invokedAt - at);
      }
    },
  });

  // The producer: at every tick, send what the schedule says is due (PutRecords of at most 500).
  const budget = Math.min(workload.records.length, Math.ceil(rate * seconds));
  let sent = 0;
  const started = performance.now();
  let lastPut = started;
  while (sent < budget) {
    const due = Math.min(budget, Math.floor((rate * (performance.now() - started)) / 1000));
    while (sent < due) {
      const chunk = workload.records.slice(sent, Math.min(due, sent + PUT_RECORDS_MAX));
      const at = performance.now();
      const res = await target.clients.kinesis.send(new PutRecordsCommand({ StreamName: stream, Records: chunk.map((r) => ({ Data: r.value ?? new Uint8Array(), PartitionKey: r.transport.partitionKey ?? 'none' })) }));
      if (res.FailedRecordCount) throw new Error(`${res.FailedRecordCount} records were not accepted by the stream`);
      for (const r of res.Records ?? []) if (r.SequenceNumber) putAt.set(r.SequenceNumber, at);
      sent += chunk.length;
      lastPut = performance.now();
    }
    await sleep(TICK_MS);
  }
  const achieved = sent / ((lastPut - started) / 1000);

  // Let the runner apply what is left (at most one window plus one batch), then stop it.
  const deadline = performance.now() + setting.windowSeconds * 1000 + 30_000;
  while (applied.size < sent && performance.now() < deadline) await sleep(100);
  controller.abort();
  await runner;
  const finished = performance.now();
  rmSync(stateDir, { recursive: true, force: true });

  const delta = new Map([...counts].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
  const rowWrites = sumWhere(delta, (c, t) => WRITE_COMMANDS.has(c) && t === table.target);
  const statusWrites = sumWhere(delta, (c, t) => WRITE_COMMANDS.has(c) && t === config.statusTable);
  const reads = sumWhere(delta, (c, t) => READ_COMMANDS.has(c) && (t === table.target || t === config.statusTable));

  const normalizer = new Normalizer(config);
  const events = workload.records.slice(0, sent).flatMap((r) => {
    const res = normalizer.normalize(r);
    if (!res.ok) throw new Error(`bench record did not decode: ${res.reason}`);
    return res.events.filter((e): e is ChangeEvent => e.kind === 'change');
  });
  const expected = expectedState(events, (e) => normalizer.keyIdOf(e));
  const check = await checkState(target.clients.dynamodb, table, expected, (row) => keyId(table, { order_id: row.order_id as number }));
  await target.teardown(config);
  const sorted = [...lags].sort((a, b) => a - b);
  const gathered = [...gathers].sort((a, b) => a - b);
  return {
    rate,
    setting,
    achieved,
    records: applied.size,
    batches,
    rowWrites,
    statusWrites,
    reads,
    writeUnits,
    bound,
    lagP50: percentile(sorted, 0.5),
    lagP95: percentile(sorted, 0.95),
    gatherP50: percentile(gathered, 0.5),
    gatherP95: percentile(gathered, 0.95),
    applyMs: applyMs / Math.max(1, batches),
    busy: applyMs / Math.max(1, finished - started),
    stateOk: check.matches,
    complete: applied.size === sent,
  };
}
