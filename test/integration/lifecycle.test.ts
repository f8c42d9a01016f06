/**
 * Table lifecycles end to end on the embedded emulators (docs/operations.md, "Suspend, resume and
 * tables in error"): `tidemark suspend` holds one table while another goes on, its records land in
 * raw; `tidemark resume` returns it to live apply and replays what it held, with no gap and nothing
 * counted twice; a table whose target is missing stops in error at once without blocking the shard,
 * and `resume` refuses it with the recorded reason until --force.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/lifecycle.test.ts`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { getRow, statusRows } from '../../bin/cli/state.js';
import { ingestDeps } from '../../functions/composition.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import { CollectingMetricSink } from '../../functions/telemetry/sinks.js';
import { identityGap } from '../../functions/telemetry/contract.js';
import { readRow } from '../../lib/read.js';
import { cliEnv, execTidemark, jsonLines } from '../helpers/cli-env.js';
import { PgHistory, type PgEvent } from '../helpers/debezium.js';
import { KinesisFeed } from '../helpers/kinesis-feed.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const base = parseConfig({
  name: 'life',
  tables: [
    { source: 'public.customers', target: 'life-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'life-orders', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.audit', target: 'life-audit', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'life-raw' },
});

describe('suspend, resume and tables in error', { skip: process.env.TIDEMARK_TARGET !== undefined && process.env.TIDEMARK_TARGET !== 'embedded' ? 'embedded only' : false }, () => {
  let target: Target;
  let config: TidemarkConfig;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const history = new PgHistory();
  const feed = new KinesisFeed('life');

  /** A batch through a fresh container (its status cache empty, as at a cold start). */
  const ingest = (events: readonly PgEvent[]) => processBatch(feed.records(events), { ...ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: quiet }) });

  async function tidemark(...args: string[]): Promise<{ lines: Record<string, unknown>[]; stdout: string; stderr: string; code: number }> {
    try {
      const { stdout, stderr } = await execTidemark(args, { cwd: dir, env, config: join(dir, 'tidemark.config.json') });
      return { lines: jsonLines(stdout), stdout, stderr, code: 0 };
    } catch (e) {
      const x = e as { stdout?: string; stderr?: string; code?: number };
      return { lines: jsonLines(x.stdout ?? ''), stdout: x.stdout ?? '', stderr: x.stderr ?? '', code: x.code ?? -1 };
    }
  }

  const table = (source: string) => config.tables.find((t) => t.source === source) as TableConfig;
  const statusOf = async (source: string) => (await statusRows(target.clients.dynamodb, config)).find((r) => r.table === source);

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    dir = mkdtempSync(join(tmpdir(), 'tidemark-life-'));
    writeFileSync(join(dir, 'tidemark.config.json'), JSON.stringify(config));
    const e = target.endpoints;
    assert.ok(e, 'embedded endpoints');
    env = cliEnv(e);
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('holds a suspended table while the other goes on, then resume applies what it held from raw, with no gap', async () => {
    for (let id = 1; id <= 3; id++) {
      history.emit('customers', 'c', { id }, { name: `c${id}` });
      history.emit('orders', 'c', { id }, { total: id });
    }
    await ingest(history.events);
    const suspended = await tidemark('suspend', '-t', 'public.customers', '--reason', 'target migration', '--json');
    assert.equal(suspended.code, 0, suspended.stderr);
    assert.deepEqual([suspended.lines[0]?.state, suspended.lines[0]?.changed], ['suspended', true]);
    assert.equal((await tidemark('suspend', '-t', 'public.customers', '--json')).lines[0]?.changed, false, 'suspending twice changes nothing');

    const held = [history.emit('customers', 'u', { id: 2 }, { name: 'while suspended' }), history.emit('customers', 'c', { id: 4 }, { name: 'c4' }), history.emit('orders', 'u', { id: 1 }, { total: 10 })];
    const during = await ingest(held);
    assert.deepEqual(during.batchItemFailures, [], 'a held table never blocks its shard');
    assert.equal(during.summary.held, 2);
    assert.equal(identityGap(during.summary), 0);
    assert.equal((await getRow(target.clients.dynamodb, table('public.customers'), { id: 2 }))?.name, 'c2', 'not applied while suspended');
    assert.equal(await getRow(target.clients.dynamodb, table('public.customers'), { id: 4 }), null);
    assert.equal((await getRow(target.clients.dynamodb, table('public.orders'), { id: 1 }))?.total, 10, 'the other table goes on');

    const status = await tidemark('status');
    assert.match(status.stdout, /public\.customers +SUSPENDED/);
    assert.match(status.stdout, /public\.customers: suspended .* ago, 2 records held: target migration\n/);
    assert.match(status.stdout, /resume: tidemark resume -t public\.customers\n/);

    const resumed = await tidemark('resume', '-t', 'public.customers', '--settle-seconds', '0', '--json');
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = resumed.lines.at(-1)?.summary as Record<string, number> | undefined;
    assert.equal(summary?.applied, 2, 'the two held changes, replayed from raw');
    assert.equal((await getRow(target.clients.dynamodb, table('public.customers'), { id: 2 }))?.name, 'while suspended');
    assert.equal((await getRow(target.clients.dynamodb, table('public.customers'), { id: 4 }))?.name, 'c4');
    assert.equal((await statusOf('public.customers'))?.lifecycle, 'running');

    // Live apply again, and a later event wins over nothing replayed.
    await ingest([history.emit('customers', 'u', { id: 4 }, { name: 'live again' })]);
    assert.equal((await getRow(target.clients.dynamodb, table('public.customers'), { id: 4 }))?.name, 'live again');
    assert.match((await tidemark('resume', '-t', 'public.customers')).stdout, /nothing to resume/);

    // Freshness: the one shard's applied commit time, for the pipeline and for a read.
    const st = (await tidemark('status', '--json')).lines.at(-1)?.summary as Record<string, unknown>;
    assert.equal(st.shards, 1);
    assert.equal(st.failingShards, 0);
    assert.equal(typeof st.completeAsOf, 'number');
    const got = await tidemark('get', '-t', 'public.customers', '-k', '{"id": 4}');
    assert.match(got.stderr, new RegExp(`public\\.customers is complete as of ${new Date(st.completeAsOf as number).toISOString().replace(/\./g, '\\.')}`));
    assert.match((await tidemark('status')).stdout, /complete as of \S+Z, .* behind the source \(1 shard\); suspended and stopped tables excepted/);
  });

  it('stops a table whose target is missing in error at once; resume refuses it with the reason until --force', async () => {
    await target.clients.dynamodb.send(new DeleteTableCommand({ TableName: table('public.audit').target }));
    const r = await ingest([history.emit('audit', 'c', { id: 1 }, { what: 'x' }), history.emit('orders', 'u', { id: 2 }, { total: 20 })]);
    assert.deepEqual(r.batchItemFailures, [], 'the shard moves on');
    assert.equal(r.summary.enteredError, 1);
    assert.equal(r.summary.held, 1);
    assert.equal((await getRow(target.clients.dynamodb, table('public.orders'), { id: 2 }))?.total, 20);
    const row = await statusOf('public.audit');
    assert.equal(row?.lifecycle, 'error');
    assert.match(String(row?.lifecycleReason), /the target table does not exist/);
    const status = await tidemark('status');
    assert.match(status.stdout, /public\.audit +STOPPED/);
    assert.match(status.stdout, /once fixed: tidemark resume -t public\.audit --force/);

    const refused = await tidemark('resume', '-t', 'public.audit');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /public\.audit stopped in error .*the target table does not exist/);
    assert.match(refused.stderr, /tidemark resume -t public\.audit --force/);
    const next = await ingest([history.emit('audit', 'c', { id: 2 }, { what: 'y' })]);
    assert.deepEqual([next.summary.held, next.summary.failed, next.batchItemFailures.length], [1, 0, 0], 'held from then on, not retried');

    // The fix: the target table is back (provisioning is idempotent). Resume applies what was held from raw.
    await target.setup(config);
    const forced = await tidemark('resume', '-t', 'public.audit', '--force', '--settle-seconds', '0', '--json');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((forced.lines.at(-1)?.summary as Record<string, number> | undefined)?.applied, 2, 'both held changes, from raw');
    assert.equal((await getRow(target.clients.dynamodb, table('public.audit'), { id: 1 }))?.what, 'x');
    assert.equal((await getRow(target.clients.dynamodb, table('public.audit'), { id: 2 }))?.what, 'y');
    assert.equal((await statusOf('public.audit'))?.lifecycle, 'running');
    await ingest([history.emit('audit', 'u', { id: 2 }, { what: 'live' })]);
    assert.equal((await getRow(target.clients.dynamodb, table('public.audit'), { id: 2 }))?.what, 'live', 'live apply again');

    // --no-catch-up returns a table to live apply and prints the replay for what it held.
    await tidemark('suspend', '-t', 'public.audit');
    const quick = await tidemark('resume', '-t', 'public.audit', '--no-catch-up');
    assert.equal(quick.code, 0, quick.stderr);
    assert.match(quick.stderr, /tidemark replay -t public\.audit --since \S+ --until \S+/);
  });

  it('moves the frontier with CockroachDB resolved timestamps and Debezium heartbeats, and holds it while the shard fails', async () => {
    const completeAsOf = async () => ((await tidemark('status', '--json')).lines.at(-1)?.summary as Record<string, unknown> | undefined)?.completeAsOf as number;
    const before = await completeAsOf();
    const heartbeat = before + 60_000;
    await processBatch(feed.unkeyed([JSON.stringify({ ts_ms: heartbeat })]), ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: quiet }));
    assert.equal(await completeAsOf(), heartbeat, 'a Debezium heartbeat (its connector time)');
    const resolved = heartbeat + 60_000;
    await processBatch(feed.unkeyed([JSON.stringify({ resolved: `${resolved}000000.0000000000` })]), ingestDeps(config, target.clients, { metrics: new CollectingMetricSink(), log: quiet }));
    assert.equal(await completeAsOf(), resolved, 'a CockroachDB resolved timestamp');

    // The shard stalls: every write to the orders table fails (a server error) while heartbeats keep coming.
    const failing = {
      ...target.clients,
      dynamodb: Object.assign(Object.create(target.clients.dynamodb), {
        send: (cmd: { input?: { TableName?: string } }, ...rest: unknown[]) => {
          if (cmd.input?.TableName === table('public.orders').target) return Promise.reject(Object.assign(new Error('internal'), { name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } }));
          return (target.clients.dynamodb.send as (...a: unknown[]) => Promise<unknown>)(cmd, ...rest);
        },
      }),
    };
    const stalled = await processBatch([...feed.records([history.emit('orders', 'u', { id: 3 }, { total: 30 })]), ...feed.unkeyed([JSON.stringify({ ts_ms: resolved + 60_000 })])], {
      ...ingestDeps(config, failing, { metrics: new CollectingMetricSink(), log: quiet }),
      landing: { budgetMs: 300 },
    });
    assert.equal(stalled.batchItemFailures.length, 1);
    const st = (await tidemark('status', '--json')).lines.at(-1)?.summary as Record<string, unknown>;
    assert.deepEqual([st.completeAsOf, st.failingShards], [resolved, 1], 'stands still while the shard fails');
    await ingest([history.emit('orders', 'u', { id: 3 }, { total: 31 })]);
    const healed = (await tidemark('status', '--json')).lines.at(-1)?.summary as Record<string, unknown>;
    assert.equal(healed.failingShards, 0);

    // The read helper for users' code: the row with what it reflects.
    const read = await readRow({ dynamodb: target.clients.dynamodb }, config, 'public.orders', { id: 3 });
    assert.equal(read.row?.total, 31);
    assert.equal(read.lifecycle, 'running');
    assert.equal(read.completeAsOf, healed.completeAsOf);
    await ingest([history.emit('orders', 'd', { id: 3 }, null)]);
    const gone = await readRow({ dynamodb: target.clients.dynamodb }, config, 'public.orders', { id: 3 });
    assert.deepEqual([gone.row, gone.deleted, typeof gone.position], [null, true, 'string'], 'a tombstone reads as no row');
    assert.deepEqual((await readRow({ dynamodb: target.clients.dynamodb }, config, 'public.orders', { id: 999 })).row, null);
    await assert.rejects(readRow({ dynamodb: target.clients.dynamodb }, config, 'public.nope', { id: 1 }), /not in the config/);
  });

  it('names what a command needs: tables, or --pipeline on aws', async () => {
    const none = await tidemark('suspend');
    assert.equal(none.code, 2);
    assert.match(none.stderr, /name the tables to suspend/);
    const pipeline = await tidemark('suspend', '--pipeline');
    assert.equal(pipeline.code, 2);
    assert.match(pipeline.stderr, /--on aws/);
    const unknown = await tidemark('resume', '-t', 'public.nope');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /not in the config/);
  });
});
