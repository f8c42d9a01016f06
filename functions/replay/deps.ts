/**
 * Wires a replay from the validated config and injected clients, for the Lambda tasks and the CLI
 * alike: the ingest Normalizer and DynamoWriter over the target tables (live, or one fresh table
 * with the live table's key schema), the status table's truncate watermarks, the erase ledger.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableConfig, TidemarkConfig } from '../commons/config.js';
import { stringifyJson } from '../core/json.js';
import { Normalizer } from '../core/normalize.js';
import { DynamoWriter } from '../adapters/dynamo-writer.js';
import { RawStore } from '../adapters/raw-store.js';
import { s3SpillReader } from '../adapters/spill-reader.js';
import { StatusStore } from '../adapters/status-store.js';
import type { Log } from '../adapters/telemetry.js';
import { EraseLedger, LedgerView, loadLedgerSecret } from '../erase/ledger.js';
import { ReplayEngine, type TruncateWatermarks } from './engine.js';
import type { ReplayTarget } from './safety.js';
import { SelectionError } from './selection.js';

export interface ReplayClients {
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
}

/** Source table → the config a replay writes it with: the live target, or the fresh table. */
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
  const secret = await loadLedgerSecret(config.replay.erase.ledgerKeySecret, env);
  return new LedgerView(secret, entries);
}

export function buildReplayEngine(
  config: TidemarkConfig,
  clients: ReplayClients,
  opts: { readonly tables: ReadonlyMap<string, TableConfig>; readonly target: ReplayTarget; readonly ledger: LedgerView | null; readonly log: Log; readonly now?: () => number },
): ReplayEngine {
  const raw = new RawStore(clients.s3, config.raw.bucket, config.raw.prefix, config.raw.quarantinePrefix);
  const writer = new DynamoWriter({
    client: clients.dynamodb,
    tables: [...opts.tables.values()],
    maxItemBytes: config.apply.maxItemBytes,
    spill: (w) => raw.spill(w.table, w.keyId, w.encodedPosition, stringifyJson(w.effect.kind === 'put' ? w.effect.row : {})),
    readSpill: s3SpillReader(clients.s3),
    now: opts.now,
  });
  return new ReplayEngine({
    normalizer: new Normalizer(config),
    dynamodb: clients.dynamodb,
    writer,
    tables: opts.tables,
    watermarks: statusWatermarks(config, clients.dynamodb, opts.target),
    ledger: opts.ledger,
    log: opts.log,
    concurrency: config.apply.concurrency,
  });
}
