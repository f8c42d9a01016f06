/**
 * The table side of a reconcile run: what DynamoDB holds per key, keyed as the jobs key (the
 * canonical key text raw lines carry), one JSON line per item of the `table_side` table
 * (functions/sql schemas), under `<history>table_side/run_id=<run>/` (raw-layout.ts).
 *
 * - full mode: from a DynamoDB export (`ExportTableToPointInTime`, DynamoDB JSON): one export data
 *   file per task (`exportToTableSide`), so a table of any size is cut into the export's own files
 *   and read by a Distributed Map;
 * - window mode: from the keys the window's hours touched (a `window-keys` output file), fetched
 *   with BatchGetItem (`windowToTableSide`): a key without an item writes no line.
 *
 * Only keys and the metadata attributes are written, never row values. The canonical key of an
 * item is computed here, in TypeScript (`itemKey`), exactly as ingest names keys: SQL never
 * re-derives it.
 *
 *   {"source_table":"public.orders","key_id":"[\"7\"]","key_json":"{\"order_id\":7}","position":"b13…",
 *    "deleted":false,"erased":false,"hash":"Qm9…","applied_at":1796018400000}
 */
import { type AttributeValue, BatchGetItemCommand, type BatchGetItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import type { TableConfig } from '../../config/types.js';
import { isJsonObject, type JsonObject, parseJson, stringifyJson } from '../../core/json.js';
import { COMPOSITE_KEY_ATTRIBUTE, keyId, keyLayout, normalizeKey } from '../../core/keys.js';
import { keyAttributes, decodeItem } from '../../adapters/item-codec.js';
import { encodeSegment, tableSideRunPrefix } from '../../adapters/raw-layout.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';

/** The key of a stored item as (keyId, key JSON text), the way raw lines and planBatch name it. */
export function itemKey(table: TableConfig, item: Record<string, AttributeValue>): { id: string; key: string } {
  const decoded = decodeItem(table, item);
  const composite = keyLayout(table).composite ? item[COMPOSITE_KEY_ATTRIBUTE]?.S : undefined;
  const key = normalizeKey(table, decoded.row);
  return { id: composite ?? keyId(table, key), key: stringifyJson(key) };
}

export interface TableSideLine {
  readonly source_table: string;
  readonly key_id: string;
  readonly key_json: string;
  readonly position: string;
  readonly deleted: boolean;
  readonly erased: boolean;
  readonly hash: string;
  readonly applied_at: number;
}

/** The table side line of one stored item. */
export function tableSideLine(table: TableConfig, item: Record<string, AttributeValue>): TableSideLine {
  const decoded = decodeItem(table, item);
  const { id, key } = itemKey(table, item);
  return {
    source_table: table.source,
    key_id: id,
    key_json: key,
    position: decoded.position,
    deleted: decoded.deleted,
    erased: item.__erased?.BOOL === true,
    hash: decoded.contentHash,
    applied_at: decoded.appliedAt ?? 0,
  };
}

/** DynamoDB JSON as an export writes it (`B` and `BS` in base64) → the SDK's attribute values. */
export function attributeValue(v: unknown): AttributeValue {
  if (!isJsonObject(v as never)) throw new JobInputError('an export attribute value must be an object');
  const o = v as Record<string, unknown>;
  if (typeof o.B === 'string') return { B: Buffer.from(o.B, 'base64') };
  if (Array.isArray(o.BS)) return { BS: o.BS.map((b) => Buffer.from(String(b), 'base64')) };
  if (Array.isArray(o.L)) return { L: o.L.map(attributeValue) };
  if (isJsonObject(o.M as never)) return { M: attributeMap(o.M) };
  return o as unknown as AttributeValue;
}

const attributeMap = (m: unknown): Record<string, AttributeValue> => Object.fromEntries(Object.entries(m as Record<string, unknown>).map(([k, v]) => [k, attributeValue(v)]));

async function putLines(deps: Pick<JobDeps, 's3' | 'config'>, key: string, lines: readonly TableSideLine[]): Promise<void> {
  const body = gzipSync(Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), 'utf8'));
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.config.raw.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
}

/** Lines of a gzip JSON Lines object, streamed. */
async function* gzipLines(deps: Pick<JobDeps, 's3'>, bucket: string, key: string): AsyncGenerator<string> {
  const got = await deps.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const body = got.Body as unknown as Readable | undefined;
  if (!body) return;
  const stream = (typeof (body as Readable).pipe === 'function' ? body : Readable.from([Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())])) as Readable;
  const lines = createInterface({ input: stream.pipe(createGunzip()), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) if (line.trim() !== '') yield line;
}

/** Items per table side file written (a file is flushed past it, so memory stays bounded). */
const LINES_PER_FILE = 50_000;

const baseName = (key: string) => encodeSegment(key.split('/').pop() ?? key);

export interface TableSideOutput {
  readonly items: number;
  readonly files: number;
}

/** One DynamoDB export data file (`{"Item": {…}}` a line, gzip) → table side lines. */
export async function exportToTableSide(input: { runId: string; table: string; bucket: string; file: string }, deps: JobDeps): Promise<TableSideOutput> {
  const table = tableConfig(deps.config, input.table);
  const prefix = `${tableSideRunPrefix(deps.config.history.prefix, input.runId)}${encodeSegment(table.source)}-${baseName(input.file)}`;
  let batch: TableSideLine[] = [];
  let items = 0;
  let files = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await putLines(deps, `${prefix}-${String(files).padStart(4, '0')}.json.gz`, batch);
    files++;
    batch = [];
  };
  for await (const line of gzipLines(deps, input.bucket, input.file)) {
    const doc = JSON.parse(line) as { Item?: unknown };
    if (!doc.Item) throw new JobInputError(`export file ${input.file}: a line without "Item"`);
    batch.push(tableSideLine(table, attributeMap(doc.Item)));
    items++;
    if (batch.length >= LINES_PER_FILE) await flush();
  }
  await flush();
  return { items, files };
}

export interface WindowKey {
  readonly source_table: string;
  readonly key_id: string;
  readonly key_json: string;
}

/** Up to 100 keys of one table a BatchGetItem, unprocessed keys retried (bounded). */
export async function fetchItems(deps: JobDeps, table: TableConfig, keys: readonly WindowKey[]): Promise<{ items: Record<string, AttributeValue>[]; readUnits: number }> {
  const out: Record<string, AttributeValue>[] = [];
  let readUnits = 0;
  for (let i = 0; i < keys.length; i += 100) {
    let request: Record<string, AttributeValue>[] | undefined = keys.slice(i, i + 100).map((k) => keyAttributes(table, normalizeKey(table, parseJson(k.key_json) as JsonObject)));
    for (let round = 0; request && request.length > 0; round++) {
      if (round >= 10) throw new Error(`BatchGetItem left ${request.length} keys of ${table.source} unprocessed after 10 rounds`);
      const res: BatchGetItemCommandOutput = await deps.dynamodb.send(
        new BatchGetItemCommand({ RequestItems: { [table.target]: { Keys: request, ConsistentRead: true } }, ReturnConsumedCapacity: 'TOTAL' }),
      );
      out.push(...(res.Responses?.[table.target] ?? []));
      readUnits += (res.ConsumedCapacity ?? []).reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
      request = res.UnprocessedKeys?.[table.target]?.Keys;
      if (request && request.length > 0) await new Promise((r) => setTimeout(r, 50 * 2 ** round));
    }
  }
  return { items: out, readUnits };
}

/** One `window-keys` output file → the items of its keys (BatchGetItem) as table side lines. */
export async function windowToTableSide(input: { runId: string; bucket: string; file: string }, deps: JobDeps): Promise<TableSideOutput & { keys: number; readUnits: number }> {
  const byTable = new Map<string, WindowKey[]>();
  let keys = 0;
  for await (const line of gzipLines(deps, input.bucket, input.file)) {
    const k = JSON.parse(line) as WindowKey;
    const list = byTable.get(k.source_table) ?? [];
    list.push(k);
    byTable.set(k.source_table, list);
    keys++;
  }
  const lines: TableSideLine[] = [];
  let readUnits = 0;
  for (const [source, list] of byTable) {
    const table = tableConfig(deps.config, source);
    const fetched = await fetchItems(deps, table, list);
    readUnits += fetched.readUnits;
    for (const item of fetched.items) lines.push(tableSideLine(table, item));
  }
  const key = `${tableSideRunPrefix(deps.config.history.prefix, input.runId)}window-${baseName(input.file)}`;
  if (lines.length > 0) await putLines(deps, key, lines);
  return { items: lines.length, files: lines.length > 0 ? 1 : 0, keys, readUnits };
}
