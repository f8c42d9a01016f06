/**
 * `tidemark snapshot-check`: runs the snapshot-detection state machine locally (the deployed ASL,
 * through `bin/local/stepfunctions.ts`) and prints what it found: re-snapshots, orphan rows after a
 * complete snapshot (tombstoned with `--apply`), and anomalies against history.
 *
 * Exit codes: 0 nothing found (or every orphan tombstoned and no anomaly), 1 findings, 2 the run failed.
 * `--json` prints one line per finding, `{"table","kind","detail"}` (kinds: the anomalies, and `orphan`
 * with the key and what `--apply` did), then a last line `{"summary":{…}}`.
 */
import type { RuntimeClients as Clients } from '../../functions/adapters/clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { SnapshotReport, SnapshotRequest } from '../../functions/jobs/snapshot/run.js';
import { validateSnapshotRequest } from '../../functions/jobs/inputs.js';
import { clients, config } from './context.js';
import { CliError } from './errors.js';
import { jobProgress, runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { type LocalJobOptions, runLocalJob } from './jobs-local.js';
import { positionText } from './notation.js';
import { out, summaryLine } from './output.js';

/** Runs snapshot detection through the state machine locally (compacting raw up to now first). */
export async function runSnapshotCheck(cfg: TidemarkConfig, c: Pick<Clients, 's3' | 'dynamodb'>, request: SnapshotRequest, options: LocalJobOptions = {}): Promise<SnapshotReport> {
  return (await runLocalJob(cfg, c, 'snapshot', request, options)) as unknown as SnapshotReport;
}

export const snapshotExitCode = (report: SnapshotReport): number => (report.findings > 0 ? 1 : 0);

/** The `--json` lines: one per anomaly and orphan, then the summary. */
export function snapshotJsonLines(r: SnapshotReport, exitCode: number): string[] {
  const lines: string[] = [];
  for (const t of r.tables) {
    for (const a of t.anomalies) lines.push(JSON.stringify({ table: t.table, kind: a.kind, detail: a.detail }));
    for (const key of t.orphans.keys) {
      let parsed: unknown = key;
      try {
        parsed = JSON.parse(key);
      } catch {
        // keep the text
      }
      lines.push(JSON.stringify({ table: t.table, kind: 'orphan', detail: { key: parsed, snapshotEndPosition: t.snapshot?.endPosition ?? null, applied: r.apply } }));
    }
  }
  const tables = r.tables.map((t) => ({ table: t.table, snapshot: t.snapshot, resnapshotReads: t.resnapshotReads, orphans: t.orphans.count, tombstoned: t.orphans.tombstoned, failed: t.orphans.failed, anomalies: t.anomalies.length }));
  lines.push(summaryLine({ command: 'snapshot-check', runId: r.runId, startedAt: r.startedAt, finishedAt: r.finishedAt, apply: r.apply, findings: r.findings, tables, report: r.report, exitCode }));
  return lines;
}

function humanSummary(r: SnapshotReport): string[] {
  const lines = [`snapshot-check ${r.runId}${r.apply ? ' (--apply)' : ''}`];
  for (const t of r.tables) {
    const snap = t.snapshot ? `complete snapshot ${positionText(t.snapshot.startPosition)} .. ${positionText(t.snapshot.endPosition)}, ${t.snapshot.keys} keys` : 'no complete snapshot in raw';
    lines.push(`  ${t.table}: ${snap}; orphans=${t.orphans.count}${r.apply ? ` tombstoned=${t.orphans.tombstoned} failed=${t.orphans.failed}` : ''}; resnapshotReads=${t.resnapshotReads}`);
    for (const a of t.anomalies) lines.push(`    anomaly ${a.kind}: ${Object.entries(a.detail).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  }
  lines.push(`  report: ${r.report}`);
  return lines;
}

/** The options of `tidemark snapshot-check` as commander parses them. */
interface SnapshotCheckOptions {
  readonly config: string;
  readonly table?: string[];
  readonly apply?: boolean;
  readonly hours?: number;
  readonly runId?: string;
  readonly on: 'local' | 'aws';
  readonly stateMachineArn?: string;
  readonly json?: boolean;
}

/** The state machine's input: only the options given (the job applies its defaults to the rest). */
function requestOf(o: SnapshotCheckOptions): SnapshotRequest {
  return {
    ...(o.table ? { tables: o.table } : {}),
    ...(o.apply ? { apply: true } : {}),
    ...(o.hours !== undefined ? { hours: o.hours } : {}),
    ...(o.runId ? { runId: o.runId } : {}),
  };
}

/** `tidemark snapshot-check`: validate, run (here or on AWS), print. */
export async function snapshotCheckCommand(o: SnapshotCheckOptions): Promise<void> {
  const cfg = config(o.config);
  const request = requestOf(o);
  try {
    validateSnapshotRequest(cfg, request);
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e), `--table ${cfg.tables.map((t) => t.source).join(' | ')}`);
  }
  const c = await clients(cfg);
  let report: SnapshotReport;
  if (o.on === 'aws') {
    const sfn = sfnClient();
    report = (await runOnAws(sfn, o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-snapshot`)), o.runId ?? `cli-${Date.now()}`, request)) as unknown as SnapshotReport;
  } else {
    const bar = jobProgress('snapshot-check', o.json === true);
    try {
      report = await runSnapshotCheck(cfg, c, request, { onProgress: bar.onEvent });
    } finally {
      bar.stop();
    }
  }
  const exitCode = snapshotExitCode(report);
  for (const line of o.json ? snapshotJsonLines(report, exitCode) : humanSummary(report)) out(line);
  process.exitCode = exitCode;
}
