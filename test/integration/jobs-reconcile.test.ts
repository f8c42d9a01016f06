/**
 * Reconcile end to end on the integration target, through the state machine the stack deploys, run
 * locally by runLocalJob: raw compacted into the history (Parquet standing in for Iceberg) and
 * expected state first, then the table side (a DynamoDB export emulated by a parallel Scan in the
 * export's format, or BatchGetItem of the window's keys) and the classify queries on DuckDB. A
 * workload is ingested, the table is tampered with in each class's way, and the report must name
 * exactly those keys. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/jobs-reconcile.test.ts`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { localDeps } from '../../bin/cli/context.js';
import { DEMO_CONFIG } from '../../bin/cli/demo.js';
import { demoWorkload } from '../../bin/cli/demo-workload.js';
import { runEraseLocally } from '../../bin/cli/erase.js';
import { runPoller } from '../../bin/cli/runner.js';
import { getRow, statusRows } from '../../bin/cli/state.js';
import { streamNameOf } from '../../bin/local/provision.js';
import { suspendTable } from '../../bin/cli/lifecycle.js';
import { reconcileExitCode, runReconcile } from '../../bin/cli/reconcile.js';
import { runSnapshotCheck } from '../../bin/cli/snapshot-check.js';
import { compactLocally } from '../../bin/cli/jobs-local.js';
import { encodeSegment, hourPath, parseRawObjectKey, rawTablePrefix } from '../../functions/adapters/raw-layout.js';
import type { LocalProgressEvent } from '../../bin/local/stepfunctions.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { type EraseContext, submitErase } from '../../functions/erase/erase.js';
import type { Finding, ReconcileReport } from '../../functions/jobs/reconcile/types.js';
import { CollectingMetricSink } from '../../functions/telemetry/sinks.js';
import { PgHistory, pgPosition } from '../helpers/debezium.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';
import { JobsEnv, memoryLog, runCli } from './jobs-env.js';

const ERASE_KEY = 'reconcile-test-ledger-key-0123456789';

const BASE = {
  name: 'recon',
  tables: [{ source: 'public.customers', target: 'recon-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'recon-raw' },
};
const base = parseConfig(BASE);

/** Every raw object's key. */
async function rawKeys(target: Target, config: TidemarkConfig): Promise<Set<string>> {
  const out = new Set<string>();
  let token: string | undefined;
  do {
    const page = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: config.raw.prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) out.add(o.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** A workload over keys 1..n: create all, update the even ones, delete every fifth. */
function workload(n: number): PgHistory {
  const h = new PgHistory();
  for (let id = 1; id <= n; id++) h.emit('customers', 'c', { id }, { name: `c${id}`, tier: 'basic' });
  for (let id = 2; id <= n; id += 2) h.emit('customers', 'u', { id }, { name: `c${id}`, tier: 'gold' });
  for (let id = 5; id <= n; id += 5) h.emit('customers', 'd', { id }, { name: `c${id}`, tier: 'basic' });
  return h;
}

const findingsOf = async (target: Target, report: ReconcileReport): Promise<Finding[]> => {
  const out: Finding[] = [];
  for (const uri of report.findingObjects) {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
    assert.ok(m?.[1] && m[2]);
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
    const text = gunzipSync(Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toString('utf8');
    for (const line of text.trim().split('\n')) out.push(JSON.parse(line) as Finding);
  }
  return out.sort((a, b) => (a.class + a.key < b.class + b.key ? -1 : 1));
};

const byClassKey = (findings: readonly Finding[]) => findings.map((f) => `${f.class} ${f.key}`).sort();

describe(`reconcile on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  const configs: TidemarkConfig[] = [];

  before(async () => {
    process.env.TIDEMARK_ERASE_KEY = ERASE_KEY;
    target = await openTarget();
  });
  after(async () => {
    for (const c of configs) await target?.teardown(c).catch(() => {});
    await target?.close();
  });

  async function fresh(n: number, config: TidemarkConfig = base): Promise<{ env: JobsEnv; h: PgHistory }> {
    const env = await JobsEnv.create(target, config);
    configs.push(env.config);
    const h = workload(n);
    // Two batches, so raw holds more than one object.
    const half = Math.ceil(h.events.length / 2);
    await env.ingest(h.events.slice(0, half));
    await env.ingest(h.events.slice(half));
    return { env, h };
  }

  const reconcile = (env: JobsEnv, request: Parameters<typeof runReconcile>[2], onProgress?: (e: LocalProgressEvent) => void) =>
    runReconcile(env.config, target.clients, { cutoffSeconds: 0, ...request }, { log: memoryLog(), ...(onProgress ? { onProgress } : {}) });

  it('a clean run has no findings, in both modes, and goes through every step of the state machine', async () => {
    const { env } = await fresh(30);
    const states = new Set<string>();
    const full = await reconcile(env, { mode: 'full' }, (e) => {
      if (e.type === 'StateEntered' && e.state) states.add(e.state);
    });
    assert.equal(full.findings.total, 0, JSON.stringify([full.findings, full.counts]));
    assert.equal(full.counts.keys, 30, 'every key once, tombstones included');
    assert.equal(reconcileExitCode(full), 0);
    for (const s of ['Plan', 'Mode', 'Exports', 'Export', 'ExportStatus', 'ExportFiles', 'ToTableSide', 'TableSide', 'ClassifyFetch', 'ClassifyRun', 'Report']) assert.ok(states.has(s), `entered ${s}: ${[...states].join(', ')}`);
    assert.ok(!states.has('WindowKeysRun'), 'full mode reads no window');
    const windowStates = new Set<string>();
    const window = await reconcile(env, { mode: 'window', hours: 1 }, (e) => {
      if (e.type === 'StateEntered' && e.state) windowStates.add(e.state);
    });
    assert.equal(window.findings.total, 0, JSON.stringify(window.findings));
    assert.equal(window.counts.keys, 30);
    assert.ok(window.window, 'the window of compacted hours');
    for (const s of ['Plan', 'WindowKeysRun', 'WindowSide', 'WindowItems', 'ClassifyRun', 'Report']) assert.ok(windowStates.has(s), `entered ${s}: ${[...windowStates].join(', ')}`);
    assert.ok(!windowStates.has('Exports'), 'window mode exports nothing');
    // The report object is the returned report.
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(window.report);
    assert.ok(m?.[1] && m[2]);
    const stored = await target.clients.s3.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
    assert.deepEqual(JSON.parse(await (stored.Body as { transformToString(): Promise<string> }).transformToString()), window);
  });

  it('the demo stream (snapshot, TOAST placeholders, deletes, a redelivered window) applied through Kinesis: no findings of either job', async () => {
    const config = uniqueConfig(parseConfig(DEMO_CONFIG));
    configs.push(config);
    await target.setup(config);
    const workload = demoWorkload({ customers: 40, orders: 120, changes: 600 });
    const stream = streamNameOf(config);
    for (let i = 0; i < workload.messages.length; i += 500) {
      const chunk = workload.messages.slice(i, i + 500);
      const res = await target.clients.kinesis.send(new PutRecordsCommand({ StreamName: stream, Records: chunk.map((m) => ({ Data: Buffer.from(m.value), PartitionKey: m.partitionKey })) }));
      assert.equal(res.FailedRecordCount ?? 0, 0);
    }
    const stateDir = mkdtempSync(join(tmpdir(), 'tidemark-recon-demo-'));
    try {
      const totals = await runPoller({
        kinesis: target.clients.kinesis,
        deps: { ...localDeps(config, target.clients), log: memoryLog() },
        streamName: stream,
        stateDir,
        batchSize: 100,
        maxRetries: 3,
        stopWhenIdle: 3,
      });
      assert.equal(totals.records, workload.messages.length);
      assert.ok(totals.duplicates + totals.stale > 0, 'the redelivered window was delivered again');
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
    for (const mode of ['full', 'window'] as const) {
      const report = await runReconcile(config, target.clients, { mode, cutoffSeconds: 0 }, { log: memoryLog() });
      assert.equal(report.findings.total, 0, `${mode}: ${JSON.stringify(report.findings.byTable)}`);
      assert.ok(report.counts.keys >= 160);
    }
    const snapshot = await runSnapshotCheck(config, target.clients, {}, { log: memoryLog() });
    assert.deepEqual(
      snapshot.tables.map((t) => [t.table, t.anomalies.map((a) => a.kind), t.orphans.count, t.snapshot !== null]),
      [
        ['public.customers', [], 0, true],
        ['public.orders', [], 0, true],
      ],
    );
    assert.equal(snapshot.findings, 0);
  });

  it('finds each kind of tampering as its class, and only that; repair fixes what raw can fix', async () => {
    const { env, h } = await fresh(20);
    const table = env.config.tables[0];
    assert.ok(table);
    const ddb = target.clients.dynamodb;
    const name = table.target;
    const older = (id: number) => {
      const e = h.events.find((x) => x.key.id === id);
      assert.ok(e);
      return e.position;
    };
    // missing: the live row of key 1 is gone.
    await ddb.send(new DeleteItemCommand({ TableName: name, Key: { id: { N: '1' } } }));
    // deleted-live: key 5 was deleted; a live row at its create position came back.
    await ddb.send(new PutItemCommand({ TableName: name, Item: { id: { N: '5' }, name: { S: 'c5' }, __pos: { S: older(5) }, __deleted: { BOOL: false }, __hash: { S: 'x' }, __appliedAt: { N: '1' } } }));
    // stale: key 2's update was lost; the row is back at its create position and value.
    await ddb.send(
      new UpdateItemCommand({ TableName: name, Key: { id: { N: '2' } }, UpdateExpression: 'SET #p = :p, #t = :t', ExpressionAttributeNames: { '#p': '__pos', '#t': 'tier' }, ExpressionAttributeValues: { ':p': { S: older(2) }, ':t': { S: 'basic' } } }),
    );
    // mismatch: key 3 holds other content at the same position.
    await ddb.send(new UpdateItemCommand({ TableName: name, Key: { id: { N: '3' } }, UpdateExpression: 'SET #h = :h, #n = :n', ExpressionAttributeNames: { '#h': '__hash', '#n': 'name' }, ExpressionAttributeValues: { ':h': { S: 'tampered' }, ':n': { S: 'evil' } } }));
    // ahead: key 7's last update was applied, then its raw object was lost.
    // (Lost before any compaction: no job has run yet, so history never held it.)
    const rawBefore = await rawKeys(target, env.config);
    await env.ingest([h.emit('customers', 'u', { id: 7 }, { name: 'c7', tier: 'platinum' })]);
    const lost = [...(await rawKeys(target, env.config))].filter((k) => !rawBefore.has(k));
    assert.equal(lost.length, 1, 'one raw object per batch');
    await target.clients.s3.send(new DeleteObjectCommand({ Bucket: env.config.raw.bucket, Key: lost[0] }));
    // extra: key 99 was never in raw.
    await ddb.send(new PutItemCommand({ TableName: name, Item: { id: { N: '99' }, name: { S: 'ghost' }, __pos: { S: pgPosition(1, 2) }, __deleted: { BOOL: false }, __hash: { S: 'x' }, __appliedAt: { N: '1' } } }));

    const metrics = new CollectingMetricSink();
    const full = await runReconcile(env.config, target.clients, { mode: 'full', cutoffSeconds: 0 }, { log: memoryLog(), metrics });
    assert.deepEqual(byClassKey(await findingsOf(target, full)), ['ahead {"id":7}', 'deleted-live {"id":5}', 'extra {"id":99}', 'mismatch {"id":3}', 'missing {"id":1}', 'stale {"id":2}']);
    assert.equal(full.critical, true);
    assert.equal(reconcileExitCode(full), 1);
    assert.deepEqual(full.findings.byClass, { missing: 1, 'deleted-live': 1, stale: 1, mismatch: 1, ahead: 1, extra: 1 });
    assert.equal(metrics.totals.get('public.customers:ReconcileMissing'), 1);
    assert.equal(metrics.totals.get('public.customers:ReconcileAhead'), 1);
    assert.equal(metrics.totals.get('*:ReconcileAhead'), 1, 'the all-tables total the alarm reads');
    // The per-table report: counts per class, the first findings per class, the full list.
    const tableReport = full.tableReports['public.customers'];
    assert.ok(tableReport?.findings);
    assert.match(tableReport.report, new RegExp(`/reports/reconcile/public\\.customers/${full.runId}\\.json$`));
    const tm = /^s3:\/\/([^/]+)\/(.+)$/.exec(tableReport.report);
    assert.ok(tm?.[1] && tm[2]);
    const stored = JSON.parse(await ((await target.clients.s3.send(new GetObjectCommand({ Bucket: tm[1], Key: tm[2] }))).Body as { transformToString(): Promise<string> }).transformToString());
    assert.equal(stored.counts.stale, 1);
    assert.deepEqual(stored.firstFindings.missing.map((f: Finding) => f.key), ['{"id":1}']);
    // `tidemark status` reads the last run from the status table.
    const lastRun = (await statusRows(ddb, env.config)).find((r) => r.table === 'reconcile#public.customers');
    assert.equal(lastRun?.runId, full.runId);
    assert.equal((lastRun?.findings as Record<string, number> | undefined)?.ahead, 1);

    // Window mode cannot tell `ahead` from an event before the window, nor see keys raw never had.
    const window = await reconcile(env, { mode: 'window', hours: 1 });
    assert.deepEqual(byClassKey(await findingsOf(target, window)), ['deleted-live {"id":5}', 'mismatch {"id":3}', 'missing {"id":1}', 'stale {"id":2}']);
    assert.equal(window.counts.unverifiable, 1);
    assert.equal(reconcileExitCode(window), 1);

    // Repair re-applies what history and raw hold of each repairable key (replay-select of those
    // keys): through the guarded writer, and for the mismatch with the same-position guard.
    // Critical findings are never "repaired".
    const repaired = await reconcile(env, { mode: 'full', repair: true });
    const outcomes = Object.fromEntries((await findingsOf(target, repaired)).map((f) => [`${f.class} ${f.key}`, f.repair]));
    assert.deepEqual(outcomes, { 'ahead {"id":7}': undefined, 'deleted-live {"id":5}': 'applied', 'extra {"id":99}': undefined, 'missing {"id":1}': 'applied', 'mismatch {"id":3}': 'applied', 'stale {"id":2}': 'applied' });
    assert.equal(repaired.counts.repaired, 4);
    assert.equal(repaired.repair, true);
    assert.equal((await getRow(ddb, table, { id: 3 }))?.name, 'c3');
    const row2 = await getRow(ddb, table, { id: 2 });
    assert.equal(row2?.tier, 'gold');
    assert.equal(row2?.__pos, h.events.filter((e) => e.key.id === 2).at(-1)?.position);
    assert.equal((await getRow(ddb, table, { id: 1 }))?.name, 'c1');
    assert.equal((await getRow(ddb, table, { id: 5 }))?.__deleted, true);
    const afterRepair = await reconcile(env, { mode: 'full' });
    assert.deepEqual(byClassKey(await findingsOf(target, afterRepair)), ['ahead {"id":7}', 'extra {"id":99}']);
    assert.equal((await reconcile(env, { mode: 'window', hours: 1 })).findings.total, 0, 'the window finds nothing left after repair');
  });

  it('an erased key is `erased`, never a finding: by the tombstone mark; with the tombstone gone too, nothing of it is left to judge', async () => {
    // Erase leaves a bare tombstone marked __erased (replay.erase.keepTombstone).
    const { env, h } = await fresh(12, parseConfig({ ...BASE, replay: { erase: { keepTombstone: true } } }));
    const table = env.config.tables[0];
    assert.ok(table);
    // Compacted first: history and expected state hold keys 4 and 6 as live.
    assert.equal((await reconcile(env, { mode: 'full' })).findings.total, 0);
    const ctx: EraseContext = { config: env.config, clients: target.clients, log: memoryLog(), env: { TIDEMARK_ERASE_KEY: ERASE_KEY } };
    for (const id of [4, 6]) {
      const requestKey = await submitErase(ctx, `erase-${id}`, { table: 'public.customers', key: { id }, reason: 'reconcile test' });
      await runEraseLocally(ctx, { runId: `erase-${id}`, requestKey });
    }
    const tombstone = await target.clients.dynamodb.send(new GetItemCommand({ TableName: table.target, Key: { id: { N: '4' } }, ConsistentRead: true }));
    assert.equal(tombstone.Item?.__erased?.BOOL, true, 'a bare tombstone marked erased');
    // Key 6's tombstone is gone too: without the ledger it would be `missing` (and repairable).
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '6' } } }));
    for (const mode of ['full', 'window'] as const) {
      const report = await reconcile(env, { mode, hours: 1 });
      assert.equal(report.findings.total, 0, `${mode}: ${JSON.stringify(report.findings.byClass)}`);
      assert.deepEqual(await findingsOf(target, report), []);
      // Key 4 by its tombstone's mark. Key 6 left no trace anywhere: erase took it out of raw,
      // history and expected state too, and its tombstone is gone, so there is nothing to judge.
      // The window judges only keys with raw in the window, and erase removed both keys' raw lines.
      assert.equal(report.counts.erased, mode === 'full' ? 1 : 0, `${mode}: the tombstoned key counted as erased in a full run`);
      assert.equal(reconcileExitCode(report), 0);
    }
    // A genuine change after the erasure is judged again: key 6 is created anew, then its row lost.
    await env.ingest([h.emit('customers', 'c', { id: 6 }, { name: 'again', tier: 'basic' })]);
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '6' } } }));
    const later = await reconcile(env, { mode: 'full' });
    assert.deepEqual(byClassKey(await findingsOf(target, later)), ['missing {"id":6}']);
    assert.equal(later.counts.erased, 1);
  });

  it('a key’s changes spread over many objects and hours, one landing late in an hour already compacted, fold to the same verdicts', async () => {
    const env = await JobsEnv.create(target, base);
    configs.push(env.config);
    const h = workload(250);
    // Creates and updates of a key land in different objects, flushed separately by one map task.
    const creates = h.events.filter((e) => e.op === 'c');
    const rest = h.events.filter((e) => e.op !== 'c');
    const now = Date.now();
    for (let i = 0; i < creates.length; i += 120) await env.ingest(creates.slice(i, i + 120), now - 3 * 3_600_000);
    for (let i = 0; i < rest.length; i += 120) await env.ingest(rest.slice(i, i + 120), now - 2 * 3_600_000);
    assert.equal((await reconcile(env, { mode: 'full' })).findings.total, 0, 'compacted and clean');
    // A late object: it lands now in an hour compaction has already done.
    await env.ingest([h.emit('customers', 'u', { id: 43 }, { name: 'c43', tier: 'late' })], now - 2 * 3_600_000);
    const table = env.config.tables[0];
    assert.ok(table);
    const created = h.events.find((e) => e.key.id === 42 && e.op === 'c');
    assert.ok(created);
    await target.clients.dynamodb.send(
      new UpdateItemCommand({ TableName: table.target, Key: { id: { N: '42' } }, UpdateExpression: 'SET #p = :p', ExpressionAttributeNames: { '#p': '__pos' }, ExpressionAttributeValues: { ':p': { S: created.position } } }),
    );
    const report = await reconcile(env, { mode: 'full' });
    assert.equal(report.counts.keys, 250);
    assert.deepEqual(byClassKey(await findingsOf(target, report)), ['stale {"id":42}']);
    assert.equal((await getRow(target.clients.dynamodb, table, { id: 43 }))?.tier, 'late', 'the late change was applied');
  });

  it('raw of the first layout (one object per table per batch) is compacted once, then reconciled like the rest', async () => {
    const { env } = await fresh(15);
    const { bucket, prefix } = env.config.raw;
    // Rewrite every batch object in the first layout: under table=<segment>/, without the fields it lacked.
    for (const key of await rawKeys(target, env.config)) {
      const parts = parseRawObjectKey(prefix, key);
      assert.equal(parts?.layout, 'batch');
      const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const lines = gunzipSync(Buffer.from((await got.Body?.transformToByteArray()) ?? [])).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const byTable = new Map<string, string[]>();
      for (const { v: _v, keyId: _k, hash: _h, arrivalTs: _a, beforeNull: _b, partial: _p, ...old } of lines) {
        const segment = typeof old.table === 'string' ? encodeSegment(old.table) : '_control';
        byTable.set(segment, [...(byTable.get(segment) ?? []), JSON.stringify(old)]);
      }
      for (const [segment, text] of byTable) {
        await target.clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: `${rawTablePrefix(prefix, segment)}${hourPath(parts?.hourStart ?? 0)}/${parts?.name}.jsonl.gz`, Body: gzipSync(`${text.join('\n')}\n`) }));
      }
      await target.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    }
    const first = await compactLocally(env.config, target.clients, { throughNow: true }, { log: memoryLog() });
    assert.ok(first.legacyHours >= 1, 'the first layout\'s hours compacted');
    assert.equal(first.legacyRemaining, 0);
    const again = await compactLocally(env.config, target.clients, { throughNow: true }, { log: memoryLog() });
    assert.equal(again.legacyHours, 0, 'nothing compacted twice');
    const clean = await reconcile(env, { mode: 'full' });
    assert.equal(clean.findings.total, 0, JSON.stringify(clean.findings.byClass));
    assert.equal(clean.counts.keys, 15);
    const table = env.config.tables[0];
    assert.ok(table);
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '4' } } }));
    assert.deepEqual(byClassKey(await findingsOf(target, await reconcile(env, { mode: 'full' }))), ['missing {"id":4}']);
  });

  it('a clean stream reconciles with no findings while ingest keeps running', async () => {
    const env = await JobsEnv.create(target, base);
    configs.push(env.config);
    const h = workload(400);
    const events = h.events;
    const settled = events.slice(0, 200);
    await env.ingest(settled.slice(0, 100));
    await env.ingest(settled.slice(100));
    await new Promise((r) => setTimeout(r, 2500));
    // Ingest goes on in small batches while reconcile runs with a 2-second cutoff.
    let stop = false;
    const ingesting = (async () => {
      for (let i = 200; i < events.length && !stop; i += 20) await env.ingest(events.slice(i, i + 20));
    })();
    try {
      for (const mode of ['full', 'window'] as const) {
        const report = await reconcile(env, { mode, cutoffSeconds: 2 });
        assert.equal(report.findings.total, 0, `${mode}: ${JSON.stringify(report.findings.byClass)}`);
      }
    } finally {
      stop = true;
      await ingesting;
    }
  });

  it('leaves what ingest may still be applying alone: nothing is a finding before the cutoff', async () => {
    const { env } = await fresh(10);
    const table = env.config.tables[0];
    assert.ok(table);
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '1' } } }));
    await target.clients.dynamodb.send(
      new UpdateItemCommand({ TableName: table.target, Key: { id: { N: '2' } }, UpdateExpression: 'SET #p = :p', ExpressionAttributeNames: { '#p': '__pos' }, ExpressionAttributeValues: { ':p': { S: pgPosition(99_999_999, 1) } } }),
    );
    // Default cutoff (15 minutes): the raw just landed is not settled, the rows just applied are in flight.
    const report = await runReconcile(env.config, target.clients, { mode: 'full' }, { log: memoryLog() });
    assert.equal(report.findings.total, 0, JSON.stringify(report.findings));
    assert.ok(report.counts.inFlight >= 9, `in flight: ${report.counts.inFlight}`);
  });

  it('tidemark reconcile --json prints a line per finding then the summary; exits 0 clean, 1 with findings, 0 once repaired, 2 on bad input', async () => {
    const { env } = await fresh(8);
    const cli = (...args: string[]) => runCli(target, env.config, ['reconcile', ...args]);
    const parse = (stdout: string) => stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const clean = cli('--json', '--cutoff-seconds', '0');
    assert.equal(clean.status, 0, clean.stderr);
    const cleanLines = parse(clean.stdout);
    assert.equal(cleanLines.length, 1, 'no findings: only the summary line');
    const summary = cleanLines[0]?.summary as Record<string, unknown>;
    assert.equal(summary.total, 0);
    assert.equal(summary.missing, 0);
    assert.equal(summary.exitCode, 0);

    const table = env.config.tables[0];
    assert.ok(table);
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '3' } } }));
    const found = cli('--json', '--cutoff-seconds', '0', '--mode', 'full');
    assert.equal(found.status, 1, found.stderr);
    const lines = parse(found.stdout);
    assert.equal(lines.length, 2);
    const [finding, last] = lines;
    assert.deepEqual(Object.keys(finding ?? {}), ['table', 'key', 'class', 'expected', 'actual']);
    assert.deepEqual([finding?.table, finding?.key, finding?.class, finding?.actual], ['public.customers', { id: 3 }, 'missing', null]);
    assert.equal((finding?.expected as { deleted: boolean } | undefined)?.deleted, false);
    assert.equal((last?.summary as { missing: number } | undefined)?.missing, 1);
    const repaired = cli('--json', '--cutoff-seconds', '0', '--repair', '--mode', 'full');
    assert.equal(repaired.status, 0, `every finding repaired: ${repaired.stderr}`);
    assert.equal(parse(repaired.stdout)[0]?.repair, 'applied');
    assert.equal(((await getRow(target.clients.dynamodb, table, { id: 3 })) as { name?: string } | undefined)?.name, 'c3');
    const notUri = cli('--json', '--mode', 'full', '--manifest', 's3://somewhere');
    assert.equal(notUri.status, 2, 'a manifest that is not an s3://bucket/key URI is bad input');

    const bad = cli('--json', '--table', 'public.nope');
    assert.equal(bad.status, 2);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /public\.nope/);
  });

  it('diffs live keys against a key-set manifest', async () => {
    const { env } = await fresh(6);
    // Source says: keys 1, 2, 3, 4 and 42 exist (5 was deleted); it does not list 6.
    const manifest = [1, 2, 3, 4, 42].map((id) => JSON.stringify({ table: 'public.customers', key: { id } })).join('\n');
    const key = 'manifests/test.jsonl';
    await target.clients.s3.send(new PutObjectCommand({ Bucket: env.config.raw.bucket, Key: key, Body: manifest }));
    const report = await reconcile(env, { mode: 'full', manifest: `s3://${env.config.raw.bucket}/${key}` });
    assert.deepEqual(byClassKey(await findingsOf(target, report)), ['manifest-extra {"id":6}', 'manifest-missing {"id":42}']);
    assert.equal(report.counts.manifestKeys, 5);
    // Window mode sees the listed keys only (read from the table), so a missing key, never an extra one.
    const window = await reconcile(env, { mode: 'window', hours: 1, manifest: `s3://${env.config.raw.bucket}/${key}` });
    assert.deepEqual(byClassKey(await findingsOf(target, window)), ['manifest-missing {"id":42}']);
  });

  it('a suspended table: the keys changed since the hold are labelled, not findings; older keys are judged; --repair leaves the table alone', async () => {
    const env = await JobsEnv.create(target, base);
    configs.push(env.config);
    const table = env.config.tables[0];
    assert.ok(table);
    const h = workload(10);
    // Landed well before the hold (more than the ingest timeout and margin), so applied and judged as usual.
    await env.ingest(h.events, Date.now() - 20 * 60_000);
    await suspendTable(target.clients.dynamodb, env.config, table.source, 'integration test', Date.now());
    const from = h.events.length;
    for (const id of [1, 2, 3]) h.emit('customers', 'u', { id }, { name: `c${id}`, tier: 'platinum' });
    h.emit('customers', 'c', { id: 11 }, { name: 'c11', tier: 'basic' });
    const summary = await env.ingest(h.events.slice(from));
    assert.equal(summary.held, 4, JSON.stringify(summary));
    // An older key tampered with: still a finding.
    await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: { id: { N: '7' } } }));

    const report = await reconcile(env, { mode: 'full', repair: true });
    assert.deepEqual(byClassKey(await findingsOf(target, report)), ['missing {"id":7}'], JSON.stringify(report.findings));
    const held = report.held[table.source];
    assert.equal(held?.state, 'suspended');
    assert.equal(held?.keys, 4, 'keys 1, 2, 3 and 11: their raw arrived after the hold');
    assert.equal(held?.repairSkipped, true);
    assert.equal(report.counts.held, 4);
    assert.equal(report.counts.repaired, 0);
    assert.equal(await getRow(target.clients.dynamodb, table, { id: 7 }), null, 'not repaired while held');
    assert.equal(((await getRow(target.clients.dynamodb, table, { id: 2 })) as { tier?: string } | undefined)?.tier, 'gold', 'the held change (platinum) is not applied');
    assert.equal(await getRow(target.clients.dynamodb, table, { id: 11 }), null);

    // The CLI, window mode: the label, and no finding for the held keys.
    const cli = runCli(target, env.config, ['reconcile', '--cutoff-seconds', '0', '--mode', 'window']);
    assert.match(cli.stdout, /public\.customers: suspended since \S+: 4 keys changed since then not judged/, cli.stdout + cli.stderr);
    assert.match(cli.stdout, /findings: missing 1/);
  });
});
