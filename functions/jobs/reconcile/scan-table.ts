/**
 * Step 3 of reconcile (map side, table and manifest), full mode: one parallel-scan segment of a
 * target table, or the key-set manifest, written to the same shuffle partitions as raw, so each
 * reduce task sees both sides of its keys. Only keys and metadata are read (a projection), and
 * records are flushed every `maxKeysInMemory` rows.
 */
import { type AttributeValue, ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { TableConfig } from '../../config/types.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson, stringifyJson } from '../../core/json.js';
import { errorMessage } from '../../core/errors.js';
import { COMPOSITE_KEY_ATTRIBUTE, keyId, keyLayout, normalizeKey } from '../../core/keys.js';
import { decodeItem, META } from '../../adapters/item-codec.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import { PartitionWriter, putJson } from '../shuffle.js';
import { statsKey } from './shuffle-raw.js';
import type { ManifestItem, ManifestSideRecord, TableItem, TableSideRecord, TaskInput } from './types.js';

export interface ScanStats {
  readonly tableRows: number;
  readonly readUnits: number;
  readonly manifestKeys: number;
  readonly records: number;
}

/** The key of a stored item as (keyId, key JSON text), the way raw lines and planBatch name it. */
export function itemKey(table: TableConfig, item: Record<string, AttributeValue>): { id: string; key: string } {
  const decoded = decodeItem(table, item);
  const composite = keyLayout(table).composite ? item[COMPOSITE_KEY_ATTRIBUTE]?.S : undefined;
  const key = normalizeKey(table, decoded.row);
  return { id: composite ?? keyId(table, key), key: stringifyJson(key) };
}

function projection(table: TableConfig): { expression: string; names: Record<string, string> } {
  const layout = keyLayout(table);
  const attrs = new Set<string>([layout.partitionKey.name, ...(layout.sortKey ? [layout.sortKey.name] : []), ...(layout.composite ? table.key : []), META.position, META.deleted, META.hash, META.appliedAt]);
  const names: Record<string, string> = {};
  const parts = [...attrs].map((a, i) => {
    names[`#p${i}`] = a;
    return `#p${i}`;
  });
  return { expression: parts.join(', '), names };
}

/** Pages through one scan segment of a target table: keys and metadata only, with read units. */
export async function* scanTableRows(deps: JobDeps, table: TableConfig, segment = 0, totalSegments = 1): AsyncGenerator<{ rows: TableSideRecord[]; units: number }> {
  const { expression, names } = projection(table);
  let start: Record<string, AttributeValue> | undefined;
  do {
    const res: ScanCommandOutput = await deps.dynamodb.send(
      new ScanCommand({
        TableName: table.target,
        Segment: segment,
        TotalSegments: totalSegments,
        ProjectionExpression: expression,
        ExpressionAttributeNames: names,
        ExclusiveStartKey: start,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const rows = (res.Items ?? []).map((raw): TableSideRecord => {
      const decoded = decodeItem(table, raw);
      const { id, key } = itemKey(table, raw);
      return { s: 'd', t: table.source, k: id, key, p: decoded.position, d: decoded.deleted, h: decoded.contentHash, a: decoded.appliedAt ?? 0 };
    });
    yield { rows, units: res.ConsumedCapacity?.CapacityUnits ?? 0 };
    start = res.LastEvaluatedKey;
  } while (start);
}

async function scanSegment(run: TaskInput<TableItem>['run'], item: TableItem, deps: JobDeps, taskId: string): Promise<ScanStats> {
  const table = tableConfig(deps.config, item.table);
  const writer = new PartitionWriter<TableSideRecord>(deps.s3, deps.config.raw.bucket, run.prefix, run.partitions, taskId);
  let rows = 0;
  let units = 0;
  let buffered = 0;
  for await (const page of scanTableRows(deps, table, item.segment, item.totalSegments)) {
    units += page.units;
    for (const row of page.rows) writer.add(table.source, row.k, row);
    rows += page.rows.length;
    buffered += page.rows.length;
    if (buffered >= deps.config.jobs.reconcile.maxKeysInMemory) {
      await writer.flush();
      buffered = 0;
    }
  }
  await writer.flush();
  return { tableRows: rows, readUnits: units, manifestKeys: 0, records: writer.recordsWritten };
}

/** Reads the manifest: JSON Lines of `{"table": "public.orders", "key": {"order_id": 7}}`. */
async function readManifest(run: TaskInput<ManifestItem>['run'], deps: JobDeps, taskId: string): Promise<ScanStats> {
  const manifest = run.manifest;
  if (!manifest) return { tableRows: 0, readUnits: 0, manifestKeys: 0, records: 0 };
  const got = await deps.s3.send(new GetObjectCommand({ Bucket: manifest.bucket, Key: manifest.key }));
  const text = got.Body ? await got.Body.transformToString() : '';
  const writer = new PartitionWriter<ManifestSideRecord>(deps.s3, deps.config.raw.bucket, run.prefix, run.partitions, taskId);
  const wanted = new Set(run.tables);
  let keys = 0;
  for (const [n, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let entry: JsonValue;
    try {
      entry = parseJson(line);
    } catch (err) {
      throw new JobInputError(`manifest line ${n + 1} is not JSON: ${errorMessage(err)}`, { cause: err });
    }
    if (!isJsonObject(entry) || typeof entry.table !== 'string' || !isJsonObject(entry.key)) {
      throw new JobInputError(`manifest line ${n + 1}: expected {"table": …, "key": {…}}`);
    }
    if (!wanted.has(entry.table)) continue;
    const table = tableConfig(deps.config, entry.table);
    let key: JsonObject;
    try {
      key = normalizeKey(table, entry.key);
    } catch (err) {
      throw new JobInputError(`manifest line ${n + 1}: ${errorMessage(err)}`, { cause: err, context: { table: table.source } });
    }
    const id = keyId(table, key);
    writer.add(table.source, id, { s: 'm', t: table.source, k: id, key: stringifyJson(key) });
    keys++;
    if (keys % deps.config.jobs.reconcile.maxKeysInMemory === 0) await writer.flush();
  }
  await writer.flush();
  return { tableRows: 0, readUnits: 0, manifestKeys: keys, records: writer.recordsWritten };
}

export async function scanTable(input: TaskInput<TableItem | ManifestItem>, deps: JobDeps): Promise<ScanStats> {
  const { run, item } = input;
  const taskId = item.kind === 'manifest' ? 'manifest' : `table-${String(run.tables.indexOf(item.table)).padStart(3, '0')}-${String(item.segment).padStart(4, '0')}`;
  const stats = item.kind === 'manifest' ? await readManifest(run, deps, taskId) : await scanSegment(run, item, deps, taskId);
  await putJson(deps.s3, deps.config.raw.bucket, statsKey(run.prefix, taskId), stats);
  deps.log.info('reconcile table side shuffled', { runId: run.runId, task: taskId, ...stats });
  return stats;
}
