/**
 * What `e2e.ts` asserts after each job's execution, separated from how the execution runs: e2e.ts
 * starts the deployed state machine through the Step Functions API; `rehearse.ts` runs the same
 * definitions in-process on the embedded emulators, so these checks run on this machine too.
 */
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { newRunId } from '../bin/cli/replay.js';
import { getRow } from '../bin/cli/state.js';
import type { TidemarkConfig } from '../lib/config/config.js';
import { type JsonObject, stringifyJson } from '../functions/core/json.js';
import { normalizeKey } from '../functions/core/keys.js';
import { submitErase } from '../functions/erase/erase.js';
import type { ReconcileReport } from '../functions/jobs/reconcile/types.js';
import type { SnapshotReport } from '../functions/jobs/snapshot/types.js';
import type { ReplaySummary } from '../functions/replay/job.js';
import { type DeployedJob, eraseInput, replayTestWindow, settledReconcile } from './jobs.js';

/** Runs one execution of a job's state machine to its end and returns its output; fails unless it succeeded. */
export type Execute = (label: string, input: unknown) => Promise<unknown>;

/** One key `tidemark plan` expects after the test's records. */
export interface Expected {
  readonly table: string;
  readonly key: JsonObject;
  readonly row: JsonObject | null;
  readonly deleted: boolean;
}

export interface TestState {
  readonly config: TidemarkConfig;
  readonly clients: { readonly s3: S3Client; readonly dynamodb: DynamoDBClient };
  readonly expected: readonly Expected[];
  /** Raw lines the test's records should have landed (the fixture's lines minus those quarantined). */
  readonly rawRecords: number;
  /** When the test began putting records: the start of its landing window. */
  readonly since: number;
}

/** Margin around the test's landing window, for clock skew between the test host and the stack. */
export const SKEW_MS = 5 * 60_000;

export async function gunzipObject(s3: S3Client, bucket: string, key: string): Promise<string> {
  const body = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return gunzipSync(Buffer.from(await (body.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())))).toString('utf8');
}

export async function listKeys(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const res = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of res.Contents ?? []) if (o.Key) keys.push(o.Key);
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Every raw line (JSON) under the raw prefix, spilled rows excepted. */
export async function rawLines(s3: S3Client, config: TidemarkConfig): Promise<{ objects: number; lines: Record<string, unknown>[] }> {
  const keys = (await listKeys(s3, config.raw.bucket, config.raw.prefix)).filter((k) => !k.includes('/spill/'));
  const lines: Record<string, unknown>[] = [];
  for (const key of keys) {
    for (const l of (await gunzipObject(s3, config.raw.bucket, key)).split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
  }
  return { objects: keys.length, lines };
}

function noReconcileFindings(label: string, report: ReconcileReport): void {
  assert.equal(report.findings.total, 0, `${label}: reconcile findings ${JSON.stringify(report.findings.byClass)} (report ${report.report})`);
  assert.equal(report.critical, false, `${label}: critical`);
}

/**
 * Each scheduled input as is, then the scheduled full run with the cutoff at its start
 * (`settledReconcile`), which compares every row the test wrote: no missing, extra or different row.
 */
export async function checkReconcile(state: TestState, job: DeployedJob, execute: Execute): Promise<string> {
  if (job.scheduled.length === 0) throw new Error('the reconcile state machine has no schedule to take its input from');
  for (const s of job.scheduled) noReconcileFindings(s.schedule, (await execute(`reconcile-${String(s.input.mode)}`, s.input)) as ReconcileReport);
  const full = job.scheduled.find((s) => s.input.mode === 'full');
  if (!full) throw new Error('no reconcile schedule passes {"mode":"full"}');
  const report = (await execute('reconcile-settled', settledReconcile(full.input))) as ReconcileReport;
  noReconcileFindings('settled reconcile', report);
  assert.equal(report.counts.inFlight, 0, 'with the cutoff at the start, nothing the test wrote is in flight');
  assert.ok(report.counts.keys >= state.expected.length, `settled reconcile compared ${report.counts.keys} keys; the test wrote ${state.expected.length}`);
  return `reconcile: ${job.scheduled.length} scheduled runs and a settled one; ${report.counts.keys} keys, ${report.counts.tableRows} rows compared, no missing, extra or different row`;
}

/** The scheduled input: every table covered, no anomaly, re-snapshot or orphan. */
export async function checkSnapshot(state: TestState, job: DeployedJob, execute: Execute): Promise<string> {
  if (job.scheduled.length === 0) throw new Error('the snapshot state machine has no schedule to take its input from');
  for (const s of job.scheduled) {
    const report = (await execute('snapshot', s.input)) as SnapshotReport;
    assert.equal(report.tables.length, state.config.tables.length, 'snapshot detection covered every configured table');
    for (const t of report.tables) {
      assert.deepEqual(t.anomalies, [], `${t.table}: anomalies`);
      assert.equal(t.resnapshotReads, 0, `${t.table}: re-snapshot reads`);
      assert.equal(t.orphans.count, 0, `${t.table}: orphans`);
    }
    assert.equal(report.findings, 0, `snapshot findings (report ${report.report})`);
  }
  return `snapshot detection: ${job.scheduled.length} scheduled run(s), no anomaly, re-snapshot or orphan`;
}

/** Replays the test's landing window into the live tables: all of it is applied already, so nothing is written. */
export async function checkReplay(state: TestState, execute: Execute): Promise<string> {
  const request = replayTestWindow(state.config, newRunId('replay'), { since: state.since - SKEW_MS, until: Date.now() + SKEW_MS }, Date.now());
  const out = (await execute('replay', request)) as { summary?: ReplaySummary };
  const summary = out.summary;
  assert.ok(summary, 'the replay output carries its summary');
  assert.equal(summary.batchesDone, summary.batches, 'every batch replayed');
  assert.ok(summary.tally.records >= state.rawRecords, `replay read ${summary.tally.records} records; the test landed ${state.rawRecords}`);
  assert.equal(summary.tally.failed, 0, 'failed writes');
  assert.equal(summary.tally.applied, 0, 'replaying what is current applies nothing');
  assert.equal(summary.tally.writeRequests, 0, 'and sends no write');
  return `replay: ${summary.tally.records} records, ${summary.tally.skippedByPreRead} keys current by pre-read, 0 writes`;
}

/** Erases one live key the test wrote (the request stored by `submitErase`, as the CLI does), then checks its row and raw lines are gone. */
export async function checkErase(state: TestState, execute: Execute): Promise<string> {
  const victim = state.expected.find((e) => !e.deleted);
  const table = state.config.tables.find((t) => t.source === victim?.table);
  if (!victim || !table) throw new Error('the test wrote no live row to erase');
  const runId = newRunId('erase');
  const log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const requestKey = await submitErase({ config: state.config, clients: state.clients, log }, runId, { table: victim.table, key: victim.key, reason: 'tidemark LocalStack end-to-end test' });
  const out = (await execute('erase', eraseInput(runId, requestKey))) as { summary?: { linesRemoved?: number } };
  assert.ok((out.summary?.linesRemoved ?? 0) > 0, `erase removed ${out.summary?.linesRemoved} raw lines`);
  const row = await getRow(state.clients.dynamodb, table, victim.key);
  const values = Object.keys(row ?? {}).filter((k) => !k.startsWith('__') && !table.key.includes(k));
  assert.ok(row === null || (row.__deleted === true && values.length === 0), `the erased row is gone or a bare tombstone; columns left: ${JSON.stringify(values)}`);
  const keyText = stringifyJson(normalizeKey(table, victim.key));
  const left = (await rawLines(state.clients.s3, state.config)).lines.filter((l) => l.table === victim.table && l.key === keyText);
  assert.equal(left.length, 0, `raw lines of the erased key left: ${left.length}`);
  return `erase: one ${victim.table} key gone from current state (${row === null ? 'no item' : 'bare tombstone'}) and raw (${out.summary?.linesRemoved} lines removed)`;
}
