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
 */
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Command } from 'commander';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { isJsonObject, type JsonValue, parseJson } from '../../functions/core/json.js';
import { type EraseContext, submitErase } from '../../functions/erase/erase.js';
import { eraseStep } from '../../functions/erase/handler.js';
import { EraseLedger } from '../../functions/adapters/erase-ledger.js';
import { SelectionError } from '../../functions/replay/selection.js';
import { ERASE_FUNCTION, eraseDefinition } from '../../lib/replay/definitions.js';
import { runLocalStateMachine } from '../local/stepfunctions.js';
import { cliLog, clients, config as loadConfig } from './context.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { newRunId, runOnAws, stateMachineArnByName } from './replay.js';

const out = (line: string) => process.stdout.write(`${line}\n`);

interface EraseCliOptions {
  config: string;
  table?: string;
  key?: string;
  reason?: string;
  list?: boolean;
  on: 'local' | 'aws';
  stateMachineArn?: string;
  json?: boolean;
}

/** Runs the erase state machine's definition in-process. */
export async function runEraseLocally(ctx: EraseContext, input: { runId: string; requestKey: string }): Promise<Record<string, JsonValue>> {
  const definition = eraseDefinition({ maxConcurrency: ctx.config.replay.maxConcurrency, toleratedFailurePercentage: 0 });
  return (await runLocalStateMachine(definition, input, { handlers: { [ERASE_FUNCTION]: (i) => eraseStep(i as never, ctx) } })) as Record<string, JsonValue>;
}

/** Adds `tidemark erase` to the program. */
export function registerErase(program: Command): void {
  program
    .command('erase')
    .description('erase one key from current state, raw and quarantine, recorded in the erase ledger; or --list the ledger')
    .option('-c, --config <file>', 'pipeline config', 'tidemark.config.json')
    .option('-t, --table <source>', 'source table')
    .option('-k, --key <json>', 'key columns as JSON, e.g. \'{"id": 42}\'')
    .option('--reason <text>', 'why (kept in the ledger; never put values here)')
    .option('--list', 'list the ledger: table, keyed hash, position, time, reason')
    .option('--on <where>', 'local or aws', 'local')
    .option('--state-machine-arn <arn>', 'with --on aws; default: the state machine named <pipeline>-erase')
    .option('--json', 'JSON output')
    .action(async (o: EraseCliOptions) => {
      const cfg = loadConfig(o.config);
      if (o.list) await list(cfg, o);
      else await erase(cfg, o);
    });
}

async function list(cfg: TidemarkConfig, o: EraseCliOptions): Promise<void> {
  const c = await clients(cfg);
  const entries = await new EraseLedger(c.dynamodb, cfg.statusTable, cfg.name).list(o.table ? [o.table] : undefined);
  for (const e of entries) {
    if (o.json) out(JSON.stringify({ ...e, erasedAtIso: new Date(e.erasedAt).toISOString() }));
    else out(`${new Date(e.erasedAt).toISOString()}  ${e.table}  ${e.keyHash}  position=${e.position || '-'}  ${e.reason}`);
  }
  if (!o.json && entries.length === 0) out('the erase ledger is empty');
}

async function erase(cfg: TidemarkConfig, o: EraseCliOptions): Promise<void> {
  if (!o.table || !o.key || !o.reason) throw new SelectionError('erase needs --table, --key and --reason (or --list)');
  const key = parseJson(o.key);
  if (!isJsonObject(key)) throw new SelectionError('--key must be a JSON object of key columns');
  const c = await clients(cfg);
  const ctx: EraseContext = { config: cfg, clients: c, log: cliLog() };
  const runId = newRunId('erase');
  const requestKey = await submitErase(ctx, runId, { table: o.table, key, reason: o.reason });
  const t0 = Date.now();
  const output =
    o.on === 'aws'
      ? await runOnAws(new SFNClient({}), o.stateMachineArn ?? (await stateMachineArnByName(new SFNClient({}), `${cfg.name}-erase`)), runId, { runId, requestKey })
      : await runEraseLocally(ctx, { runId, requestKey }).catch((err: unknown) => {
          throw withLedgerKeyHint(cfg, err);
        });
  const s = (output.summary ?? {}) as Record<string, unknown>;
  if (o.json) out(JSON.stringify({ command: 'erase', ...s, elapsedMs: Date.now() - t0 }));
  else {
    out(`erased ${o.table} key ${String(s.keyHash)} (keyed hash) up to position ${String(s.ledgerPosition) || '-'}`);
    out(`  item deleted: ${String(s.itemDeleted)}; raw: ${String(s.objects)} objects, ${String(s.candidates)} by key filter, ${String(s.objectsRewritten)} rewritten, ${String(s.objectsDeleted)} emptied, ${String(s.linesRemoved)} lines removed (+${String(s.otherRowsRemoved)} rows of the same messages), ${String(s.falsePositives)} filter false positives`);
    out(`  versions deleted: ${String(s.versionsDeleted)}${s.versioning === false ? ' (the store does not implement versioning: the overwrite replaced the only copy)' : ''}; quarantine lines rewritten: ${String(s.quarantineLinesRewritten)}`);
  }
}
