/**
 * The CLI as a person at 02:00 runs it, as a subprocess against the embedded emulators: a closed
 * pipe under `scan | head`, the errors that name the fix (emulators down, a table not provisioned,
 * no region), nothing written or started by a request that is refused (reconcile --since yesterday,
 * an erase or a replay without the ledger key), reconcile saying what it did not judge and status
 * showing the latest result after --repair, `put` + `run` end to end, and `apply --strict`.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/cli.test.ts`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { localDeps } from '../../bin/cli/context.js';
import { freePort } from '../../bin/local/emulators.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import { CLI, cliEnv, spawnTidemark } from '../helpers/cli-env.js';
import { PgHistory } from '../helpers/debezium.js';
import { KinesisFeed } from '../helpers/kinesis-feed.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const base = parseConfig({
  name: 'clit',
  tables: [{ source: 'public.customers', target: 'clit-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'clit-raw' },
  source: { type: 'kinesis', streamName: 'clit-cdc', shardCount: 1 },
});

describe('tidemark CLI against the emulators', { skip: process.env.TIDEMARK_TARGET !== undefined && process.env.TIDEMARK_TARGET !== 'embedded' ? 'embedded only' : false }, () => {
  let target: Target;
  let config: TidemarkConfig;
  let dir: string;
  let configFile: string;
  let env: NodeJS.ProcessEnv;
  const history = new PgHistory();
  const feed = new KinesisFeed('clit');

  function tidemark(args: readonly string[], extraEnv: NodeJS.ProcessEnv = env, file: string | null = configFile) {
    const started = Date.now();
    const r = spawnTidemark([...args, ...(file === null ? [] : ['-c', file])], { cwd: dir, env: extraEnv, timeout: 240_000, maxBuffer: 1 << 26 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
  }
  const keysUnder = async (prefix: string) => ((await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: prefix }))).Contents ?? []).map((o) => o.Key);

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    dir = mkdtempSync(join(tmpdir(), 'tidemark-clit-'));
    configFile = join(dir, 'tidemark.config.json');
    writeFileSync(configFile, JSON.stringify(config));
    const e = target.endpoints;
    assert.ok(e, 'embedded endpoints');
    env = cliEnv(e);
    delete env.TIDEMARK_ERASE_KEY;
    for (let id = 1; id <= 1500; id++) history.emit('customers', 'c', { id }, { name: `c${id}`, note: 'x'.repeat(200) });
    await processBatch(feed.records(history.events), { ...localDeps(config, target.clients), log: quiet });
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('scan | head -3 ends quietly, exit 0, nothing on stderr', () => {
    const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" scan -c "${configFile}" -t public.customers --json | head -3`], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').length, 3);
    assert.equal(r.stderr, '');
  });

  it('status and get read as a person reads them: lag, LSN, typed keys; a missing row exits 1', () => {
    const status = tidemark(['status']);
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, /public\.customers\s+RUNNING\s+snapshot|public\.customers\s+RUNNING\s+streaming/);
    assert.match(status.stdout, /LSN 0\/[0-9A-F]+\s+source/);
    const got = tidemark(['get', '-t', 'public.customers', '-k', '{"id": 7}']);
    assert.equal(got.status, 0, got.stderr);
    assert.match(got.stdout, /^public\.customers id=7: op c at LSN 0\/[0-9A-F]+, committed /);
    assert.match(got.stdout, /\n {2}name +"c7"\n/);
    const none = tidemark(['get', '-t', 'public.customers', '-k', '{"id": 999999}']);
    assert.equal(none.status, 1);
    const [missing, asOf] = none.stderr.split('\n');
    assert.equal(missing, 'no row in public.customers for id=999999');
    assert.match(asOf ?? '', /^public\.customers is complete as of \d{4}-\d\d-\d\dT[\d:.]+Z \(every change committed by then is applied\)$/, 'what the read reflects');
    assert.match(got.stderr, /public\.customers is complete as of /);
  });

  it('names the service and the fix when the emulators are down, a table is not provisioned, or no region is set', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const down = tidemark(['status'], { ...env, AWS_ENDPOINT_URL_DYNAMODB: closed });
    assert.equal(down.status, 2);
    assert.equal(down.stderr, `tidemark: cannot reach DynamoDB at ${closed} (connection refused)\n  fix: the local emulators are not running there: npx tidemark local up, then eval "$(npx tidemark local env)"\n`);
    const missing = join(dir, 'missing.json');
    writeFileSync(missing, JSON.stringify({ ...config, tables: [{ ...config.tables[0], target: 'clit-never-provisioned' }] }));
    const absent = tidemark(['get', '-t', 'public.customers', '-k', '{"id": 1}'], env, missing);
    assert.equal(absent.status, 2);
    assert.equal(absent.stderr, `tidemark: DynamoDB table clit-never-provisioned does not exist (GetItem)\n  fix: npx tidemark provision -c ${missing}\n`);
    const bare = { PATH: process.env.PATH ?? '', HOME: dir, AWS_EC2_METADATA_DISABLED: 'true' };
    const region = tidemark(['status'], bare);
    assert.equal(region.status, 2);
    assert.equal(region.stderr, 'tidemark: no AWS region is set\n  fix: export AWS_REGION=<region>; for the local emulators: npx tidemark local up, then eval "$(npx tidemark local env)"\n');
  });

  it('local up names a taken port and the option that moves it', async () => {
    const { createServer } = await import('node:net');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const r = tidemark(['local', 'up', '--dynamodb-port', String(port)], env, null);
      assert.equal(r.status, 2);
      assert.equal(r.stderr, `tidemark: port ${port} (dynamodb) is already in use: stop whatever listens there, or move the dynamodb emulator\n  fix: npx tidemark local up --dynamodb-port <a free port>\n`);
    } finally {
      server.close();
    }
  });

  it('refuses reconcile --since yesterday before writing anything', async () => {
    const r = tidemark(['reconcile', '--since', 'yesterday']);
    assert.equal(r.status, 2);
    assert.ok(r.ms < 30_000, `${r.ms} ms`);
    assert.deepEqual(await keysUnder(config.jobs.reportPrefix), []);
  });

  it('reconcile right after apply says it judged nothing in flight, with the option that judges it', () => {
    const r = tidemark(['reconcile']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /\n {2}not judged: 1500 keys changed after the cutoff, still in flight\n {4}cutoff: \S+Z, 15m00s before the start\n {4}on a settled pipeline \(a local run, nothing arriving\) judge them too: --cutoff-seconds 0\n/);
    for (const line of r.stdout.split('\n')) assert.ok(line.length <= 100, line);
  });

  it('history maintain runs the maintenance machine locally and says it had nothing to run, the warehouse untouched', async () => {
    const warehouse = `${config.history.prefix}warehouse/`;
    const before = await keysUnder(warehouse);
    const human = tidemark(['history', 'maintain']);
    assert.equal(human.status, 0, human.stderr);
    assert.match(human.stdout, /^history maintain maintain-\S+: 8 statements \(optimize-history, vacuum-history, optimize-expected_state, /);
    assert.match(human.stdout, /\n {2}locally nothing to run: OPTIMIZE and VACUUM are Iceberg maintenance/);
    const json = tidemark(['history', 'maintain', '-t', 'history', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const summary = JSON.parse(json.stdout.trim().split('\n').at(-1) ?? '{}') as { summary?: Record<string, unknown> } & Record<string, unknown>;
    const s = (summary.summary ?? summary) as Record<string, unknown>;
    assert.deepEqual([s.on, s.ran, s.nothingToRun, s.tables], ['local', 0, ['optimize-history', 'vacuum-history'], ['history']]);
    assert.deepEqual(await keysUnder(warehouse), before);
    assert.equal(tidemark(['history', 'maintain', '-t', 'raw_lines']).status !== 0, true, 'not an Iceberg table: refused by the option');
  });

  it('status shows the latest reconcile result: after --repair, the findings read as repaired', async () => {
    const table = config.tables[0]?.target ?? '';
    for (const id of [3, 4]) await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table, Key: { id: { N: String(id) } } }));
    const found = tidemark(['reconcile', '--cutoff-seconds', '0']);
    assert.equal(found.status, 1, found.stderr);
    assert.match(found.stdout, /findings: missing 2/);
    assert.match(tidemark(['status']).stdout, /reconcile\s+public\.customers\s+\S+ ago\s+window\s+missing 2\n/);
    const repaired = tidemark(['reconcile', '--cutoff-seconds', '0', '--repair']);
    assert.equal(repaired.status, 0, repaired.stderr);
    assert.match(tidemark(['status']).stdout, /reconcile\s+public\.customers\s+\S+ ago\s+window\s+missing 2: all 2 repaired\n/);
  });

  it('refuses an erase without the ledger key before writing anything, then a replay after an erase without it', async () => {
    // The jobs prefix already holds the runs of the reconciles above (their compaction): nothing is added to it.
    const jobsBefore = await keysUnder(config.replay.jobsPrefix);
    const erase = tidemark(['erase', '-t', 'public.customers', '-k', '{"id": 5}', '--reason', 'ticket 9']);
    assert.equal(erase.status, 2);
    assert.match(erase.stderr, /^tidemark: Environment variable TIDEMARK_ERASE_KEY is required: .*\n {2}fix: For the ledger of a deployed stack, export the key/);
    assert.deepEqual(await keysUnder(config.replay.jobsPrefix), jobsBefore, 'no request object left with the key in it');
    const keyed = { ...env, TIDEMARK_ERASE_KEY: 'cli-test-ledger-key-0123456789' };
    const done = tidemark(['erase', '-t', 'public.customers', '-k', '{"id": 5}', '--reason', 'ticket 9'], keyed);
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /^erased public\.customers id=5 up to LSN 0\/[0-9A-F]+ in \S+\n {2}ledger: keyed hash \S+\n {2}current state: the item was deleted\n/);
    for (const line of done.stdout.split('\n')) assert.ok(line.length <= 100, line);
    const before = await keysUnder(`${config.replay.jobsPrefix}replay/`);
    const replay = tidemark(['replay', '-t', 'public.customers']);
    assert.equal(replay.status, 2);
    assert.match(replay.stderr, /^tidemark: Environment variable TIDEMARK_ERASE_KEY is required/);
    assert.deepEqual(await keysUnder(`${config.replay.jobsPrefix}replay/`), before, 'nothing started');
  });

  it('put writes a file onto the stream and run applies it', () => {
    const input = join(dir, 'changes.jsonl');
    const more = new PgHistory(40_000_000);
    for (let id = 2001; id <= 2010; id++) more.emit('customers', 'c', { id }, { name: `n${id}` });
    writeFileSync(input, `${more.events.map((e) => e.value).join('\n')}\n`);
    const put = tidemark(['put', '-i', input, '--json']);
    assert.equal(put.status, 0, put.stderr);
    assert.deepEqual((JSON.parse(put.stdout.trim()) as { summary: Record<string, unknown> }).summary.records, 10);
    const run = tidemark(['run', '--until-idle', '--json']);
    assert.equal(run.status, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { summary: { applied: number } }).summary.applied, 10);
    assert.equal(tidemark(['get', '-t', 'public.customers', '-k', '{"id": 2005}']).status, 0);
  });

  it('apply --strict exits 1 with a quarantined line and says where it went', () => {
    const input = join(dir, 'bad.jsonl');
    const more = new PgHistory(50_000_000);
    more.emit('customers', 'c', { id: 3001 }, { name: 'ok' });
    writeFileSync(input, `${more.events[0]?.value}\n{"not": "a change"}\n`);
    const r = tidemark(['apply', '-i', input, '--strict']);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stdout.includes(`quarantined 1 records → s3://${config.raw.bucket}/quarantine/dt=`), r.stdout);
  });
});
