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
import { EXPIRES_AT_ATTRIBUTE, SCHEMA_ROW_PREFIX } from '../../functions/telemetry/contract.js';
import { type Frontier, frontierOf, ShardFrontierStore } from '../../functions/adapters/shard-frontier.js';
import { addHistograms, histogramOf, quantileBound } from '../../functions/core/lag-histogram.js';
import { hourLabel, OPEN_HOUR } from '../../functions/telemetry/status-layout.js';
import { CliError } from './errors.js';
import { humanDuration } from './output.js';

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

/**
 * Every status row of the pipeline (the registry's tables, the configured ones and `*`), then the
 * jobs' last-run rows, shown as `reconcile#<table>` and `snapshot#<table>`, and the recorded
 * schemas, shown as `schema#<table>`.
 */
export async function statusRows(client: DynamoDBClient, config: TidemarkConfig): Promise<JsonObject[]> {
  const reader = new StatusReader(client, config.statusTable, config.name);
  const rows = await reader.list(config.tables.map((t) => t.source));
  const now = Date.now();
  const [jobs, schemas, previous] = await Promise.all([reader.jobRows(rows.map((r) => r.table)), reader.schemaRows(rows.map((r) => r.table)), reader.hourRowsAt(rows.map((r) => r.table), now - 3_600_000)]);
  const json = (r: object) => JSON.parse(stringifyJson(r)) as JsonObject;
  return [
    ...rows.map((r) => json({ ...r, ...lagPercentiles(r, previous.get(r.table), now) })),
    ...jobs.map(({ job, table, ...rest }) => json({ ...rest, pipeline: config.name, table: `${job}#${table}` })),
    ...schemas.map(({ table, ...rest }) => json({ ...rest, pipeline: config.name, table: `${SCHEMA_ROW_PREFIX}${String(table)}` })),
  ];
}

/**
 * p50 and p99 of commit-to-apply lag over the last hour, as the upper bounds of their histogram
 * buckets (core/lag-histogram.ts): the open hour's counts (if it is this hour or the last) plus the
 * previous hour's row. `null` is above the highest bound (1 day).
 */
export function lagPercentiles(row: Readonly<Record<string, unknown>>, previousHour: Readonly<Record<string, unknown>> | undefined, now: number): { lagP50Ms?: number | null; lagP99Ms?: number | null } {
  const open = typeof row.hour === 'string' && row.hour >= hourLabel(now - 3_600_000) ? histogramOf(row, OPEN_HOUR.counterPrefix) : [];
  const counts = addHistograms(open, row.hour === hourLabel(now - 3_600_000) ? [] : histogramOf(previousHour));
  const p50 = quantileBound(counts, 0.5);
  const p99 = quantileBound(counts, 0.99);
  if (p50 === undefined || p99 === undefined) return {};
  const finite = (v: number) => (Number.isFinite(v) ? v : null);
  return { lagP50Ms: finite(p50), lagP99Ms: finite(p99) };
}

/** One table's status row, if it has one. */
export async function statusRowOf(client: DynamoDBClient, config: TidemarkConfig, table: string): Promise<JsonObject | undefined> {
  const [row] = await new StatusReader(client, config.statusTable, config.name).list([], [table]);
  return row ? (JSON.parse(stringifyJson(row)) as JsonObject) : undefined;
}

/** The pipeline's freshness: the commit time up to which every shard has been applied (adapters/shard-frontier.ts). */
export async function freshnessOf(client: DynamoDBClient, config: TidemarkConfig, now = Date.now()): Promise<Frontier> {
  return frontierOf(await new ShardFrontierStore(client, config.statusTable, config.name).list(), now);
}

/** One line for people: `complete as of 2026-12-02T03:40:12Z, 12s behind (2 shards, 1 failing)`. */
export function freshnessText(f: Frontier, now = Date.now()): string {
  const shards = [`${f.shards} shard${f.shards === 1 ? '' : 's'}`, ...(f.failing > 0 ? [`${f.failing} failing`] : []), ...(f.idle > 0 ? [`${f.idle} idle for over an hour, left out`] : [])].join(', ');
  if (f.completeAsOf === undefined) return f.shards === 0 ? 'complete as of: no batch in the last hour' : `complete as of: not yet known (${shards})`;
  return `complete as of ${new Date(f.completeAsOf).toISOString()}, ${humanDuration(Math.max(0, now - f.completeAsOf))} behind the source (${shards})`;
}

export { STATUS_COLUMNS, statusTable } from './status-text.js';
export { stringifyJson };
