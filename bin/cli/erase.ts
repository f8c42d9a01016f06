/**
 * `tidemark erase`: remove one key from current state, raw and quarantine, and record it in the
 * ledger so no replay or reconcile brings it back.
 *
 *   tidemark erase --table public.customers --key '{"id": 42}' --reason "GDPR request 1234"
 *   tidemark erase … --on aws            (start the deployed erase state machine)
 *   tidemark erase --list [--table public.customers] [--json]
 *
 * Locally the erase state machine's definition runs in-process against the configured endpoints.
 * The ledger key comes from `replay.erase.ledgerKeySecret` (by default the TIDEMARK_ERASE_KEY
 * environment variable). Against a deployed stack it must be the key its functions use, which the
 * stack generated in Secrets Manager: the missing-key error says how to export it.
 *
 * Everything is checked before anything is written: the table, the key's JSON (line and column of a
 * mistake), the reason, and for a local run the ledger key, so a bad request leaves nothing in S3.
 * `--json` ends with `{"summary":{"itemsDeleted":…,"rawObjectsRewritten":…,"versionsRemoved":…}}`;
 * the names of before (`itemDeleted`, `objectsRewritten`, `versionsDeleted`, top level) stay for one
 * release.
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { JsonValue } from '../../functions/core/json.js';
import { type EraseContext, submitErase } from '../../functions/erase/erase.js';
import { eraseStep } from '../../functions/erase/handler.js';
import { EraseLedger, loadLedgerKeys } from '../../functions/adapters/erase-ledger.js';
import { ERASE_FUNCTION, eraseDefinition } from '../../lib/replay/definitions.js';
import type { LocalProgressEvent } from '../local/stepfunctions.js';
import { cliLog, clients, config as loadConfig } from './context.js';
import { localEngine } from './dev-packages.js';
import { CliError } from './errors.js';
import { jobProgress, runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { keyOption } from './json-input.js';
import { ledgerKeyHint } from './ledger-key.js';
import { keyText, type PositionHint, positionText } from './notation.js';
import { humanDuration, isoSeconds, out, summaryLine } from './output.js';
import { newRunId } from './replay.js';
import { statusRows, tableOrThrow } from './state.js';

interface EraseCliOptions {
  config: string;
  table?: string;
  key?: string;
  reason?: string;
  list?: boolean;
  blockFuture?: boolean;
  on: 'local' | 'aws';
  stateMachineArn?: string;
  json?: boolean;
}

/** Runs the erase state machine's definition in-process. */
export async function runEraseLocally(ctx: EraseContext, input: { runId: string; requestKey: string }, onProgress?: (e: LocalProgressEvent) => void): Promise<Record<string, JsonValue>> {
  const definition = eraseDefinition({ maxConcurrency: ctx.config.replay.maxConcurrency, toleratedFailurePercentage: 0 });
  const { runLocalStateMachine } = await localEngine('erase');
  return (await runLocalStateMachine(definition, input, { handlers: { [ERASE_FUNCTION]: (i) => eraseStep(i as never, ctx) }, ...(onProgress ? { onProgress } : {}) })) as Record<string, JsonValue>;
}

/** The position notation of every table, from its status row. */
async function hintsOf(cfg: TidemarkConfig, c: Awaited<ReturnType<typeof clients>>): Promise<Map<string, PositionHint>> {
  const transport = cfg.source.type === 'msk' ? 'msk' : 'kinesis';
  const rows = await statusRows(c.dynamodb, cfg);
  return new Map(
    rows.map((r) => [String(r.table), { format: typeof r.format === 'string' ? r.format : undefined, ordering: typeof r.orderingStrength === 'string' ? r.orderingStrength : undefined, transport }] as const),
  );
}

async function list(cfg: TidemarkConfig, o: EraseCliOptions): Promise<void> {
  const c = await clients(cfg);
  const entries = await new EraseLedger(c.dynamodb, cfg.statusTable, cfg.name).list(o.table ? [o.table] : undefined);
  const hints = o.json ? new Map<string, PositionHint>() : await hintsOf(cfg, c);
  for (const e of entries) {
    if (o.json) out(JSON.stringify({ ...e, erasedAtIso: new Date(e.erasedAt).toISOString() }));
    else out(`${isoSeconds(e.erasedAt)}  ${e.table}  ${e.keyHash}  up to ${positionText(e.position, hints.get(e.table))}  ${e.reason}`);
  }
  if (o.json) out(summaryLine({ command: 'erase', list: true, entries: entries.length }));
  else if (entries.length === 0) out('the erase ledger is empty');
}

/** The summary under the names of the contract, and the names of before at the top level for one release. */
function summaryOf(s: Record<string, unknown>, elapsedMs: number): { summary: Record<string, unknown>; legacy: Record<string, unknown> } {
  const { itemDeleted, objectsRewritten, versionsDeleted, ...rest } = s;
  const summary = { command: 'erase', ...rest, itemsDeleted: itemDeleted === true ? 1 : 0, rawObjectsRewritten: objectsRewritten ?? 0, versionsRemoved: versionsDeleted ?? 0, elapsedMs };
  return { summary, legacy: { command: 'erase', ...s, elapsedMs } };
}

function printErase(cfg: TidemarkConfig, o: EraseCliOptions, key: Record<string, unknown>, s: Record<string, unknown>, elapsedMs: number, hint: PositionHint): void {
  const n = (k: string) => String(s[k] ?? 0);
  const table = tableOrThrow(cfg, String(o.table));
  if (s.found === false && s.ledgerRecorded !== true) {
    out(`not found: ${o.table} ${keyText(table, key)} is in no copy tidemark holds; nothing recorded in the ledger`);
    out('  to refuse its future arrivals anyway: erase … --block-future');
    return;
  }
  out(`erased ${o.table} ${keyText(table, key)} up to ${positionText(typeof s.ledgerPosition === 'string' ? s.ledgerPosition : null, hint)} in ${humanDuration(elapsedMs)}`);
  out(`  ledger: keyed hash ${String(s.keyHash)}${s.blocked === true ? ', every future arrival refused (--block-future)' : ''}`);
  out(`  current state: ${s.itemDeleted === true ? 'the item was deleted' : 'no item held it'}`);
  out(`  raw: ${n('objects')} objects, ${n('candidates')} by key filter (${n('falsePositives')} false positives): ${n('objectsRewritten')} rewritten, ${n('objectsDeleted')} emptied`);
  out(`       ${n('linesRemoved')} lines removed, +${n('otherRowsRemoved')} rows of the same messages`);
  out(`  versions removed: ${n('versionsDeleted')}${s.versioning === false ? ' (no versioning in this store: the overwrite replaced the only copy)' : ''}`);
  out(`  quarantine lines rewritten: ${n('quarantineLinesRewritten')}; spilled rows deleted: ${n('spilledDeleted')}`);
  out(`  on-failure records removed: ${n('onFailureRecordsRemoved')}; report entries removed: ${n('reportEntriesRemoved')}`);
}

/** The ledger key a local run needs, loaded before anything is written; its absence names the fix. */
async function checkLedgerKey(cfg: TidemarkConfig): Promise<void> {
  try {
    await loadLedgerKeys(cfg.replay.erase.ledgerKeySecret);
  } catch (e) {
    throw ledgerKeyHint(cfg, e);
  }
}

async function erase(cfg: TidemarkConfig, o: EraseCliOptions): Promise<void> {
  if (!o.table || !o.key || !o.reason?.trim()) throw new CliError('erase needs --table, --key and --reason (or --list)', `tidemark erase -t ${cfg.tables[0]?.source ?? '<table>'} -k '{"id": 42}' --reason "ticket 1234"`);
  const table = tableOrThrow(cfg, o.table);
  const key = keyOption(o.key, `{${table.key.map((k) => `"${k}": ${table.keyTypes[k] === 'number' ? '42' : '"…"'}`).join(', ')}}`);
  if (o.on === 'local') await checkLedgerKey(cfg);
  const c = await clients(cfg);
  const ctx: EraseContext = { config: cfg, clients: c, log: cliLog() };
  const runId = newRunId('erase');
  const requestKey = await submitErase(ctx, runId, { table: o.table, key, reason: o.reason, ...(o.blockFuture ? { blockFuture: true } : {}) });
  const t0 = Date.now();
  let output: Record<string, unknown>;
  if (o.on === 'aws') {
    const sfn = sfnClient();
    output = await runOnAws(sfn, o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-erase`)), runId, { runId, requestKey });
  } else {
    const bar = jobProgress('erase', o.json === true);
    try {
      output = await runEraseLocally(ctx, { runId, requestKey }, bar.onEvent);
    } finally {
      bar.stop();
    }
  }
  const s = (output.summary ?? {}) as Record<string, unknown>;
  const elapsed = Date.now() - t0;
  if (o.json) {
    const { summary, legacy } = summaryOf(s, elapsed);
    out(summaryLine(summary, legacy));
  } else {
    printErase(cfg, o, key, s, elapsed, (await hintsOf(cfg, c)).get(o.table) ?? {});
  }
}

/** `tidemark erase`: `--list` the ledger, or erase one key. */
export async function eraseCommand(o: EraseCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  if (o.list) await list(cfg, o);
  else await erase(cfg, o);
}
