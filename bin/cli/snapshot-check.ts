/**
 * `tidemark snapshot-check`: runs the snapshot-detection state machine locally (the deployed ASL,
 * through `bin/local/stepfunctions.ts`) and prints what it found: re-snapshots, orphan rows after a
 * complete snapshot (tombstoned with `--apply`), and anomalies against history.
 *
 * It also prints each table's schema drift since its previous report (additions, removals, type
 * changes, each at the position where it first appeared, in the source's notation), and labels
 * tables that are suspended or stopped in error (not checked: their records are not applied yet).
 *
 * Exit codes: 0 nothing found (or every orphan tombstoned, no anomaly and no schema change the
 * target cannot hold), 1 findings, 2 the run failed.
 * `--json` prints one line per finding, `{"table","kind","detail"}` (kinds: the anomalies, `orphan`
 * with the key and what `--apply` did), one per schema change (`schema-change`, with `holds`), then
 * a last line `{"summary":{…}}`.
 */
import type { RuntimeClients as Clients } from '../../functions/adapters/clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { SnapshotReport, SnapshotRequest, TableSnapshotResult } from '../../functions/jobs/snapshot/run.js';
import type { DriftChange, TableDrift } from '../../functions/jobs/snapshot/types.js';
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
    for (const c of t.drift.changes) {
      const { kind, ...rest } = c;
      lines.push(JSON.stringify({ table: t.table, kind: 'schema-change', detail: { change: kind, ...rest, at: positionText(c.position, t.drift.notation) } }));
    }
  }
  const tables = r.tables.map((t) => ({
    table: t.table,
    held: t.held,
    snapshot: t.snapshot,
    resnapshotReads: t.resnapshotReads,
    orphans: t.orphans.count,
    tombstoned: t.orphans.tombstoned,
    failed: t.orphans.failed,
    anomalies: t.anomalies.length,
    schemaChanges: t.drift.changes.length + t.drift.unlisted,
    schemaIncompatible: t.drift.incompatible,
  }));
  lines.push(summaryLine({ command: 'snapshot-check', runId: r.runId, startedAt: r.startedAt, finishedAt: r.finishedAt, apply: r.apply, findings: r.findings, drift: r.drift, held: r.held, tables, report: r.report, exitCode }));
  return lines;
}

/** One schema change as a line: kind, column, types, where it first appeared (the source's notation) and when. */
function changeLine(c: DriftChange, notation: TableDrift['notation']): string {
  const types = c.kind === 'added' ? (c.to ?? '') : c.kind === 'removed' ? (c.from ?? '') : `${c.from ?? '?'} -> ${c.to ?? '?'}`;
  const when = c.commitTime ? `, committed ${c.commitTime}` : '';
  const note = c.holds ? '' : ': the target cannot hold it as before (values written as delivered, never coerced)';
  return `      ${c.kind} ${c.column} ${types} at ${positionText(c.position, notation)}${when}${note}`;
}

/** A table's drift section: one line per change since its previous report, in the source's position notation. */
export function driftLines(t: TableSnapshotResult): string[] {
  const d = t.drift;
  if (!d.recorded) return ['    schema: none recorded yet'];
  const since = d.previous ? `since report ${d.previous.runId ?? '?'}${d.previous.at ? ` (${d.previous.at})` : ''}` : 'recorded so far (first report)';
  const n = d.changes.length + d.unlisted;
  if (n === 0) return [`    schema: no changes ${since}`];
  const cannot = d.incompatible > 0 ? `, ${d.incompatible} the target cannot hold` : '';
  const unlisted = d.unlisted > 0 ? ` (${d.unlisted} older not listed)` : '';
  return [`    schema: ${n} changes ${since}${cannot}${unlisted}`, ...d.changes.map((c) => changeLine(c, d.notation))];
}

function humanSummary(r: SnapshotReport): string[] {
  const lines = [`snapshot-check ${r.runId}${r.apply ? ' (--apply)' : ''}`];
  for (const t of r.tables) {
    if (t.held) {
      lines.push(`  ${t.table}: ${t.held.state} since ${t.held.heldFrom}: not checked (its records land in raw and are not applied until resume)`);
      lines.push(...driftLines(t));
      continue;
    }
    const snap = t.snapshot ? `complete snapshot ${positionText(t.snapshot.startPosition)} .. ${positionText(t.snapshot.endPosition)}, ${t.snapshot.keys} keys` : 'no complete snapshot in raw';
    lines.push(`  ${t.table}: ${snap}; orphans=${t.orphans.count}${r.apply ? ` tombstoned=${t.orphans.tombstoned} failed=${t.orphans.failed}` : ''}; resnapshotReads=${t.resnapshotReads}`);
    for (const a of t.anomalies) lines.push(`    anomaly ${a.kind}: ${Object.entries(a.detail).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    lines.push(...driftLines(t));
  }
  lines.push(`  schema drift: ${r.drift.changes} changes in ${r.drift.tables} tables, ${r.drift.incompatible} the target cannot hold`);
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
