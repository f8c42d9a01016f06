/**
 * Reading current state from your own code, as `tidemark get` does (docs/operations.md, "Freshness"):
 * one row by key, with what it reflects. Tombstones and rows below the table's truncate watermark
 * read as no row; a spilled row is read back from S3 when an S3 client is given.
 *
 *   import { readRow } from 'tidemark/read';
 *   const r = await readRow({ dynamodb: new DynamoDBClient({}) }, config, 'public.orders', { order_id: 7 });
 *   r.row           // the source columns, or null (no row, a delete, or truncated away)
 *   r.completeAsOf  // epoch ms: every change committed by then is applied (undefined: not known, or the table is held)
 *   r.lifecycle     // 'running', 'suspended' or 'error'
 *
 * Needs only the AWS SDK (no aws-cdk-lib): dynamodb:GetItem on the target and the status table,
 * dynamodb:Query on the status table (the shards' frontier), and s3:GetObject for spilled rows.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../functions/config/types.js';
import { ConfigError } from '../functions/core/errors.js';
import type { JsonObject, JsonValue } from '../functions/core/json.js';
import { normalizeKey } from '../functions/core/keys.js';
import { lifecycleOf, type TableLifecycle } from '../functions/core/lifecycle.js';
import { decodeItem, keyAttributes } from '../functions/adapters/item-codec.js';
import { frontierOf, ShardFrontierStore } from '../functions/adapters/shard-frontier.js';
import { s3SpillReader } from '../functions/adapters/spill-reader.js';
import { StatusReader } from '../functions/adapters/status-reader.js';

export interface ReadClients {
  readonly dynamodb: DynamoDBClient;
  /** To read spilled rows back; without it a spilled row is returned with `spilled` set and its DynamoDB columns. */
  readonly s3?: S3Client;
}

export interface ReadResult {
  /** The source columns, or null: no row, a tombstone, or below the truncate watermark. */
  readonly row: Readonly<Record<string, JsonValue>> | null;
  /** The stored position (encoded), also of a tombstone; undefined when there is no item. */
  readonly position?: string;
  readonly deleted: boolean;
  /** The item is below the table's truncate watermark: a TRUNCATE removed it (the sweep may not have yet). */
  readonly truncated: boolean;
  /** The row is spilled to S3 and was not read back (no S3 client given). */
  readonly spilled: boolean;
  /** Source commit time of the change the row holds. */
  readonly commitTs?: number;
  readonly lifecycle: TableLifecycle;
  /** Every change committed by then has been applied; undefined when not known, or when the table is held. */
  readonly completeAsOf?: number;
}

export interface ReadOptions {
  /** Strongly consistent reads. @default true */
  readonly consistent?: boolean;
  readonly now?: number;
}

/** Reads one row of `table` by its key columns (e.g. `{ order_id: 7 }`). */
export async function readRow(clients: ReadClients, config: TidemarkConfig, table: string, key: JsonObject, options: ReadOptions = {}): Promise<ReadResult> {
  const t = config.tables.find((x) => x.source === table);
  if (!t) throw new ConfigError([`table "${table}" is not in the config (tables: ${config.tables.map((x) => x.source).join(', ')})`], 'readRow');
  const consistent = options.consistent ?? true;
  const [got, [status], shards] = await Promise.all([
    clients.dynamodb.send(new GetItemCommand({ TableName: t.target, Key: keyAttributes(t, normalizeKey(t, key)), ConsistentRead: consistent })),
    new StatusReader(clients.dynamodb, config.statusTable, config.name).list([], [table]),
    new ShardFrontierStore(clients.dynamodb, config.statusTable, config.name).list(),
  ]);
  const lifecycle = lifecycleOf(status);
  const frontier = frontierOf(shards, options.now ?? Date.now());
  const asOf = lifecycle === 'running' && frontier.completeAsOf !== undefined ? { completeAsOf: frontier.completeAsOf } : {};
  if (!got.Item) return { row: null, deleted: false, truncated: false, spilled: false, lifecycle, ...asOf };
  const d = decodeItem(t, got.Item);
  const watermark = typeof status?.truncateWatermark === 'string' ? status.truncateWatermark : undefined;
  const truncated = watermark !== undefined && d.position < watermark;
  const facts = { position: d.position, deleted: d.deleted, truncated, lifecycle, ...(d.commitTs !== null ? { commitTs: d.commitTs } : {}), ...asOf };
  if (d.deleted || truncated) return { row: null, spilled: false, ...facts };
  if (d.spill !== null && clients.s3) return { row: await s3SpillReader(clients.s3)(d.spill), spilled: false, ...facts };
  return { row: d.row, spilled: d.spill !== null, ...facts };
}
