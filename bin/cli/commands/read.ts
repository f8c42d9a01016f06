/**
 * The read commands: `scan` (a table's current state), `get` (one row) and `status`. For people:
 * keys as typed values sorted by type, positions in the source's notation, times as ages. With
 * `--json`: one line per row or status row (encoded positions, as stored), then `{"summary":{…}}`.
 *
 *   tidemark get -t public.orders -k '{"order_id": 7}'
 *   public.orders order_id=7: op u at LSN 0/1FB05C8, committed 2026-11-30T06:00:01Z, applied 4m05s ago
 *     order_id  7
 *     status    "paid"
 */
import type { TableConfig, TidemarkConfig } from '../../../lib/config/config.js';
import type { JsonObject } from '../../../functions/core/json.js';
import { clients, config as loadConfig } from '../context.js';
import { keyOption } from '../json-input.js';
import { compareKeys, keyText, type PositionHint, positionText } from '../notation.js';
import { clip, type Column, err, humanDuration, isoSeconds, out, renderTable, summaryLine, WIDTH } from '../output.js';
import { freshnessOf, freshnessText, getRow, scanTable, statusRows, statusTable, stringifyJson, tableOrThrow } from '../state.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { lifecycleOf, type TableLifecycle } from '../../../functions/core/lifecycle.js';

/** The position notation of a table: its status row's format and ordering, and the source's transport. */
function hintOf(cfg: TidemarkConfig, statusRow: JsonObject | undefined): PositionHint {
  return {
    format: typeof statusRow?.format === 'string' ? statusRow.format : undefined,
    ordering: typeof statusRow?.orderingStrength === 'string' ? statusRow.orderingStrength : undefined,
    transport: cfg.source.type === 'msk' ? 'msk' : 'kinesis',
  };
}

const columnsOf = (row: JsonObject): [string, unknown][] => Object.entries(row).filter(([k]) => !k.startsWith('__'));
const keyOf = (table: TableConfig, row: JsonObject): JsonObject => Object.fromEntries(table.key.map((c) => [c, row[c] ?? null]));

/** `op u at LSN 0/1FB05C8, committed …, applied … ago` */
function metaText(row: JsonObject, hint: PositionHint, now: number): string {
  const parts = [`${row.__deleted === true ? 'deleted' : `op ${String(row.__op ?? '-')}`} at ${positionText(typeof row.__pos === 'string' ? row.__pos : null, hint)}`];
  if (typeof row.__commitTs === 'number') parts.push(`committed ${isoSeconds(row.__commitTs)}`);
  if (typeof row.__appliedAt === 'number') parts.push(`applied ${humanDuration(now - row.__appliedAt)} ago`);
  if (Array.isArray(row.__missing) && row.__missing.length > 0) parts.push(`missing ${row.__missing.join(', ')}`);
  return parts.join(', ');
}

interface ScanOptions {
  readonly config: string;
  readonly table: string;
  readonly includeDeleted?: boolean;
  readonly json?: boolean;
}

/** Rows shown as a table at most; more are counted, and all of them are in `--json`. */
const MAX_HUMAN_ROWS = 10_000;

export async function scanCommand(o: ScanOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const c = await clients(cfg);
  const table = tableOrThrow(cfg, o.table);
  const status = (await statusRows(c.dynamodb, cfg)).find((r) => r.table === o.table);
  const wm = typeof status?.truncateWatermark === 'string' ? status.truncateWatermark : undefined;
  let count = 0;
  const rows: JsonObject[] = [];
  for await (const row of scanTable(c.dynamodb, table, Boolean(o.includeDeleted), wm)) {
    count++;
    if (o.json) out(stringifyJson(row));
    else if (rows.length < MAX_HUMAN_ROWS) rows.push(row);
  }
  if (o.json) {
    out(summaryLine({ command: 'scan', table: o.table, rows: count, includeDeleted: Boolean(o.includeDeleted) }));
    return;
  }
  const hint = hintOf(cfg, status);
  rows.sort((a, b) => compareKeys(table, keyOf(table, a), keyOf(table, b)));
  const columns: Column[] = [{ header: 'key', flex: true }, { header: 'op' }, { header: 'position', flex: true }, { header: 'row', flex: true }];
  const cells = rows.map((r) => [keyText(table, keyOf(table, r)), r.__deleted === true ? 'del' : String(r.__op ?? '-'), positionText(typeof r.__pos === 'string' ? r.__pos : null, hint), r.__deleted === true ? '(tombstone)' : JSON.stringify(Object.fromEntries(columnsOf(r)))]);
  if (cells.length > 0) out(renderTable(columns, cells));
  out(`${o.table}: ${count} ${o.includeDeleted ? 'rows and tombstones' : 'live rows'}${count > rows.length ? ` (the first ${rows.length} shown; all with --json)` : ''}`);
}

interface GetOptions {
  readonly config: string;
  readonly table: string;
  readonly key: string;
  readonly json?: boolean;
}

export async function getCommand(o: GetOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const table = tableOrThrow(cfg, o.table);
  const key = keyOption(o.key, `{${table.key.map((k) => `"${k}": ${table.keyTypes[k] === 'number' ? '7' : '"…"'}`).join(', ')}}`);
  const c = await clients(cfg);
  const row = await getRow(c.dynamodb, table, key);
  const status = (await statusRows(c.dynamodb, cfg)).find((r) => r.table === o.table);
  const asOf = await tableAsOf(c.dynamodb, cfg, status);
  if (o.json) {
    if (row) out(stringifyJson(row));
    out(summaryLine({ command: 'get', table: o.table, key, found: row !== null, ...asOf }));
  } else if (row) {
    out(clip(`${o.table} ${keyText(table, key)}: ${metaText(row, hintOf(cfg, status), Date.now())}`, WIDTH));
    const fields = columnsOf(row);
    const width = Math.min(24, Math.max(0, ...fields.map(([k]) => k.length)));
    for (const [k, v] of fields) out(clip(`  ${k.padEnd(width)}  ${JSON.stringify(v)}`, WIDTH));
  } else {
    err(`no row in ${o.table} for ${keyText(table, key)}`);
  }
  if (!o.json) err(asOfText(o.table, asOf));
  if (!row) process.exitCode = 1;
}

interface AsOf {
  readonly completeAsOf?: number;
  readonly lifecycle: TableLifecycle;
}

/** What a read of the table reflects: the pipeline's frontier, unless the table is held (its later changes are not applied). */
async function tableAsOf(client: DynamoDBClient, cfg: TidemarkConfig, status: JsonObject | undefined): Promise<AsOf> {
  const lifecycle = lifecycleOf(status);
  const f = await freshnessOf(client, cfg);
  return { lifecycle, ...(lifecycle === 'running' && f.completeAsOf !== undefined ? { completeAsOf: f.completeAsOf } : {}) };
}

function asOfText(table: string, a: AsOf): string {
  if (a.lifecycle !== 'running') return `${table} is ${a.lifecycle === 'error' ? 'stopped in error' : 'suspended'}: changes since then are in raw, not applied (tidemark status)`;
  return a.completeAsOf === undefined ? `${table}: complete as of not yet known` : `${table} is complete as of ${new Date(a.completeAsOf).toISOString()} (every change committed by then is applied)`;
}

interface StatusOptions {
  readonly config: string;
  readonly json?: boolean;
  readonly schema?: boolean;
  readonly table?: string;
}

export async function statusCommand(o: StatusOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const rows = await statusRows((await clients(cfg)).dynamodb, cfg);
  if (o.schema) {
    const { renderSchemas, schemaStates } = await import('../schema-status.js');
    if (o.table !== undefined) tableOrThrow(cfg, o.table);
    if (o.json) {
      for (const [table, state] of schemaStates(rows, o.table)) out(stringifyJson({ table, ...state } as never));
      out(summaryLine({ command: 'status', schema: true, pipeline: cfg.name }));
    } else out(renderSchemas(rows, o.table));
  } else if (o.json) {
    const f = await freshnessOf((await clients(cfg)).dynamodb, cfg);
    for (const r of rows) out(stringifyJson(r));
    out(summaryLine({ command: 'status', pipeline: cfg.name, rows: rows.length, ...(f.completeAsOf !== undefined ? { completeAsOf: f.completeAsOf } : {}), shards: f.shards, failingShards: f.failing }));
  } else if (rows.length === 0) {
    out(`no status rows yet for pipeline ${cfg.name}: nothing has been applied (try: npx tidemark apply -c ${o.config} -i changes.jsonl)`);
  } else {
    out(statusTable(rows, { transport: cfg.source.type === 'msk' ? 'msk' : 'kinesis' }));
    out('');
    out(`${freshnessText(await freshnessOf((await clients(cfg)).dynamodb, cfg))}; suspended and stopped tables excepted`);
  }
}
