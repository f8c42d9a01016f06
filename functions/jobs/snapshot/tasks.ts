/**
 * Snapshot detection, per table, from raw and the per-hour counters:
 *
 * - Re-snapshot: snapshot reads that arrived after a streamed change of the table (the connector
 *   read the table again after streaming began), from raw; and from the hour rows
 *   (`snapshotEvents` after streamed hours, `resnapshots`).
 * - Orphans after a complete snapshot: the latest snapshot of the table whose end marker
 *   (Debezium `source.snapshot = "last"` / `"last_in_data_collection"`) is in raw read a key set K.
 *   A live row whose key is not in K and that was last applied before the snapshot began was deleted
 *   upstream while nothing captured it. `--apply` writes a tombstone for it at the snapshot's end
 *   position through the ingest's guarded writer, so a row changed since is never touched.
 * - Anomalies against history (anomalies.ts).
 * Holds one table's snapshot key set in memory.
 */
import { randomBytes } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { isJsonObject, type JsonValue, parseJson } from '../../core/json.js';
import { keyId } from '../../core/keys.js';
import { planBatch } from '../../core/plan.js';
import { decodePosition } from '../../core/position.js';
import type { ChangeEvent } from '../../core/types.js';
import { errorMessage } from '../../core/errors.js';
import { MetricUnit } from '../../telemetry/sinks.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import { listObjects, listTablesRaw, readParsed } from '../raw-scan.js';
import { scanTableRows } from '../reconcile/scan-table.js';
import { getJson, putJson } from '../shuffle.js';
import type { TableSideRecord } from '../reconcile/types.js';
import type { RawReplayRecord } from '../../adapters/raw-reader.js';
import type { TableConfig } from '../../config/types.js';
import { ALL_TABLES, SNAPSHOT_FINDING_METRICS } from '../../telemetry/job-metrics.js';
import { jobRowKey, STATUS_KEY, tablePartition } from '../../telemetry/status-layout.js';
import { ANOMALY_KINDS, type Anomaly, detectAnomalies, othersFlowIn } from './anomalies.js';
import { readHourRows } from './hours.js';
import { reportRunPrefix } from '../../adapters/raw-layout.js';
import { validateSnapshotRequest } from '../inputs.js';

const HOUR_MS = 3_600_000;

export interface SnapshotRequest {
  readonly tables?: readonly string[];
  /** Tombstone the orphans found after a complete snapshot. @default false */
  readonly apply?: boolean;
  /** Hours of raw to look for snapshots in. @default anomalies.historyHours */
  readonly hours?: number;
  readonly runId?: string;
}

export interface SnapshotRun {
  readonly runId: string;
  readonly startedAt: number;
  readonly tables: readonly string[];
  readonly apply: boolean;
  readonly lookbackFromMs: number;
  readonly prefix: string;
  /**
   * At most two tables that had events in the last `silentHours` (read once at plan time), so that
   * each table task tells whether "others flow" without reading every table's hours.
   */
  readonly flowing?: readonly string[];
}

export interface SnapshotRunInput {
  readonly run: SnapshotRun;
}
export interface SnapshotTableInput {
  readonly run: SnapshotRun;
  readonly item: string;
}

export interface TableSnapshotResult {
  readonly table: string;
  /** Snapshot reads that arrived after the first streamed change seen in raw. */
  readonly resnapshotReads: number;
  /** The latest complete snapshot, if raw holds one. */
  readonly snapshot: { readonly startPosition: string; readonly endPosition: string; readonly keys: number } | null;
  readonly orphans: { readonly count: number; readonly tombstoned: number; readonly failed: number; readonly keys: readonly string[] };
  readonly anomalies: readonly Anomaly[];
  readonly readUnits: number;
}

export interface SnapshotReport {
  readonly job: 'snapshot';
  readonly runId: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly apply: boolean;
  readonly tables: readonly TableSnapshotResult[];
  /** Anomalies (re-snapshots included) plus orphan rows not tombstoned. */
  readonly findings: number;
  readonly report: string;
}


/** Keys of orphans listed in a report (the count is always complete). */
const MAX_LISTED_KEYS = 1000;

export async function planSnapshot(request: SnapshotRequest, deps: JobDeps): Promise<{ run: SnapshotRun; tableItems: string[] }> {
  const { config } = deps;
  validateSnapshotRequest(config, request);
  const tables = request.tables && request.tables.length > 0 ? [...request.tables] : config.tables.map((t) => t.source);
  for (const t of tables) tableConfig(config, t);
  const hours = request.hours ?? config.jobs.snapshot.anomalies.historyHours;
  if (!Number.isInteger(hours) || hours < 1) throw new JobInputError(`hours must be a positive integer, got ${hours}`);
  const startedAt = deps.now();
  const runId = request.runId ?? `snapshot-${new Date(startedAt).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9._-]{1,80}$/.test(runId)) throw new JobInputError(`runId must be 1-80 characters of A-Z a-z 0-9 . _ -, got "${runId}"`);
  const flowing = await flowingTables(deps, startedAt);
  const run: SnapshotRun = { runId, startedAt, tables, apply: request.apply === true, lookbackFromMs: startedAt - hours * HOUR_MS, prefix: reportRunPrefix(config.jobs.reportPrefix, 'snapshot', runId), flowing };
  return { run, tableItems: tables };
}

/** Tables whose recent hours are read at once while looking for flowing ones. */
const FLOWING_CHUNK = 16;

/**
 * Up to two configured tables with events in the last `silentHours`: enough to tell any table
 * whether others flow. Tables are read a chunk at a time, and the search stops at the second one,
 * so a pipeline whose tables flow costs a chunk's reads, not one per table.
 */
async function flowingTables(deps: JobDeps, now: number): Promise<string[]> {
  const th = deps.config.jobs.snapshot.anomalies;
  const sources = deps.config.tables.map((t) => t.source);
  const flowing: string[] = [];
  for (let i = 0; i < sources.length && flowing.length < 2; i += FLOWING_CHUNK) {
    const chunk = sources.slice(i, i + FLOWING_CHUNK);
    const rows = await readHourRows(deps.dynamodb, deps.config.statusTable, deps.config.name, chunk, now - th.silentHours * HOUR_MS, now);
    for (const t of chunk) {
      if (flowing.length >= 2) break;
      if (othersFlowIn('', rows.filter((r) => r.table === t), now, th)) flowing.push(t);
    }
  }
  return flowing;
}

/** Debezium's `source.snapshot` of a message (bare or `{schema, payload}`), if any. */
export function snapshotMarker(value: JsonValue | null): string | null {
  if (!isJsonObject(value)) return null;
  const body = isJsonObject(value.payload) ? value.payload : value;
  const source = body.source;
  return isJsonObject(source) && typeof source.snapshot === 'string' ? source.snapshot : null;
}

const isFirst = (m: string | null) => m === 'first' || m === 'first_in_data_collection';
const isLast = (m: string | null) => m === 'last' || m === 'last_in_data_collection';

interface SnapshotLine {
  readonly position: string;
  readonly arrival: number;
  readonly id: string;
  readonly marker: string | null;
}

/**
 * Splits snapshot reads (in arrival order) into sessions: a session begins at a start marker, or at
 * the first read after an end marker, and ends at an end marker. Arrival, not position: a PostgreSQL
 * snapshot read carries no commit LSN, so its position sorts below every streamed change.
 */
export function snapshotSessions(reads: readonly SnapshotLine[]): SnapshotLine[][] {
  const sessions: SnapshotLine[][] = [];
  let current: SnapshotLine[] = [];
  for (const l of [...reads].sort((a, b) => a.arrival - b.arrival)) {
    if (isFirst(l.marker) && current.length > 0) {
      sessions.push(current);
      current = [];
    }
    current.push(l);
    if (isLast(l.marker)) {
      sessions.push(current);
      current = [];
    }
  }
  if (current.length > 0) sessions.push(current);
  return sessions;
}

/**
 * The latest complete snapshot of a table: the latest session that ends in an end marker, or that
 * streamed changes of the table followed (Debezium marks `last` only on the last row of the whole
 * snapshot, which may belong to another table, and streams only once the snapshot is done).
 */
export function completeSnapshot(reads: readonly SnapshotLine[], lastStreamed: number | null = null): { start: number; end: SnapshotLine; keys: Set<string> } | null {
  const sessions = snapshotSessions(reads);
  for (let i = sessions.length - 1; i >= 0; i--) {
    const session = sessions[i] ?? [];
    const first = session[0];
    const end = session[session.length - 1];
    if (!first || !end) continue;
    if (isLast(end.marker) || (lastStreamed !== null && lastStreamed > end.arrival)) return { start: first.arrival, end, keys: new Set(session.map((l) => l.id)) };
  }
  return null;
}


/** The snapshot marker of a delivered record's message (null when absent or unreadable). */
function markerOfRecord(rec: RawReplayRecord): string | null {
  try {
    return snapshotMarker(rec.record.value ? parseJson(Buffer.from(rec.record.value).toString('utf8')) : null);
  } catch {
    return null;
  }
}

/** A table's raw in the lookback: its snapshot reads, and when streamed changes first and last arrived. */
class TableRaw {
  firstStreamed: number | null = null;
  lastStreamed: number | null = null;
  readonly reads: SnapshotLine[] = [];

  constructor(
    private readonly source: string,
    private readonly table: TableConfig,
  ) {}

  private streamedAt(arrival: number): void {
    if (this.firstStreamed === null || arrival < this.firstStreamed) this.firstStreamed = arrival;
    if (this.lastStreamed === null || arrival > this.lastStreamed) this.lastStreamed = arrival;
  }

  addRecord(rec: RawReplayRecord): void {
    const arrival = rec.record.transport.arrivalTime;
    let marker: string | null | undefined;
    for (const line of rec.lines) {
      if (line.kind !== 'change' || line.table !== this.source || line.position === null || line.key === null || line.op === 't') continue;
      if (line.op !== 'r') {
        this.streamedAt(arrival);
        continue;
      }
      marker ??= markerOfRecord(rec);
      const key = parseJson(line.key);
      this.reads.push({ position: line.position, arrival, id: isJsonObject(key) ? keyId(this.table, key) : line.key, marker });
    }
  }

  /**
   * Reads in sessions that began after streaming did: a re-snapshot (reads of the initial snapshot
   * may share a delivery with the first streamed changes).
   */
  resnapshotReads(): number {
    const streamedFrom = this.firstStreamed;
    if (streamedFrom === null) return 0;
    return snapshotSessions(this.reads)
      .filter((s) => (s[0]?.arrival ?? 0) > streamedFrom)
      .reduce((n, s) => n + s.length, 0);
  }
}

async function readTableRaw(deps: JobDeps, run: SnapshotRun, source: string, table: TableConfig): Promise<TableRaw> {
  const bucket = deps.config.raw.bucket;
  const raw = new TableRaw(source, table);
  for (const object of await listTablesRaw(deps.s3, bucket, deps.config.raw.prefix, [source], { fromMs: run.lookbackFromMs, toMs: run.startedAt })) {
    const parsed = await readParsed(deps.s3, bucket, object.key);
    for (const rec of parsed.records) raw.addRecord(rec);
  }
  return raw;
}

type Orphans = TableSnapshotResult['orphans'] & { readUnits: number };

/** Live rows not read by the complete snapshot and last written before it began; tombstoned with --apply. */
async function findOrphans(deps: JobDeps, run: SnapshotRun, source: string, table: TableConfig, complete: { start: number; end: SnapshotLine; keys: Set<string> }): Promise<Orphans> {
  const { start, end, keys } = complete;
  const orphans = { count: 0, tombstoned: 0, failed: 0, keys: [] as string[], readUnits: 0 };
  const status = await deps.status.load([source]);
  const wm = status.get(source)?.truncateWatermark;
  const isOrphan = (row: TableSideRecord) => !(row.d || keys.has(row.k) || row.a >= start || (typeof wm === 'string' && row.p < wm));
  for await (const page of scanTableRows(deps, table)) {
    orphans.readUnits += page.units;
    for (const row of page.rows) {
      if (!isOrphan(row)) continue;
      orphans.count++;
      if (orphans.keys.length < MAX_LISTED_KEYS) orphans.keys.push(row.key);
      if (run.apply) await tombstoneOrphan(deps, source, row, end.position, orphans);
    }
  }
  return orphans;
}

async function tombstoneOrphan(deps: JobDeps, source: string, row: TableSideRecord, position: string, orphans: { tombstoned: number; failed: number }): Promise<void> {
  const outcome = await tombstone(deps, source, row.key, position).catch((err: unknown) => `failed: ${errorMessage(err)}`);
  if (outcome === 'applied') orphans.tombstoned++;
  else {
    orphans.failed++;
    deps.log.warn('orphan not tombstoned', { table: source, keyHash: deps.keyRef(source, row.k), position, outcome });
  }
}

/** Anomalies from the hour rows, plus a re-snapshot seen in raw that they missed. */
async function tableAnomalies(deps: JobDeps, run: SnapshotRun, source: string, raw: TableRaw, resnapshotReads: number): Promise<Anomaly[]> {
  const th = deps.config.jobs.snapshot.anomalies;
  const hours = await readHourRows(deps.dynamodb, deps.config.statusTable, deps.config.name, [source], run.startedAt - (th.historyHours + th.recentHours) * HOUR_MS, run.startedAt);
  const othersFlow = run.flowing !== undefined ? run.flowing.some((t) => t !== source) : undefined;
  const anomalies = detectAnomalies(source, hours, run.startedAt, th, othersFlow);
  if (resnapshotReads > 0 && !anomalies.some((a) => a.kind === 'resnapshot')) {
    anomalies.push({ kind: 'resnapshot', table: source, detail: { snapshotReadsAfterStreaming: resnapshotReads, streamingSince: new Date(raw.firstStreamed ?? 0).toISOString() } });
  }
  return anomalies;
}

export async function detectTable(input: SnapshotTableInput, deps: JobDeps): Promise<TableSnapshotResult> {
  const { run, item: source } = input;
  const table = tableConfig(deps.config, source);
  const raw = await readTableRaw(deps, run, source, table);
  const resnapshotReads = raw.resnapshotReads();
  const complete = completeSnapshot(raw.reads, raw.lastStreamed);
  let snapshot: TableSnapshotResult['snapshot'] = null;
  let orphans: Orphans = { count: 0, tombstoned: 0, failed: 0, keys: [], readUnits: 0 };
  if (complete) {
    const { start, end, keys } = complete;
    snapshot = { startPosition: raw.reads.filter((l) => l.arrival === start)[0]?.position ?? end.position, endPosition: end.position, keys: keys.size };
    orphans = await findOrphans(deps, run, source, table, complete);
  }
  const anomalies = await tableAnomalies(deps, run, source, raw, resnapshotReads);
  const { count, tombstoned, failed, keys: orphanKeys, readUnits } = orphans;
  const result: TableSnapshotResult = { table: source, resnapshotReads, snapshot, orphans: { count, tombstoned, failed, keys: orphanKeys }, anomalies, readUnits };
  await putJson(deps.s3, deps.config.raw.bucket, `${run.prefix}tables/${String(run.tables.indexOf(source)).padStart(4, '0')}.json`, result);
  deps.log.info('snapshot detection done', { runId: run.runId, table: source, orphans: count, tombstoned, anomalies: anomalies.length, resnapshotReads });
  return result;
}

/** A tombstone at the snapshot's end position, through the guarded writer. */
async function tombstone(deps: JobDeps, source: string, keyText: string, position: string): Promise<string> {
  const key = parseJson(keyText);
  if (!isJsonObject(key)) return 'failed: key is not an object';
  const event: ChangeEvent = {
    kind: 'change',
    format: 'tidemark-orphan',
    op: 'd',
    table: source,
    key,
    before: null,
    after: null,
    patch: null,
    placeholders: [],
    position: { tuple: decodePosition(position), strength: 'source' },
    txid: null,
    commitTs: null,
    snapshot: true,
  };
  const write = planBatch([event], (e) => deps.normalizer.keyIdOf(e)).writes[0];
  if (!write) return 'failed: nothing planned';
  return (await deps.writer.write(write)).outcome;
}

export async function reportSnapshot(input: SnapshotRunInput, deps: JobDeps): Promise<SnapshotReport> {
  const { run } = input;
  const bucket = deps.config.raw.bucket;
  const tables: TableSnapshotResult[] = [];
  for (const o of await listObjects(deps.s3, bucket, `${run.prefix}tables/`)) tables.push(await getJson<TableSnapshotResult>(deps.s3, bucket, o.key));
  let findings = 0;
  const totals = new Map<string, number>(Object.values(SNAPSHOT_FINDING_METRICS).map((m) => [m, 0]));
  const add = (table: string, metric: string, n: number) => {
    deps.metrics.add(table, metric, MetricUnit.Count, n);
    totals.set(metric, (totals.get(metric) ?? 0) + n);
  };
  for (const t of tables) {
    findings += t.anomalies.length + (t.orphans.count - t.orphans.tombstoned);
    add(t.table, SNAPSHOT_FINDING_METRICS.orphan, t.orphans.count - t.orphans.tombstoned);
    for (const kind of ANOMALY_KINDS) add(t.table, SNAPSHOT_FINDING_METRICS[kind], t.anomalies.filter((a) => a.kind === kind).length);
  }
  for (const [metric, n] of totals) deps.metrics.add(ALL_TABLES, metric, MetricUnit.Count, n);
  deps.metrics.flush();
  const key = `${run.prefix}report.json`;
  const report: SnapshotReport = {
    job: 'snapshot',
    runId: run.runId,
    startedAt: new Date(run.startedAt).toISOString(),
    finishedAt: new Date(deps.now()).toISOString(),
    apply: run.apply,
    tables,
    findings,
    report: `s3://${bucket}/${key}`,
  };
  await putJson(deps.s3, bucket, key, report);
  // The table's open findings in the status table (`job#snapshot` in its partition), read by `tidemark status`.
  for (const t of tables) {
    const open = [...t.anomalies.map((a) => a.kind), ...(t.orphans.count > t.orphans.tombstoned ? ['orphan'] : [])];
    await deps.dynamodb.send(
      new UpdateItemCommand({
        TableName: deps.config.statusTable,
        Key: { [STATUS_KEY.partition]: { S: tablePartition(deps.config.name, t.table) }, [STATUS_KEY.row]: { S: jobRowKey('snapshot') } },
        UpdateExpression: 'SET #at = :at, #run = :run, #open = :open, #o = :o, #r = :r',
        ExpressionAttributeNames: { '#at': 'lastRunAt', '#run': 'runId', '#open': 'openFindings', '#o': 'orphans', '#r': 'report' },
        ExpressionAttributeValues: {
          ':at': { N: String(deps.now()) },
          ':run': { S: run.runId },
          ':open': { L: open.map((k) => ({ S: k })) },
          ':o': { N: String(t.orphans.count - t.orphans.tombstoned) },
          ':r': { S: report.report },
        },
      }),
    );
  }
  return report;
}
