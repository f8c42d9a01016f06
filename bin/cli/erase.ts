/**
 * `tidemark erase`: remove keys from current state, raw, history, expected state and every copy
 * tidemark holds, and record each in the ledger so no replay or reconcile brings it back.
 *
 *   tidemark erase --table public.customers --key '{"id": 42}' --reason "GDPR request 1234"
 *   tidemark erase --keys-file requests.jsonl [--reason "…"]   (many keys in one run: one JSON
 *                                         object a line, {"table", "key", "reason"?, "blockFuture"?})
 *   tidemark erase … --on aws            (start the deployed erase state machine)
 *   tidemark erase --list [--table public.customers] [--json]
 *
 * Locally the erase state machine's definition runs in-process against the configured endpoints,
 * its queries on DuckDB over the emulator's objects (bin/local/athena-local.ts), as Athena runs them
 * on AWS. A run of many keys costs one search of raw and history for all of them; each key gets its
 * own ledger entry and its own result line ("not found" included).
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
import { readFileSync } from 'node:fs';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { errorMessage } from '../../functions/core/errors.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from '../../functions/core/json.js';
import { EraseError, type EraseContext, type EraseRequest, type EraseSummary, submitEraseBatch } from '../../functions/erase/erase.js';
import { eraseStep } from '../../functions/erase/handler.js';
import { EraseLedger, loadLedgerKeys } from '../../functions/adapters/erase-ledger.js';
import { ERASE_FUNCTION, eraseDefinition } from '../../lib/replay/definitions.js';
import { QUERY_AT_FUNCTION } from '../../lib/jobs/asl.js';
import type { LocalProgressEvent } from '../local/stepfunctions.js';
import { cliLog, clients, config as loadConfig } from './context.js';
import { localEngine } from './dev-packages.js';
import { CliError } from './errors.js';
import { jobProgress, runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { jsonErrorText, keyOption } from './json-input.js';
import { ledgerKeyHint } from './ledger-key.js';
import { keyText, type PositionHint, positionText } from './notation.js';
import { humanDuration, isoSeconds, out, summaryLine } from './output.js';
import { localSqlEngine, newRunId } from './replay.js';
import { statusRows, tableOrThrow } from './state.js';

interface EraseCliOptions {
  config: string;
  table?: string;
  key?: string;
  keysFile?: string;
  reason?: string;
  list?: boolean;
  blockFuture?: boolean;
  on: 'local' | 'aws';
  stateMachineArn?: string;
  json?: boolean;
}

/**
 * Runs the erase state machine's definition in-process: its query loops' Athena tasks on DuckDB
 * over the emulator's objects, their fetch answered by the erase function as on AWS, the Rewrite
 * Map's items read by the ItemReader.
 */
export async function runEraseLocally(ctx: EraseContext, input: { runId: string; requestKey: string }, onProgress?: (e: LocalProgressEvent) => void): Promise<Record<string, JsonValue>> {
  const definition = eraseDefinition({ maxConcurrency: ctx.config.replay.maxConcurrency, toleratedFailurePercentage: 0 });
  const { runLocalStateMachine } = await localEngine('erase');
  const engine = await localSqlEngine(ctx.config, ctx.clients.s3);
  const { duckdbAthenaHandler } = await import('../local/athena-local.js');
  const step = (i: JsonValue) => eraseStep(i as never, ctx);
  try {
    return (await runLocalStateMachine(definition, input, {
      s3: ctx.clients.s3,
      athena: duckdbAthenaHandler(engine),
      handlers: { [ERASE_FUNCTION]: step, [QUERY_AT_FUNCTION]: step },
      ...(onProgress ? { onProgress } : {}),
    })) as Record<string, JsonValue>;
  } finally {
    await engine.close();
  }
}

/** A run's full summary, per-key results included (the state machine's output carries only its key). */
export async function eraseSummaryOf(s3: S3Client, bucket: string, summaryKey: string): Promise<EraseSummary> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: summaryKey }));
  return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as EraseSummary;
}

/**
 * The requests of a `--keys-file`: one JSON object a line, `{"table", "key", "reason"?,
 * "blockFuture"?}` (`reason` defaults to `--reason`), blank lines skipped. Every line is checked
 * before anything is written; the mistakes are listed by line.
 */
export function parseEraseKeysFile(cfg: TidemarkConfig, text: string, defaults: { reason?: string; blockFuture?: boolean }, file = '--keys-file'): EraseRequest[] {
  const requests: EraseRequest[] = [];
  const problems: string[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '') continue;
    const r = requestOfLine(cfg, line, defaults);
    if (typeof r === 'string') problems.push(`line ${i + 1}: ${r}`);
    else requests.push(r);
  }
  const example = 'one JSON object a line: {"table": "public.customers", "key": {"id": 42}, "reason": "ticket 1234"}';
  if (problems.length > 0) throw new CliError(`${file}:\n  ${problems.join('\n  ')}`, example);
  if (requests.length === 0) throw new CliError(`${file} holds no request`, example);
  return requests;
}

/** One line's request, or what is wrong with it. */
function requestOfLine(cfg: TidemarkConfig, line: string, defaults: { reason?: string; blockFuture?: boolean }): EraseRequest | string {
  let v: JsonValue;
  try {
    v = parseJson(line);
  } catch (err) {
    return jsonErrorText('the line', line, err);
  }
  if (!isJsonObject(v)) return 'must be a JSON object {"table", "key", "reason"}';
  const table = typeof v.table === 'string' ? cfg.tables.find((t) => t.source === v.table) : undefined;
  if (!table) return typeof v.table === 'string' ? `table "${v.table}" is not configured` : '"table" must name a configured table';
  const key = v.key;
  if (!isJsonObject(key)) return `"key" must be a JSON object of the key columns (${table.key.join(', ')})`;
  const missing = table.key.filter((c) => key[c] === undefined || key[c] === null);
  if (missing.length > 0) return `"key" must hold every key column of ${table.source} (${table.key.join(', ')}); missing ${missing.join(', ')}`;
  const reason = typeof v.reason === 'string' ? v.reason : defaults.reason;
  if (reason === undefined || reason.trim() === '') return 'no "reason" (give one per line, or --reason for all)';
  if (v.blockFuture !== undefined && typeof v.blockFuture !== 'boolean') return '"blockFuture" must be true or false';
  const block = v.blockFuture ?? defaults.blockFuture === true;
  return { table: table.source, key: key as JsonObject, reason, ...(block ? { blockFuture: true } : {}) };
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

function printErase(cfg: TidemarkConfig, request: EraseRequest, s: Record<string, unknown>, elapsedMs: number, hint: PositionHint): void {
  const n = (k: string) => String(s[k] ?? 0);
  const table = tableOrThrow(cfg, request.table);
  if (s.found === false && s.ledgerRecorded !== true) {
    out(`not found: ${request.table} ${keyText(table, request.key)} is in no copy tidemark holds; nothing recorded in the ledger`);
    out('  to refuse its future arrivals anyway: erase … --block-future');
    return;
  }
  out(`erased ${request.table} ${keyText(table, request.key)} up to ${positionText(typeof s.ledgerPosition === 'string' ? s.ledgerPosition : null, hint)} in ${humanDuration(elapsedMs)}`);
  out(`  ledger: keyed hash ${String(s.keyHash)}${s.blocked === true ? ', every future arrival refused (--block-future)' : ''}`);
  out(`  current state: ${s.itemDeleted === true ? 'the item was deleted' : 'no item held it'}`);
  out(`  raw: ${n('objects')} objects hold the key (found by SQL): ${n('objectsRewritten')} rewritten, ${n('objectsDeleted')} emptied`);
  out(`       ${n('linesRemoved')} lines removed, +${n('otherRowsRemoved')} rows of the same messages`);
  out(`  history: ${n('historyLines')} lines deleted, with the key's expected state; OPTIMIZE and VACUUM run`);
  out(`  versions removed: ${n('versionsDeleted')}${s.versioning === false ? ' (no versioning in this store: the overwrite replaced the only copy)' : ''}`);
  out(`  quarantine lines rewritten: ${n('quarantineLinesRewritten')}; spilled rows deleted: ${n('spilledDeleted')}`);
  out(`  on-failure records removed: ${n('onFailureRecordsRemoved')}; report entries removed: ${n('reportEntriesRemoved')}`);
}

/** One line per key of a run of many, then the run's counts. */
function printBatch(cfg: TidemarkConfig, requests: readonly EraseRequest[], s: EraseSummary, elapsedMs: number, hints: ReadonlyMap<string, PositionHint>): void {
  out(`erase ${s.runId}: ${s.keys} keys, ${s.keysFound} erased, ${s.keysNotFound} not found, in ${humanDuration(elapsedMs)}`);
  for (const r of s.results) {
    const request = requests[r.request];
    if (!request) continue;
    const what = `${request.table} ${keyText(tableOrThrow(cfg, request.table), request.key)}`;
    if (!r.found && !r.ledgerRecorded) out(`  not found: ${what} is in no copy tidemark holds; nothing recorded in the ledger`);
    else out(`  erased ${what} up to ${positionText(r.ledgerPosition === '' ? null : r.ledgerPosition, hints.get(request.table))}: keyed hash ${r.keyHash}${r.blocked ? ', every future arrival refused' : ''}; item ${r.itemDeleted ? 'deleted' : 'absent'}, ${r.rawLinesRemoved} raw and ${r.historyLines} history lines`);
  }
  out(`  raw: ${s.objects} objects held the keys: ${s.objectsRewritten} rewritten, ${s.objectsDeleted} emptied, ${s.versionsDeleted} versions removed; history: ${s.historyLines} lines deleted`);
}

/** The ledger key a local run needs, loaded before anything is written; its absence names the fix. */
async function checkLedgerKey(cfg: TidemarkConfig): Promise<void> {
  try {
    await loadLedgerKeys(cfg.replay.erase.ledgerKeySecret);
  } catch (e) {
    throw ledgerKeyHint(cfg, e);
  }
}

/** The run's requests: `--keys-file`, or the one key of `--table`/`--key`/`--reason`. */
function requestsOf(cfg: TidemarkConfig, o: EraseCliOptions): { requests: EraseRequest[]; single: boolean } {
  const usage = `tidemark erase -t ${cfg.tables[0]?.source ?? '<table>'} -k '{"id": 42}' --reason "ticket 1234", or --keys-file requests.jsonl`;
  if (o.keysFile !== undefined) {
    if (o.table !== undefined || o.key !== undefined) throw new CliError('use --keys-file or --table and --key, not both', usage);
    let text: string;
    try {
      text = readFileSync(o.keysFile, 'utf8');
    } catch (err) {
      throw new CliError(`--keys-file ${o.keysFile} cannot be read: ${errorMessage(err)}`, usage);
    }
    return { requests: parseEraseKeysFile(cfg, text, { ...(o.reason !== undefined ? { reason: o.reason } : {}), ...(o.blockFuture ? { blockFuture: true } : {}) }, `--keys-file ${o.keysFile}`), single: false };
  }
  if (!o.table || !o.key || !o.reason?.trim()) throw new CliError('erase needs --table, --key and --reason (or --keys-file, or --list)', usage);
  const table = tableOrThrow(cfg, o.table);
  const key = keyOption(o.key, `{${table.key.map((k) => `"${k}": ${table.keyTypes[k] === 'number' ? '42' : '"…"'}`).join(', ')}}`);
  return { requests: [{ table: o.table, key, reason: o.reason, ...(o.blockFuture ? { blockFuture: true } : {}) }], single: true };
}

async function erase(cfg: TidemarkConfig, o: EraseCliOptions): Promise<void> {
  const { requests, single } = requestsOf(cfg, o);
  if (o.on === 'local') await checkLedgerKey(cfg);
  const c = await clients(cfg);
  const ctx: EraseContext = { config: cfg, clients: c, log: cliLog() };
  const runId = newRunId('erase');
  let requestKey: string;
  try {
    requestKey = await submitEraseBatch(ctx, runId, requests);
  } catch (err) {
    if (err instanceof EraseError && !single) throw new CliError(`--keys-file ${o.keysFile}: ${err.message}`, 'fix the line named, then run again: nothing was written');
    throw err;
  }
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
  const hints = await hintsOf(cfg, c);
  if (single) {
    const request = requests[0] as EraseRequest;
    if (o.json) {
      const { summary, legacy } = summaryOf(s, elapsed);
      out(summaryLine(summary, legacy));
    } else printErase(cfg, request, s, elapsed, hints.get(request.table) ?? {});
    return;
  }
  const full = await eraseSummaryOf(c.s3, cfg.raw.bucket, String(s.summaryKey ?? ''));
  if (o.json) {
    // One line per key (its keyed hash, never the key), then the run's summary.
    for (const r of full.results) out(JSON.stringify({ command: 'erase', runId, ...r }));
    const { results: _r, ...run } = full;
    const { summary } = summaryOf(run, elapsed);
    out(summaryLine(summary));
  } else printBatch(cfg, requests, full, elapsed, hints);
}

/** `tidemark erase`: `--list` the ledger, or erase one key or a file of them. */
export async function eraseCommand(o: EraseCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  if (o.list) await list(cfg, o);
  else await erase(cfg, o);
}
