/**
 * `tidemark replay`: re-apply raw into the live table or a fresh one, or recover failed batches.
 *
 *   tidemark replay --table public.orders --since 2026-11-30T00:00Z [--until …] [--keys keys.jsonl]
 *   tidemark replay --into fresh:shop-fresh-orders --table public.orders   (a new table under <pipeline>-fresh-)
 *   tidemark replay --table public.orders --since … --dry-run       (per key: stored, winner, action)
 *   tidemark replay --from-dlq [file] [--queue-url URL]             (local file, SQS, S3 on-failure)
 *   tidemark replay … --on aws                                      (start the deployed state machine)
 *
 * Locally the replay state machine's own definition runs in-process (bin/local/stepfunctions.ts)
 * against the configured endpoints, with a progress bar on stderr. `--json` prints one summary line.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, ListStateMachinesCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Presets, SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { JsonValue } from '../../functions/core/json.js';
import { listRawObjects, parseRawObject, RawRecordSet, readRawObject } from '../../functions/adapters/raw-reader.js';
import { ingestDeps } from '../../functions/composition.js';
import { CollectingMetricSink } from '../../functions/telemetry/sinks.js';
import { addTally, type DryRunLine, emptyTally } from '../../functions/replay/engine.js';
import { buildReplayEngine, ledgerViewFor, replayTables } from '../../functions/replay/deps.js';
import type { DlqProblem } from '../../functions/replay/dlq.js';
import { parseFailedBatchLines } from '../../functions/replay/dlq.js';
import { type DlqItem, readOnFailureObjects, readQueue, replayFailedBatches } from '../../functions/replay/from-dlq.js';
import { replayStep } from '../../functions/replay/handler.js';
import { batchObjects, type JobContext, type ReplayRequest, runPrefix } from '../../functions/replay/job.js';
import { checkReplaySafety, parseTarget } from '../../functions/replay/safety.js';
import { parseKeysFile, parsePosition, parseTime, SelectionError } from '../../functions/replay/selection.js';
import { REPLAY_FUNCTION, replaySqlDefinition } from '../../lib/replay/definitions.js';
import { QUERY_AT_FUNCTION } from '../../lib/jobs/asl.js';
import { queryAt } from '../../functions/jobs/queries.js';
import { eraseKeysPrefix, historyWarehousePrefix, tableSidePrefix } from '../../functions/adapters/raw-layout.js';
import type { DuckDbEngine } from '../local/duckdb-engine.js';
import { type LocalProgressEvent, runLocalStateMachine } from '../local/stepfunctions.js';
import { cliLog, clients, config as loadConfig, STATE_DIR } from './context.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { replayContext } from '../../functions/composition.js';
import { buildStorage } from '../../functions/adapters/storage.js';

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

export const newRunId = (kind: string) => `${kind}-${new Date().toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;

interface ReplayCliOptions {
  config: string;
  table?: string[];
  all?: boolean;
  since?: string;
  until?: string;
  fromPosition?: string;
  toPosition?: string;
  keys?: string;
  into: string;
  dryRun?: boolean;
  force?: boolean;
  fromDlq?: string | boolean;
  queueUrl?: string;
  onFailurePrefix?: string;
  on: 'local' | 'aws';
  stateMachineArn?: string;
  json?: boolean;
}

/** Adds `tidemark replay` to the program. */
export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description('re-apply raw into the live table or a fresh one (converges: guarded writes, pre-read), or recover failed batches with --from-dlq')
    .option('-c, --config <file>', 'pipeline config', 'tidemark.config.json')
    .option('-t, --table <source...>', 'source tables to replay')
    .option('--all', 'every configured table')
    .option('--since <time>', 'landing time, inclusive (ISO-8601 or epoch ms)')
    .option('--until <time>', 'landing time, exclusive')
    .option('--from-position <pos>', 'lowest position, inclusive: a JSON array such as [1000,1002], or an encoded __pos')
    .option('--to-position <pos>', 'highest position, inclusive')
    .option('--keys <file>', 'JSON Lines of keys: {"table": …, "key": {…}} or bare key objects with one --table')
    .option('--into <target>', 'live, or fresh:<pipeline>-fresh-<suffix> (a new table: same key schema and protections; verified by a full diff); fresh:<table>@<run> continues that run\'s rebuild', 'live')
    .option('--dry-run', 'print, per key, the stored position, the replayed winner and the action; write nothing')
    .option('--force', 'allow a live replay reaching records older than now - tombstoneTtlDays')
    .option('--from-dlq [file]', 'replay failed batches: the local on-failure file(s), plus --queue-url and the S3 on-failure prefix')
    .option('--queue-url <url>', 'the on-failure SQS queue (with --from-dlq)')
    .option('--on-failure-prefix <prefix>', 'S3 on-failure objects (with --from-dlq; default replay.onFailureBucket / replay.onFailurePrefix)')
    .option('--on <where>', 'local (run the state machine in-process) or aws (start the deployed one)', 'local')
    .option('--state-machine-arn <arn>', 'with --on aws; default: the state machine named <pipeline>-replay')
    .option('--json', 'print one JSON summary line on stdout')
    .action(async (o: ReplayCliOptions) => {
      const cfg = loadConfig(o.config);
      if (o.fromDlq !== undefined) await fromDlq(cfg, o);
      else if (o.dryRun) await dryRun(cfg, o);
      else if (o.on === 'aws') await onAws(cfg, o);
      else await local(cfg, o);
    });
}

function tablesOf(cfg: TidemarkConfig, o: ReplayCliOptions): string[] {
  if (o.all && o.table?.length) throw new SelectionError('use --all or --table, not both');
  if (o.all) return cfg.tables.map((t) => t.source);
  if (!o.table?.length) throw new SelectionError('name the tables to replay with --table, or --all');
  return o.table;
}

/** Builds the job request; stores the `--keys` file's canonical keys next to the run. */
async function requestOf(cfg: TidemarkConfig, o: ReplayCliOptions, ctx: JobContext): Promise<ReplayRequest> {
  const tables = tablesOf(cfg, o);
  replayTables(cfg, tables, parseTarget(o.into, cfg.name));
  const runId = newRunId('replay');
  let keysKey: string | undefined;
  if (o.keys) {
    const { keys, problems } = parseKeysFile(readFileSync(o.keys, 'utf8'), cfg, tables);
    if (problems.length > 0) throw new SelectionError(`--keys ${o.keys}:\n  ${problems.map((p) => `line ${p.line}: ${p.detail}`).join('\n  ')}`);
    keysKey = `${runPrefix(cfg, runId)}keys.json`;
    const body = JSON.stringify(Object.fromEntries([...keys].map(([t, set]) => [t, [...set]])));
    await ctx.clients.s3.send(new PutObjectCommand({ Bucket: cfg.raw.bucket, Key: keysKey, Body: body, ContentType: 'application/json' }));
  }
  return {
    runId,
    tables,
    ...(o.since ? { since: parseTime(o.since, '--since') } : {}),
    ...(o.until ? { until: parseTime(o.until, '--until') } : {}),
    ...(o.fromPosition ? { fromPosition: parsePosition(o.fromPosition, '--from-position') } : {}),
    ...(o.toPosition ? { toPosition: parsePosition(o.toPosition, '--to-position') } : {}),
    ...(keysKey ? { keysKey } : {}),
    into: o.into,
    force: o.force === true,
    now: Date.now(),
  };
}

async function jobContext(cfg: TidemarkConfig): Promise<JobContext> {
  const c = await clients(cfg);
  return replayContext(cfg, c, cliLog());
}

function printSummary(o: ReplayCliOptions, summary: Record<string, unknown>, human: string[]): void {
  if (o.json) out(JSON.stringify({ command: 'replay', ...summary }));
  else for (const line of human) out(line);
}

/** The embedded SQL engine over the config's bucket: the history layout's prefixes (raw-layout.ts). */
export async function localSqlEngine(config: TidemarkConfig, s3: S3Client): Promise<DuckDbEngine> {
  const history = config.history.prefix;
  // Loaded when a replay runs: the CLI's other commands start without the DuckDB package.
  const { DuckDbEngine } = await import('../local/duckdb-engine.js');
  return new DuckDbEngine({
    s3,
    bucket: config.raw.bucket,
    rawPrefix: config.raw.prefix,
    quarantinePrefix: config.raw.quarantinePrefix,
    warehousePrefix: historyWarehousePrefix(history),
    tableSidePrefix: tableSidePrefix(history),
    eraseKeysPrefix: eraseKeysPrefix(history),
  });
}

/**
 * Runs the replay state machine on SQL (replaySqlDefinition) in-process: its query loop's Athena
 * task runs the selection on DuckDB over the emulator's objects, its Map reads the buckets with the
 * ItemReader, with a progress bar over the buckets.
 */
export async function runReplayLocally(ctx: JobContext, request: ReplayRequest, onProgress?: (done: number, total: number) => void): Promise<Record<string, JsonValue>> {
  let total = 0;
  let done = 0;
  const definition = replaySqlDefinition({ maxConcurrency: ctx.config.replay.maxConcurrency, toleratedFailurePercentage: ctx.config.replay.toleratedFailurePercentage });
  const engine = await localSqlEngine(ctx.config, ctx.clients.s3);
  const { duckdbAthenaHandler } = await import('../local/athena-local.js');
  const output = await runLocalStateMachine(definition, request as unknown as JsonValue, {
    s3: ctx.clients.s3,
    athena: duckdbAthenaHandler(engine),
    handlers: {
      [QUERY_AT_FUNCTION]: async (input) => JSON.parse(JSON.stringify(await queryAt(input as never, { s3: ctx.clients.s3, config: ctx.config }))) as JsonValue,
      [REPLAY_FUNCTION]: async (input) => {
        const res = await replayStep(input as never, ctx);
        if ((input as { step?: string }).step === 'buckets') {
          total = (res as { buckets?: number }).buckets ?? 0;
          onProgress?.(0, total);
        }
        return res;
      },
    },
    onProgress: (e: LocalProgressEvent) => {
      if (e.type === 'MapIterationSucceeded' || e.type === 'MapIterationFailed') onProgress?.(++done, total);
    },
  });
  return output as Record<string, JsonValue>;
}

/** The local state machine's output as the summary prints it. */
function printLocalSummary(o: ReplayCliOptions, request: ReplayRequest, output: Record<string, JsonValue>, elapsedMs: number): void {
  const summary = (output.summary ?? {}) as Record<string, JsonValue>;
  const verify = (output.verify ?? null) as { diff?: JsonValue; steps?: string[] } | null;
  const tally = (summary.tally ?? {}) as Record<string, number>;
  const n = (k: string) => tally[k] ?? 0;
  const diff = verify?.diff;
  printSummary(
    o,
    { runId: request.runId, into: o.into, tables: request.tables, objects: summary.objects ?? 0, batches: summary.batches ?? 0, ...tally, elapsedMs, ...(diff ? { diff } : {}) },
    [
      `replay ${request.runId} into ${o.into}: ${summary.batches ?? 0} key buckets`,
      `  records=${n('records')} events=${n('events')} selected=${n('selected')} applied=${n('applied')} stale=${n('stale')} duplicates=${n('duplicates')} superseded=${n('superseded')} erased=${n('erased')} failed=${n('failed')}`,
      `  readUnits=${n('readUnits')} writeRequests=${n('writeRequests')} writeUnits=${n('writeUnits')} skippedByPreRead=${n('skippedByPreRead')}`,
      ...(diff ? [`  diff: ${JSON.stringify((diff as { counts?: unknown }).counts)}`, ...(verify?.steps ?? [])] : []),
    ],
  );
}

async function local(cfg: TidemarkConfig, o: ReplayCliOptions): Promise<void> {
  const ctx = await jobContext(cfg);
  const request = await requestOf(cfg, o, ctx);
  const bar = new SingleBar({ format: 'replay [{bar}] {value}/{total} key buckets', stream: process.stderr, hideCursor: true }, Presets.shades_classic);
  let started = false;
  const t0 = Date.now();
  try {
    const output = await runReplayLocally(ctx, request, (done, total) => {
      if (!started) bar.start(total, 0);
      started = true;
      bar.update(done);
    });
    if (started) bar.stop();
    printLocalSummary(o, request, output, Date.now() - t0);
  } catch (e) {
    if (started) bar.stop();
    throw withLedgerKeyHint(cfg, e);
  }
}

/** The dry run's selection from the options: tables, landing times, positions, keys. */
function dryRunSelection(cfg: TidemarkConfig, o: ReplayCliOptions, tables: string[]) {
  const since = o.since ? parseTime(o.since, '--since') : undefined;
  const until = o.until ? parseTime(o.until, '--until') : undefined;
  const keys = o.keys ? parseKeysFile(readFileSync(o.keys, 'utf8'), cfg, tables) : undefined;
  if (keys && keys.problems.length > 0) throw new SelectionError(`--keys: ${keys.problems.map((p) => `line ${p.line}: ${p.detail}`).join('; ')}`);
  return {
    tables,
    since,
    until,
    fromPosition: o.fromPosition ? parsePosition(o.fromPosition, '--from-position') : undefined,
    toPosition: o.toPosition ? parsePosition(o.toPosition, '--to-position') : undefined,
    keys: keys?.keys,
  };
}

/** Why a real run would be refused (replay safety), or null. */
function refusalOf(cfg: TidemarkConfig, o: ReplayCliOptions, target: ReturnType<typeof parseTarget>, tables: string[], oldest: number | null): string | null {
  try {
    checkReplaySafety({ config: cfg, tables, target, oldestLanding: oldest, now: Date.now(), force: o.force === true });
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

function printDryRun(o: ReplayCliOptions, tables: string[], objects: number, lines: readonly DryRunLine[], refusal: string | null, tally: ReturnType<typeof emptyTally>): void {
  for (const l of lines) {
    if (o.json) out(JSON.stringify({ dryRun: true, ...l }));
    else out(`${l.table} ${l.key} stored=${l.stored ?? '-'}${l.storedDeleted ? ' (deleted)' : ''} winner=${l.winner} op=${l.op} action=${l.action}`);
  }
  const actions: Record<string, number> = {};
  for (const l of lines) actions[l.action] = (actions[l.action] ?? 0) + 1;
  printSummary(o, { dryRun: true, into: o.into, tables, objects, keys: lines.length, actions, refusal, ...tally }, [
    `dry run: ${objects} raw objects, ${lines.length} keys: ${Object.entries(actions).map(([a, n]) => `${a}=${n}`).join(' ') || 'nothing to do'}; readUnits=${tally.readUnits}`,
    ...(refusal ? [`note: a real run would be refused: ${refusal}`] : []),
  ]);
}

async function dryRun(cfg: TidemarkConfig, o: ReplayCliOptions): Promise<void> {
  const ctx = await jobContext(cfg);
  const tables = tablesOf(cfg, o);
  const target = parseTarget(o.into, cfg.name);
  const selection = dryRunSelection(cfg, o, tables);
  const { since, until } = selection;
  const objects = (await Promise.all(tables.map((table) => listRawObjects(ctx.clients.s3, { bucket: cfg.raw.bucket, prefix: cfg.raw.prefix, table, since, until })))).flat();
  const oldest = objects.length > 0 ? Math.max(Math.min(...objects.map((x) => x.hourStart)), since ?? 0) : null;
  const refusal = refusalOf(cfg, o, target, tables, oldest);
  // A dry run compares with the live table: a fresh table starts empty, so every key would be written.
  const ledger = await ledgerViewFor(cfg, ctx.clients.dynamodb, tables).catch((err: unknown) => {
    throw withLedgerKeyHint(cfg, err);
  });
  const engine = buildReplayEngine(ctx.storage, { tables: replayTables(cfg, tables, { kind: 'live' }), target: { kind: 'live' }, ledger, log: ctx.log });
  const tally = emptyTally();
  const lines: DryRunLine[] = [];
  for (const batch of batchObjects(objects, cfg.replay.objectsPerBatch)) {
    const set = new RawRecordSet();
    for (const key of batch) set.add(parseRawObject(await readRawObject(ctx.clients.s3, cfg.raw.bucket, key), key));
    const r = await engine.replay(
      set.records().map((x) => x.record),
      selection,
      { dryRun: true },
    );
    addTally(tally, r.tally);
    lines.push(...r.dryRun);
  }
  printDryRun(o, tables, objects.length, lines, refusal, tally);
}

function onFailureFiles(arg: string | boolean | undefined): string[] {
  if (typeof arg === 'string') return [arg];
  const dir = join(STATE_DIR, 'on-failure');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => join(dir, f)) : [];
}

async function fromDlq(cfg: TidemarkConfig, o: ReplayCliOptions): Promise<void> {
  const c = await clients(cfg);
  const log = cliLog();
  const problems: DlqProblem[] = [];
  const items: DlqItem[] = [];
  for (const file of onFailureFiles(o.fromDlq)) {
    const parsed = parseFailedBatchLines(readFileSync(file, 'utf8'), file);
    items.push(...parsed.batches.map((batch) => ({ batch })));
    problems.push(...parsed.problems);
  }
  if (o.queueUrl) items.push(...(await readQueue(new SQSClient({}), o.queueUrl, problems)));
  items.push(...(await readOnFailureObjects(c.s3, cfg.replay.onFailureBucket ?? cfg.raw.bucket, o.onFailurePrefix ?? cfg.replay.onFailurePrefix, problems)));
  const tables = cfg.tables.map((t) => t.source);
  const oldest = Math.min(...items.flatMap((i) => (i.batch.range?.firstArrival !== undefined && i.batch.range?.firstArrival !== null ? [i.batch.range.firstArrival] : [])));
  checkReplaySafety({ config: cfg, tables, target: { kind: 'live' }, oldestLanding: Number.isFinite(oldest) ? oldest : null, now: Date.now(), force: o.force === true });
  const ledger = await ledgerViewFor(cfg, c.dynamodb, tables).catch((err: unknown) => {
    throw withLedgerKeyHint(cfg, err);
  });
  const engine = buildReplayEngine(buildStorage(cfg, c), { tables: replayTables(cfg, tables, { kind: 'live' }), target: { kind: 'live' }, ledger, log });
  const ingest = ingestDeps(cfg, c, { metrics: new CollectingMetricSink(), log });
  const bar = new SingleBar({ format: 'replay --from-dlq [{bar}] {value}/{total} failed batches', stream: process.stderr, hideCursor: true }, Presets.shades_classic);
  if (items.length > 0) bar.start(items.length, 0);
  const report = await replayFailedBatches(items, { config: cfg, s3: c.s3, ingest, engine, ledger, kinesis: c.kinesis, onBatch: (d) => bar.update(d) });
  if (items.length > 0) bar.stop();
  for (const p of problems) err(`${p.source}: ${p.detail}`);
  printSummary(o, { source: 'dlq', ...report, problems: problems.length }, [
    `replay --from-dlq: ${report.batches} failed batches (${report.reingested} whole, re-ingested; ${report.fromRaw} ranges, from raw and ${report.fromStream} records from the stream), ${report.records} records, ${report.missing} missing, ${report.failedBatches} still failing, ${report.acknowledged} queue messages deleted`,
    `  ingest: applied=${report.ingest.applied} stale=${report.ingest.stale} duplicates=${report.ingest.duplicates} quarantined=${report.ingest.quarantined} failed=${report.ingest.failed}`,
    `  from raw: applied=${report.replay.applied} skippedByPreRead=${report.replay.skippedByPreRead} readUnits=${report.replay.readUnits} writeUnits=${report.replay.writeUnits}`,
  ]);
  if (report.failedBatches > 0 || problems.length > 0) process.exitCode = 1;
}

/** Finds a deployed state machine by name. */
export async function stateMachineArnByName(sfn: SFNClient, name: string): Promise<string> {
  let token: string | undefined;
  do {
    const page = await sfn.send(new ListStateMachinesCommand({ nextToken: token }));
    const hit = page.stateMachines?.find((m) => m.name === name);
    if (hit?.stateMachineArn) return hit.stateMachineArn;
    token = page.nextToken;
  } while (token);
  throw new SelectionError(`no state machine named ${name}: deploy the stack, or pass --state-machine-arn`);
}

/** Starts an execution and waits for it, printing its status to stderr. */
export async function runOnAws(sfn: SFNClient, arn: string, name: string, input: unknown): Promise<Record<string, unknown>> {
  const started = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));
  const executionArn = started.executionArn ?? '';
  err(`started ${executionArn}`);
  for (;;) {
    const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (d.status !== 'RUNNING') {
      if (d.status !== 'SUCCEEDED') throw new SelectionError(`execution ${d.status}: ${d.error ?? ''} ${d.cause ?? ''}`.trim());
      return JSON.parse(d.output ?? '{}') as Record<string, unknown>;
    }
    await sleep(5000);
  }
}

async function onAws(cfg: TidemarkConfig, o: ReplayCliOptions): Promise<void> {
  const ctx = await jobContext(cfg);
  const request = await requestOf(cfg, o, ctx);
  const sfn = new SFNClient({});
  const arn = o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-replay`));
  const output = await runOnAws(sfn, arn, request.runId, request);
  const summary = (output.summary ?? {}) as Record<string, unknown>;
  printSummary(o, { runId: request.runId, on: 'aws', into: o.into, ...((summary.tally as object) ?? {}), summaryKey: summary.summaryKey }, [
    `replay ${request.runId} on AWS: ${JSON.stringify(summary.tally ?? {})}`,
    `summary: s3://${cfg.raw.bucket}/${String(summary.summaryKey ?? '')}`,
  ]);
}
