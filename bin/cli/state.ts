/**
 * Reading current state back: `scan`, `get` and `status`. Tombstones are excluded unless asked for.
 * The status text fits 100 columns: the facts per table (state, phase, lag, position in the
 * source's notation), the counters with compact numbers, any last error, then the jobs' latest
 * results (bin/cli/status-text.ts).
 *
 *   for await (const row of scanTable(dynamodb, table, false)) …
 */
import { type AttributeValue, GetItemCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig, TidemarkConfig } from '../../lib/config/config.js';
import { stringifyJson, type JsonObject } from '../../functions/core/json.js';
import { normalizeKey } from '../../functions/core/keys.js';
import { decodeItem, keyAttributes } from '../../functions/adapters/item-codec.js';
import { StatusReader } from '../../functions/adapters/status-reader.js';
import { EXPIRES_AT_ATTRIBUTE } from '../../functions/telemetry/contract.js';
import { CliError } from './errors.js';

export function tableOrThrow(config: TidemarkConfig, source: string): TableConfig {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new CliError(`table "${source}" is not in the config`, `--table ${config.tables.map((x) => x.source).join(' | ')}`);
  return t;
}

/** A stored item as printed: source columns with their JSON types plus the `__` metadata. */
export function presentItem(table: TableConfig, item: Record<string, AttributeValue>): JsonObject {
  const d = decodeItem(table, item);
  const out: JsonObject = { ...d.row, __pos: d.position, __op: d.op, __deleted: d.deleted, __commitTs: d.commitTs, __txid: d.txid, __appliedAt: d.appliedAt };
  if (d.expiresAt !== null) out[EXPIRES_AT_ATTRIBUTE] = d.expiresAt;
  if (d.missing.length > 0) out.__missing = d.missing;
  if (d.partial) out.__partial = true;
  if (d.spill) out.__spill = d.spill;
  return out;
}

export async function* scanTable(client: DynamoDBClient, table: TableConfig, includeDeleted: boolean, truncateWatermark?: string): AsyncGenerator<JsonObject> {
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: table.target, ExclusiveStartKey: start, ConsistentRead: true }));
    for (const item of page.Items ?? []) {
      const d = decodeItem(table, item);
      if (d.deleted && !includeDeleted) continue;
      if (truncateWatermark !== undefined && d.position < truncateWatermark) continue;
      yield presentItem(table, item);
    }
    start = page.LastEvaluatedKey;
  } while (start);
}

export async function getRow(client: DynamoDBClient, table: TableConfig, key: JsonObject): Promise<JsonObject | null> {
  const res = await client.send(new GetItemCommand({ TableName: table.target, Key: keyAttributes(table, normalizeKey(table, key)), ConsistentRead: true }));
  return res.Item ? presentItem(table, res.Item) : null;
}

export async function statusRows(client: DynamoDBClient, config: TidemarkConfig): Promise<JsonObject[]> {
  const rows = await new StatusReader(client, config.statusTable, config.name).list();
  return rows.map((r) => JSON.parse(stringifyJson(r)) as JsonObject);
}

export { STATUS_COLUMNS, statusTable } from './status-text.js';
export { stringifyJson };
