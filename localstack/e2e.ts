/**
 * End to end on LocalStack, against the stack `deploy.sh` deployed with cdklocal (not resources
 * provisioned by the test): puts Debezium records on the deployed stream, waits for the deployed
 * ingest Lambda to write current state and raw, checks both against `tidemark plan` of the same
 * records, checks that a malformed record is quarantined with its bytes, checks the status rows, then runs every state machine the stack outputs (the jobs), if any.
 *
 *   node --import tsx localstack/e2e.ts [config] [outputs]    (localstack/test.sh runs it)
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
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { runPlan } from '../bin/cli/plan.js';
import { getRow, statusRows } from '../bin/cli/state.js';
import { createClients, destroyClients } from '../bin/local/clients.js';
import { loadConfigFile } from '../functions/commons/config.js';
import type { JsonObject } from '../functions/core/json.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const configFile = process.argv[2] ?? path.join(ROOT, 'tidemark.config.json');
const outputsFile = process.argv[3] ?? path.join(HERE, '.outputs.json');
const endpoint = process.env.TIDEMARK_ENDPOINT ?? 'http://127.0.0.1:4566';
const region = process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl');
const TIMEOUT_MS = Number(process.env.TIDEMARK_E2E_TIMEOUT_MS ?? 180_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${TIMEOUT_MS} ms waiting for ${what}`);
    await sleep(2000);
  }
}

/** The stack's outputs by logical-id prefix (`PipelineStreamName…` → value). */
function outputs(): Map<string, string> {
  const all = JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>;
  return new Map(Object.values(all).flatMap((o) => Object.entries(o)));
}
const output = (outs: Map<string, string>, prefix: string): string => {
  const hit = [...outs].find(([k]) => k.startsWith(prefix));
  if (!hit) throw new Error(`no stack output ${prefix}* in ${outputsFile}`);
  return hit[1];
};

async function main(): Promise<void> {
  const config = loadConfigFile(configFile);
  const outs = outputs();
  const clients = createClients({ dynamodb: endpoint, kinesis: endpoint, s3: endpoint, region, accessKeyId: 'test', secretAccessKey: 'test' });
  try {
    const streamName = output(outs, 'PipelineStreamName');
    const bucket = output(outs, 'PipelineRawBucket');
    const lines = readFileSync(FIXTURE, 'utf8').split('\n').filter((l) => l.trim() !== '');
    // In order, one shard key per source key so that Kinesis keeps each key's order.
    for (const line of lines) {
      const message = JSON.parse(line) as { after?: { id?: unknown } | null; before?: { id?: unknown } | null };
      const key = JSON.stringify(message.after?.id ?? message.before?.id ?? null);
      await clients.kinesis.send(new PutRecordsCommand({ StreamName: streamName, Records: [{ Data: Buffer.from(line), PartitionKey: key }] }));
    }
    // And one record no decoder accepts: it must be quarantined with its bytes, not retried.
    const bad = Buffer.from('{"this is": not json');
    await clients.kinesis.send(new PutRecordsCommand({ StreamName: streamName, Records: [{ Data: bad, PartitionKey: 'bad' }] }));
    console.log(`put ${lines.length} Debezium records and 1 malformed record on ${streamName}`);

    // Expected state: the CLI's dry run of the same records.
    const expected = runPlan(config, FIXTURE, 'value').lines.map((l) => JSON.parse(l) as { table: string; key: JsonObject; row: JsonObject | null; deleted: boolean });
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

    const landed = await waitFor('raw objects', async () => {
      const res = await clients.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: config.raw.prefix }));
      return (res.Contents?.length ?? 0) > 0 ? res.Contents : undefined;
    });
    let rawLines = 0;
    for (const object of landed ?? []) {
      if (!object.Key || object.Key.includes('/spill/')) continue;
      const body = await clients.s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }));
      const bytes = Buffer.from(await (body.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())));
      rawLines += gunzipSync(bytes).toString('utf8').split('\n').filter((l) => l !== '').length;
    }
    assert.ok(rawLines >= lines.length, `raw holds ${rawLines} lines for ${lines.length} records`);
    console.log(`raw holds ${rawLines} lines in ${landed?.length ?? 0} objects`);

    const quarantined = await waitFor('a quarantine object', async () => {
      const res = await clients.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: config.raw.quarantinePrefix }));
      return res.Contents?.[0]?.Key;
    });
    const qBody = await clients.s3.send(new GetObjectCommand({ Bucket: bucket, Key: quarantined }));
    const qText = gunzipSync(Buffer.from(await (qBody.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())))).toString('utf8');
    assert.ok(qText.includes(bad.toString('base64')), 'the quarantine line keeps the record’s exact bytes');
    console.log(`quarantined: ${quarantined}`);

    const status = await statusRows(clients.dynamodb, config);
    assert.ok(status.length > 0, 'status rows were written');
    console.log(`status rows: ${status.length}`);

    const machines = [...outs].filter(([k]) => /StateMachine.*Arn/.test(k)).map(([, v]) => v);
    if (machines.length === 0) console.log('no state machines in the stack outputs: jobs skipped');
    const sfn = new SFNClient({ endpoint, region, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    try {
      for (const arn of machines) {
        const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, input: '{}' }));
        const final = await waitFor(`execution of ${arn}`, async () => {
          const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
          return d.status === 'RUNNING' || d.status === 'PENDING_REDRIVE' ? undefined : d.status;
        });
        assert.equal(final, 'SUCCEEDED', `${arn} ended ${final}`);
        console.log(`state machine ${arn}: SUCCEEDED`);
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
