/**
 * The commands that move messages: `apply` (a file through the ingest handler), `put` (a file onto
 * the Kinesis stream) and `run` (the stream through the handler, like the event source mapping).
 * Each shows progress with counts and rate on a terminal, ends with what it did and where the
 * quarantine went, and under `--json` prints `{"summary":{…}}` last.
 *
 *   tidemark put -i changes.jsonl && tidemark run --until-idle
 *   tidemark apply -i changes.jsonl --strict        (exit 1 when a line was rejected)
 */
import { quarantineHourPrefix } from '../../../functions/adapters/raw-layout.js';
import type { BatchSummary } from '../../../functions/ingest/process-batch.js';
import { streamNameOf } from '../../local/provision.js';
import { runApply } from '../apply.js';
import { clients, config as loadConfig, localDeps, STATE_DIR } from '../context.js';
import type { InputShape } from '../input.js';
import { clip, err, humanDuration, out, progress, summaryLine, WIDTH } from '../output.js';
import { putFile } from '../put.js';
import { runPoller } from '../runner.js';

const OUTCOMES = ['applied', 'stale', 'superseded', 'duplicates', 'conflicts', 'quarantined', 'controls', 'failed'] as const;
const outcomes = (t: BatchSummary) => OUTCOMES.map((k) => `${k}=${t[k]}`).join(' ');
const short = (t: BatchSummary) => `applied=${t.applied} stale=${t.stale} quarantined=${t.quarantined}`;
const rate = (n: number, ms: number) => (ms > 0 ? `${Math.round((n * 1000) / ms).toLocaleString('en-US')}/s` : '-');

interface ApplyCliOptions {
  readonly config: string;
  readonly input: string;
  readonly inputShape: InputShape;
  readonly batchSize: number;
  readonly strict?: boolean;
  readonly json?: boolean;
}

export async function applyCommand(o: ApplyCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const c = await clients(cfg);
  const started = Date.now();
  const quarantine = `s3://${cfg.raw.bucket}/${quarantineHourPrefix(cfg.raw.quarantinePrefix, started)}`;
  let bar: ReturnType<typeof progress> | null = null;
  const result = await runApply(localDeps(cfg, c), {
    path: o.input,
    shape: o.inputShape,
    batchSize: o.batchSize,
    maxRetries: cfg.ingest.retryAttempts,
    onBatch: (done, total, totals) => {
      bar ??= progress('apply', total, 'records', { quiet: o.json === true });
      bar.update(done, short(totals));
    },
  });
  (bar as ReturnType<typeof progress> | null)?.stop();
  const t = result.totals;
  const ms = Date.now() - started;
  const rejected = t.quarantined + result.problems.length;
  const exitCode = o.strict && rejected > 0 ? 1 : 0;
  if (o.json) {
    for (const p of result.problems) out(JSON.stringify({ problem: true, line: p.line, reason: p.reason }));
    out(summaryLine({ command: 'apply', input: o.input, ...t, inputProblems: result.problems.length, retries: result.retries, quarantine: t.quarantined > 0 ? quarantine : null, elapsedMs: ms, exitCode }));
  } else {
    for (const p of result.problems) out(clip(`line ${p.line}: ${p.reason}`, WIDTH));
    out(`apply: ${t.records} records in ${humanDuration(ms)} (${rate(t.records, ms)}), ${t.dynamoRequests} writes, ${t.s3Puts} raw objects`);
    out(`  ${outcomes(t)}`);
    out(t.quarantined > 0 ? `  quarantined ${t.quarantined} records → ${quarantine}` : `  nothing quarantined (quarantine: s3://${cfg.raw.bucket}/${cfg.raw.quarantinePrefix})`);
    if (result.problems.length > 0) out(`  ${result.problems.length} lines not applied (listed above)`);
    if (result.retries > 0) out(`  ${result.retries} batches retried`);
  }
  process.exitCode = exitCode;
}

interface PutCliOptions {
  readonly config: string;
  readonly input: string;
  readonly stream?: string;
  readonly json?: boolean;
}

export async function putCommand(o: PutCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const c = await clients(cfg);
  const stream = o.stream ?? streamNameOf(cfg);
  const started = Date.now();
  let bar: ReturnType<typeof progress> | null = null;
  const r = await putFile(cfg, c.kinesis, stream, o.input, (done, total) => {
    bar ??= progress('put', total, 'records', { quiet: o.json === true });
    bar.update(done);
  });
  (bar as ReturnType<typeof progress> | null)?.stop();
  const ms = Date.now() - started;
  if (o.json) out(summaryLine({ command: 'put', input: o.input, stream, ...r, elapsedMs: ms }));
  else {
    out(`put: ${r.records} records onto Kinesis stream ${stream} in ${humanDuration(ms)} (${rate(r.records, ms)}), ${r.keys} partition keys, ${r.retried} retried`);
    if (r.undecodable > 0) out(`  ${r.undecodable} lines could not be decoded: they go onto the stream as they are, and ingest quarantines them`);
    out(`  apply them: npx tidemark run -c ${o.config} --until-idle`);
  }
}

interface RunCliOptions {
  readonly config: string;
  readonly untilIdle?: boolean;
  readonly batchSize?: number;
  readonly maxBatchingWindow?: number;
  readonly json?: boolean;
}

export async function runCommand(o: RunCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const c = await clients(cfg);
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  const stream = streamNameOf(cfg);
  if (!o.json) err(`run: polling Kinesis stream ${stream}${o.untilIdle ? ' until it is idle' : ' (Ctrl-C stops)'}`);
  const bar = progress('run', null, 'records', { quiet: o.json === true });
  const started = Date.now();
  const totals = await runPoller({
    kinesis: c.kinesis,
    deps: localDeps(cfg, c),
    streamName: stream,
    stateDir: STATE_DIR,
    batchSize: o.batchSize ?? cfg.ingest.batchSize,
    maxBatchingWindowMs: o.maxBatchingWindow ?? cfg.ingest.maxBatchingWindowSeconds * 1000,
    maxRetries: cfg.ingest.retryAttempts,
    stopWhenIdle: o.untilIdle ? 5 : undefined,
    signal: controller.signal,
    onBatch: (_shard, _s, t) => bar.update(t.records, short(t)),
  });
  bar.stop();
  const ms = Date.now() - started;
  if (o.json) out(summaryLine({ command: 'run', stream, ...totals, elapsedMs: ms }));
  else {
    out(`run: ${totals.records} records from ${stream} in ${humanDuration(ms)}, ${totals.dynamoRequests} writes, ${totals.s3Puts} raw objects`);
    out(`  ${outcomes(totals)}`);
    if (totals.quarantined > 0) out(`  quarantined ${totals.quarantined} records → s3://${cfg.raw.bucket}/${cfg.raw.quarantinePrefix}`);
  }
}
