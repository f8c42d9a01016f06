/**
 * Step 4 of reconcile (reduce): one hash partition. Merges the raw-side records of each key (from
 * every map task), fetches the table side (window mode: BatchGetItem of the partition's keys; full
 * mode: the scanned records), classifies every key, optionally repairs, and writes the findings
 * and a summary. Memory holds one partition's keys.
 */
import { type AttributeValue, BatchGetItemCommand, type BatchGetItemCommandOutput, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { TableConfig } from '../../config/types.js';
import { errorMessage, TidemarkError } from '../../core/errors.js';
import { isJsonObject, parseJson } from '../../core/json.js';
import { keyLayout } from '../../core/keys.js';
import { planBatch } from '../../core/plan.js';
import type { ChangeEvent } from '../../core/types.js';
import { decodeItem, keyAttributes, META } from '../../adapters/item-codec.js';
import { type JobDeps, tableConfig } from '../deps.js';
import type { ParsedRawObject } from '../../adapters/raw-reader.js';
import { readParsed } from '../raw-scan.js';
import { putJson, readPartition } from '../shuffle.js';
import { type Actual, type ClassifyContext, classify, type Expected, type FindingClass, REPAIRABLE_CLASSES, type Verdict } from './classify.js';
import { replaceMismatch } from './repair.js';
import { itemKey } from './scan-table.js';
import { eventOfLine } from './shuffle-raw.js';
import { emptyCounts, type ChainRef, type Finding, type PartitionSummary, type RawKeyFold, type RawSideRecord, type ReconcileCounts, type RunContext, type ShuffleRecord, type TaskInput, type TableSideRecord } from './types.js';

const gzipAsync = promisify(gzip);

/** A key's raw side merged across the shuffle's outputs. */
type MergedRaw = RawKeyFold;

function mergeRaw(into: MergedRaw | undefined, r: RawSideRecord): MergedRaw {
  if (!into) return { t: r.t, k: r.k, key: r.key, w: r.w ? { ...r.w } : null, m: r.m, c: [...r.c] };
  if (r.m > into.m) into.m = r.m;
  if (r.w) {
    if (!into.w || r.w.p > into.w.p) into.w = { ...r.w };
    else if (r.w.p === into.w.p) {
      const differ = r.w.h !== null && into.w.h !== null && r.w.h !== into.w.h;
      into.w.x = into.w.x || r.w.x || differ;
      if (into.w.h === null) into.w.h = r.w.h;
    }
  }
  into.c.push(...r.c);
  return into;
}

/** The events a repair re-applies: from the last full image or delete on, oldest first. */
export function repairChain(chain: readonly ChainRef[]): ChainRef[] {
  const sorted = [...chain].sort((a, b) => (a.p < b.p ? -1 : a.p > b.p ? 1 : 0));
  let anchor = 0;
  sorted.forEach((c, i) => {
    if (c.f) anchor = i;
  });
  return sorted.slice(anchor);
}

const PROJECTION_ATTRS = (table: TableConfig): string[] => {
  const layout = keyLayout(table);
  return [layout.partitionKey.name, ...(layout.sortKey ? [layout.sortKey.name] : []), ...(layout.composite ? table.key : []), META.position, META.deleted, META.hash, META.appliedAt];
};

/** The partition's keys as DynamoDB key attributes, one batch of at most 100, each key once. */
function batchRequest(table: TableConfig, texts: readonly string[]): Record<string, AttributeValue>[] {
  const seen = new Set<string>();
  const request: Record<string, AttributeValue>[] = [];
  for (const text of texts) {
    const key = parseJson(text);
    if (!isJsonObject(key)) continue;
    const attrsOfKey = keyAttributes(table, key);
    const id = JSON.stringify(attrsOfKey);
    if (seen.has(id)) continue;
    seen.add(id);
    request.push(attrsOfKey);
  }
  return request;
}

const tableSideOf = (table: TableConfig, item: Record<string, AttributeValue>): TableSideRecord => {
  const decoded = decodeItem(table, item);
  const { id, key } = itemKey(table, item);
  return { s: 'd', t: table.source, k: id, key, p: decoded.position, d: decoded.deleted, h: decoded.contentHash, a: decoded.appliedAt ?? 0 };
};

/** One batch of keys, retrying unprocessed keys with backoff; adds the rows found to `rows`. */
async function fetchBatch(deps: JobDeps, table: TableConfig, first: Record<string, AttributeValue>[], names: Record<string, string>, rows: Map<string, TableSideRecord>): Promise<number> {
  let units = 0;
  let request = first;
  for (let round = 0; request.length > 0; round++) {
    if (round > 0) await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** round, 2000)));
    const res: BatchGetItemCommandOutput = await deps.dynamodb.send(
      new BatchGetItemCommand({
        RequestItems: { [table.target]: { Keys: request, ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    for (const c of res.ConsumedCapacity ?? []) units += c.CapacityUnits ?? 0;
    for (const item of res.Responses?.[table.target] ?? []) {
      const row = tableSideOf(table, item);
      rows.set(`${table.source}\u0000${row.k}`, row);
    }
    request = res.UnprocessedKeys?.[table.target]?.Keys ?? [];
    if (round > 20 && request.length > 0) throw new TidemarkError(`BatchGetItem on ${table.target} kept returning unprocessed keys`, { context: { table: table.source } });
  }
  return units;
}

/** BatchGetItem of keys (eventually consistent: rows older than the cutoff have long settled). */
async function fetchRows(deps: JobDeps, table: TableConfig, keys: readonly string[]): Promise<{ rows: Map<string, TableSideRecord>; units: number }> {
  const rows = new Map<string, TableSideRecord>();
  let units = 0;
  const attrs = PROJECTION_ATTRS(table);
  const names = Object.fromEntries(attrs.map((a, i) => [`#p${i}`, a]));
  for (let i = 0; i < keys.length; i += 100) {
    units += await fetchBatch(deps, table, batchRequest(table, keys.slice(i, i + 100)), names, rows);
  }
  return { rows, units };
}

const actualOf = (d: TableSideRecord): Actual => ({ position: d.p, deleted: d.d, hash: d.h, appliedAt: d.a });

/** One row, strongly consistent (a finding is confirmed against the table as it is now). */
async function readConsistent(deps: JobDeps, table: TableConfig, keyText: string): Promise<{ row: TableSideRecord | null; units: number }> {
  const key = parseJson(keyText);
  if (!isJsonObject(key)) return { row: null, units: 0 };
  const attrs = PROJECTION_ATTRS(table);
  const names = Object.fromEntries(attrs.map((a, i) => [`#p${i}`, a]));
  const res = await deps.dynamodb.send(
    new GetItemCommand({ TableName: table.target, Key: keyAttributes(table, key), ConsistentRead: true, ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names, ReturnConsumedCapacity: 'TOTAL' }),
  );
  const units = res.ConsumedCapacity?.CapacityUnits ?? 0;
  if (!res.Item) return { row: null, units };
  return { row: tableSideOf(table, res.Item), units };
}

/** Re-applies raw's events for one key (see repair.ts); returns the write outcome. */
async function repairKey(deps: JobDeps, raw: MergedRaw, cache: Map<string, ParsedRawObject>, mismatchOf: string | null): Promise<string> {
  const events: ChangeEvent[] = [];
  for (const ref of repairChain(raw.c)) {
    let object = cache.get(ref.o);
    if (!object) {
      object = await readParsed(deps.s3, deps.config.raw.bucket, ref.o);
      cache.set(ref.o, object);
    }
    const rec = object.records[ref.i];
    const line = rec?.lines[ref.j];
    if (!rec || !line) return 'unrepairable: raw line not found';
    const event = eventOfLine(deps.normalizer.normalize(rec.record), line);
    if (!event) return 'unrepairable: raw message no longer normalizes to its line';
    events.push(event);
  }
  const plan = planBatch(events, (e) => deps.normalizer.keyIdOf(e));
  const write = plan.writes[0];
  if (!write) return 'unrepairable: nothing to write';
  if (mismatchOf !== null) return replaceMismatch(deps, write, mismatchOf);
  const result = await deps.writer.write(write);
  if (result.outcome === 'failed') deps.log.warn('reconcile repair failed', { table: raw.t, keyHash: deps.keyRef(raw.t, raw.k), position: write.encodedPosition, error: result.error ? errorMessage(result.error) : 'unknown' });
  return result.outcome;
}

export const findingsKey = (run: RunContext, partition: number): string => `${run.prefix}findings/p=${String(partition).padStart(4, '0')}.jsonl.gz`;
export const summaryKey = (run: RunContext, partition: number): string => `${run.prefix}reduce/p=${String(partition).padStart(4, '0')}.json`;

/** The partition's records, merged per key: raw side, table side and manifest side. */
interface Sides {
  readonly raw: Map<string, MergedRaw>;
  readonly table: Map<string, TableSideRecord>;
  readonly manifest: Map<string, { t: string; key: string }>;
}

async function readSides(deps: JobDeps, run: RunContext, partition: number): Promise<Sides> {
  const sides: Sides = { raw: new Map(), table: new Map(), manifest: new Map() };
  for await (const r of readPartition<ShuffleRecord>(deps.s3, deps.config.raw.bucket, run.prefix, partition)) {
    const id = `${r.t}\u0000${r.k}`;
    if (r.s === 'r') sides.raw.set(id, mergeRaw(sides.raw.get(id), r));
    else if (r.s === 'd') sides.table.set(id, r);
    else sides.manifest.set(id, { t: r.t, key: r.key });
  }
  return sides;
}

/** Window mode: the table side of the window's keys (and of the manifest's keys). */
async function fetchWindowTableSide(deps: JobDeps, sides: Sides, counts: ReconcileCounts): Promise<void> {
  const byTable = new Map<string, string[]>();
  for (const src of [...sides.raw.values(), ...sides.manifest.values()]) {
    const list = byTable.get(src.t) ?? [];
    list.push(src.key);
    byTable.set(src.t, list);
  }
  for (const [source, keys] of byTable) {
    const fetched = await fetchRows(deps, tableConfig(deps.config, source), keys);
    counts.readUnits += fetched.units;
    for (const [id, row] of fetched.rows) sides.table.set(id, row);
  }
}

async function truncateWatermarks(deps: JobDeps, run: RunContext): Promise<Map<string, string>> {
  const status = await deps.status.load(run.tables);
  const watermarks = new Map<string, string>();
  for (const [t, row] of status) if (typeof row.truncateWatermark === 'string') watermarks.set(t, row.truncateWatermark);
  return watermarks;
}

/** Findings in order, and their count per table per class. */
class FindingLog {
  readonly findings: Finding[] = [];
  readonly byClass: Record<string, Record<string, number>> = {};
  note(f: Finding): void {
    this.findings.push(f);
    const perTable = this.byClass[f.table] ?? {};
    perTable[f.class] = (perTable[f.class] ?? 0) + 1;
    this.byClass[f.table] = perTable;
  }
}

const expectedOf = (r: MergedRaw): Expected => ({ winner: r.w ? { position: r.w.p, op: r.w.o, hash: r.w.h, conflict: r.w.x } : null, maxPosition: r.m });
const findingActual = (d: TableSideRecord | undefined): Finding['actual'] => (d ? { position: d.p, deleted: d.d, hash: d.h, appliedAt: d.a } : null);
const isSettled = (v: Verdict): v is 'ok' | 'in-flight' | 'unverifiable' => v === 'ok' || v === 'in-flight' || v === 'unverifiable';

/** One key as reduce sees it. */
interface KeyCase {
  readonly id: string;
  readonly r: MergedRaw | undefined;
  readonly source: string;
  readonly expected: Expected | undefined;
  readonly ctx: ClassifyContext;
}

/** Classifies a key; a finding is confirmed against a fresh consistent read (the scan or batch read may be minutes old). */
async function confirmedVerdict(deps: JobDeps, sides: Sides, counts: ReconcileCounts, k: KeyCase): Promise<{ verdict: Verdict; d: TableSideRecord | undefined }> {
  const d = sides.table.get(k.id);
  const verdict = classify(k.expected, d ? actualOf(d) : undefined, k.ctx);
  const key = k.r?.key ?? d?.key;
  if (isSettled(verdict) || key === undefined) return { verdict, d };
  const fresh = await readConsistent(deps, tableConfig(deps.config, k.source), key);
  counts.readUnits += fresh.units;
  if (fresh.row) sides.table.set(k.id, fresh.row);
  else sides.table.delete(k.id);
  const now = fresh.row ?? undefined;
  return { verdict: classify(k.expected, now ? actualOf(now) : undefined, k.ctx), d: now };
}

/** --repair: re-applies raw's events for a repairable finding; undefined when no repair ran. */
async function maybeRepair(deps: JobDeps, run: RunContext, counts: ReconcileCounts, cache: Map<string, ParsedRawObject>, r: MergedRaw | undefined, verdict: FindingClass, d: TableSideRecord | undefined): Promise<string | undefined> {
  if (!run.repair || !r || !REPAIRABLE_CLASSES.has(verdict)) return undefined;
  const repair = await repairKey(deps, r, cache, verdict === 'mismatch' && d ? d.h : null).catch((err: unknown) => `failed: ${errorMessage(err)}`);
  if (repair === 'applied') counts.repaired++;
  else counts.repairFailed++;
  return repair;
}

/** Classifies (and optionally repairs) every key of the partition. */
async function classifyKeys(deps: JobDeps, run: RunContext, sides: Sides, counts: ReconcileCounts, log: FindingLog): Promise<void> {
  const watermarks = await truncateWatermarks(deps, run);
  const repairCache = new Map<string, ParsedRawObject>();
  const ids = new Set([...sides.raw.keys(), ...(run.mode === 'full' ? sides.table.keys() : [])]);
  counts.keys = ids.size;
  for (const id of ids) {
    const r = sides.raw.get(id);
    const source = r?.t ?? sides.table.get(id)?.t ?? '';
    const wm = watermarks.get(source);
    const ctx = { mode: run.mode, cutoff: run.cutoff, ...(wm !== undefined ? { truncateWatermark: wm } : {}) };
    const { verdict, d } = await confirmedVerdict(deps, sides, counts, { id, r, source, expected: r ? expectedOf(r) : undefined, ctx });
    if (verdict === 'ok') continue;
    if (verdict === 'in-flight') {
      counts.inFlight++;
      continue;
    }
    if (verdict === 'unverifiable') {
      counts.unverifiable++;
      continue;
    }
    const repair = await maybeRepair(deps, run, counts, repairCache, r, verdict, d);
    log.note({
      class: verdict,
      table: source,
      key: r?.key ?? d?.key ?? '',
      expected: r?.w ? { position: r.w.p, op: r.w.o, deleted: r.w.o === 'd', hash: r.w.h } : null,
      actual: findingActual(d),
      ...(repair !== undefined ? { repair } : {}),
    });
  }
}

/** Manifest keys missing from the table, and (full mode) live rows the manifest does not list. */
function checkManifest(run: RunContext, sides: Sides, log: FindingLog): void {
  for (const [id, m] of sides.manifest) {
    const d = sides.table.get(id);
    if (d && d.a > run.cutoff) continue;
    if (!d || d.d) log.note({ class: 'manifest-missing', table: m.t, key: m.key, expected: null, actual: findingActual(d) });
  }
  if (run.mode !== 'full') return;
  for (const [id, d] of sides.table) {
    if (d.d || d.a > run.cutoff || sides.manifest.has(id)) continue;
    log.note({ class: 'manifest-extra', table: d.t, key: d.key, expected: null, actual: findingActual(d) });
  }
}

async function writeFindings(deps: JobDeps, run: RunContext, partition: number, findings: readonly Finding[]): Promise<string | null> {
  if (findings.length === 0) return null;
  const fKey = findingsKey(run, partition);
  const body = await gzipAsync(Buffer.from(`${findings.map((f) => JSON.stringify(f)).join('\n')}\n`, 'utf8'));
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.config.raw.bucket, Key: fKey, Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
  return fKey;
}

export async function reducePartition(input: TaskInput<number>, deps: JobDeps): Promise<PartitionSummary> {
  const { run, item: partition } = input;
  const counts = emptyCounts();
  const sides = await readSides(deps, run, partition);
  counts.tableRows = sides.table.size;
  if (run.mode === 'window') await fetchWindowTableSide(deps, sides, counts);
  const log = new FindingLog();
  await classifyKeys(deps, run, sides, counts, log);
  if (run.manifest) checkManifest(run, sides, log);
  const fKey = await writeFindings(deps, run, partition, log.findings);
  const summary: PartitionSummary = { partition, counts, findings: log.byClass, findingsKey: fKey };
  await putJson(deps.s3, deps.config.raw.bucket, summaryKey(run, partition), summary);
  return summary;
}
