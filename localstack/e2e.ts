/**
 * End-to-end run against the stack deploy.sh put in LocalStack: puts this repository's Debezium
 * records on the deployed stream, waits for the deployed ingest Lambda to write current state and
 * raw, checks both against `tidemark plan` of the same records, checks that malformed records are
 * quarantined with their bytes, checks the status rows, then runs the jobs' state machines the
 * stack outputs (localstack/jobs.ts): reconcile and snapshot detection with the inputs their
 * schedules pass (read from the deployed template), a settled reconcile, a replay of the test's
 * window into the live tables, and an erase of one test key when the deployed function can read
 * the ledger key.
 *
 *   node --import tsx localstack/e2e.ts [config] [outputs] [cdk output dir]   (localstack/test.sh runs it)
 *
 * The records are this repository's Debezium PostgreSQL fixture (test/fixtures/plan/mixed.jsonl).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { runPlan } from '../bin/cli/plan.js';
import { newRunId } from '../bin/cli/replay.js';
import { getRow, statusRows } from '../bin/cli/state.js';
import { type Clients, createClients, destroyClients } from '../bin/local/clients.js';
import type { TableConfig, TidemarkConfig } from '../functions/commons/config.js';
import { loadConfigFile } from '../functions/commons/config.js';
import { type JsonObject, stringifyJson } from '../functions/core/json.js';
import { normalizeKey } from '../functions/core/keys.js';
import { submitErase } from '../functions/erase/erase.js';
import type { ReconcileReport } from '../functions/jobs/reconcile/report.js';
import type { SnapshotReport } from '../functions/jobs/snapshot/tasks.js';
import type { ReplaySummary } from '../functions/replay/job.js';
import { type CfnTemplate, type DeployedJob, deployedJobs, deployedTemplates, eraseBlocker, eraseInput, replayTestWindow, settledReconcile } from './jobs.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const configFile = process.argv[2] ?? path.join(ROOT, 'tidemark.config.json');
const outputsFile = process.argv[3] ?? path.join(HERE, '.outputs.json');
const cdkOutDir = process.argv[4] ?? path.join(HERE, '.cdk.out');
const endpoint = process.env.TIDEMARK_ENDPOINT ?? 'http://127.0.0.1:4566';
const region = process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl');
const TIMEOUT_MS = Number(process.env.TIDEMARK_E2E_TIMEOUT_MS ?? 180_000);
const JOB_TIMEOUT_MS = Number(process.env.TIDEMARK_E2E_JOB_TIMEOUT_MS ?? 600_000);
/** Margin around the test's landing window, for clock skew between this host and LocalStack. */
const SKEW_MS = 5 * 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(2000);
  }
}

/** The stack outputs by logical id (`PipelineStreamName…` → value), with the stack they belong to. */
function outputs(): { byKey: Map<string, string>; stacks: string[] } {
  const all = JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>;
  return { byKey: new Map(Object.values(all).flatMap((o) => Object.entries(o))), stacks: Object.keys(all) };
}
const output = (outs: Map<string, string>, prefix: string): string => {
  const hit = [...outs].find(([k]) => k.startsWith(prefix));
  if (!hit) throw new Error(`no stack output ${prefix}* in ${outputsFile}`);
  return hit[1];
};

async function gunzipObject(s3: S3Client, bucket: string, key: string): Promise<string> {
  const body = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return gunzipSync(Buffer.from(await (body.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())))).toString('utf8');
}

async function listKeys(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
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
async function rawLines(s3: S3Client, config: TidemarkConfig): Promise<{ objects: number; lines: Record<string, unknown>[] }> {
  const keys = (await listKeys(s3, config.raw.bucket, config.raw.prefix)).filter((k) => !k.includes('/spill/'));
  const lines: Record<string, unknown>[] = [];
  for (const key of keys) {
    for (const l of (await gunzipObject(s3, config.raw.bucket, key)).split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
  }
  return { objects: keys.length, lines };
}

type Expected = { table: string; key: JsonObject; row: JsonObject | null; deleted: boolean };

/** Starts one execution, waits for it to end, and returns its output; anything but SUCCEEDED fails with the error and cause. */
async function execute(sfn: SFNClient, arn: string, label: string, input: unknown): Promise<unknown> {
  const name = `e2e-${label}-${Date.now()}`.slice(0, 80);
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));
  const ended = await waitFor(
    `execution ${name} of ${arn}`,
    async () => {
      const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      return d.status === 'RUNNING' || d.status === 'PENDING_REDRIVE' ? undefined : d;
    },
    JOB_TIMEOUT_MS,
  );
  assert.equal(ended.status, 'SUCCEEDED', `${label} (${executionArn}) ended ${ended.status}: ${ended.error ?? ''} ${ended.cause ?? ''}`);
  console.log(`${label}: SUCCEEDED`);
  return JSON.parse(ended.output ?? 'null') as unknown;
}

interface JobRun {
  readonly config: TidemarkConfig;
  readonly clients: Clients;
  readonly sfn: SFNClient;
  readonly arn: string;
  readonly job: DeployedJob;
  readonly expected: readonly Expected[];
  /** Raw lines the test's records should have landed (the fixture's lines minus those quarantined). */
  readonly rawRecords: number;
  /** When the test began putting records: the start of its landing window. */
  readonly window: { readonly since: number };
}

function reconcileFindings(label: string, report: ReconcileReport): void {
  assert.equal(report.findings.total, 0, `${label}: reconcile findings ${JSON.stringify(report.findings.byClass)} (report ${report.report})`);
  assert.equal(report.critical, false, `${label}: critical`);
}

/** Each scheduled input as is, then the scheduled full run with the cutoff at its start, which compares every row the test wrote. */
async function runReconcile(r: JobRun): Promise<void> {
  if (r.job.scheduled.length === 0) throw new Error('the reconcile state machine has no schedule to take its input from');
  for (const s of r.job.scheduled) reconcileFindings(s.schedule, (await execute(r.sfn, r.arn, `reconcile-${String(s.input.mode)}`, s.input)) as ReconcileReport);
  const full = r.job.scheduled.find((s) => s.input.mode === 'full');
  if (!full) throw new Error('no reconcile schedule passes {"mode":"full"}');
  const report = (await execute(r.sfn, r.arn, 'reconcile-settled', settledReconcile(full.input))) as ReconcileReport;
  reconcileFindings('settled reconcile', report);
  assert.equal(report.counts.inFlight, 0, 'with the cutoff at the start, nothing the test wrote is in flight');
  assert.ok(report.counts.keys >= r.expected.length, `settled reconcile compared ${report.counts.keys} keys; the test wrote ${r.expected.length}`);
  console.log(`reconcile: ${report.counts.keys} keys, ${report.counts.tableRows} rows compared, no missing, extra or different rows`);
}

async function runSnapshot(r: JobRun): Promise<void> {
  if (r.job.scheduled.length === 0) throw new Error('the snapshot state machine has no schedule to take its input from');
  for (const s of r.job.scheduled) {
    const report = (await execute(r.sfn, r.arn, 'snapshot', s.input)) as SnapshotReport;
    assert.equal(report.tables.length, r.config.tables.length, 'snapshot detection covered every configured table');
    for (const t of report.tables) {
      assert.deepEqual(t.anomalies, [], `${t.table}: anomalies`);
      assert.equal(t.resnapshotReads, 0, `${t.table}: re-snapshot reads`);
      assert.equal(t.orphans.count, 0, `${t.table}: orphans`);
    }
    assert.equal(report.findings, 0, `snapshot findings (report ${report.report})`);
  }
  console.log('snapshot detection: no anomaly, re-snapshot or orphan');
}

/** Replays the test's landing window into the live tables: all of it is applied already, so nothing is written. */
async function runReplay(r: JobRun): Promise<void> {
  const request = replayTestWindow(r.config, newRunId('replay'), { since: r.window.since - SKEW_MS, until: Date.now() + SKEW_MS }, Date.now());
  const out = (await execute(r.sfn, r.arn, 'replay', request)) as { summary?: ReplaySummary };
  const summary = out.summary;
  assert.ok(summary, 'the replay output carries its summary');
  assert.equal(summary.batchesDone, summary.batches, 'every batch replayed');
  assert.ok(summary.tally.records >= r.rawRecords, `replay read ${summary.tally.records} records; the test landed ${r.rawRecords}`);
  assert.equal(summary.tally.failed, 0, 'failed writes');
  assert.equal(summary.tally.applied, 0, 'replaying what is current applies nothing');
  assert.equal(summary.tally.writeRequests, 0, 'and sends no write');
  console.log(`replay: ${summary.tally.records} records, ${summary.tally.skippedByPreRead} keys current by pre-read, 0 writes`);
}

/** Erases one live key the test wrote, then checks its row and its raw lines are gone. */
async function runErase(r: JobRun, template: CfnTemplate): Promise<void> {
  const blocker = eraseBlocker(template, r.config);
  if (blocker) {
    console.log(`erase not run: ${blocker}`);
    return;
  }
  const victim = r.expected.find((e) => !e.deleted);
  const table = r.config.tables.find((t) => t.source === victim?.table);
  if (!victim || !table) throw new Error('the test wrote no live row to erase');
  const runId = newRunId('erase');
  const log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const requestKey = await submitErase({ config: r.config, clients: r.clients, log }, runId, { table: victim.table, key: victim.key, reason: 'tidemark LocalStack end-to-end test' });
  const out = (await execute(r.sfn, r.arn, 'erase', eraseInput(runId, requestKey))) as { summary?: { linesRemoved?: number } };
  assert.ok((out.summary?.linesRemoved ?? 0) > 0, `erase removed ${out.summary?.linesRemoved} raw lines`);
  const row = await getRow(r.clients.dynamodb, table, victim.key);
  const values = Object.keys(row ?? {}).filter((k) => !k.startsWith('__'));
  assert.ok(row === null || (row.__deleted === true && values.every((k) => table.key.includes(k))), `the erased row is gone or a bare tombstone: ${JSON.stringify(values)}`);
  const keyText = stringifyJson(normalizeKey(table as TableConfig, victim.key));
  const left = (await rawLines(r.clients.s3, r.config)).lines.filter((l) => l.table === victim.table && l.key === keyText);
  assert.equal(left.length, 0, `raw lines of the erased key left: ${left.length}`);
  console.log(`erase: ${victim.table} key removed from current state and raw (${out.summary?.linesRemoved} lines)`);
}

async function main(): Promise<void> {
  const config = loadConfigFile(configFile);
  const { byKey: outs, stacks } = outputs();
  const clients = createClients({ dynamodb: endpoint, kinesis: endpoint, s3: endpoint, region, accessKeyId: 'test', secretAccessKey: 'test' });
  try {
    const streamName = output(outs, 'PipelineStreamName');
    const bucket = output(outs, 'PipelineRawBucket');
    const lines = readFileSync(FIXTURE, 'utf8').split('\n').filter((l) => l.trim() !== '');
    const since = Date.now();
    // In order, one shard key per source key so that Kinesis keeps each key's order. The fixture
    // holds a line that is not JSON: it goes on as it is, and must be quarantined.
    for (const line of lines) {
      let key = 'unparsable';
      try {
        const message = JSON.parse(line) as { after?: { id?: unknown } | null; before?: { id?: unknown } | null };
        key = JSON.stringify(message.after?.id ?? message.before?.id ?? null);
      } catch {
        // keep the fallback partition key
      }
      await clients.kinesis.send(new PutRecordsCommand({ StreamName: streamName, Records: [{ Data: Buffer.from(line), PartitionKey: key }] }));
    }
    // And one record no decoder accepts: it must be quarantined with its bytes, not retried.
    const bad = Buffer.from('{"this is": not json');
    await clients.kinesis.send(new PutRecordsCommand({ StreamName: streamName, Records: [{ Data: bad, PartitionKey: 'bad' }] }));
    console.log(`put ${lines.length} Debezium fixture lines and 1 malformed record on ${streamName}`);

    // Expected state: the CLI's dry run of the same records; its problems are the lines ingest quarantines.
    const plan = runPlan(config, FIXTURE, 'value');
    const expected = plan.lines.map((l) => JSON.parse(l) as Expected);
    for (const want of expected) {
      const table = config.tables.find((t) => t.source === want.table);
      assert.ok(table, `table ${want.table} is configured`);
      await waitFor(`${want.table} ${JSON.stringify(want.key)} in DynamoDB`, async () => {
        const got = await getRow(clients.dynamodb, table, want.key);
        if (want.deleted) return got === null || got.__deleted === true ? true : undefined;
        if (got === null || got.__deleted === true) return undefined;
        const columns = Object.fromEntries(Object.entries(got).filter(([k]) => !k.startsWith('__')));
        return isDeepStrictEqual(columns, want.row) ? true : undefined;
      });
    }
    console.log(`current state matches tidemark plan for ${expected.length} keys`);

    const rawRecords = lines.length - plan.problems.length;
    const raw = await waitFor('raw objects', async () => {
      const got = await rawLines(clients.s3, config);
      return got.lines.length >= rawRecords ? got : undefined;
    });
    console.log(`raw holds ${raw.lines.length} lines in ${raw.objects} objects for ${rawRecords} accepted records`);

    // Every rejected record is quarantined, with its exact bytes (base64).
    const quarantine = await waitFor('the quarantine lines', async () => {
      const text = (await Promise.all((await listKeys(clients.s3, bucket, config.raw.quarantinePrefix)).map((k) => gunzipObject(clients.s3, bucket, k)))).join('\n');
      const count = text.split('\n').filter((l) => l !== '').length;
      return count >= plan.problems.length + 1 ? text : undefined;
    });
    assert.ok(quarantine.includes(bad.toString('base64')), 'the quarantine line keeps the record’s exact bytes');
    console.log(`quarantined: ${plan.problems.length + 1} records`);

    const status = await statusRows(clients.dynamodb, config);
    assert.ok(status.length > 0, 'status rows were written');
    console.log(`status rows: ${status.length}`);

    const templates = deployedTemplates(cdkOutDir, stacks);
    const sfn = new SFNClient({ endpoint, region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    try {
      const window = { since };
      // Erase last: the replay reads the erase ledger, and the erased key is gone for good.
      const order = ['reconcile', 'snapshot', 'replay', 'erase'] as const;
      const jobs = templates.flatMap((template) => deployedJobs(template).map((job) => ({ job, template })));
      assert.equal(jobs.length, order.length, `state machine outputs found: ${jobs.map((j) => j.job.job).join(', ') || 'none'}`);
      for (const name of order) {
        const found = jobs.find((j) => j.job.job === name);
        if (!found) throw new Error(`no ${name} state machine output`);
        const r: JobRun = { config, clients, sfn, arn: output(outs, found.job.outputKey), job: found.job, expected, rawRecords, window };
        if (name === 'reconcile') await runReconcile(r);
        else if (name === 'snapshot') await runSnapshot(r);
        else if (name === 'replay') await runReplay(r);
        else await runErase(r, found.template);
      }
    } finally {
      sfn.destroy();
    }
    console.log('LocalStack end-to-end: OK');
  } finally {
    destroyClients(clients);
  }
}

await main();
