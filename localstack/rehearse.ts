/**
 * A rehearsal of e2e.ts's job step on this machine, without Docker: the same fixture records go
 * through the ingest's `processBatch` (in-process, not through Kinesis and the event source mapping)
 * into the embedded emulators, and then the same checks (checks.ts) run every job with the same
 * inputs (the scheduled ones read from the synthesized template, as e2e.ts reads them from the
 * deployed one), the state machine definitions running in-process (bin/local/stepfunctions.ts)
 * instead of in Step Functions. Erase runs too, with a ledger key in this process's environment.
 *
 *   node bin/with-loopback.mjs node --import tsx localstack/rehearse.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, RemovalPolicy } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { localDeps } from '../bin/cli/context.js';
import { runEraseLocally } from '../bin/cli/erase.js';
import { runPlan } from '../bin/cli/plan.js';
import { runReconcile } from '../bin/cli/reconcile.js';
import { runReplayLocally } from '../bin/cli/replay.js';
import { runSnapshotCheck } from '../bin/cli/snapshot-check.js';
import { loadConfigFile } from '../lib/config/config.js';
import type { RawRecord } from '../functions/core/normalize.js';
import type { ReconcileRequest } from '../functions/jobs/reconcile/types.js';
import type { SnapshotRequest } from '../functions/jobs/snapshot/types.js';
import { processBatch } from '../functions/ingest/process-batch.js';
import type { ReplayRequest } from '../functions/replay/job.js';
import { TidemarkStack } from '../lib/stack.js';
import { FIXTURE_HANDLER } from '../test/unit/lib/fixtures/stack.js';
import { openTarget, uniqueConfig } from '../test/helpers/target.js';
import { checkErase, checkReconcile, checkReplay, checkSnapshot, type Expected, type TestState } from './checks.js';
import { type CfnTemplate, deployedJobs, type JobName } from './jobs.js';
import { replayContext } from '../functions/composition.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl');
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const config = uniqueConfig(loadConfigFile(path.join(ROOT, 'tidemark.config.json')));
const stack = new TidemarkStack(new App(), `Tidemark-${config.name}`, { config, pipeline: { ingestEntry: FIXTURE_HANDLER, removalPolicy: RemovalPolicy.DESTROY } });
const jobs = deployedJobs(Template.fromStack(stack).toJSON() as CfnTemplate);
const jobOf = (name: JobName) => {
  const job = jobs.find((j) => j.job === name);
  if (!job) throw new Error(`the synthesized stack outputs no ${name} state machine`);
  return job;
};

const target = await openTarget();
await target.setup(config);
try {
  const lines = readFileSync(FIXTURE, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const since = Date.now();
  let sequence = 1000;
  const records: RawRecord[] = [...lines, '{"this is": not json'].map((line) => ({
    value: Buffer.from(line),
    key: null,
    topic: null,
    headers: {},
    transport: { kind: 'kinesis', stream: config.source.type === 'kinesis' ? config.source.streamName : 's', shard: 'shardId-000000000000', sequence: String(++sequence), partitionKey: 'p', arrivalTime: Date.now() },
  }));
  const result = await processBatch(records, { ...localDeps(config, target.clients), log: quiet });
  assert.deepEqual(result.batchItemFailures, []);
  const plan = runPlan(config, FIXTURE, 'value');
  assert.equal(result.summary.quarantined, plan.problems.length + 1, 'ingest quarantined what tidemark plan rejects, and the malformed record');
  console.log(`ingested ${records.length} records in-process: ${result.summary.applied} applied, ${result.summary.quarantined} quarantined`);
  // The settled reconcile holds against the table only raw stored before it starts (S3 times are whole seconds).
  await new Promise((r) => setTimeout(r, 1500));

  const state: TestState = {
    config,
    clients: target.clients,
    expected: plan.lines.map((l) => JSON.parse(l) as Expected),
    rawRecords: lines.length - plan.problems.length,
    since,
  };
  const ctx = replayContext(config, target.clients, quiet);
  const ran = (label: string, output: unknown) => {
    console.log(`${label}: done`);
    return output;
  };
  console.log(await checkReconcile(state, jobOf('reconcile'), async (label, input) => ran(label, await runReconcile(config, target.clients, input as ReconcileRequest, { log: quiet }))));
  console.log(await checkSnapshot(state, jobOf('snapshot'), async (label, input) => ran(label, await runSnapshotCheck(config, target.clients, input as SnapshotRequest, { log: quiet }))));
  console.log(await checkReplay(state, async (label, input) => ran(label, await runReplayLocally(ctx, input as ReplayRequest))));
  process.env.TIDEMARK_ERASE_KEY ??= 'rehearsal-ledger-key-0123456789';
  console.log(await checkErase(state, async (label, input) => ran(label, await runEraseLocally(ctx, input as { runId: string; requestKey: string }))));
  console.log('rehearsal of the LocalStack job checks: OK');
} finally {
  await target.teardown(config).catch(() => {});
  await target.close();
}
