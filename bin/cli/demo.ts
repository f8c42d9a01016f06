/**
 * `npm start`: the whole pipeline on embedded emulators. A producer writes a Debezium PostgreSQL
 * stream into Kinesis, the local runner applies it through the handler, and the result is checked
 * against the source model.
 *
 * With `--keep` the emulators stay up and are recorded in `.tidemark/local/local.json` with the
 * demo's config in `.tidemark/demo/tidemark.config.json`, so `tidemark status -c …` finds them and
 * `tidemark local down` stops them. Run as root, `npm start` puts them in a network namespace of
 * their own (bin/with-loopback.mjs): then the demo prints the `nsenter` command that reaches them.
 *
 *   npm start -- --keep
 *   npx tidemark get -c .tidemark/demo/tidemark.config.json -t public.orders -k '{"order_id": 7}'
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { createClients } from '../local/clients.js';
import { parseConfig } from '../../lib/config/config.js';
import { TidemarkError } from '../../functions/core/errors.js';
import { canonicalJson } from '../../functions/core/json.js';
import { type RunningEmulators, startEmulators } from '../local/emulators.js';
import { type LocalState, localStatus, nsenterCommand, recordLocalState } from '../local/local-state.js';
import { provision, streamNameOf } from '../local/provision.js';
import { LOCAL_DIR, localDeps, STATE_DIR } from './context.js';
import { CliError } from './errors.js';
import { demoWorkload } from './demo-workload.js';
import { progress } from './output.js';
import { runPoller } from './runner.js';
import { scanTable, statusRows, statusTable } from './state.js';

const say = (line = '') => process.stdout.write(`${line}\n`);

export const DEMO_CONFIG = {
  name: 'demo',
  tables: [
    { source: 'public.customers', target: 'demo-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'demo-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
  ],
  raw: { bucket: 'tidemark-demo-raw' },
  source: { type: 'kinesis', streamName: 'tidemark-demo', shardCount: 2 },
  ingest: { batchSize: 250 },
};

/** Refuses a second set of recorded emulators: `local down` could then stop only one of them. */
async function checkNothingRecorded(): Promise<void> {
  if (!existsSync(join(LOCAL_DIR, 'local.json'))) return;
  const status = await localStatus(LOCAL_DIR);
  if (status.running || status.elsewhere) throw new CliError('local emulators are already running (recorded in .tidemark/local/)', 'npx tidemark local down, then npm start -- --keep');
}

/** Records the kept emulators and says how to reach them, and how to stop them. */
function keepAndTell(emulators: RunningEmulators): void {
  const state: LocalState = recordLocalState(LOCAL_DIR, emulators);
  const configFile = join(STATE_DIR, 'demo', 'tidemark.config.json');
  writeFileSync(configFile, `${JSON.stringify(DEMO_CONFIG, null, 2)}\n`);
  const c = relative(process.cwd(), configFile);
  const commands = [`npx tidemark status -c ${c}`, `npx tidemark get -c ${c} -t public.orders -k '{"order_id": 7}'`, `npx tidemark reconcile -c ${c} --cutoff-seconds 0`];
  say();
  if (state.netns) {
    say(`emulators left running in their own network namespace (loopback only, ${state.netns}); their 127.0.0.1 is not this shell's.`);
    say('Run a command there (as root):');
    for (const cmd of commands) say(`  ${nsenterCommand(emulators.pids.dynamodb, cmd)}`);
    say('or open a shell there:');
    say(`  ${nsenterCommand(emulators.pids.dynamodb, 'sh -c \'eval "$(npx tidemark local env)"; exec "$SHELL"\'')}`);
  } else {
    say('emulators left running on 127.0.0.1. The CLI finds them (.tidemark/local/local.json); try:');
    for (const cmd of commands) say(`  ${cmd}`);
    say('for other AWS tools: eval "$(npx tidemark local env)"');
  }
  say('stop them, from any shell: npx tidemark local down');
}

export async function runDemo(opts: { keep: boolean }): Promise<void> {
  const dataDir = join(STATE_DIR, 'demo');
  if (opts.keep) await checkNothingRecorded();
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  say('tidemark demo: starting embedded DynamoDB Local, kinesalite and s3rver on 127.0.0.1 …');
  const emulators = await startEmulators({ dataDir, inMemory: true, detached: opts.keep });
  try {
    const config = parseConfig(DEMO_CONFIG, 'demo config');
    const clients = createClients(emulators.endpoints);
    await provision(config, clients);
    const stream = streamNameOf(config);
    const workload = demoWorkload({ customers: 200, orders: 600, changes: 3000 });
    say(`producing ${workload.messages.length} Debezium PostgreSQL messages into Kinesis stream "${stream}" (snapshot, inserts, updates with TOAST placeholders, deletes, ${workload.redelivered} redelivered) …`);

    const produce = progress('produce', workload.messages.length, 'records');
    for (let i = 0; i < workload.messages.length; i += 500) {
      const chunk = workload.messages.slice(i, i + 500);
      const res = await clients.kinesis.send(
        new PutRecordsCommand({ StreamName: stream, Records: chunk.map((m) => ({ Data: Buffer.from(m.value), PartitionKey: m.partitionKey })) }),
      );
      if (res.FailedRecordCount) throw new Error(`${res.FailedRecordCount} records were not accepted by Kinesis`);
      produce.update(i + chunk.length);
    }
    produce.stop();

    const apply = progress('apply  ', workload.messages.length, 'records');
    const totals = await runPoller({
      kinesis: clients.kinesis,
      deps: localDeps(config, clients),
      streamName: stream,
      stateDir: dataDir,
      batchSize: config.ingest.batchSize,
      maxBatchingWindowMs: config.ingest.maxBatchingWindowSeconds * 1000,
      maxRetries: config.ingest.retryAttempts,
      stopWhenIdle: 5,
      onBatch: (_shard, _s, t) => apply.update(t.records, `applied=${t.applied} stale=${t.stale} dup=${t.duplicates}`),
    });
    apply.stop();

    say();
    say(statusTable(await statusRows(clients.dynamodb, config)));
    say();
    let ok = true;
    for (const table of config.tables) {
      const expected = workload.expected[table.source as keyof typeof workload.expected];
      const seen = new Map<string, string>();
      const [keyColumn] = table.key;
      if (keyColumn === undefined) throw new TidemarkError('demo table has no key column', { context: { table: table.source } });
      for await (const row of scanTable(clients.dynamodb, table, false)) {
        const clean = Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('__')));
        seen.set(String(clean[keyColumn]), canonicalJson(clean));
      }
      const wrong = [...expected.entries()].filter(([id, row]) => seen.get(String(id)) !== canonicalJson(row)).length;
      const extra = [...seen.keys()].filter((id) => !expected.has(Number(id))).length;
      ok &&= wrong === 0 && extra === 0;
      say(`${table.source}: ${seen.size} live rows, expected ${expected.size}; wrong or missing ${wrong}, extra ${extra}`);
    }
    say(`events: ${totals.records} records, ${totals.applied} writes applied, ${totals.superseded} superseded in-batch, ${totals.stale + totals.duplicates} stale or duplicate (redelivery), ${totals.s3Puts} raw objects in S3`);
    say(ok ? 'current state matches the source database exactly.' : 'MISMATCH: current state does not match the source database.');
    if (opts.keep) keepAndTell(emulators);
    else say('to query this state afterwards (status, get, reconcile, replay, erase), keep the emulators: npm start -- --keep');
    if (!ok) process.exitCode = 1;
  } finally {
    if (!opts.keep) await emulators.stop();
  }
}
