/**
 * `npm start`: the whole pipeline on embedded emulators. A producer writes a Debezium PostgreSQL
 * stream into Kinesis, the local runner applies it through the handler, and the result is checked
 * against the source model.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { Presets, SingleBar } from 'cli-progress';
import { createClients } from '../local/clients.js';
import { parseConfig } from '../../lib/config/config.js';
import { TidemarkError } from '../../functions/core/errors.js';
import { canonicalJson } from '../../functions/core/json.js';
import { startEmulators } from '../local/emulators.js';
import { provision, streamNameOf } from '../local/provision.js';
import { localDeps, STATE_DIR } from './context.js';
import { demoWorkload } from './demo-workload.js';
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

export async function runDemo(opts: { keep: boolean }): Promise<void> {
  const dataDir = join(STATE_DIR, 'demo');
  rmSync(dataDir, { recursive: true, force: true });
  say('tidemark demo: starting embedded DynamoDB Local, kinesalite and s3rver on 127.0.0.1 …');
  const emulators = await startEmulators({ dataDir, inMemory: true, detached: opts.keep });
  try {
    const config = parseConfig(DEMO_CONFIG, 'demo config');
    const clients = createClients(emulators.endpoints);
    await provision(config, clients);
    const stream = streamNameOf(config);
    const workload = demoWorkload({ customers: 200, orders: 600, changes: 3000 });
    say(`producing ${workload.messages.length} Debezium PostgreSQL messages into Kinesis stream "${stream}" (snapshot, inserts, updates with TOAST placeholders, deletes, ${workload.redelivered} redelivered) …`);

    const produce = new SingleBar({ format: 'produce [{bar}] {value}/{total}', stream: process.stdout }, Presets.shades_classic);
    produce.start(workload.messages.length, 0);
    for (let i = 0; i < workload.messages.length; i += 500) {
      const chunk = workload.messages.slice(i, i + 500);
      const res = await clients.kinesis.send(
        new PutRecordsCommand({ StreamName: stream, Records: chunk.map((m) => ({ Data: Buffer.from(m.value), PartitionKey: m.partitionKey })) }),
      );
      if (res.FailedRecordCount) throw new Error(`${res.FailedRecordCount} records were not accepted by Kinesis`);
      produce.update(i + chunk.length);
    }
    produce.stop();

    const apply = new SingleBar({ format: 'apply   [{bar}] {value}/{total} applied={applied} stale={stale} superseded={superseded} duplicates={duplicates} s3Puts={s3Puts}', stream: process.stdout }, Presets.shades_classic);
    apply.start(workload.messages.length, 0, { applied: 0, stale: 0, superseded: 0, duplicates: 0, s3Puts: 0 });
    const totals = await runPoller({
      kinesis: clients.kinesis,
      deps: localDeps(config, clients),
      streamName: stream,
      stateDir: dataDir,
      batchSize: config.ingest.batchSize,
      maxBatchingWindowMs: config.ingest.maxBatchingWindowSeconds * 1000,
      maxRetries: config.ingest.retryAttempts,
      stopWhenIdle: 5,
      onBatch: (_shard, _s, t) => apply.update(t.records, { ...t }),
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
    if (opts.keep) {
      say();
      say('emulators left running. Query them with:');
      say(`  export AWS_ENDPOINT_URL_DYNAMODB=${emulators.endpoints.dynamodb} AWS_ENDPOINT_URL_KINESIS=${emulators.endpoints.kinesis} AWS_ENDPOINT_URL_S3=${emulators.endpoints.s3} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER`);
    } else {
      say('query a row the same way against your own pipeline:  npx tidemark get --table public.orders --key \'{"order_id": 7}\'');
    }
    if (!ok) process.exitCode = 1;
  } finally {
    if (!opts.keep) await emulators.stop();
  }
}
