/**
 * `tidemark replay --dry-run`: what a replay would do, per key, against the live table, with
 * nothing written: the stored position, the replayed winner and the action. Keys are typed values
 * sorted by type, positions in the source's notation; `--json` keeps the canonical key and encoded
 * positions, one line per key, then the summary.
 *
 *   table             key    stored         winner         op  action
 *   public.customers  id=1   LSN 0/1FB05C8  LSN 0/1FB05C8  c   duplicate
 *   dry run: 3 raw objects, 6 keys: duplicate 6; 3 read units
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import { listRawObjects, parseRawObject, RawRecordSet, readRawObject } from '../../functions/adapters/raw-reader.js';
import { addTally, type DryRunLine, emptyTally } from '../../functions/replay/engine.js';
import { buildReplayEngine, ledgerViewFor, replayTables } from '../../functions/replay/deps.js';
import { batchObjects, type JobContext } from '../../functions/replay/job.js';
import { checkReplaySafety, parseTarget } from '../../functions/replay/safety.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { compareKeys, keyText, positionText } from './notation.js';
import { out, renderTable, summaryLine } from './output.js';
import type { CheckedSelection, ReplayCliOptions } from './replay.js';
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
  out(`dry run: ${String(summary.objects)} raw objects, ${lines.length} keys: ${actions.map(([a, n]) => `${a} ${n}`).join(', ') || 'nothing to do'}; ${String(summary.readUnits)} read units; nothing written`);
  if (summary.refusal) out(`note: a real run would be refused: ${String(summary.refusal)}`);
}

export async function dryRun(cfg: TidemarkConfig, o: ReplayCliOptions, selection: CheckedSelection, ctx: JobContext): Promise<void> {
  const { tables, since, until } = selection;
  const objects = (await Promise.all(tables.map((table) => listRawObjects(ctx.clients.s3, { bucket: cfg.raw.bucket, prefix: cfg.raw.prefix, table, since, until })))).flat();
  const oldest = objects.length > 0 ? Math.max(Math.min(...objects.map((x) => x.hourStart)), since ?? 0) : null;
  const refusal = refusalOf(cfg, o, tables, oldest);
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
  const hints = new Map(
    (await statusRows(ctx.clients.dynamodb, cfg)).map((r) => [String(r.table), { format: typeof r.format === 'string' ? r.format : undefined, ordering: typeof r.orderingStrength === 'string' ? r.orderingStrength : undefined }] as const),
  );
  const actions: Record<string, number> = {};
  for (const l of lines) actions[l.action] = (actions[l.action] ?? 0) + 1;
  const summary = { command: 'replay', dryRun: true, into: o.into, tables, objects: objects.length, keys: lines.length, actions, refusal, ...tally };
  printDryRun(cfg, o, lines, hints as Map<string, { format?: string; ordering?: string }>, summary);
}
