/**
 * The storage every use case works through, wired once per config and clients: raw (land,
 * quarantine, spill), the guarded current-state writer, the status table, the truncate sweeper and
 * the Normalizer that turns raw back into events. Every writer comes from `writer()`, so ingest,
 * replay and the jobs' repairs spill wide rows and read spilled rows back the same way.
 *
 *   const storage = buildStorage(config, { dynamodb, s3 });
 *   const writer = storage.writer();                         // the configured target tables
 *   const fresh = storage.writer([{ ...table, target: 'shop-fresh-customers' }]);
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { stringifyJson } from '../core/json.js';
import { Normalizer } from '../core/normalize.js';
import type { RuntimeClients } from './clients.js';
import { DynamoWriter } from './dynamo-writer.js';
import { RawStore } from './raw-store.js';
import { s3SpillReader } from './spill-reader.js';
import { StatusStore } from './status-store.js';
import { TransactWriter } from './transact-writer.js';
import { TruncateSweeper } from './truncate-sweep.js';
import { DynamoSplitPartsStore, type SplitPartsStore } from './split-parts-store.js';
import { readsAuroraDsql, splitPartsPrefix } from './raw-layout.js';

export interface Storage {
  readonly config: TidemarkConfig;
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
  readonly normalizer: Normalizer;
  readonly raw: RawStore;
  readonly status: StatusStore;
  readonly sweeper: TruncateSweeper;
  /** Pending parts of split Aurora DSQL records; only when the format can be Aurora DSQL. */
  readonly splitParts?: SplitPartsStore;
  readonly now: () => number;
  /** A guarded writer over `tables` (default: the configured ones) that spills wide rows to raw and reads them back. */
  writer(tables?: readonly TableConfig[]): DynamoWriter;
  /** The writer of whole transactions, over `perKey` (one of `writer()`'s): rows it cannot carry go through it. */
  transactWriter(perKey: DynamoWriter): TransactWriter;
}

export function buildStorage(config: TidemarkConfig, clients: RuntimeClients, now: () => number = Date.now): Storage {
  const raw = new RawStore(clients.s3, config.raw.bucket, config.raw.prefix, config.raw.quarantinePrefix);
  const readSpill = s3SpillReader(clients.s3);
  return {
    config,
    dynamodb: clients.dynamodb,
    s3: clients.s3,
    normalizer: new Normalizer(config),
    raw,
    status: new StatusStore(clients.dynamodb, config.statusTable, config.name),
    sweeper: new TruncateSweeper(clients.dynamodb),
    ...(readsAuroraDsql(config) ? { splitParts: new DynamoSplitPartsStore(clients.dynamodb, clients.s3, config.statusTable, config.name, config.raw.bucket, splitPartsPrefix(config.raw.prefix)) } : {}),
    now,
    writer: (tables = config.tables) =>
      new DynamoWriter({
        client: clients.dynamodb,
        tables,
        maxItemBytes: config.apply.maxItemBytes,
        spill: (w) => raw.spill(w.table, w.keyId, w.encodedPosition, stringifyJson(w.effect.kind === 'put' ? w.effect.row : {})),
        readSpill,
        now,
      }),
    transactWriter: (perKey) =>
      new TransactWriter({ client: clients.dynamodb, tables: config.tables, maxItemBytes: config.apply.maxItemBytes, maxBytes: config.transactions.maxBytes, perKey, now }),
  };
}
