/**
 * `tidemark replay --dry-run`: what a replay would do, per key, against the live table, with
 * nothing written to it: the stored position, the replayed winner and the action. The events are
 * those a real run selects, by the same path: the replay job's plan step (plan-sql), its selection
 * query (replay-select over history and the raw not compacted yet) run on DuckDB, and each key
 * bucket merged in key and position order (sql-job.ts) through the engine in dry-run mode. Like a
 * run, it leaves its manifest and selection under `<jobsPrefix>replay/<run>/` (expired with the jobs
 * prefix). Keys are typed values sorted by type, positions in the source's notation; `--json` keeps
 * the canonical key and encoded positions, one line per key, then the summary.
 *
 *   table             key    stored         winner         op  action
 *   public.customers  id=1   LSN 0/1FB05C8  LSN 0/1FB05C8  c   duplicate
 *   dry run: 6 events selected in 2 key buckets, 6 keys: duplicate 6; 3 read units
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { addTally, type DryRunLine, emptyTally } from '../../functions/replay/engine.js';
import { ledgerViewFor } from '../../functions/replay/deps.js';
import type { JobContext, ReplayRequest } from '../../functions/replay/job.js';
import { checkReplaySafety, parseTarget } from '../../functions/replay/safety.js';
import { listReplayBuckets, oldestLandingOf, planReplaySql, replayBucket, replaySources } from '../../functions/replay/sql-job.js';
import type { QueryRef } from '../../functions/jobs/sql-run.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { compareKeys, keyText, positionText } from './notation.js';
import { out, renderTable, summaryLine } from './output.js';
import { type CheckedSelection, localSqlEngine, type ReplayCliOptions } from './replay.js';
import { statusRows } from './state.js';

/** Why a real run would be refused (replay safety), or null. */
function refusalOf(cfg: TidemarkConfig, o: ReplayCliOptions, tables: string[], oldest: number | null): string | null {
  try {
    checkReplaySafety({ config: cfg, tables, target: parseTarget(o.into, cfg.name), oldestLanding: oldest, now: Date.now(), force: o.force === true });
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

function printDryRun(cfg: TidemarkConfig, o: ReplayCliOptions, lines: readonly DryRunLine[], hints: Map<string, { format?: string; ordering?: string }>, summary: Record<string, unknown>): void {
  const tables = new Map(cfg.tables.map((t) => [t.source, t]));
  const sorted = [...lines].sort((a, b) => {
    if (a.table !== b.table) return a.table < b.table ? -1 : 1;
    const t = tables.get(a.table);
    return t ? compareKeys(t, a.key, b.key) : 0;
  });
  if (o.json) {
    for (const l of sorted) out(JSON.stringify({ dryRun: true, ...l }));
    out(summaryLine(summary, summary));
    return;
  }
  const transport = cfg.source.type === 'msk' ? 'msk' : 'kinesis';
  const rows = sorted.map((l) => {
    const t = tables.get(l.table);
    const hint = { ...hints.get(l.table), transport } as const;
    return [l.table, t ? keyText(t, l.key) : l.key, l.stored === null ? '-' : `${positionText(l.stored, hint)}${l.storedDeleted ? ' (deleted)' : ''}`, positionText(l.winner, hint), l.op, l.action];
  });
  if (rows.length > 0) out(renderTable([{ header: 'table' }, { header: 'key', flex: true }, { header: 'stored', flex: true }, { header: 'winner', flex: true }, { header: 'op' }, { header: 'action' }], rows));
  const actions = Object.entries(summary.actions as Record<string, number>);
  out(`dry run: ${String(summary.rows)} events selected in ${String(summary.buckets)} key buckets, ${lines.length} keys: ${actions.map(([a, n]) => `${a} ${n}`).join(', ') || 'nothing to do'}; ${String(summary.readUnits)} read units; nothing written`);
  if (summary.refusal) out(`note: a real run would be refused: ${String(summary.refusal)}`);
}

async function getJson<T>(ctx: JobContext, key: string): Promise<T> {
  const got = await ctx.clients.s3.send(new GetObjectCommand({ Bucket: ctx.config.raw.bucket, Key: key }));
  return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as T;
}

/**
 * The dry run. `request` is the run's (its `--keys` stored by the caller), into the live table and
 * with `force`: a refusal is reported, not raised, so the operator sees both.
 */
export async function dryRun(cfg: TidemarkConfig, o: ReplayCliOptions, selection: CheckedSelection, ctx: JobContext, request: ReplayRequest): Promise<void> {
  const { tables } = selection;
  const refusal = refusalOf(cfg, o, tables, oldestLandingOf(selection.since, await replaySources(cfg, ctx.clients.s3, request.now ?? Date.now())));
  // A dry run compares with the live table: a fresh table starts empty, so every key would be written.
  await ledgerViewFor(cfg, ctx.clients.dynamodb, tables).catch((err: unknown) => {
    throw withLedgerKeyHint(cfg, err);
  });
  const plan = await planReplaySql(ctx, { ...request, into: 'live', force: true });
  const engine = await localSqlEngine(cfg, ctx.clients.s3);
  const { duckdbAthenaHandler } = await import('../local/athena-local.js');
  try {
    const athena = duckdbAthenaHandler(engine);
    for (const q of await getJson<QueryRef[]>(ctx, plan.queries.queriesKey)) await athena(q.statement as never, q.athena);
  } finally {
    await engine.close();
  }
  const { itemsKey } = await listReplayBuckets(ctx, { manifestKey: plan.manifestKey });
  const buckets = await getJson<{ bucket: number }[]>(ctx, itemsKey);
  const tally = emptyTally();
  const lines: DryRunLine[] = [];
  let rows = 0;
  for (const { bucket } of buckets) {
    const r = await replayBucket(ctx, { manifestKey: plan.manifestKey, bucket }, { dryRun: true });
    addTally(tally, r.result.tally);
    lines.push(...r.result.dryRun);
    rows += r.rows;
  }
  const hints = new Map(
    (await statusRows(ctx.clients.dynamodb, cfg)).map((r) => [String(r.table), { format: typeof r.format === 'string' ? r.format : undefined, ordering: typeof r.orderingStrength === 'string' ? r.orderingStrength : undefined }] as const),
  );
  const actions: Record<string, number> = {};
  for (const l of lines) actions[l.action] = (actions[l.action] ?? 0) + 1;
  const summary = { command: 'replay', dryRun: true, runId: plan.runId, into: o.into, tables, rows, buckets: buckets.length, keys: lines.length, actions, refusal, ...tally };
  printDryRun(cfg, o, lines, hints as Map<string, { format?: string; ordering?: string }>, summary);
}
