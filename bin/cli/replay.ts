/**
 * `tidemark replay`: re-apply raw into the live table or a fresh one, or recover failed batches.
 *
 *   tidemark replay --table public.orders --since 2026-11-30T00:00Z [--until …] [--keys keys.jsonl]
 *   tidemark replay --into fresh:shop-fresh-orders --table public.orders   (a new table under <pipeline>-fresh-)
 *   tidemark replay --table public.orders --since … --dry-run       (per key: stored, winner, action)
 *   tidemark replay --from-dlq [file] [--queue-url URL]             (replay-dlq.ts)
 *   tidemark replay … --on aws                                      (start the deployed state machine)
 *
 * Everything is checked before anything is written or started: the ranges (functions/replay/inputs.ts,
 * the rules the Plan task applies too: `--since` after `--until`, `--from-position` above
 * `--to-position`), the `--keys` file, and, for a local run after an erase, the ledger key (with the
 * hint erase gives). Locally the replay state machine's own definition runs in-process
 * (bin/local/stepfunctions.ts) with progress on a terminal. `--json` ends with `{"summary":{…}}`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { JsonValue } from '../../functions/core/json.js';
import { replayContext } from '../../functions/composition.js';
import { runFile } from '../../functions/adapters/raw-layout.js';
import { ledgerViewFor, replayTables } from '../../functions/replay/deps.js';
import { replayStep } from '../../functions/replay/handler.js';
import { validateReplayRequest } from '../../functions/replay/inputs.js';
import { type JobContext, type ReplayRequest, runPrefix } from '../../functions/replay/job.js';
import { parseTarget } from '../../functions/replay/safety.js';
import { parseKeysFile, parsePosition, parseTime, SelectionError } from '../../functions/replay/selection.js';
import { REPLAY_FUNCTION, replaySqlDefinition } from '../../lib/replay/definitions.js';
import { QUERY_AT_FUNCTION } from '../../lib/jobs/asl.js';
import { queryAt } from '../../functions/jobs/queries.js';
import { eraseKeysPrefix, historyWarehousePrefix, tableSidePrefix } from '../../functions/adapters/raw-layout.js';
import type { DuckDbEngine } from '../local/duckdb-engine.js';
import type { LocalProgressEvent } from '../local/stepfunctions.js';
import { cliLog, clients, config as loadConfig } from './context.js';
import { localEngine, requireSqlEngine } from './dev-packages.js';
import { CliError } from './errors.js';
import { runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { humanDuration, out, progress, summaryLine } from './output.js';
import { dryRun } from './replay-dry-run.js';

export { runOnAws, stateMachineArnByName } from './job-run.js';

export const newRunId = (kind: string) => `${kind}-${new Date().toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;

export interface ReplayCliOptions {
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

/** The selection of a run, parsed and checked: tables, times, positions, the keys file's keys. */
export interface CheckedSelection {
  readonly tables: string[];
  readonly since?: number;
  readonly until?: number;
  readonly fromPosition?: string;
  readonly toPosition?: string;
  readonly keys?: Map<string, Set<string>>;
}

function tablesOf(cfg: TidemarkConfig, o: ReplayCliOptions): string[] {
  if (o.all && o.table?.length) throw new CliError('use --all or --table, not both', '--all, or --table <source…>');
  if (o.all) return cfg.tables.map((t) => t.source);
  if (!o.table?.length) throw new CliError('name the tables to replay', `--table ${cfg.tables.map((t) => t.source).join(' | ')}, or --all`);
  return o.table;
}

/** The shared rules' message in the words of the command line: option names, and positions as typed. */
function asOptions(message: string, o: ReplayCliOptions, s: { fromPosition?: string; toPosition?: string }): string {
  const words: [string, string | undefined][] = [
    ['since (', '--since ('],
    ['until (', '--until ('],
    ['fromPosition ', '--from-position '],
    ['toPosition ', '--to-position '],
    [s.fromPosition ?? '', o.fromPosition],
    [s.toPosition ?? '', o.toPosition],
  ];
  let text = message;
  for (const [from, to] of words) if (from !== '' && to !== undefined) text = text.replaceAll(from, to);
  return text;
}

/** Parses and checks every selection option, with the Plan task's own rules; no I/O but reading `--keys`. */
export function checkedSelection(cfg: TidemarkConfig, o: ReplayCliOptions): CheckedSelection {
  const tables = tablesOf(cfg, o);
  const selection = {
    tables,
    ...(o.since ? { since: parseTime(o.since, '--since') } : {}),
    ...(o.until ? { until: parseTime(o.until, '--until') } : {}),
    ...(o.fromPosition ? { fromPosition: parsePosition(o.fromPosition, '--from-position') } : {}),
    ...(o.toPosition ? { toPosition: parsePosition(o.toPosition, '--to-position') } : {}),
  };
  try {
    validateReplayRequest(cfg, { runId: 'check', into: o.into, ...selection });
  } catch (e) {
    throw new CliError(asOptions(e instanceof Error ? e.message : String(e), o, selection), 'give the lower bound first: --since before --until, --from-position at or below --to-position');
  }
  replayTables(cfg, tables, parseTarget(o.into, cfg.name));
  if (!o.keys) return selection;
  const { keys, problems } = parseKeysFile(readFileSync(o.keys, 'utf8'), cfg, tables);
  if (problems.length > 0) throw new SelectionError(`--keys ${o.keys}:\n  ${problems.map((p) => `line ${p.line}: ${p.detail}`).join('\n  ')}`);
  return { ...selection, keys };
}

/** Builds the job request; stores the `--keys` file's canonical keys next to the run. */
async function requestOf(cfg: TidemarkConfig, o: ReplayCliOptions, ctx: JobContext, s: CheckedSelection): Promise<ReplayRequest> {
  const runId = newRunId('replay');
  let keysKey: string | undefined;
  if (s.keys) {
    keysKey = runFile(runPrefix(cfg, runId), 'keys');
    const body = JSON.stringify(Object.fromEntries([...s.keys].map(([t, set]) => [t, [...set]])));
    await ctx.clients.s3.send(new PutObjectCommand({ Bucket: cfg.raw.bucket, Key: keysKey, Body: body, ContentType: 'application/json' }));
  }
  const { keys: _keys, ...range } = s;
  return { runId, ...range, ...(keysKey ? { keysKey } : {}), into: o.into, force: o.force === true, now: Date.now() };
}

async function jobContext(cfg: TidemarkConfig): Promise<JobContext> {
  return replayContext(cfg, await clients(cfg), cliLog());
}

/** The embedded SQL engine over the config's bucket: the history layout's prefixes (raw-layout.ts). */
export async function localSqlEngine(config: TidemarkConfig, s3: S3Client): Promise<DuckDbEngine> {
  const history = config.history.prefix;
  // Loaded when a replay runs: the CLI's other commands start without the DuckDB package.
  requireSqlEngine('replay');
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
 * ItemReader, reporting the key buckets as they finish.
 */
export async function runReplayLocally(ctx: JobContext, request: ReplayRequest, onProgress?: (done: number, total: number) => void): Promise<Record<string, JsonValue>> {
  let total = 0;
  let done = 0;
  const definition = replaySqlDefinition({ maxConcurrency: ctx.config.replay.maxConcurrency, toleratedFailurePercentage: ctx.config.replay.toleratedFailurePercentage });
  const { runLocalStateMachine } = await localEngine('replay');
  const engine = await localSqlEngine(ctx.config, ctx.clients.s3);
  const { duckdbAthenaHandler } = await import('../local/athena-local.js');
  try {
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
  } finally {
    await engine.close();
  }
}

/** The summary of a run, for `--json` and for people. */
function printRun(o: ReplayCliOptions, summary: Record<string, unknown>, tally: Record<string, number>, elapsedMs: number, extra: string[] = []): void {
  if (o.json) {
    out(summaryLine(summary, summary));
    return;
  }
  const n = (k: string) => tally[k] ?? 0;
  out(`replay ${String(summary.runId)} into ${o.into}: ${String(summary.batches ?? '?')} key buckets, ${humanDuration(elapsedMs)}`);
  out(`  records ${n('records')}, events ${n('events')}, selected ${n('selected')}: applied ${n('applied')}, stale ${n('stale')}, duplicates ${n('duplicates')}, superseded ${n('superseded')}, erased ${n('erased')}, failed ${n('failed')}`);
  out(`  cost: ${n('readUnits')} read units, ${n('writeRequests')} write requests, ${n('writeUnits')} write units (${n('skippedByPreRead')} writes skipped by the pre-read)`);
  for (const line of extra) out(line);
}

/** A local run after an erase needs the ledger key: checked before anything starts. */
async function checkLedgerKey(cfg: TidemarkConfig, ctx: JobContext, tables: readonly string[]): Promise<void> {
  await ledgerViewFor(cfg, ctx.clients.dynamodb, tables).catch((err: unknown) => {
    throw withLedgerKeyHint(cfg, err);
  });
}

async function local(cfg: TidemarkConfig, o: ReplayCliOptions, s: CheckedSelection): Promise<void> {
  const ctx = await jobContext(cfg);
  await checkLedgerKey(cfg, ctx, s.tables);
  const request = await requestOf(cfg, o, ctx, s);
  let bar: ReturnType<typeof progress> | null = null;
  const t0 = Date.now();
  try {
    const output = await runReplayLocally(ctx, request, (done, total) => {
      bar ??= progress('replay', total, 'key buckets', { quiet: o.json === true });
      bar.update(done);
    });
    (bar as ReturnType<typeof progress> | null)?.stop();
    const summary = (output.summary ?? {}) as Record<string, JsonValue>;
    const verify = (output.verify ?? null) as { diff?: { counts?: unknown }; steps?: string[] } | null;
    const tally = (summary.tally ?? {}) as Record<string, number>;
    const diff = verify?.diff;
    const fields = { command: 'replay', runId: request.runId, into: o.into, tables: request.tables, objects: summary.objects ?? 0, batches: summary.batches ?? 0, ...tally, elapsedMs: Date.now() - t0, ...(diff ? { diff } : {}) };
    printRun(o, fields, tally, Date.now() - t0, diff ? [`  diff against live: ${JSON.stringify(diff.counts)}`, ...(verify?.steps ?? []).map((l) => `  ${l}`)] : []);
  } catch (e) {
    (bar as ReturnType<typeof progress> | null)?.stop();
    throw withLedgerKeyHint(cfg, e);
  }
}

async function onAws(cfg: TidemarkConfig, o: ReplayCliOptions, s: CheckedSelection): Promise<void> {
  const ctx = await jobContext(cfg);
  const request = await requestOf(cfg, o, ctx, s);
  const sfn = sfnClient();
  const arn = o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-replay`));
  const t0 = Date.now();
  const output = await runOnAws(sfn, arn, request.runId, request);
  const summary = (output.summary ?? {}) as Record<string, unknown>;
  const tally = (summary.tally ?? {}) as Record<string, number>;
  printRun(o, { command: 'replay', runId: request.runId, on: 'aws', into: o.into, objects: summary.objects, batches: summary.batches, ...tally, summaryKey: summary.summaryKey }, tally, Date.now() - t0, [
    `  summary: s3://${cfg.raw.bucket}/${String(summary.summaryKey ?? '')}`,
  ]);
}

/** `tidemark replay`: check everything, then the dry run, the AWS run, or the local run. */
export async function replayCommand(o: ReplayCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  if (o.fromDlq !== undefined) {
    const { fromDlq } = await import('./replay-dlq.js');
    await fromDlq(cfg, o);
    return;
  }
  const selection = checkedSelection(cfg, o);
  if (o.dryRun) {
    const ctx = await jobContext(cfg);
    await dryRun(cfg, o, selection, ctx, await requestOf(cfg, o, ctx, selection));
  } else if (o.on === 'aws') await onAws(cfg, o, selection);
  else await local(cfg, o, selection);
}
