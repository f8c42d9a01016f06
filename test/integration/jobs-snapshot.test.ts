/**
 * Snapshot detection end to end on the integration target, through the snapshot state machine the
 * stack deploys (run locally by runLocalJob: raw compacted into history first, the queries on
 * DuckDB over the emulator's objects). Messages are Debezium MySQL change events in the shape of the
 * connector's documentation (https://debezium.io/documentation/reference/stable/connectors/mysql.html,
 * "Change event values"; the same shape as test/fixtures/debezium/mysql-snapshot-last.json):
 * snapshot reads are `op: "r"` with `source.snapshot` "first" / "true" / "last", streamed changes
 * carry binlog file, pos and row, which order them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getRow, statusRows } from '../../bin/cli/state.js';
import { suspendTable } from '../../bin/cli/lifecycle.js';
import { positionText } from '../../bin/cli/notation.js';
import { driftLines, runSnapshotCheck, snapshotExitCode } from '../../bin/cli/snapshot-check.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { JsonObject } from '../../functions/core/json.js';
import { openTarget, type Target } from '../helpers/target.js';
import { type Delivery, JobsEnv, memoryLog, runCli } from './jobs-env.js';

const HOUR = 3_600_000;

const BASE = {
  name: 'snap',
  tables: [{ source: 'inventory.customers', target: 'snap-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'snap-raw' },
};
const base = parseConfig(BASE);

/** A MySQL change event; `snapshot` is Debezium's `source.snapshot` ("false" when streamed). */
function mysql(op: 'c' | 'u' | 'd' | 'r', id: number, pos: number, snapshot = 'false', row: JsonObject = { first_name: `n${id}` }, beforeImage = true): Delivery {
  const image = { id, ...row };
  const value = {
    before: op === 'd' || (op === 'u' && beforeImage) ? image : null,
    after: op === 'd' ? null : image,
    source: {
      version: '3.4.0.Final',
      connector: 'mysql',
      name: 'mysql-server-1',
      ts_ms: 1_735_732_800_000 + pos,
      snapshot,
      db: 'inventory',
      sequence: null,
      table: 'customers',
      server_id: op === 'r' ? 0 : 223344,
      gtid: null,
      file: 'mysql-bin.000003',
      pos,
      row: 0,
      thread: op === 'r' ? null : 7,
      query: null,
    },
    op,
    ts_ms: 1_735_732_800_300 + pos,
    transaction: null,
  };
  return { value: JSON.stringify(value), partitionKey: JSON.stringify({ id }) };
}

/** A complete snapshot of `ids` at binlog position `pos`: first, true…, last. */
const snapshotOf = (ids: readonly number[], pos: number): Delivery[] =>
  ids.map((id, i) => mysql('r', id, pos, i === 0 ? 'first' : i === ids.length - 1 ? 'last' : 'true'));

describe(`snapshot detection on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  const configs: TidemarkConfig[] = [];
  before(async () => {
    target = await openTarget();
  });
  after(async () => {
    for (const c of configs) await target?.teardown(c).catch(() => {});
    await target?.close();
  });
  const fresh = async () => {
    const env = await JobsEnv.create(target, base);
    configs.push(env.config);
    return env;
  };
  const check = (env: JobsEnv, apply = false) => runSnapshotCheck(env.config, target.clients, { ...(apply ? { apply: true } : {}) }, { log: memoryLog() });

  it('an initial snapshot followed by streaming is neither a re-snapshot nor leaves orphans', async () => {
    const env = await fresh();
    const t0 = Date.now() - 60_000;
    await env.ingest(snapshotOf([1, 2, 3], 154), t0);
    await env.ingest([mysql('c', 4, 300), mysql('u', 1, 400)], t0 + 1000);
    const report = await check(env);
    const t = report.tables[0];
    assert.ok(t);
    assert.equal(t.resnapshotReads, 0);
    assert.deepEqual(t.snapshot, { startPosition: t.snapshot?.startPosition, endPosition: t.snapshot?.endPosition, keys: 3 });
    assert.equal(t.orphans.count, 0);
    assert.deepEqual(t.anomalies, []);
    assert.equal(report.findings, 0);
    assert.equal(snapshotExitCode(report), 0);
  });

  it('detects a re-snapshot mid-stream and the orphans of deletes nothing captured; --apply tombstones them at the snapshot position', async () => {
    const env = await fresh();
    // An orphan's last change must have landed in an hour wholly before the snapshot began (expected
    // state records each key's hour): the streaming arrives three hours back, the snapshot an hour back.
    const now = Date.now();
    // Streaming: keys 1..5 created. Then keys 4 and 5 are deleted while the connector is down, and
    // it re-snapshots the table: only 1, 2 and 3 are read.
    await env.ingest([1, 2, 3, 4, 5].map((id) => mysql('c', id, 200 + id * 10)), now - 3 * HOUR);
    await env.ingest(snapshotOf([1, 2, 3], 900), now - HOUR);
    // A change after the snapshot began is not an orphan, even though the snapshot did not read it.
    await env.ingest([mysql('c', 6, 1000)], now - HOUR + 1000);
    const report = await check(env);
    const t = report.tables[0];
    assert.ok(t);
    assert.equal(t.resnapshotReads, 3);
    assert.deepEqual(
      t.anomalies.map((a) => a.kind),
      ['resnapshot'],
    );
    assert.equal(t.orphans.count, 2);
    assert.deepEqual([...t.orphans.keys].sort(), ['{"id":4}', '{"id":5}']);
    assert.equal(t.orphans.tombstoned, 0, 'nothing is written without --apply');
    assert.equal((await getRow(target.clients.dynamodb, env.config.tables[0] as never, { id: 4 }))?.__deleted, false);
    assert.equal(snapshotExitCode(report), 1);

    const applied = await check(env, true);
    const a = applied.tables[0];
    assert.ok(a);
    assert.equal(a.orphans.tombstoned, 2);
    for (const id of [4, 5]) {
      const row = await getRow(target.clients.dynamodb, env.config.tables[0] as never, { id });
      assert.equal(row?.__deleted, true, `key ${id} tombstoned`);
      assert.equal(row?.__pos, t.snapshot?.endPosition, 'at the snapshot position');
    }
    assert.equal((await getRow(target.clients.dynamodb, env.config.tables[0] as never, { id: 6 }))?.__deleted, false);
    const again = await check(env);
    assert.equal(again.tables[0]?.orphans.count, 0);
    // `tidemark status` reads the last run's open findings from the table's partition (job#snapshot).
    const open = (await statusRows(target.clients.dynamodb, env.config)).find((r) => r.table === 'snapshot#inventory.customers');
    assert.equal(open?.runId, again.runId);
    assert.equal(open?.orphans, 0);
  });

  it('tidemark snapshot-check --json prints a line per finding then the summary, exits 1 with findings and 2 on bad input; --apply tombstones the orphan', async () => {
    const env = await fresh();
    await env.ingest([1, 2, 3].map((id) => mysql('c', id, 200 + id * 10)), Date.now() - 3 * HOUR);
    await env.ingest(snapshotOf([1, 2], 900), Date.now() - HOUR);
    const found = runCli(target, env.config, ['snapshot-check', '--json']);
    assert.equal(found.status, 1, found.stderr);
    const lines = found.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      lines.slice(0, -1).map((l) => [l.table, l.kind]),
      [
        ['inventory.customers', 'resnapshot'],
        ['inventory.customers', 'orphan'],
      ],
    );
    assert.deepEqual((lines[1]?.detail as { key: unknown } | undefined)?.key, { id: 3 });
    assert.equal((lines.at(-1)?.summary as { exitCode: number } | undefined)?.exitCode, 1);
    // --apply tombstones the orphan; the re-snapshot anomaly remains, so there are still findings.
    const applied = runCli(target, env.config, ['snapshot-check', '--json', '--apply']);
    const summary = JSON.parse(applied.stdout.trim().split('\n').at(-1) ?? '{}').summary as { tables: { tombstoned: number }[] };
    assert.equal(summary.tables[0]?.tombstoned, 1, applied.stderr);
    const bad = runCli(target, env.config, ['snapshot-check', '--json', '--table', 'nope.nope']);
    assert.equal(bad.status, 2);
    assert.equal(bad.stdout, '');
  });

  it('counts every compacted hour per table and reports anomalies of the recent hour against history', async () => {
    // Six hours of history with a fifth of the changes deletes and every update with a before
    // image, then a recent hour of updates only, none with a before image.
    const env = await JobsEnv.create(target, parseConfig({ ...BASE, jobs: { snapshot: { anomalies: { historyHours: 6, recentHours: 1, minEvents: 5 } } } }));
    configs.push(env.config);
    const now = Date.now();
    let pos = 100;
    const next = () => {
      pos += 10;
      return pos;
    };
    for (let h = 7; h >= 2; h--) {
      const batch: Delivery[] = [];
      for (let i = 0; i < 10; i++) batch.push(mysql('c', h * 100 + i, next()));
      for (let i = 0; i < 10; i++) batch.push(mysql('u', h * 100 + i, next(), 'false', { first_name: 'x' }));
      for (let i = 0; i < 5; i++) batch.push(mysql('d', h * 100 + i, next()));
      await env.ingest(batch, now - h * HOUR);
    }
    const recent: Delivery[] = [];
    for (let i = 5; i < 10; i++) for (let k = 0; k < 4; k++) recent.push(mysql('u', 200 + i, next(), 'false', { first_name: `y${k}` }, false));
    await env.ingest(recent, now - 60_000);
    const report = await check(env);
    assert.deepEqual(report.tables[0]?.anomalies.map((a) => a.kind).sort(), ['before-null-rate', 'no-deletes']);
    assert.equal(report.findings, 2);
  });

  it('reports the schema drift recorded since the previous report: a column added, removed, then a number column carrying text, each at its first position', async () => {
    const env = await fresh();
    const t0 = Date.now() - 120_000;
    await env.ingest([mysql('c', 1, 300, 'false', { first_name: 'a', age: 30 }), mysql('c', 2, 310, 'false', { first_name: 'b', age: 31 })], t0);
    await env.ingest([mysql('u', 1, 400, 'false', { first_name: 'a', age: 30, email: 'a@example.com' })], t0 + 1000);
    await env.ingest([mysql('u', 1, 500, 'false', { first_name: 'a', age: 30 })], t0 + 2000);
    await env.ingest([mysql('u', 2, 600, 'false', { first_name: 'b', age: 'thirty-one' })], t0 + 3000);
    const report = await check(env);
    const t = report.tables[0];
    assert.ok(t);
    assert.equal(t.drift.previous, null);
    assert.deepEqual(
      t.drift.changes.map((c) => [c.kind, c.column, c.from ?? null, c.to ?? null, positionText(c.position, t.drift.notation), c.holds]),
      [
        ['added', 'email', null, 'string', 'binlog.000003:400', true],
        ['removed', 'email', 'string', null, 'binlog.000003:500', true],
        ['type-changed', 'age', 'number', 'string', 'binlog.000003:600', false],
      ],
    );
    assert.ok(t.drift.changes.every((c) => c.commitTime !== null));
    assert.equal(t.drift.hasIncompatible, true);
    assert.deepEqual(report.drift, { changes: 3, incompatible: 1, tables: 1 });
    assert.equal(report.findings, 1, 'the change the target cannot hold');
    assert.equal(snapshotExitCode(report), 1);
    const text = driftLines(t).join('\n');
    assert.match(text, /type-changed age number -> string at binlog\.000003:600.*the target cannot hold it as before/);
    assert.ok(!JSON.stringify(report).includes('example.com') && !JSON.stringify(report).includes('thirty-one'), 'no row values in the report');

    // The next report lists only what was recorded since this one.
    const quiet = await check(env);
    assert.deepEqual(quiet.tables[0]?.drift.changes, []);
    assert.deepEqual(quiet.tables[0]?.drift.previous?.runId, report.runId);
    assert.equal(quiet.findings, 0);
    await env.ingest([mysql('u', 2, 700, 'false', { first_name: 'b', age: 'x', phone: '555' })], Date.now() - 1000);
    const next = await check(env);
    assert.deepEqual(next.tables[0]?.drift.changes.map((c) => [c.kind, c.column, positionText(c.position, next.tables[0]?.drift.notation)]), [['added', 'phone', 'binlog.000003:700']]);

    // Suspended: labelled and not checked; its drift is still reported.
    await suspendTable(target.clients.dynamodb, env.config, 'inventory.customers', 'test', Date.now());
    const held = await check(env);
    assert.equal(held.tables[0]?.held?.state, 'suspended');
    assert.deepEqual(held.held, ['inventory.customers']);
    assert.equal(held.tables[0]?.orphans.count, 0);
    assert.deepEqual(held.tables[0]?.anomalies, []);
  });
});
