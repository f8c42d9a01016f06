/**
 * What a replay writes to and what it must respect, for the Lambda tasks and the CLI alike: the
 * target tables (live, or one fresh table with the live table's key schema), the status table's
 * truncate watermarks, the erase ledger, and the engine over the storage's guarded writer.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import type { Storage } from '../adapters/storage.js';
import { StatusStore } from '../adapters/status-store.js';
import { type KeyRef, type Log, noKeyRef } from '../telemetry/sinks.js';
import { EraseLedger, type LedgerView, loadLedgerKeys } from '../adapters/erase-ledger.js';
import { ReplayEngine, type TruncateWatermarks } from './engine.js';
import { freshTableNameProblem, type ReplayTarget } from './safety.js';
import { SelectionError } from './selection.js';

export interface ReplayClients {
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
}

/**
 * Source table → the config a replay writes it with: the live target, or the fresh table, which must
 * be named under `<pipeline>-fresh-` and be neither a live target nor the status table.
 */
export function replayTables(config: TidemarkConfig, sources: readonly string[], target: ReplayTarget): Map<string, TableConfig> {
  const out = new Map<string, TableConfig>();
  const unknown = sources.filter((s) => !config.tables.some((t) => t.source === s));
  if (unknown.length > 0) throw new SelectionError(`not configured: ${unknown.join(', ')} (configured: ${config.tables.map((t) => t.source).join(', ')})`);
  if (target.kind === 'fresh' && sources.length !== 1) throw new SelectionError('a fresh replay rebuilds one table: select it with --table');
  for (const t of config.tables) {
    if (!sources.includes(t.source)) continue;
    out.set(t.source, target.kind === 'fresh' ? { ...t, target: target.target } : t);
  }
  if (target.kind === 'fresh' && config.tables.some((t) => t.target === target.target)) {
    throw new SelectionError(`fresh:${target.target} is a live target table; name a new table`);
  }
  if (target.kind === 'fresh' && target.target === config.statusTable) {
    throw new SelectionError(`fresh:${target.target} is the pipeline's status table; name a new table`);
  }
  // The same rule as the target parser and the replay role's IAM: only `<pipeline>-fresh-…`.
  if (target.kind === 'fresh') {
    const problem = freshTableNameProblem(config.name, target.target);
    if (problem) throw new SelectionError(`fresh:${target.target}: ${problem}`);
  }
  return out;
}

/**
 * Truncate watermarks, in the status table. A live replay reads and raises the live tables' own.
 * A fresh replay keeps its own under the partition `<pipeline>#fresh:<table>` (so every batch of
 * the run sees a truncate another batch met, and `tidemark status` does not list them), starting
 * from the live table's: what live truncated stays truncated in the rebuild.
 */
export function statusWatermarks(config: TidemarkConfig, dynamodb: DynamoDBClient, target: ReplayTarget = { kind: 'live' }): TruncateWatermarks {
  const live = new StatusStore(dynamodb, config.statusTable, config.name);
  const own = target.kind === 'live' ? live : new StatusStore(dynamodb, config.statusTable, `${config.name}#fresh:${target.target}`);
  const read = async (store: StatusStore, tables: readonly string[]) => {
    const out = new Map<string, string>();
    for (const [t, row] of await store.load(tables)) if (row.truncateWatermark) out.set(t, row.truncateWatermark);
    return out;
  };
  return {
    load: async (tables) => {
      const out = await read(live, tables);
      if (own !== live) for (const [t, wm] of await read(own, tables)) if (wm > (out.get(t) ?? '')) out.set(t, wm);
      return out;
    },
    raise: async (table, position) => {
      await own.raiseTruncateWatermark(table, position);
    },
  };
}

/**
 * The erase ledger's view for these tables. The secret is needed only when the ledger holds
 * entries for them; without one, a replay that could bring erased rows back refuses to run.
 */
export async function ledgerViewFor(config: TidemarkConfig, dynamodb: DynamoDBClient, tables: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<LedgerView | null> {
  const ledger = new EraseLedger(dynamodb, config.statusTable, config.name);
  const entries = await ledger.list(tables);
  if (entries.length === 0) return null;
  // A wrong key would match no entry and let erased rows back: its fingerprint is checked first.
  return ledger.view(await loadLedgerKeys(config.replay.erase.ledgerKeySecret, env), tables);
}

/** The replay engine over `storage`'s writer for the target tables, with the status table's watermarks. */
export function buildReplayEngine(
  storage: Storage,
  opts: { readonly tables: ReadonlyMap<string, TableConfig>; readonly target: ReplayTarget; readonly ledger: LedgerView | null; readonly log: Log; readonly keyRef?: KeyRef },
): ReplayEngine {
  return new ReplayEngine({
    normalizer: storage.normalizer,
    dynamodb: storage.dynamodb,
    writer: storage.writer([...opts.tables.values()]),
    tables: opts.tables,
    watermarks: statusWatermarks(storage.config, storage.dynamodb, opts.target),
    ledger: opts.ledger,
    log: opts.log,
    keyRef: opts.keyRef ?? noKeyRef,
    concurrency: storage.config.apply.concurrency,
  });
}
