/**
 * Step 5 of reconcile: add up the partitions' summaries and the map tasks' stats, write the report
 * object and emit metrics. Returns the report, which is also the state machine's output.
 *
 *   s3://<raw bucket>/<reportPrefix>reconcile/<runId>/report.json
 *   s3://<raw bucket>/<reportPrefix>reconcile/<runId>/findings/p=0007.jsonl.gz   (one finding a line)
 */
import { jobRowKey, STATUS_KEY, tablePartition } from '../../telemetry/status-layout.js';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { MetricUnit } from '../../telemetry/sinks.js';
import { listObjects } from '../raw-scan.js';
import { getJson, putJson } from '../shuffle.js';
import type { JobDeps } from '../deps.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../../telemetry/job-metrics.js';
import { CRITICAL_CLASSES, FINDING_CLASSES } from './classify.js';
import type { ScanStats } from './scan-table.js';
import type { ShuffleStats } from './shuffle-raw.js';
import { emptyCounts, type Finding, type PartitionSummary, type ReconcileCounts, type RunContext, type TaskInput } from './types.js';
import { tableReportKey } from '../../adapters/raw-layout.js';

export { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../../telemetry/job-metrics.js';

export interface ReconcileReport {
  readonly job: 'reconcile';
  readonly runId: string;
  readonly mode: 'window' | 'full';
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly cutoff: string;
  readonly window: { readonly from: string; readonly to: string } | null;
  readonly tables: readonly string[];
  readonly repair: boolean;
  readonly counts: ReconcileCounts & { manifestKeys: number; unmatchedRawLines: number; rawLineProblems: number };
  /** Findings per class (every class listed, zeros included), and per table per class. */
  readonly findings: { readonly total: number; readonly byClass: Record<string, number>; readonly byTable: Record<string, Record<string, number>> };
  /** True when raw lost data (`ahead`, `extra`): nothing in raw can repair it. */
  readonly critical: boolean;
  /** s3:// URI of this report, and of the objects listing each finding. */
  readonly report: string;
  readonly findingObjects: readonly string[];
  /** Per table: `reports/reconcile/<table>/<run>.json` (counts, first findings per class) and its full JSON Lines list. */
  readonly tableReports: Readonly<Record<string, { readonly report: string; readonly findings: string | null }>>;
}

/** Findings per class listed in a table report; the JSON Lines object holds them all. */
export const FIRST_FINDINGS = 100;


/** Counts a finding's repair, when --repair tried one, under its table. */
function countRepair(repairs: Map<string, TableRepairs>, f: Finding): void {
  if (f.repair === undefined) return;
  const r = repairs.get(f.table) ?? { repaired: 0, repairFailed: 0 };
  if (f.repair === 'applied') r.repaired++;
  else r.repairFailed++;
  repairs.set(f.table, r);
}

/** Per-table reports and findings lists, from the partitions' finding objects. */
async function writeTableReports(
  deps: JobDeps,
  run: RunContext,
  findingKeys: readonly string[],
  byTable: Record<string, Record<string, number>>,
  repairs: Map<string, TableRepairs>,
): Promise<ReconcileReport['tableReports']> {
  const bucket = deps.config.raw.bucket;
  const lines = new Map<string, string[]>();
  const first = new Map<string, Record<string, Finding[]>>();
  for (const key of findingKeys) {
    const got = await deps.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = got.Body ? await got.Body.transformToByteArray() : new Uint8Array();
    for (const line of (await gunzipAsync(bytes)).toString('utf8').split('\n')) {
      if (line === '') continue;
      const f = JSON.parse(line) as Finding;
      countRepair(repairs, f);
      const tableLines = lines.get(f.table) ?? [];
      tableLines.push(line);
      lines.set(f.table, tableLines);
      const perClass = first.get(f.table) ?? {};
      const list = perClass[f.class] ?? [];
      if (list.length < FIRST_FINDINGS) list.push(f);
      perClass[f.class] = list;
      first.set(f.table, perClass);
    }
  }
  const out: Record<string, { report: string; findings: string | null }> = {};
  for (const table of run.tables) {
    const tableLines = lines.get(table) ?? [];
    let findingsUri: string | null = null;
    if (tableLines.length > 0) {
      const key = tableReportKey(deps.config.jobs.reportPrefix, table, run.runId, '.findings.jsonl.gz');
      await deps.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: await gzipAsync(Buffer.from(`${tableLines.join('\n')}\n`, 'utf8')), ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
      findingsUri = `s3://${bucket}/${key}`;
    }
    const key = tableReportKey(deps.config.jobs.reportPrefix, table, run.runId, '.json');
    const counts = Object.fromEntries(FINDING_CLASSES.map((c) => [c, byTable[table]?.[c] ?? 0]));
    await putJson(deps.s3, bucket, key, { job: 'reconcile', runId: run.runId, mode: run.mode, table, counts: { ...counts, ...byTable[table] }, firstFindings: first.get(table) ?? {}, findings: findingsUri });
    out[table] = { report: `s3://${bucket}/${key}`, findings: findingsUri };
  }
  return out;
}

/** A table's findings that --repair re-applied, and those it could not. */
interface TableRepairs {
  repaired: number;
  repairFailed: number;
}

/**
 * The table's last-run row in the status table (`job#reconcile` in its partition), read by `tidemark status`:
 * the findings found, and how many of them this run repaired, so a repaired run does not read as open.
 */
async function recordLastRun(deps: JobDeps, run: RunContext, table: string, counts: Record<string, number>, report: string, repairs: TableRepairs): Promise<void> {
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

const iso = (ms: number) => new Date(ms).toISOString();
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

type ReportCounts = ReconcileReport['counts'];

/** Adds up the map tasks' stats objects. */
async function addShuffleStats(deps: JobDeps, run: RunContext, counts: ReportCounts): Promise<void> {
  const bucket = deps.config.raw.bucket;
  for (const o of await listObjects(deps.s3, bucket, `${run.prefix}stats/`)) {
    const s = await getJson<Partial<ShuffleStats & ScanStats>>(deps.s3, bucket, o.key);
    counts.rawObjects += s.rawObjects ?? 0;
    counts.rawEvents += s.rawEvents ?? 0;
    counts.unmatchedRawLines += s.unmatched ?? 0;
    counts.rawLineProblems += s.problems ?? 0;
    counts.readUnits += s.readUnits ?? 0;
    counts.manifestKeys += s.manifestKeys ?? 0;
  }
}

/** The findings of every partition: totals per table and class, and the findings objects. */
interface FindingTotals {
  readonly byTable: Record<string, Record<string, number>>;
  readonly byClass: Record<string, number>;
  readonly findingKeys: string[];
}

function addPartitionFindings(totals: FindingTotals, p: PartitionSummary): void {
  if (p.findingsKey) totals.findingKeys.push(p.findingsKey);
  for (const [table, classes] of Object.entries(p.findings)) {
    const t = totals.byTable[table] ?? {};
    for (const [cls, n] of Object.entries(classes)) {
      t[cls] = (t[cls] ?? 0) + n;
      totals.byClass[cls] = (totals.byClass[cls] ?? 0) + n;
    }
    totals.byTable[table] = t;
  }
}

/** Adds up the reduce tasks' partition summaries. */
async function addPartitionSummaries(deps: JobDeps, run: RunContext, counts: ReportCounts, totals: FindingTotals): Promise<void> {
  const bucket = deps.config.raw.bucket;
  for (const o of await listObjects(deps.s3, bucket, `${run.prefix}reduce/`)) {
    const p = await getJson<PartitionSummary>(deps.s3, bucket, o.key);
    for (const k of ['keys', 'tableRows', 'readUnits', 'inFlight', 'unverifiable', 'repaired', 'repairFailed'] as const) counts[k] += p.counts[k];
    addPartitionFindings(totals, p);
  }
}

/** Per-table last-run rows and the finding metrics (per table, all tables, window total, keys). */
async function publishOutcome(deps: JobDeps, run: RunContext, report: ReconcileReport, totals: FindingTotals, repairs: Map<string, TableRepairs>): Promise<void> {
  const { byTable, byClass } = totals;
  for (const table of run.tables) {
    const counts = Object.fromEntries(FINDING_CLASSES.map((c) => [c, byTable[table]?.[c] ?? 0]));
    await recordLastRun(deps, run, table, counts, report.tableReports[table]?.report ?? report.report, repairs.get(table) ?? { repaired: 0, repairFailed: 0 });
  }
  for (const table of run.tables) {
    for (const cls of FINDING_CLASSES) deps.metrics.add(table, RECONCILE_METRICS[cls], MetricUnit.Count, byTable[table]?.[cls] ?? 0);
  }
  for (const cls of FINDING_CLASSES) deps.metrics.add(ALL_TABLES, RECONCILE_METRICS[cls], MetricUnit.Count, byClass[cls] ?? 0);
  if (run.mode === 'window') deps.metrics.add(ALL_TABLES, RECONCILE_WINDOW_FINDINGS_METRIC, MetricUnit.Count, report.findings.total);
  deps.metrics.add(ALL_TABLES, RECONCILE_METRICS.keys, MetricUnit.Count, report.counts.keys);
  deps.metrics.flush();
}

export async function reportReconcile(input: Pick<TaskInput<unknown>, 'run'>, deps: JobDeps): Promise<ReconcileReport> {
  const run: RunContext = input.run;
  const bucket = deps.config.raw.bucket;
  const counts = { ...emptyCounts(), manifestKeys: 0, unmatchedRawLines: 0, rawLineProblems: 0 };
  const totals: FindingTotals = { byTable: {}, byClass: Object.fromEntries(FINDING_CLASSES.map((c) => [c, 0])), findingKeys: [] };
  if (run.manifest) Object.assign(totals.byClass, { 'manifest-missing': 0, 'manifest-extra': 0 });
  await addShuffleStats(deps, run, counts);
  await addPartitionSummaries(deps, run, counts, totals);
  const { byTable, byClass, findingKeys } = totals;
  const findingObjects = findingKeys.map((k) => `s3://${bucket}/${k}`);
  const total = Object.values(byClass).reduce((a, b) => a + b, 0);
  const critical = [...CRITICAL_CLASSES].some((c) => (byClass[c] ?? 0) > 0);
  const reportKey = `${run.prefix}report.json`;
  const repairs = new Map<string, TableRepairs>();
  const report: ReconcileReport = {
    job: 'reconcile',
    runId: run.runId,
    mode: run.mode,
    startedAt: iso(run.startedAt),
    finishedAt: iso(deps.now()),
    cutoff: iso(run.cutoff),
    window: run.window ? { from: iso(run.window.fromMs), to: iso(run.window.toMs) } : null,
    tables: run.tables,
    repair: run.repair,
    counts,
    findings: { total, byClass, byTable },
    critical,
    report: `s3://${bucket}/${reportKey}`,
    findingObjects: findingObjects.sort(),
    tableReports: await writeTableReports(deps, run, findingKeys, byTable, repairs),
  };
  await putJson(deps.s3, bucket, reportKey, report);
  await publishOutcome(deps, run, report, totals, repairs);
  deps.log.info('reconcile finished', { runId: run.runId, mode: run.mode, keys: counts.keys, findings: total, critical });
  return report;
}
