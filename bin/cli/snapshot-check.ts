/**
 * `tidemark snapshot-check`: runs the snapshot-detection state machine locally (the deployed ASL,
 * through `bin/local/stepfunctions.ts`) and prints what it found: re-snapshots, orphan rows after a
 * complete snapshot (tombstoned with `--apply`), and anomalies against history.
 *
 * Exit codes: 0 nothing found (or every orphan tombstoned and no anomaly), 1 findings, 2 the run failed.
 * `--json` prints one line per finding, `{"table","kind","detail"}` (kinds: the anomalies, and `orphan`
 * with the key and what `--apply` did), then a last line `{"summary":{…}}`.
 */
import { type Command, Option } from 'commander';
import type { RuntimeClients as Clients } from '../../functions/adapters/clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { SnapshotReport, SnapshotRequest } from '../../functions/jobs/snapshot/run.js';
import { clients, config } from './context.js';
import { type LocalJobOptions, runLocalJob } from './jobs-local.js';
import { asJob, progressPrinter } from './reconcile.js';

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
  lines.push(JSON.stringify({ summary: { runId: r.runId, startedAt: r.startedAt, finishedAt: r.finishedAt, apply: r.apply, findings: r.findings, tables, report: r.report, exitCode } }));
  return lines;
}

function humanSummary(r: SnapshotReport): string[] {
  const lines = [`snapshot-check ${r.runId}${r.apply ? ' (--apply)' : ''}`];
  for (const t of r.tables) {
    const snap = t.snapshot ? `complete snapshot ${t.snapshot.startPosition}..${t.snapshot.endPosition} read ${t.snapshot.keys} keys` : 'no complete snapshot in raw';
    lines.push(`  ${t.table}: ${snap}; orphans=${t.orphans.count}${r.apply ? ` tombstoned=${t.orphans.tombstoned} failed=${t.orphans.failed}` : ''}; resnapshotReads=${t.resnapshotReads}`);
    for (const a of t.anomalies) lines.push(`    anomaly ${a.kind}: ${Object.entries(a.detail).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  }
  lines.push(`  report: ${r.report}`);
  return lines;
}

/** The options of `tidemark snapshot-check` as commander parses them. */
interface SnapshotCheckOptions {
  readonly table?: string[];
  readonly apply?: boolean;
  readonly hours?: number;
  readonly runId?: string;
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

/** Adds `tidemark snapshot-check` to the CLI. */
export function registerSnapshotCheck(p: Command): void {
  p.command('snapshot-check')
    .description('detect re-snapshots, orphans after a complete snapshot and anomalies, through the snapshot state machine, locally')
    .addOption(new Option('-c, --config <file>', 'pipeline config').default('tidemark.config.json'))
    .option('-t, --table <source...>', 'only these source tables')
    .option('--apply', 'tombstone orphan rows at the snapshot’s position through the guarded writer')
    .option('--hours <n>', 'hours of raw to look for snapshots in', (v) => Number.parseInt(v, 10))
    .option('--run-id <id>', 'name of the run (report prefix)')
    .option('--json', 'print one JSON line per finding, then {"summary": …}')
    .action((o) =>
      asJob('snapshot-check', async () => {
      const cfg = config(o.config);
      const c = await clients(cfg);
      const request = requestOf(o);
      const report = await runSnapshotCheck(cfg, c, request, { onProgress: progressPrinter((l) => process.stderr.write(`snapshot-check: ${l}\n`)) });
      const exitCode = snapshotExitCode(report);
      for (const line of o.json ? snapshotJsonLines(report, exitCode) : humanSummary(report)) process.stdout.write(`${line}\n`);
      process.exitCode = exitCode;
      }),
    );
}
