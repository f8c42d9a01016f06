/**
 * Snapshot and anomaly detection as SQL (docs/history.md §4): over `table_hours` (the per-table,
 * per-hour counts compaction keeps) and `history`, never over raw, so a run reads what its
 * lookback needs, whatever the number of tables.
 *
 *   Plan     fix the run; store the queries: detect-anomalies, detect-resnapshots and
 *            detect-orphans, each UNLOADed under the run's outputs
 *   Query    (state machine) each query on Athena
 *   Report   rows read back into per-table results; with `apply`, the orphans found after a
 *            complete snapshot tombstoned through the ingest's guarded writer at the snapshot's
 *            end position (a row changed since is never touched); metrics and the report; the
 *            run's outputs deleted
 */
import { listObjectKeys } from '../../adapters/s3-list.js';
import { randomBytes } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { reportRunPrefix, runFile, unloadPrefix } from '../../adapters/raw-layout.js';
import { deleteObjectsUnder } from '../../adapters/s3-list.js';
import { MetricUnit } from '../../telemetry/sinks.js';
import { jobRowKey, STATUS_KEY, tablePartition } from '../../telemetry/status-layout.js';
import { ALL_TABLES, SNAPSHOT_FINDING_METRICS } from '../../telemetry/job-metrics.js';
import { type AnomalyRow, anomalyOf, HOUR_MS } from '../../sql/index.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { configQueryRefs, s3Uri } from '../sql-run.js';
import { ANOMALY_KINDS, type Anomaly } from './anomalies.js';
import type { SnapshotReport, SnapshotRequest, TableSnapshotResult } from './types.js';
import { validateSnapshotRequest } from '../inputs.js';
import { tombstoneOrphans } from './orphans.js';
import { StatusReader } from '../../adapters/status-reader.js';
import type { HeldLabel } from '../../core/lifecycle.js';
import { SCHEMA_ROW, STATUS_ROW } from '../../telemetry/status-layout.js';
import { SNAPSHOT_DRIFT_METRICS } from '../../telemetry/job-metrics.js';
import { heldTables, reportedHeld } from '../held.js';
import { DRIFT_SEEN, driftOf, driftSeenOf, schemaOfRow } from './drift.js';

export type { SnapshotReport, SnapshotRequest, TableSnapshotResult } from './types.js';

export interface SnapshotRunContext {
  readonly runId: string;
  readonly startedAt: number;
  readonly tables: readonly string[];
  /** Tables suspended or stopped in error at the plan: labelled in the report, left out of the queries. */
  readonly held: Readonly<Record<string, HeldLabel>>;
  readonly apply: boolean;
  readonly lookbackFromMs: number;
  readonly prefix: string;
  readonly bucket: string;
  readonly outputs: { readonly anomalies: string; readonly resnapshots: string; readonly orphans: string };
}

export interface SnapshotPlan {
  readonly run: SnapshotRunContext;
  readonly queries: StoredQueries;
}

export async function planSnapshotRun(request: SnapshotRequest, deps: JobDeps): Promise<SnapshotPlan> {
  const { config } = deps;
  // Every problem of the input at once (functions/jobs/inputs.ts, the rules the CLI checks first).
  validateSnapshotRequest(config, request);
  const tables = request.tables && request.tables.length > 0 ? [...new Set(request.tables)] : config.tables.map((t) => t.source);
  for (const t of tables) tableConfig(config, t);
  const hours = request.hours ?? config.jobs.snapshot.anomalies.historyHours;
  if (!Number.isInteger(hours) || hours < 1) throw new JobInputError(`hours must be a positive integer, got ${hours}`);
  const startedAt = deps.now();
  const runId = request.runId ?? `snapshot-${new Date(startedAt).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9._-]{1,80}$/.test(runId)) throw new JobInputError(`runId must be 1-80 characters of A-Z a-z 0-9 . _ -, got "${runId}"`);
  const history = config.history.prefix;
  // A held table's records are in raw but not applied: orphans and anomalies of it would be of rows the table does not hold yet.
  const held = await heldTables(deps, tables);
  const queried = tables.filter((t) => held[t] === undefined);
  const run: SnapshotRunContext = {
    runId,
    startedAt,
    tables,
    held,
    apply: request.apply === true,
    lookbackFromMs: startedAt - hours * HOUR_MS,
    prefix: reportRunPrefix(config.jobs.reportPrefix, 'snapshot', runId),
    bucket: config.raw.bucket,
    outputs: {
      anomalies: unloadPrefix(history, 'snapshot', runId, 'anomalies'),
      resnapshots: unloadPrefix(history, 'snapshot', runId, 'resnapshots'),
      orphans: unloadPrefix(history, 'snapshot', runId, 'orphans'),
    },
  };
  const uri = (p: string) => s3Uri(run.bucket, p);
  const refs =
    queried.length === 0
      ? []
      : [
          ...configQueryRefs(config, 'detect-anomalies', { now: startedAt, thresholds: config.jobs.snapshot.anomalies, tables: queried, output: uri(run.outputs.anomalies) }),
          ...configQueryRefs(config, 'detect-resnapshots', { tables: queried, since: run.lookbackFromMs, until: startedAt, output: uri(run.outputs.resnapshots) }),
          ...configQueryRefs(config, 'detect-orphans', { tables: queried, since: run.lookbackFromMs, until: startedAt, output: uri(run.outputs.orphans) }),
        ];
  const queries = await storeQueries(deps, runFile(run.prefix, 'queries'), refs);
  deps.log.info('snapshot detection planned', { runId, tables: tables.length, held: tables.length - queried.length });
  return { run, queries };
}

/** The rows of an UNLOAD output (gzip JSON Lines files under a prefix), streamed. */
export async function* outputRows<T>(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<T> {
  for await (const key of listObjectKeys(s3, bucket, prefix)) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
    if (bytes.length === 0) continue;
    const input = bytes[0] === 0x1f && bytes[1] === 0x8b ? Readable.from([bytes]).pipe(createGunzip()) : Readable.from([bytes]);
    for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) if (line.trim() !== '') yield JSON.parse(line) as T;
  }
}

interface ResnapshotRow {
  readonly source_table: string;
  readonly streaming_since: number | string | null;
  readonly resnapshot_reads: number | string;
  readonly first_read_at: number | string | null;
}

/**
 * Each table's open findings in the status table (`job#snapshot` in its partition), read by
 * `tidemark status`, and the schema row's counts this report saw: where the next one's drift starts.
 */
async function recordOpenFindings(deps: JobDeps, run: SnapshotRunContext, tables: readonly Result[], seen: ReadonlyMap<string, { changes: number; incompatible: number }>, report: string): Promise<void> {
  for (const t of tables) {
    const open = [...t.anomalies.map((a) => a.kind), ...(t.orphans.count > t.orphans.tombstoned ? ['orphan'] : []), ...(t.drift.hasIncompatible ? [SCHEMA_INCOMPATIBLE] : [])];
    const counts = seen.get(t.table) ?? { changes: 0, incompatible: 0 };
    await deps.dynamodb.send(
      new UpdateItemCommand({
        TableName: deps.config.statusTable,
        Key: { [STATUS_KEY.partition]: { S: tablePartition(deps.config.name, t.table) }, [STATUS_KEY.row]: { S: jobRowKey('snapshot') } },
        UpdateExpression: 'SET #at = :at, #run = :run, #open = :open, #o = :o, #r = :r, #sc = :sc, #si = :si',
        ExpressionAttributeNames: { '#at': 'lastRunAt', '#run': 'runId', '#open': 'openFindings', '#o': 'orphans', '#r': 'report', '#sc': DRIFT_SEEN.changes, '#si': DRIFT_SEEN.incompatible },
        ExpressionAttributeValues: {
          ':at': { N: String(deps.now()) },
          ':run': { S: run.runId },
          ':open': { L: open.map((k) => ({ S: k })) },
          ':o': { N: String(t.orphans.count - t.orphans.tombstoned) },
          ':r': { S: report },
          ':sc': { N: String(counts.changes) },
          ':si': { N: String(counts.incompatible) },
        },
      }),
    );
  }
}

/** The open-finding kind of schema changes the target cannot hold. */
export const SCHEMA_INCOMPATIBLE = 'schema-incompatible';

type Result = TableSnapshotResult & { anomalies: Anomaly[] };

/**
 * Per table, its schema row, its last report's row and its status row (the position notation): one
 * BatchGetItem per 33 tables, never a scan.
 */
async function driftOfTables(deps: JobDeps, tables: readonly string[]): Promise<{ drift: Map<string, TableSnapshotResult['drift']>; seen: Map<string, { changes: number; incompatible: number }> }> {
  const reader = new StatusReader(deps.dynamodb, deps.config.statusTable, deps.config.name);
  const rows = await reader.tableRows(tables, [SCHEMA_ROW, jobRowKey('snapshot'), STATUS_ROW]);
  const drift = new Map<string, TableSnapshotResult['drift']>();
  const seen = new Map<string, { changes: number; incompatible: number }>();
  for (const t of tables) {
    const r = rows.get(t);
    const state = schemaOfRow(r?.get(SCHEMA_ROW));
    const status = r?.get(STATUS_ROW);
    const notation = { ...(typeof status?.format === 'string' ? { format: status.format } : {}), ...(typeof status?.orderingStrength === 'string' ? { ordering: status.orderingStrength } : {}) };
    drift.set(t, { ...driftOf(state, driftSeenOf(r?.get(jobRowKey('snapshot')))), notation });
    seen.set(t, { changes: state?.total ?? 0, incompatible: state?.incompatible ?? 0 });
  }
  return { drift, seen };
}

export async function reportSnapshotRun(input: { run: SnapshotRunContext }, deps: JobDeps): Promise<SnapshotReport> {
  const { run } = input;
  const th = deps.config.jobs.snapshot.anomalies;
  // Read before this run's job#snapshot rows are written: the previous report's counts are where drift starts.
  const { drift, seen } = await driftOfTables(deps, run.tables);
  const results = new Map<string, Result>();
  const resultOf = (table: string) => {
    let r = results.get(table);
    if (!r) {
      const held = run.held[table];
      const tableDrift = drift.get(table) ?? driftOf(undefined, null);
      r = { table, resnapshotReads: 0, snapshot: null, orphans: { count: 0, tombstoned: 0, failed: 0, keys: [] }, anomalies: [], readUnits: 0, held: held ? reportedHeld(held) : null, drift: tableDrift };
      results.set(table, r);
    }
    return r;
  };
  for (const t of run.tables) resultOf(t);
  for await (const row of outputRows<AnomalyRow>(deps.s3, run.bucket, run.outputs.anomalies)) resultOf(row.source_table).anomalies.push(anomalyOf(row, th) as Anomaly);
  for await (const row of outputRows<ResnapshotRow>(deps.s3, run.bucket, run.outputs.resnapshots)) {
    const reads = Number(row.resnapshot_reads);
    if (reads <= 0) continue;
    const r = resultOf(row.source_table);
    results.set(row.source_table, { ...r, resnapshotReads: reads });
    resultOf(row.source_table).anomalies.push({ kind: 'resnapshot', table: row.source_table, detail: { snapshotReadsAfterStreaming: reads, streamingSince: new Date(Number(row.streaming_since ?? 0)).toISOString() } });
  }
  const orphans = await tombstoneOrphans(deps, run, outputRows(deps.s3, run.bucket, run.outputs.orphans));
  for (const [table, o] of orphans) {
    const r = resultOf(table);
    results.set(table, { ...r, snapshot: o.snapshot, orphans: o.orphans, readUnits: o.readUnits });
  }
  const tables = run.tables.map((t) => resultOf(t));
  let findings = 0;
  const totals = new Map<string, number>();
  const add = (table: string, metric: string, n: number) => {
    deps.metrics.add(table, metric, MetricUnit.Count, n);
    totals.set(metric, (totals.get(metric) ?? 0) + n);
  };
  const driftTotals = { changes: 0, incompatible: 0, tables: 0 };
  for (const t of tables) {
    findings += t.anomalies.length + (t.orphans.count - t.orphans.tombstoned) + t.drift.incompatible;
    for (const kind of ANOMALY_KINDS) add(t.table, SNAPSHOT_FINDING_METRICS[kind], t.anomalies.filter((a) => a.kind === kind).length);
    add(t.table, SNAPSHOT_FINDING_METRICS.orphan, t.orphans.count - t.orphans.tombstoned);
    const changes = t.drift.changes.length + t.drift.unlisted;
    add(t.table, SNAPSHOT_DRIFT_METRICS.changes, changes);
    add(t.table, SNAPSHOT_DRIFT_METRICS.incompatible, t.drift.incompatible);
    driftTotals.changes += changes;
    driftTotals.incompatible += t.drift.incompatible;
    if (changes > 0) driftTotals.tables++;
  }
  for (const [metric, n] of totals) deps.metrics.add(ALL_TABLES, metric, MetricUnit.Count, n);
  deps.metrics.flush();
  const reportKey = runFile(run.prefix, 'report');
  const report: SnapshotReport = {
    job: 'snapshot',
    runId: run.runId,
    startedAt: new Date(run.startedAt).toISOString(),
    finishedAt: new Date(deps.now()).toISOString(),
    apply: run.apply,
    tables,
    findings,
    drift: driftTotals,
    held: tables.filter((t) => t.held !== null).map((t) => t.table),
    report: s3Uri(run.bucket, reportKey),
  };
  await deps.s3.send(new PutObjectCommand({ Bucket: run.bucket, Key: reportKey, Body: JSON.stringify(report), ContentType: 'application/json' }));
  await recordOpenFindings(deps, run, tables, seen, report.report);
  // The orphans output holds keys, and the report holds what it found: the outputs do not outlive the run.
  for (const prefix of [run.outputs.anomalies, run.outputs.resnapshots, run.outputs.orphans]) await deleteObjectsUnder(deps.s3, run.bucket, prefix);
  deps.log.info('snapshot detection finished', { runId: run.runId, tables: tables.length, findings, driftChanges: driftTotals.changes, driftIncompatible: driftTotals.incompatible, held: report.held.length });
  return report;
}
