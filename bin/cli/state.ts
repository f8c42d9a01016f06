/** Reading current state back: `scan`, `get` and `status`. Tombstones are excluded unless asked for. */
import { type AttributeValue, GetItemCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig, TidemarkConfig } from '../../lib/config/config.js';
import { stringifyJson, type JsonObject } from '../../functions/core/json.js';
import { normalizeKey } from '../../functions/core/keys.js';
import { decodeItem, keyAttributes } from '../../functions/adapters/item-codec.js';
import { StatusReader } from '../../functions/adapters/status-reader.js';
import { COUNTER_NAMES, COUNTERS, EXPIRES_AT_ATTRIBUTE, SCHEMA_ROW_PREFIX } from '../../functions/telemetry/contract.js';
import { isSchemaRow } from './schema-status.js';

export function tableOrThrow(config: TidemarkConfig, source: string): TableConfig {
  const t = config.tables.find((x) => x.source === source);
  if (!t) throw new Error(`table "${source}" is not in the config (configured: ${config.tables.map((x) => x.source).join(', ')})`);
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

/** `tidemark status` columns: the row's facts around every contract counter marked `column`. */
export const STATUS_COLUMNS: readonly string[] = ['table', 'state', 'phase', ...COUNTER_NAMES.filter((c) => COUNTERS[c].column), 'lagMs', 'ordering', 'lastPosition'];

export async function statusRows(client: DynamoDBClient, config: TidemarkConfig): Promise<JsonObject[]> {
  const rows = await new StatusReader(client, config.statusTable, config.name).list();
  return rows.map((r) => JSON.parse(stringifyJson(r)) as JsonObject);
}

/** The jobs' rows in the status table: `reconcile#<table>` (last run) and `snapshot#<table>` (open findings). */
const JOB_ROW = /^(reconcile|snapshot)#(.+)$/;

function aligned(columns: readonly string[], body: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((b) => (b[i] ?? '').length)));
  const fmt = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [fmt(columns), fmt(widths.map((w) => '-'.repeat(w))), ...body.map(fmt)].join('\n');
}

/** One job row as text cells: job, table, last run, and its findings (counts per class, or open kinds). */
function jobCells(row: JsonObject, job: string, table: string): string[] {
  const at = typeof row.lastRunAt === 'number' ? new Date(row.lastRunAt).toISOString() : '-';
  let findings = '-';
  if (job === 'reconcile' && row.findings !== null && typeof row.findings === 'object' && !Array.isArray(row.findings)) {
    const counts = Object.entries(row.findings).filter(([, v]) => typeof v === 'number' && v > 0);
    findings = counts.length === 0 ? 'none' : counts.map(([k, v]) => `${k} ${String(v)}`).join(', ');
  } else if (job === 'snapshot' && Array.isArray(row.openFindings)) {
    findings = row.openFindings.length === 0 ? 'none' : row.openFindings.map(String).join(', ');
  }
  return [job, table, at, typeof row.mode === 'string' ? row.mode : '-', findings];
}

/** Renders status rows as aligned text tables: one row per table, then the jobs' last runs. */
export function statusTable(rows: readonly JsonObject[]): string {
  const cell = (r: JsonObject, c: string): string => {
    const v = c === 'ordering' ? r.orderingStrength : r[c];
    return v === undefined || v === null ? '-' : String(v);
  };
  const tables: JsonObject[] = [];
  const jobs: string[][] = [];
  const drift: string[] = [];
  for (const r of rows) {
    if (isSchemaRow(r)) {
      const changes = Number(r.changes ?? 0);
      const incompatible = Number(r.incompatible ?? 0);
      if (changes > 0) drift.push(`${String(r.table).slice(SCHEMA_ROW_PREFIX.length)} ${changes} changes${incompatible > 0 ? ` (${incompatible} the target cannot hold)` : ''}`);
      continue;
    }
    const m = JOB_ROW.exec(String(r.table));
    if (m?.[1] !== undefined && m[2] !== undefined) jobs.push(jobCells(r, m[1], m[2]));
    else tables.push(r);
  }
  const main = aligned(STATUS_COLUMNS, tables.map((r) => STATUS_COLUMNS.map((c) => cell(r, c))));
  const withJobs = jobs.length === 0 ? main : `${main}\n\n${aligned(['job', 'table', 'lastRunAt', 'mode', 'findings'], jobs)}`;
  return drift.length === 0 ? withJobs : `${withJobs}\n\nschema drift: ${drift.join(', ')} (tidemark status --schema)`;
}

export { stringifyJson };
