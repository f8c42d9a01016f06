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
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { runPlan } from '../bin/cli/plan.js';
import { getRow, statusRows } from '../bin/cli/state.js';
import { createClients, destroyClients } from '../bin/local/clients.js';
import { loadConfigFile } from '../lib/config/config.js';
import { checkErase, checkReconcile, checkReplay, checkSnapshot, type Execute, type Expected, gunzipObject, listKeys, rawLines, type TestState } from './checks.js';
import { deployedJobs, deployedTemplates, eraseBlocker } from './jobs.js';

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

/** Starts one execution, waits for it to end, and returns its output; anything but SUCCEEDED fails with the error and cause. */
const executor = (sfn: SFNClient, arn: string): Execute => async (label, input) => {
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
};

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
    const raw = await waitFor('raw lines', async () => {
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
    const state: TestState = { config, clients, expected, rawRecords, since };
    const sfn = new SFNClient({ endpoint, region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    try {
      const jobs = templates.flatMap((template) => deployedJobs(template).map((job) => ({ job, template })));
      const find = (name: string) => {
        const found = jobs.find((j) => j.job.job === name);
        if (!found) throw new Error(`no ${name} state machine output in ${outputsFile} (found: ${jobs.map((j) => j.job.job).join(', ') || 'none'})`);
        return { ...found, execute: executor(sfn, output(outs, found.job.outputKey)) };
      };
      const reconcile = find('reconcile');
      console.log(await checkReconcile(state, reconcile.job, reconcile.execute));
      const snapshot = find('snapshot');
      console.log(await checkSnapshot(state, snapshot.job, snapshot.execute));
      const replay = find('replay');
      console.log(await checkReplay(state, replay.execute));
      // Erase last: a replay after it would need the ledger key, and the erased key is gone for good.
      const erase = find('erase');
      const blocker = eraseBlocker(erase.template, config);
      if (blocker) console.log(`erase not run: ${blocker}`);
      else console.log(await checkErase(state, erase.execute));
    } finally {
      sfn.destroy();
    }
    console.log('LocalStack end-to-end: OK');
  } finally {
    destroyClients(clients);
  }
}

await main();
