/**
 * `tidemark reconcile`: runs the deployed reconcile state machine locally (the same ASL, through
 * `bin/local/stepfunctions.ts`) with the task bodies in-process, or starts the deployed one
 * (`--on aws`), and prints the report: what it found, and what it did not judge (keys changed after
 * the cutoff), with the option that judges them on a settled local run.
 *
 * The input is checked (functions/jobs/inputs.ts, the rules the Plan task applies) before anything
 * is uploaded or started. Exit codes: 0 no findings (or every finding repaired), 1 findings remain,
 * 2 the run itself failed (bad input, AWS errors). `--json` prints one line per finding,
 * `{"table","key","class","expected","actual"}` (plus `"repair"` when one was tried), then a last
 * line `{"summary":{…}}` (see docs/jobs.md).
 *
 *   tidemark reconcile --cutoff-seconds 0 --repair
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { RuntimeClients as Clients } from '../../functions/adapters/clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { ReconcileReport } from '../../functions/jobs/reconcile/run.js';
import type { Finding, ReconcileRequest } from '../../functions/jobs/reconcile/types.js';
import { validateReconcileRequest } from '../../functions/jobs/inputs.js';
import { clients, config } from './context.js';
import { CliError } from './errors.js';
import { jobProgress, runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { type LocalJobOptions, runLocalJob } from './jobs-local.js';
import { humanDuration, out, summaryLine } from './output.js';
import { manifestUploadKey } from '../../functions/adapters/raw-layout.js';

export type { LocalJobOptions } from './jobs-local.js';

/** Runs reconcile through the state machine locally (compacting raw up to now first) and returns its report. */
export async function runReconcile(cfg: TidemarkConfig, c: Pick<Clients, 's3' | 'dynamodb'>, request: ReconcileRequest, options: LocalJobOptions = {}): Promise<ReconcileReport> {
  return (await runLocalJob(cfg, c, 'reconcile', request, options)) as unknown as ReconcileReport;
}

/** 0 clean (or every finding repaired), 1 findings remain. */
export function reconcileExitCode(report: ReconcileReport): number {
  const remaining = report.findings.total - (report.repair ? report.counts.repaired : 0);
  return remaining > 0 ? 1 : 0;
}

/** The findings of one object: JSON Lines, gzip-compressed or not (by its magic bytes). */
export function findingsOfBytes(bytes: Uint8Array): Finding[] {
  if (bytes.length === 0) return [];
  const gz = bytes[0] === 0x1f && bytes[1] === 0x8b;
  const text = (gz ? gunzipSync(bytes) : Buffer.from(bytes)).toString('utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Finding);
}

/** Every finding of a run, read back from its finding objects. */
export async function readFindings(c: Pick<Clients, 's3'>, report: ReconcileReport): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const uri of report.findingObjects) {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
    if (!m?.[1] || !m[2]) continue;
    const got = await c.s3.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
    const bytes = got.Body ? await got.Body.transformToByteArray() : new Uint8Array();
    out.push(...findingsOfBytes(bytes));
  }
  return out;
}

/** The `--json` lines: one per finding, then the summary. */
export function jsonLines(report: ReconcileReport, findings: readonly Finding[], exitCode: number): string[] {
  const lines = findings.map((f) => {
    let key: unknown = f.key;
    try {
      key = JSON.parse(f.key);
    } catch {
      // keep the text
    }
    return JSON.stringify({ table: f.table, key, class: f.class, expected: f.expected, actual: f.actual, ...(f.repair !== undefined ? { repair: f.repair } : {}) });
  });
  const { findings: counts, ...rest } = report;
  lines.push(summaryLine({ command: 'reconcile', ...counts.byClass, total: counts.total, byTable: counts.byTable, ...rest, notJudged: { inFlight: report.counts.inFlight, unverifiable: report.counts.unverifiable, cutoff: report.cutoff }, exitCode }));
  return lines;
}

export async function manifestUri(cfg: TidemarkConfig, c: Pick<Clients, 's3'>, manifest: string | undefined): Promise<string | undefined> {
  if (manifest === undefined || manifest.startsWith('s3://')) return manifest;
  const key = manifestUploadKey(cfg.jobs.reportPrefix, basename(manifest), Date.now());
  await c.s3.send(new PutObjectCommand({ Bucket: cfg.raw.bucket, Key: key, Body: readFileSync(manifest) }));
  return `s3://${cfg.raw.bucket}/${key}`;
}


/** An ISO time to the second: `2026-11-30T06:00:00Z`. */
const sec = (iso: string) => (iso.length > 20 && iso.endsWith('Z') ? `${iso.slice(0, 19)}Z` : iso);

/** What the run did not judge: keys changed after the cutoff, and keys it could not verify. */
export function notJudged(r: ReconcileReport): string[] {
  const lines: string[] = [];
  const cutoffAge = Date.parse(r.startedAt) - Date.parse(r.cutoff);
  const when = cutoffAge > 0 ? `${humanDuration(cutoffAge)} before the start` : 'the start';
  if (r.counts.inFlight > 0) {
    lines.push(`  not judged: ${r.counts.inFlight} keys changed after the cutoff, still in flight`);
    lines.push(`    cutoff: ${sec(r.cutoff)}, ${when}`);
    lines.push('    on a settled pipeline (a local run, nothing arriving) judge them too: --cutoff-seconds 0');
  } else {
    lines.push(`  cutoff ${sec(r.cutoff)} (${when}): no key was in flight, every key was judged`);
  }
  if (r.counts.unverifiable > 0) lines.push(`  not judged: ${r.counts.unverifiable} keys whose raw could not be read back (see the report)`);
  return lines;
}

/** Tables suspended or stopped at the run: the keys changed since they were held are not judged (resume applies them). */
export function heldLines(r: ReconcileReport): string[] {
  return Object.entries(r.held ?? {}).map(
    ([table, h]) =>
      `  ${table}: ${h.state} since ${sec(h.heldFrom)}: ${h.keys} keys changed since then not judged (landed in raw, applied on resume)${h.repairSkipped ? '; --repair left the table alone' : ''}`,
  );
}

function humanSummary(r: ReconcileReport): string[] {
  const found = Object.entries(r.findings.byClass).filter(([, v]) => v > 0);
  const lines = [
    `reconcile ${r.runId}: ${r.mode}${r.window ? ` ${sec(r.window.from)} → ${sec(r.window.to)}` : ''}`,
    `  ${r.counts.keys} keys, ${r.counts.rawEvents} raw events in ${r.counts.rawObjects} objects, ${r.counts.readUnits} read units`,
    `  findings: ${found.length === 0 ? 'none' : found.map(([k, v]) => `${k} ${v}`).join(', ')}${r.repair ? `; repaired ${r.counts.repaired}, repair failed ${r.counts.repairFailed}` : ''}`,
    ...notJudged(r),
    ...heldLines(r),
    `  report: ${r.report}`,
  ];
  if (r.critical) lines.push('  CRITICAL: the table holds changes raw does not have (raw lost data): see docs/jobs.md, "ahead"');
  else if (found.length > 0 && !r.repair) lines.push('  repair what raw can repair: the same command with --repair');
  return lines;
}

/** The options of `tidemark reconcile` as commander parses them. */
interface ReconcileOptions {
  readonly config: string;
  readonly mode: 'window' | 'full';
  readonly hours?: number;
  readonly since?: string;
  readonly until?: string;
  readonly table?: string[];
  readonly repair?: boolean;
  readonly manifest?: string;
  readonly cutoffSeconds?: number;
  readonly runId?: string;
  readonly on: 'local' | 'aws';
  readonly stateMachineArn?: string;
  readonly json?: boolean;
}

/** The state machine's input: only the options given (the job applies its defaults to the rest). */
function requestOf(o: ReconcileOptions, manifest: string | undefined): ReconcileRequest {
  return {
    mode: o.mode,
    ...(o.hours !== undefined ? { hours: o.hours } : {}),
    ...(o.since !== undefined ? { since: o.since } : {}),
    ...(o.until !== undefined ? { until: o.until } : {}),
    ...(o.table ? { tables: o.table } : {}),
    ...(o.repair ? { repair: true } : {}),
    ...(manifest ? { manifest } : {}),
    ...(o.cutoffSeconds !== undefined ? { cutoffSeconds: o.cutoffSeconds } : {}),
    ...(o.runId ? { runId: o.runId } : {}),
  };
}

/** `tidemark reconcile`: validate, upload a local manifest, run (here or on AWS), print. */
export async function reconcileCommand(o: ReconcileOptions): Promise<void> {
  const cfg = config(o.config);
  // The Plan task's own rules, before anything is uploaded or started (a stand-in URI for a local manifest).
  try {
    validateReconcileRequest(cfg, requestOf(o, o.manifest === undefined ? undefined : `s3://${cfg.raw.bucket}/manifest`));
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e), 'tidemark reconcile --help lists each option and its range');
  }
  const c = await clients(cfg);
  const request = requestOf(o, await manifestUri(cfg, c, o.manifest));
  let report: ReconcileReport;
  if (o.on === 'aws') {
    const sfn = sfnClient();
    const arn = o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-reconcile`));
    report = (await runOnAws(sfn, arn, o.runId ?? `cli-${Date.now()}`, request)) as unknown as ReconcileReport;
  } else {
    const bar = jobProgress('reconcile', o.json === true);
    try {
      report = await runReconcile(cfg, c, request, { onProgress: bar.onEvent });
    } finally {
      bar.stop();
    }
  }
  const exitCode = reconcileExitCode(report);
  if (o.json) for (const line of jsonLines(report, await readFindings(c, report), exitCode)) out(line);
  else for (const line of humanSummary(report)) out(line);
  process.exitCode = exitCode;
}
