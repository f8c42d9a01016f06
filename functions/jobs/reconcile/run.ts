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
import { listObjectKeys } from '../../adapters/s3-list.js';
import { randomBytes } from 'node:crypto';
import { DescribeTableCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { deleteObjectsUnder } from '../../adapters/s3-list.js';
import { EraseLedger, type LedgerView, loadLedgerKeys } from '../../adapters/erase-ledger.js';
import { compactedHourKey, encodeSegment, findingsPartKey, reportRunPrefix, runFile, runFolder, tableReportKey, tableSideRunPrefix, unloadPrefix } from '../../adapters/raw-layout.js';
import { MetricUnit } from '../../telemetry/sinks.js';
import { jobRowKey, STATUS_KEY, tablePartition } from '../../telemetry/status-layout.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../../telemetry/job-metrics.js';
import { COUNTED_CLASSES, FINDING_CLASSES, HOUR_MS } from '../../sql/index.js';
import { type JobDeps, JobInputError, tableConfig } from '../deps.js';
import { readFrontier } from '../history/compaction.js';
import { type StoredQueries, storeQueries } from '../queries.js';
import { configQueryRefs, s3Uri } from '../sql-run.js';
import { CRITICAL_CLASSES } from './classify.js';
import { validateReconcileRequest } from '../inputs.js';
import { applyRepair, planRepairOf, type RepairOutcome, type RepairPlan, readRepairOutcomes, repairKeyId, repairKeysOf } from './repair.js';
import { fetchItems, type TableSideLine } from './table-side.js';
import { isJsonObject, parseJson, stringifyJson } from '../../core/json.js';
import { keyId, normalizeKey } from '../../core/keys.js';
import { tableSideLine } from './table-side.js';
import type { Finding, ReconcileReport, ReconcileRequest } from './types.js';
import { type HeldLabel, heldRawSince } from '../../core/lifecycle.js';
import { heldTables, reportedHeld } from '../held.js';
import { putJson } from '../../adapters/s3-json.js';

export type { ReconcileReport } from './types.js';

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
  /**
   * Tables suspended or stopped in error at the plan (held.ts), each with `rawSince`: keys with raw
   * that arrived from then on are `held` (landed, not applied until resume), never findings, and
   * --repair leaves the table alone.
   */
  readonly held: Readonly<Record<string, HeldLabel & { readonly rawSince: number }>>;
  readonly repair: boolean;
  /** The key-set manifest to diff live keys against (JSON Lines of `{"table", "key"}`), if any. */
  readonly manifest: { readonly bucket: string; readonly key: string } | null;
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

/** `s3://bucket/key` → its parts (the request was validated: inputs.ts). */
function parseS3Uri(uri: string): { bucket: string; key: string } {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!m?.[1] || !m[2]) throw new JobInputError(`manifest must be an s3://bucket/key URI, got "${uri}"`);
  return { bucket: m[1], key: m[2] };
}

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

/** The request checked against the config: mode, tables, window hours and cutoff. */
function checkedRequest(request: ReconcileRequest, config: JobDeps['config']): { mode: 'window' | 'full'; tables: string[]; hours: number; cutoffSeconds: number } {
  const settings = config.jobs.reconcile;
  // Every problem of the input at once (functions/jobs/inputs.ts, the rules the CLI checks first).
  validateReconcileRequest(config, request);
  const mode = request.mode ?? 'window';
  if (mode !== 'window' && mode !== 'full') throw new JobInputError(`mode must be "window" or "full", got "${String(mode)}"`);
  const tables = request.tables && request.tables.length > 0 ? [...new Set(request.tables)] : config.tables.map((t) => t.source);
  for (const t of tables) tableConfig(config, t);
  const hours = request.hours ?? settings.window.hours;
  if (!Number.isInteger(hours) || hours < 1) throw new JobInputError(`hours must be a positive integer, got ${hours}`);
  const cutoffSeconds = request.cutoffSeconds ?? settings.cutoffSeconds;
  if (!Number.isFinite(cutoffSeconds) || cutoffSeconds < 0) throw new JobInputError(`cutoffSeconds must be a number of seconds ≥ 0, got ${String(cutoffSeconds)}`);
  return { mode, tables, hours, cutoffSeconds };
}

type HourSpan = { from: number; to: number };

/**
 * What of history and raw is not settled at the cutoff (reconcile-classes.ts):
 * - `unsettled`: raw of the hours after the frontier, and of the frontier's hour itself when it was
 *   compacted before it closed (locally, `throughNow`): objects landed there since its marker are
 *   not in history, yet their rows may be applied before the cutoff. They raise each key's highest
 *   position, and a key only they hold is in flight.
 * - `recent`: compacted hours whose lines may have arrived after the cutoff (a batch's hour is its
 *   first arrival, so from the hour before the cutoff's): a winner among them is not settled.
 * On AWS, where only closed hours are compacted, both are usually just the hours after the frontier.
 */
async function settledness(deps: JobDeps, compactedThrough: number | null, startedAt: number, cutoff: number): Promise<{ unsettled?: HourSpan; recent?: HourSpan }> {
  const now = hourOf(startedAt);
  if (compactedThrough === null) return {};
  const marker = await markerOf(deps, compactedThrough);
  const firstUnsettled = Math.min(compactedThrough + HOUR_MS, marker === null ? compactedThrough + HOUR_MS : hourOf(marker.compactedAt));
  const recentFrom = hourOf(cutoff) - HOUR_MS;
  return {
    ...(firstUnsettled <= now ? { unsettled: { from: firstUnsettled, to: now } } : {}),
    ...(recentFrom <= compactedThrough ? { recent: { from: recentFrom, to: compactedThrough } } : {}),
  };
}

async function markerOf(deps: JobDeps, hour: number): Promise<{ compactedAt: number } | null> {
  try {
    const got = await deps.s3.send(new GetObjectCommand({ Bucket: deps.config.raw.bucket, Key: compactedHourKey(deps.config.history.prefix, hour) }));
    return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as { compactedAt: number };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
    throw err;
  }
}

/** The classify queries (findings, then counts) of the run. */
function classifyQueries(config: JobDeps['config'], run: ReconcileRun, span: { unsettled?: HourSpan; recent?: HourSpan }) {
  const uri = (prefix: string) => s3Uri(run.bucket, prefix);
  const held = Object.entries(run.held).map(([table, h]) => ({ table, since: Math.max(0, h.rawSince) }));
  const common = { tables: run.tables, runId: run.runId, cutoff: run.cutoff, ...span, ...(held.length > 0 ? { held: { tables: held, until: run.startedAt } } : {}) };
  if (run.mode === 'full') {
    return [...configQueryRefs(config, 'reconcile-full', { ...common, part: 'findings', output: uri(run.outputs.findings) }), ...configQueryRefs(config, 'reconcile-full', { ...common, part: 'counts', output: uri(run.outputs.counts) })];
  }
  if (run.window === null) return [];
  const range = { from: run.window.fromMs, to: run.window.toMs };
  return [
    ...configQueryRefs(config, 'reconcile-window', { ...common, ...range, part: 'findings', output: uri(run.outputs.findings) }),
    ...configQueryRefs(config, 'reconcile-window', { ...common, ...range, part: 'counts', output: uri(run.outputs.counts) }),
  ];
}

/** Full mode: one export item per table (its ARN and export prefix), written to S3 for the Distributed Map. */
async function exportItems(deps: JobDeps, run: ReconcileRun): Promise<NonNullable<ReconcilePlan['exports']>> {
  const items: ExportItem[] = [];
  for (const source of run.tables) {
    const table = tableConfig(deps.config, source);
    const described = await deps.dynamodb.send(new DescribeTableCommand({ TableName: table.target }));
    const tableArn = described.Table?.TableArn;
    if (!tableArn) throw new JobInputError(`table ${table.target} (of ${source}) has no ARN: does it exist?`, { context: { table: source } });
    items.push({ table: source, tableArn, bucket: run.bucket, exportPrefix: `${run.outputs.exports}${encodeSegment(source)}`, runId: run.runId });
  }
  const key = runFile(run.prefix, 'exports');
  await putJson(deps.s3, run.bucket, key, items);
  return { bucket: run.bucket, key, count: items.length };
}

export async function planReconcileRun(request: ReconcileRequest, deps: JobDeps): Promise<ReconcilePlan> {
  const { config } = deps;
  const { mode, tables, hours, cutoffSeconds } = checkedRequest(request, config);
  const startedAt = deps.now();
  const cutoff = startedAt - cutoffSeconds * 1000;
  const runId = runIdOf(request, mode, startedAt);
  const frontier = await readFrontier(deps);
  const history = config.history.prefix;
  const labels = await heldTables(deps, tables);
  const held = Object.fromEntries(Object.entries(labels).map(([t, h]) => [t, { ...h, rawSince: heldRawSince(h.heldFrom, config.ingest.timeoutSeconds) }]));
  const run: ReconcileRun = {
    runId,
    mode,
    startedAt,
    cutoff,
    window: mode === 'window' ? windowOf(request, hours, frontier.compactedThrough) : null,
    tables,
    held,
    repair: request.repair === true,
    manifest: request.manifest === undefined ? null : parseS3Uri(request.manifest),
    prefix: reportRunPrefix(config.jobs.reportPrefix, 'reconcile', runId),
    bucket: config.raw.bucket,
    outputs: {
      findings: unloadPrefix(history, 'reconcile', runId, 'findings'),
      counts: unloadPrefix(history, 'reconcile', runId, 'counts'),
      windowKeys: unloadPrefix(history, 'reconcile', runId, 'window-keys'),
      exports: unloadPrefix(history, 'reconcile', runId, 'export'),
    },
  };
  // The exports first: a table that does not exist fails the plan before it stores anything.
  const exports: ReconcilePlan['exports'] = mode === 'full' ? await exportItems(deps, run) : null;
  const classify = await storeQueries(deps, runFile(run.prefix, 'classifyQueries'), classifyQueries(config, run, await settledness(deps, frontier.compactedThrough, startedAt, cutoff)));
  let windowKeys: ReconcilePlan['windowKeys'] = null;
  if (mode === 'window' && run.window !== null) {
    const refs = configQueryRefs(config, 'window-keys', { tables, from: run.window.fromMs, to: run.window.toMs, output: s3Uri(run.bucket, run.outputs.windowKeys) });
    windowKeys = { ...(await storeQueries(deps, runFile(run.prefix, 'windowQueries'), refs)), bucket: run.bucket, prefix: run.outputs.windowKeys };
  }
  await putJson(deps.s3, run.bucket, runFile(run.prefix, 'run'), run);
  deps.log.info('reconcile planned', { runId, mode, tables: tables.length, held: Object.keys(held).length, window: run.window ? `${new Date(run.window.fromMs).toISOString()}..${new Date(run.window.toMs).toISOString()}` : null });
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

/** The JSON lines of every gzip object under a prefix (an UNLOAD output), streamed. */
async function* outputRows<T>(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<T> {
  for await (const key of listObjectKeys(s3, bucket, prefix)) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
    if (bytes.length === 0) continue;
    const gz = bytes[0] === 0x1f && bytes[1] === 0x8b;
    const input = gz ? Readable.from([bytes]).pipe(createGunzip()) : Readable.from([bytes]);
    for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) if (line.trim() !== '') yield JSON.parse(line) as T;
  }
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
/** Findings per findings object (JSON Lines, gzip) the report writes. */
const FINDINGS_PER_OBJECT = 50_000;

/** The erase ledger's view of the tables; null when it holds nothing for them (then no secret is needed). */
async function ledgerOf(deps: JobDeps, tables: readonly string[]): Promise<LedgerView | null> {
  const ledger = new EraseLedger(deps.dynamodb, deps.config.statusTable, deps.config.name);
  if ((await ledger.list(tables)).length === 0) return null;
  return ledger.view(await loadLedgerKeys(deps.config.replay.erase.ledgerKeySecret, process.env), tables);
}

/**
 * True when the ledger holds the key's erasure and raw's winner (if any) is at or below it: the
 * key was erased and nothing genuine arrived since, so whatever the table holds is `erased`.
 */
export function erasedByLedger(ledger: Pick<LedgerView, 'entry'> | null, row: Pick<FindingRow, 'source_table' | 'key_id' | 'expected_position'>): boolean {
  const entry = ledger?.entry(row.source_table, row.key_id);
  if (!entry) return false;
  return row.expected_position === null || row.expected_position === undefined || entry.position === '' || row.expected_position <= entry.position;
}

/**
 * The table's last-run row in the status table (`job#reconcile` in its partition), read by `tidemark status`:
 * the findings found, and how many of them this run repaired, so a repaired run does not read as open.
 */
async function recordLastRun(deps: JobDeps, run: ReconcileRun, table: string, counts: Record<string, number>, report: string, repairs: TableRepairs): Promise<void> {
  await deps.dynamodb.send(
    new UpdateItemCommand({
      TableName: deps.config.statusTable,
      Key: { [STATUS_KEY.partition]: { S: tablePartition(deps.config.name, table) }, [STATUS_KEY.row]: { S: jobRowKey('reconcile') } },
      UpdateExpression: 'SET #at = :at, #run = :run, #mode = :mode, #f = :f, #r = :r, #rp = :rp, #rf = :rf',
      ExpressionAttributeNames: { '#at': 'lastRunAt', '#run': 'runId', '#mode': 'mode', '#f': 'findings', '#r': 'report', '#rp': 'repaired', '#rf': 'repairFailed' },
      ExpressionAttributeValues: {
        ':at': { N: String(deps.now()) },
        ':run': { S: run.runId },
        ':mode': { S: run.mode },
        ':f': { M: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, { N: String(v) }])) },
        ':r': { S: report },
        ':rp': { N: String(repairs.repaired) },
        ':rf': { N: String(repairs.repairFailed) },
      },
    }),
  );
}

/** A table's findings that --repair re-applied, and those it could not (read by `tidemark status`, so a repaired run does not read as open). */
interface TableRepairs {
  repaired: number;
  repairFailed: number;
}

/** Counts a finding's repair, when --repair tried one, under its table. */
function countRepair(repairs: Map<string, TableRepairs>, f: Finding): void {
  if (f.repair === undefined) return;
  const r = repairs.get(f.table) ?? { repaired: 0, repairFailed: 0 };
  if (f.repair === 'applied') r.repaired++;
  else r.repairFailed++;
  repairs.set(f.table, r);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Keys per table and class, as the counts query gave them. */
interface Tally {
  readonly byTable: Record<string, Record<string, number>>;
  readonly byClass: Record<string, number>;
  readonly counted: Record<string, number>;
  /** Keys of held tables changed since they were held, per table. */
  readonly held: Record<string, number>;
  keys: number;
}

async function readCounts(s3: S3Client, run: ReconcileRun): Promise<Tally> {
  const tally: Tally = { byTable: {}, byClass: Object.fromEntries(FINDING_CLASSES.map((c) => [c, 0])), counted: Object.fromEntries(COUNTED_CLASSES.map((c) => [c, 0])), held: {}, keys: 0 };
  for await (const row of outputRows<{ source_table: string; class: string; keys: number | string }>(s3, run.bucket, run.outputs.counts)) {
    const n = Number(row.keys);
    tally.keys += n;
    if (!(FINDING_CLASSES as readonly string[]).includes(row.class)) {
      tally.counted[row.class] = (tally.counted[row.class] ?? 0) + n;
      if (row.class === 'held') tally.held[row.source_table] = (tally.held[row.source_table] ?? 0) + n;
      continue;
    }
    const t = tally.byTable[row.source_table] ?? {};
    t[row.class] = (t[row.class] ?? 0) + n;
    tally.byTable[row.source_table] = t;
    tally.byClass[row.class] = (tally.byClass[row.class] ?? 0) + n;
  }
  return tally;
}

/** Findings found outside the classify query (the manifest's) added to the tally. */
function countFindings(tally: Tally, findings: readonly Finding[]): void {
  for (const f of findings) {
    const t = tally.byTable[f.table] ?? {};
    t[f.class] = (t[f.class] ?? 0) + 1;
    tally.byTable[f.table] = t;
    tally.byClass[f.class] = (tally.byClass[f.class] ?? 0) + 1;
  }
}

/** A finding the ledger says is erased: moved from its class to `erased`. */
function countAsErased(tally: Tally, row: FindingRow): void {
  const t = tally.byTable[row.source_table];
  if (t && (t[row.class] ?? 0) > 0) t[row.class] = (t[row.class] ?? 0) - 1;
  if ((tally.byClass[row.class] ?? 0) > 0) tally.byClass[row.class] = (tally.byClass[row.class] ?? 0) - 1;
  tally.counted.erased = (tally.counted.erased ?? 0) + 1;
}

/**
 * The findings the classify query wrote, less those of erased keys (the erase ledger: issue 20,
 * item 17), written again as the run's findings objects (JSON Lines of Finding, gzip), and the first
 * of each class per table for the table reports.
 */
async function keepFindings(deps: JobDeps, run: ReconcileRun, tally: Tally, outcomes: Map<string, string> | null, extra: readonly Finding[]): Promise<{ first: Map<string, Record<string, Finding[]>>; objects: string[]; prefix: string; repairs: Map<string, TableRepairs> }> {
  const ledger = await ledgerOf(deps, run.tables);
  const first = new Map<string, Record<string, Finding[]>>();
  const repairs = new Map<string, TableRepairs>();
  const objects: string[] = [];
  const prefix = runFolder(run.prefix, 'findings');
  let part: string[] = [];
  const flush = async () => {
    if (part.length === 0) return;
    const key = findingsPartKey(run.prefix, objects.length);
    await deps.s3.send(new PutObjectCommand({ Bucket: run.bucket, Key: key, Body: gzipSync(Buffer.from(part.join(''), 'utf8')), ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
    objects.push(s3Uri(run.bucket, key));
    part = [];
  };
  const keep = async (finding: Finding) => {
    part.push(`${JSON.stringify(finding)}\n`);
    if (part.length >= FINDINGS_PER_OBJECT) await flush();
    countRepair(repairs, finding);
    const perClass = first.get(finding.table) ?? {};
    const list = perClass[finding.class] ?? [];
    if (list.length < FIRST_FINDINGS) list.push(finding);
    perClass[finding.class] = list;
    first.set(finding.table, perClass);
  };
  for await (const row of outputRows<FindingRow>(deps.s3, run.bucket, run.outputs.findings)) {
    if (erasedByLedger(ledger, row)) {
      countAsErased(tally, row);
      continue;
    }
    const repair = outcomes?.get(repairKeyId(row.source_table, row.key_id));
    await keep({ ...findingOf(row), ...(repair !== undefined ? { repair } : {}) });
  }
  for (const f of extra) await keep(f);
  await flush();
  return { first, objects, prefix, repairs };
}

const MANIFEST_CLASSES = ['manifest-missing', 'manifest-extra'] as const;

/** The table side lines of the run (what each key's item held), streamed. */
async function* tableSideLines(deps: JobDeps, run: ReconcileRun): AsyncGenerator<TableSideLine> {
  yield* outputRows<TableSideLine>(deps.s3, run.bucket, tableSideRunPrefix(deps.config.history.prefix, run.runId));
}

/** The manifest's keys of the run's tables, by `repairKeyId`: their key JSON. Lines of other tables, or unreadable, are skipped. */
async function manifestKeys(deps: JobDeps, run: ReconcileRun, manifest: { bucket: string; key: string }): Promise<Map<string, { table: string; keyId: string; key: string }>> {
  const out = new Map<string, { table: string; keyId: string; key: string }>();
  const got = await deps.s3.send(new GetObjectCommand({ Bucket: manifest.bucket, Key: manifest.key }));
  const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  const text = (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('utf8');
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const parsed = parseJson(line);
    if (!isJsonObject(parsed) || typeof parsed.table !== 'string' || !isJsonObject(parsed.key) || !run.tables.includes(parsed.table)) continue;
    const table = tableConfig(deps.config, parsed.table);
    const key = normalizeKey(table, parsed.key);
    const id = keyId(table, key);
    out.set(repairKeyId(table.source, id), { table: table.source, keyId: id, key: stringifyJson(key) });
  }
  return out;
}

const actualOf = (l: TableSideLine): Finding['actual'] => ({ position: l.position, deleted: l.deleted, hash: l.hash, appliedAt: Number(l.applied_at) });

/** Window mode: the listed keys the table side lacks, read from their tables (BatchGetItem) into `side`. */
async function readListedKeys(deps: JobDeps, listed: Map<string, { table: string; keyId: string; key: string }>, side: Map<string, TableSideLine>): Promise<void> {
  const byTable = new Map<string, { source_table: string; key_id: string; key_json: string }[]>();
  for (const [id, k] of listed) if (!side.has(id)) byTable.set(k.table, [...(byTable.get(k.table) ?? []), { source_table: k.table, key_id: k.keyId, key_json: k.key }]);
  for (const [source, keys] of byTable) {
    const table = tableConfig(deps.config, source);
    for (const item of (await fetchItems(deps, table, keys)).items) {
      const l = tableSideLine(table, item);
      side.set(repairKeyId(l.source_table, l.key_id), l);
    }
  }
}

/** A live row the manifest does not list, settled at the cutoff: `manifest-extra` (full mode only). */
const isExtra = (run: ReconcileRun, l: TableSideLine): boolean => run.mode === 'full' && !l.deleted && !l.erased && Number(l.applied_at) <= run.cutoff;

/**
 * The key-set manifest against the table: a listed key with no live row is `manifest-missing`, and
 * (full mode, every row seen) a live row the manifest does not list is `manifest-extra`. Rows applied
 * after the cutoff are left alone. Window mode reads the listed keys the table side lacks with
 * BatchGetItem.
 */
async function manifestFindings(deps: JobDeps, run: ReconcileRun): Promise<{ findings: Finding[]; keys: number }> {
  if (!run.manifest) return { findings: [], keys: 0 };
  const listed = await manifestKeys(deps, run, run.manifest);
  const side = new Map<string, TableSideLine>();
  const findings: Finding[] = [];
  for await (const l of tableSideLines(deps, run)) {
    const id = repairKeyId(l.source_table, l.key_id);
    if (listed.has(id)) side.set(id, l);
    else if (isExtra(run, l)) findings.push({ class: 'manifest-extra', table: l.source_table, key: l.key_json, expected: null, actual: actualOf(l) });
  }
  if (run.mode === 'window') await readListedKeys(deps, listed, side);
  for (const [id, k] of listed) {
    const l = side.get(id);
    if (l && Number(l.applied_at) > run.cutoff) continue;
    if (!l || l.deleted) findings.push({ class: 'manifest-missing', table: k.table, key: k.key, expected: null, actual: l ? actualOf(l) : null });
  }
  return { findings, keys: listed.size };
}

/** RepairPlan: the repairable findings' keys (less erased ones) and the replay-select queries of them. */
export async function planReconcileRepair(input: { run: ReconcileRun }, deps: JobDeps): Promise<RepairPlan> {
  const { run } = input;
  const ledger = await ledgerOf(deps, run.tables);
  const rows: FindingRow[] = [];
  let skipped = 0;
  for await (const row of outputRows<FindingRow>(deps.s3, run.bucket, run.outputs.findings)) {
    if (erasedByLedger(ledger, row)) continue;
    // A held table is not written while held, not even its older findings: resume replays it.
    if (run.held[row.source_table] !== undefined) skipped++;
    else rows.push(row);
  }
  if (skipped > 0) deps.log.info('repair skips the findings of held tables', { runId: run.runId, tables: Object.keys(run.held).length, findings: skipped });
  return planRepairOf(deps, run, repairKeysOf(rows));
}

/** Repair: the selected events of the repairable keys folded and written through the guards. */
export const reconcileRepair = (input: { run: ReconcileRun; repairPlan: RepairPlan }, deps: JobDeps): Promise<RepairOutcome> => applyRepair(input, deps);

/** One report per table: its counts per class, its first findings per class, where all findings are. */
async function writeTableReports(
  deps: JobDeps,
  run: ReconcileRun,
  byTable: Tally['byTable'],
  first: Map<string, Record<string, Finding[]>>,
  findingsPrefix: string,
): Promise<Record<string, { report: string; findings: string | null }>> {
  const tableReports: Record<string, { report: string; findings: string | null }> = {};
  for (const table of run.tables) {
    const key = tableReportKey(deps.config.jobs.reportPrefix, table, run.runId, '.json');
    const classes = Object.fromEntries([...FINDING_CLASSES, ...(run.manifest ? MANIFEST_CLASSES : [])].map((c) => [c, byTable[table]?.[c] ?? 0]));
    const hasFindings = Object.values(classes).some((n) => n > 0);
    const findingsUri = hasFindings ? s3Uri(run.bucket, findingsPrefix) : null;
    await putJson(deps.s3, run.bucket, key, { job: 'reconcile', runId: run.runId, mode: run.mode, table, counts: classes, firstFindings: first.get(table) ?? {}, findings: findingsUri });
    tableReports[table] = { report: s3Uri(run.bucket, key), findings: findingsUri };
  }
  return tableReports;
}

export async function reportReconcileRun(input: { run: ReconcileRun; repaired?: RepairOutcome }, deps: JobDeps): Promise<ReconcileReport> {
  const { run } = input;
  const { s3 } = deps;
  const tally = await readCounts(s3, run);
  const { byTable, byClass, counted } = tally;
  const outcomes = input.repaired?.outcomesKey ? await readRepairOutcomes(s3, run.bucket, input.repaired.outcomesKey) : null;
  const manifest = await manifestFindings(deps, run);
  countFindings(tally, manifest.findings);
  const kept = await keepFindings(deps, run, tally, outcomes, manifest.findings);
  const { first } = kept;
  const findingObjects = kept.objects;
  const findingsPrefix = kept.prefix;
  const keys = tally.keys;
  const tableReports = await writeTableReports(deps, run, byTable, first, findingsPrefix);
  const total = Object.values(byClass).reduce((a, b) => a + b, 0);
  const reportKey = runFile(run.prefix, 'report');
  const report: ReconcileReport = {
    job: 'reconcile',
    runId: run.runId,
    mode: run.mode,
    startedAt: iso(run.startedAt),
    finishedAt: iso(deps.now()),
    cutoff: iso(run.cutoff),
    window: run.window ? { from: iso(run.window.fromMs), to: iso(run.window.toMs + HOUR_MS) } : null,
    tables: run.tables,
    held: Object.fromEntries(Object.entries(run.held).map(([t, h]) => [t, { ...reportedHeld(h), keys: tally.held[t] ?? 0, repairSkipped: run.repair }])),
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
      held: counted.held ?? 0,
      repaired: input.repaired?.repaired ?? 0,
      repairFailed: input.repaired?.failed ?? 0,
      manifestKeys: manifest.keys,
      unmatchedRawLines: 0,
      rawLineProblems: 0,
    },
    findings: { total, byClass, byTable },
    critical: [...CRITICAL_CLASSES].some((c) => (byClass[c] ?? 0) > 0),
    report: s3Uri(run.bucket, reportKey),
    findingObjects,
    tableReports,
  };
  await putJson(s3, run.bucket, reportKey, report);
  for (const table of run.tables) {
    const counts = Object.fromEntries(FINDING_CLASSES.map((c) => [c, byTable[table]?.[c] ?? 0]));
    await recordLastRun(deps, run, table, counts, tableReports[table]?.report ?? report.report, kept.repairs.get(table) ?? { repaired: 0, repairFailed: 0 });
    for (const cls of FINDING_CLASSES) deps.metrics.add(table, RECONCILE_METRICS[cls], MetricUnit.Count, byTable[table]?.[cls] ?? 0);
  }
  for (const cls of FINDING_CLASSES) deps.metrics.add(ALL_TABLES, RECONCILE_METRICS[cls], MetricUnit.Count, byClass[cls] ?? 0);
  if (run.mode === 'window') deps.metrics.add(ALL_TABLES, RECONCILE_WINDOW_FINDINGS_METRIC, MetricUnit.Count, total);
  deps.metrics.add(ALL_TABLES, RECONCILE_METRICS.keys, MetricUnit.Count, keys);
  deps.metrics.flush();
  // The export holds row values and the table side keys: neither outlives the run.
  await deleteObjectsUnder(s3, run.bucket, run.outputs.exports);
  await deleteObjectsUnder(s3, run.bucket, tableSideRunPrefix(deps.config.history.prefix, run.runId));
  await deleteObjectsUnder(s3, run.bucket, run.outputs.windowKeys);
  await deleteObjectsUnder(s3, run.bucket, run.outputs.findings);
  if (run.repair) await deleteObjectsUnder(s3, run.bucket, unloadPrefix(deps.config.history.prefix, 'reconcile', run.runId, 'repair'));
  deps.log.info('reconcile finished', { runId: run.runId, mode: run.mode, keys, findings: total, critical: report.critical, heldKeys: report.counts.held });
  return report;
}
