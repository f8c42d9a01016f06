/**
 * Reconcile as SQL (docs/history.md §4): expected state (kept by compaction) against the table
 * side (what DynamoDB holds), classified by `reconcile-full` or `reconcile-window`.
 *
 *   Plan      fix the run (id, cutoff, tables, window of compacted hours); full mode: one export
 *             item per table (its ARN and export prefix, written to S3 for the Distributed Map);
 *             window mode: the `window-keys` query; the classify queries (findings and counts)
 *   full      per table (Distributed Map): ExportTableToPointInTime, wait, then per export data
 *             file (Distributed Map over manifest-files.json) `exportToTableSide`
 *   window    the `window-keys` UNLOAD, then per output file (Distributed Map) `windowToTableSide`
 *   Classify  the findings and counts UNLOADs
 *   Report    counts and findings read back, per-table reports, metrics, status rows; the run's
 *             export and table side (which hold keys, and the export row values) deleted
 *
 * Memory and cost grow with the tables (their export, their expected state), never with the
 * length of history: nothing here lists or reads raw.
 */
import { randomBytes } from 'node:crypto';
import { DescribeTableCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { encodeSegment, reportRunPrefix, tableReportKey, tableSideRunPrefix, unloadPrefix } from '../../adapters/raw-layout.js';
import { MetricUnit } from '../../telemetry/sinks.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../../telemetry/job-metrics.js';
import { COUNTED_CLASSES, FINDING_CLASSES, HOUR_MS } from '../../sql/index.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import { readFrontier } from '../history/compaction.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { configQueryRefs, s3Uri } from '../sql-run.js';
import { CRITICAL_CLASSES } from './classify.js';
import type { ReconcileReport } from './report.js';
import type { Finding, ReconcileRequest } from './types.js';

export type { ReconcileReport } from './report.js';

/** Fixed for one run; every task receives it. */
export interface ReconcileRun {
  readonly runId: string;
  readonly mode: 'window' | 'full';
  readonly startedAt: number;
  /** Items applied after this (epoch ms) are in flight. */
  readonly cutoff: number;
  /** Window mode: the compacted hours whose keys are checked (hour starts, inclusive). */
  readonly window: { readonly fromMs: number; readonly toMs: number } | null;
  readonly tables: readonly string[];
  readonly repair: boolean;
  /** Reports of the run: `<reportPrefix>reconcile/<run>/`. */
  readonly prefix: string;
  readonly bucket: string;
  /** UNLOAD outputs: findings, counts, window keys. */
  readonly outputs: { readonly findings: string; readonly counts: string; readonly windowKeys: string; readonly exports: string };
}

/** One table's export, an item of the exports Distributed Map. */
export interface ExportItem {
  readonly table: string;
  readonly tableArn: string;
  readonly bucket: string;
  readonly exportPrefix: string;
  readonly runId: string;
}

export interface ReconcilePlan {
  readonly run: ReconcileRun;
  /** Full mode: the export items (a JSON array in S3). */
  readonly exports: { readonly bucket: string; readonly key: string; readonly count: number } | null;
  /** Window mode: the window-keys query, and where its output files are listed from. */
  readonly windowKeys: (StoredQueries & { readonly bucket: string; readonly prefix: string }) | null;
  readonly classify: StoredQueries;
}

const isoMs = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new JobInputError(`${name} must be an ISO 8601 time, got "${text}"`);
  return ms;
};

function runIdOf(request: ReconcileRequest, mode: string, startedAt: number): string {
  const runId = request.runId ?? `${mode}-${new Date(startedAt).toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9._-]{1,80}$/.test(runId)) throw new JobInputError(`runId must be 1-80 characters of A-Z a-z 0-9 . _ -, got "${runId}"`);
  return runId;
}

const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/**
 * The compacted hours a window run checks: the `hours` last compacted ones, or those a since/until
 * range covers (clipped to what compaction has reached). Null when nothing is compacted yet.
 */
function windowOf(request: ReconcileRequest, hours: number, compactedThrough: number | null): ReconcileRun['window'] {
  if (compactedThrough === null) return null;
  const since = isoMs('since', request.since);
  const until = isoMs('until', request.until);
  if (since !== undefined && until !== undefined && since >= until) throw new JobInputError(`since (${request.since}) must be before until (${request.until})`);
  const toMs = Math.min(compactedThrough, until !== undefined ? hourOf(until - 1) : compactedThrough);
  const fromMs = since !== undefined ? hourOf(since) : toMs - (hours - 1) * HOUR_MS;
  return fromMs <= toMs ? { fromMs, toMs } : null;
}

async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(value), ContentType: 'application/json' }));
}

export async function planReconcileRun(request: ReconcileRequest, deps: JobDeps): Promise<ReconcilePlan> {
  const { config } = deps;
  const settings = config.jobs.reconcile;
  const mode = request.mode ?? 'window';
  if (mode !== 'window' && mode !== 'full') throw new JobInputError(`mode must be "window" or "full", got "${String(mode)}"`);
  if (request.manifest !== undefined) throw new JobInputError('a key-set manifest is compared by `tidemark reconcile --manifest` against a full run (docs/jobs.md), not inside the state machine');
  const tables = request.tables && request.tables.length > 0 ? [...new Set(request.tables)] : config.tables.map((t) => t.source);
  for (const t of tables) tableConfig(config, t);
  const hours = request.hours ?? settings.window.hours;
  if (!Number.isInteger(hours) || hours < 1) throw new JobInputError(`hours must be a positive integer, got ${hours}`);
  const cutoffSeconds = request.cutoffSeconds ?? settings.cutoffSeconds;
  if (!Number.isFinite(cutoffSeconds) || cutoffSeconds < 0) throw new JobInputError(`cutoffSeconds must be a number of seconds ≥ 0, got ${String(cutoffSeconds)}`);
  const startedAt = deps.now();
  const cutoff = startedAt - cutoffSeconds * 1000;
  const runId = runIdOf(request, mode, startedAt);
  const frontier = await readFrontier(deps);
  const history = config.history.prefix;
  const run: ReconcileRun = {
    runId,
    mode,
    startedAt,
    cutoff,
    window: mode === 'window' ? windowOf(request, hours, frontier.compactedThrough) : null,
    tables,
    repair: request.repair === true,
    prefix: reportRunPrefix(config.jobs.reportPrefix, 'reconcile', runId),
    bucket: config.raw.bucket,
    outputs: {
      findings: unloadPrefix(history, 'reconcile', runId, 'findings'),
      counts: unloadPrefix(history, 'reconcile', runId, 'counts'),
      windowKeys: unloadPrefix(history, 'reconcile', runId, 'window-keys'),
      exports: unloadPrefix(history, 'reconcile', runId, 'export'),
    },
  };
  // Raw of the hours compaction has not reached raises each key's highest position (so `ahead` is judged against all raw).
  const firstUnsettled = frontier.compactedThrough === null ? null : frontier.compactedThrough + HOUR_MS;
  const unsettled = firstUnsettled !== null && firstUnsettled <= hourOf(startedAt) ? { from: firstUnsettled, to: hourOf(startedAt) } : undefined;
  const uri = (prefix: string) => s3Uri(run.bucket, prefix);
  const common = { tables, runId, cutoff, ...(unsettled ? { unsettled } : {}) };
  const classifyRefs =
    mode === 'full'
      ? [...configQueryRefs(config, 'reconcile-full', { ...common, part: 'findings', output: uri(run.outputs.findings) }), ...configQueryRefs(config, 'reconcile-full', { ...common, part: 'counts', output: uri(run.outputs.counts) })]
      : run.window === null
        ? []
        : [
            ...configQueryRefs(config, 'reconcile-window', { ...common, from: run.window.fromMs, to: run.window.toMs, part: 'findings', output: uri(run.outputs.findings) }),
            ...configQueryRefs(config, 'reconcile-window', { ...common, from: run.window.fromMs, to: run.window.toMs, part: 'counts', output: uri(run.outputs.counts) }),
          ];
  const classify = await storeQueries(deps, `${run.prefix}classify-queries.json`, classifyRefs);
  let exports: ReconcilePlan['exports'] = null;
  let windowKeys: ReconcilePlan['windowKeys'] = null;
  if (mode === 'full') {
    const items: ExportItem[] = [];
    for (const source of tables) {
      const table = tableConfig(config, source);
      const described = await deps.dynamodb.send(new DescribeTableCommand({ TableName: table.target }));
      const tableArn = described.Table?.TableArn;
      if (!tableArn) throw new JobInputError(`table ${table.target} (of ${source}) has no ARN: does it exist?`, { context: { table: source } });
      items.push({ table: source, tableArn, bucket: run.bucket, exportPrefix: `${run.outputs.exports}${encodeSegment(source)}`, runId });
    }
    const key = `${run.prefix}exports.json`;
    await putJson(deps.s3, run.bucket, key, items);
    exports = { bucket: run.bucket, key, count: items.length };
  } else if (run.window !== null) {
    const refs = configQueryRefs(config, 'window-keys', { tables, from: run.window.fromMs, to: run.window.toMs, output: uri(run.outputs.windowKeys) });
    windowKeys = { ...(await storeQueries(deps, `${run.prefix}window-queries.json`, refs)), bucket: run.bucket, prefix: run.outputs.windowKeys };
  }
  await putJson(deps.s3, run.bucket, `${run.prefix}run.json`, run);
  deps.log.info('reconcile planned', { runId, mode, tables: tables.length, window: run.window ? `${new Date(run.window.fromMs).toISOString()}..${new Date(run.window.toMs).toISOString()}` : null });
  return { run, exports, windowKeys, classify };
}

/**
 * Where a finished export's data files are listed: `manifest-files.json` next to the
 * `manifest-summary.json` that DescribeExport names (DynamoDB developer guide, "DynamoDB table
 * export output format": `<prefix>/AWSDynamoDB/<export id>/manifest-files.json`, JSON lines with
 * `dataFileS3Key`).
 */
export function exportFiles(input: { item: ExportItem; export: { manifest: string } }): { bucket: string; key: string } {
  const manifest = input.export.manifest;
  const at = manifest.lastIndexOf('/');
  if (at < 0 || !manifest.endsWith('manifest-summary.json')) throw new JobInputError(`export manifest "${manifest}" is not a manifest-summary.json key`);
  return { bucket: input.item.bucket, key: `${manifest.slice(0, at)}/manifest-files.json` };
}

/** Keys under a prefix, page by page. */
async function* listKeys(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<string> {
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) yield o.Key;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** The JSON lines of every gzip object under a prefix (an UNLOAD output), streamed. */
async function* outputRows<T>(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<T> {
  for await (const key of listKeys(s3, bucket, prefix)) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
    if (bytes.length === 0) continue;
    const gz = bytes[0] === 0x1f && bytes[1] === 0x8b;
    const input = gz ? Readable.from([bytes]).pipe(createGunzip()) : Readable.from([bytes]);
    for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) if (line.trim() !== '') yield JSON.parse(line) as T;
  }
}

async function deletePrefix(s3: S3Client, bucket: string, prefix: string): Promise<number> {
  let n = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
    n += batch.length;
    batch = [];
  };
  for await (const key of listKeys(s3, bucket, prefix)) {
    batch.push(key);
    if (batch.length === 1000) await flush();
  }
  await flush();
  return n;
}

interface FindingRow {
  readonly source_table: string;
  readonly key_id: string;
  readonly key_json: string;
  readonly class: string;
  readonly expected_position: string | null;
  readonly expected_op: string | null;
  readonly expected_hash: string | null;
  readonly expected_deleted: boolean | null;
  readonly actual_position: string | null;
  readonly actual_deleted: boolean | null;
  readonly actual_hash: string | null;
  readonly actual_applied_at: number | null;
}

/** A findings row as the report's Finding (keys and positions only). */
export function findingOf(row: FindingRow): Finding {
  return {
    class: row.class as Finding['class'],
    table: row.source_table,
    key: row.key_json,
    expected: row.expected_position === null || row.expected_position === undefined ? null : { position: row.expected_position, op: row.expected_op ?? '', deleted: row.expected_deleted === true, hash: row.expected_hash ?? null },
    actual:
      row.actual_position === null || row.actual_position === undefined
        ? null
        : { position: row.actual_position, deleted: row.actual_deleted === true, hash: row.actual_hash ?? '', appliedAt: Number(row.actual_applied_at ?? 0) },
  };
}

/** Findings per class listed in a table report; the findings objects hold them all. */
export const FIRST_FINDINGS = 100;

/** The table's last-run row in the status table (`reconcile#<table>`), read by `tidemark status`. */
async function recordLastRun(deps: JobDeps, run: ReconcileRun, table: string, counts: Record<string, number>, report: string): Promise<void> {
  await deps.dynamodb.send(
    new UpdateItemCommand({
      TableName: deps.config.statusTable,
      Key: { pipeline: { S: deps.config.name }, table: { S: `reconcile#${table}` } },
      UpdateExpression: 'SET #at = :at, #run = :run, #mode = :mode, #f = :f, #r = :r',
      ExpressionAttributeNames: { '#at': 'lastRunAt', '#run': 'runId', '#mode': 'mode', '#f': 'findings', '#r': 'report' },
      ExpressionAttributeValues: {
        ':at': { N: String(deps.now()) },
        ':run': { S: run.runId },
        ':mode': { S: run.mode },
        ':f': { M: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, { N: String(v) }])) },
        ':r': { S: report },
      },
    }),
  );
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Reads the run's counts and findings back, writes the reports and metrics, and deletes the run's export and table side. */
export async function reportReconcileRun(input: { run: ReconcileRun; repaired?: { repaired: number; failed: number } }, deps: JobDeps): Promise<ReconcileReport> {
  const { run } = input;
  const { s3 } = deps;
  const byTable: Record<string, Record<string, number>> = {};
  const byClass: Record<string, number> = Object.fromEntries(FINDING_CLASSES.map((c) => [c, 0]));
  const counted: Record<string, number> = Object.fromEntries(COUNTED_CLASSES.map((c) => [c, 0]));
  let keys = 0;
  for await (const row of outputRows<{ source_table: string; class: string; keys: number | string }>(s3, run.bucket, run.outputs.counts)) {
    const n = Number(row.keys);
    keys += n;
    if ((FINDING_CLASSES as readonly string[]).includes(row.class)) {
      const t = byTable[row.source_table] ?? {};
      t[row.class] = (t[row.class] ?? 0) + n;
      byTable[row.source_table] = t;
      byClass[row.class] = (byClass[row.class] ?? 0) + n;
    } else counted[row.class] = (counted[row.class] ?? 0) + n;
  }
  const first = new Map<string, Record<string, Finding[]>>();
  const findingObjects: string[] = [];
  for await (const key of listKeys(s3, run.bucket, run.outputs.findings)) findingObjects.push(s3Uri(run.bucket, key));
  for await (const row of outputRows<FindingRow>(s3, run.bucket, run.outputs.findings)) {
    const perClass = first.get(row.source_table) ?? {};
    const list = perClass[row.class] ?? [];
    if (list.length < FIRST_FINDINGS) list.push(findingOf(row));
    perClass[row.class] = list;
    first.set(row.source_table, perClass);
  }
  const tableReports: Record<string, { report: string; findings: string | null }> = {};
  for (const table of run.tables) {
    const key = tableReportKey(deps.config.jobs.reportPrefix, table, run.runId, '.json');
    const classes = Object.fromEntries(FINDING_CLASSES.map((c) => [c, byTable[table]?.[c] ?? 0]));
    const hasFindings = Object.values(classes).some((n) => n > 0);
    const findingsUri = hasFindings ? s3Uri(run.bucket, run.outputs.findings) : null;
    await putJson(s3, run.bucket, key, { job: 'reconcile', runId: run.runId, mode: run.mode, table, counts: classes, firstFindings: first.get(table) ?? {}, findings: findingsUri });
    tableReports[table] = { report: s3Uri(run.bucket, key), findings: findingsUri };
  }
  const total = Object.values(byClass).reduce((a, b) => a + b, 0);
  const reportKey = `${run.prefix}report.json`;
  const report: ReconcileReport = {
    job: 'reconcile',
    runId: run.runId,
    mode: run.mode,
    startedAt: iso(run.startedAt),
    finishedAt: iso(deps.now()),
    cutoff: iso(run.cutoff),
    window: run.window ? { from: iso(run.window.fromMs), to: iso(run.window.toMs + HOUR_MS) } : null,
    tables: run.tables,
    repair: run.repair,
    counts: {
      rawObjects: 0,
      rawEvents: 0,
      keys,
      tableRows: 0,
      readUnits: 0,
      inFlight: counted['in-flight'] ?? 0,
      unverifiable: counted.unverifiable ?? 0,
      erased: counted.erased ?? 0,
      repaired: input.repaired?.repaired ?? 0,
      repairFailed: input.repaired?.failed ?? 0,
      manifestKeys: 0,
      unmatchedRawLines: 0,
      rawLineProblems: 0,
    },
    findings: { total, byClass, byTable },
    critical: [...CRITICAL_CLASSES].some((c) => (byClass[c] ?? 0) > 0),
    report: s3Uri(run.bucket, reportKey),
    findingObjects: findingObjects.sort(),
    tableReports,
  };
  await putJson(s3, run.bucket, reportKey, report);
  for (const table of run.tables) {
    const counts = Object.fromEntries(FINDING_CLASSES.map((c) => [c, byTable[table]?.[c] ?? 0]));
    await recordLastRun(deps, run, table, counts, tableReports[table]?.report ?? report.report);
    for (const cls of FINDING_CLASSES) deps.metrics.add(table, RECONCILE_METRICS[cls], MetricUnit.Count, byTable[table]?.[cls] ?? 0);
  }
  for (const cls of FINDING_CLASSES) deps.metrics.add(ALL_TABLES, RECONCILE_METRICS[cls], MetricUnit.Count, byClass[cls] ?? 0);
  if (run.mode === 'window') deps.metrics.add(ALL_TABLES, RECONCILE_WINDOW_FINDINGS_METRIC, MetricUnit.Count, total);
  deps.metrics.add(ALL_TABLES, RECONCILE_METRICS.keys, MetricUnit.Count, keys);
  deps.metrics.flush();
  // The export holds row values and the table side keys: neither outlives the run.
  await deletePrefix(s3, run.bucket, run.outputs.exports);
  await deletePrefix(s3, run.bucket, tableSideRunPrefix(deps.config.history.prefix, run.runId));
  await deletePrefix(s3, run.bucket, run.outputs.windowKeys);
  deps.log.info('reconcile finished', { runId: run.runId, mode: run.mode, keys, findings: total, critical: report.critical });
  return report;
}
