/**
 * Step 5 of reconcile: add up the partitions' summaries and the map tasks' stats, write the report
 * object and emit metrics. Returns the report, which is also the state machine's output.
 *
 *   s3://<raw bucket>/<reportPrefix>reconcile/<runId>/report.json
 *   s3://<raw bucket>/<reportPrefix>reconcile/<runId>/findings/p=0007.jsonl.gz   (one finding a line)
 */
import { MetricUnit } from '../../adapters/telemetry.js';
import { listObjects } from '../raw-scan.js';
import { getJson, putJson } from '../shuffle.js';
import type { JobDeps } from '../deps.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../metric-names.js';
import { CRITICAL_CLASSES, FINDING_CLASSES } from './classify.js';
import type { ScanStats } from './scan-table.js';
import type { ShuffleStats } from './shuffle-raw.js';
import { emptyCounts, type PartitionSummary, type ReconcileCounts, type RunContext, type TaskInput } from './types.js';

export { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC } from '../metric-names.js';

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
}

const iso = (ms: number) => new Date(ms).toISOString();

export async function reportReconcile(input: Pick<TaskInput<unknown>, 'run'>, deps: JobDeps): Promise<ReconcileReport> {
  const run: RunContext = input.run;
  const bucket = deps.config.raw.bucket;
  const counts = { ...emptyCounts(), manifestKeys: 0, unmatchedRawLines: 0, rawLineProblems: 0 };
  const byTable: Record<string, Record<string, number>> = {};
  const byClass: Record<string, number> = Object.fromEntries(FINDING_CLASSES.map((c) => [c, 0]));
  if (run.manifest) Object.assign(byClass, { 'manifest-missing': 0, 'manifest-extra': 0 });
  const findingObjects: string[] = [];
  for (const o of await listObjects(deps.s3, bucket, `${run.prefix}stats/`)) {
    const s = await getJson<Partial<ShuffleStats & ScanStats>>(deps.s3, bucket, o.key);
    counts.rawObjects += s.rawObjects ?? 0;
    counts.rawEvents += s.rawEvents ?? 0;
    counts.unmatchedRawLines += s.unmatched ?? 0;
    counts.rawLineProblems += s.problems ?? 0;
    counts.readUnits += s.readUnits ?? 0;
    counts.manifestKeys += s.manifestKeys ?? 0;
  }
  for (const o of await listObjects(deps.s3, bucket, `${run.prefix}reduce/`)) {
    const p = await getJson<PartitionSummary>(deps.s3, bucket, o.key);
    for (const k of ['keys', 'tableRows', 'readUnits', 'inFlight', 'unverifiable', 'repaired', 'repairFailed'] as const) counts[k] += p.counts[k];
    if (p.findingsKey) findingObjects.push(`s3://${bucket}/${p.findingsKey}`);
    for (const [table, classes] of Object.entries(p.findings)) {
      const t = byTable[table] ?? {};
      for (const [cls, n] of Object.entries(classes)) {
        t[cls] = (t[cls] ?? 0) + n;
        byClass[cls] = (byClass[cls] ?? 0) + n;
      }
      byTable[table] = t;
    }
  }
  const total = Object.values(byClass).reduce((a, b) => a + b, 0);
  const critical = [...CRITICAL_CLASSES].some((c) => (byClass[c] ?? 0) > 0);
  const reportKey = `${run.prefix}report.json`;
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
  };
  await putJson(deps.s3, bucket, reportKey, report);
  for (const table of run.tables) {
    for (const cls of FINDING_CLASSES) deps.metrics.add(table, RECONCILE_METRICS[cls], MetricUnit.Count, byTable[table]?.[cls] ?? 0);
  }
  for (const cls of FINDING_CLASSES) deps.metrics.add(ALL_TABLES, RECONCILE_METRICS[cls], MetricUnit.Count, byClass[cls] ?? 0);
  if (run.mode === 'window') deps.metrics.add(ALL_TABLES, RECONCILE_WINDOW_FINDINGS_METRIC, MetricUnit.Count, total);
  deps.metrics.add(ALL_TABLES, RECONCILE_METRICS.keys, MetricUnit.Count, counts.keys);
  deps.metrics.flush();
  deps.log.info('reconcile finished', { runId: run.runId, mode: run.mode, keys: counts.keys, findings: total, critical });
  return report;
}
