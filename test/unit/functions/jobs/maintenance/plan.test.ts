/**
 * Table maintenance's plan step on the in-memory S3: each Iceberg table's OPTIMIZE then VACUUM,
 * stored for the query loop in the Athena text the workgroup runs; none of them has a DuckDB form
 * (the local run has nothing to do); a request naming a table that is not Iceberg is refused.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { JobInputError } from '../../../../../functions/jobs/deps.js';
import { MAINTAINED_TABLES, planMaintenance } from '../../../../../functions/jobs/maintenance/plan.js';
import { type QueryRef, statementOf } from '../../../../../functions/jobs/sql-run.js';
import { duckdb, render } from '../../../../../functions/sql/index.js';
import type { Log } from '../../../../../functions/telemetry/sinks.js';
import { parseConfig } from '../../../../../lib/config/config.js';
import { type FakeS3, fakeS3 } from '../../../../helpers/fake-s3.js';

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const NOW = Date.UTC(2026, 10, 30, 3, 30);
const config = parseConfig({ name: 'mnt', tables: [{ source: 'public.orders', target: 'mnt-orders', key: ['id'] }], raw: { bucket: 'mnt-raw' } });

describe('table maintenance: the plan step', () => {
  let s3: FakeS3;
  const deps = () => ({ config, s3: s3.client, log: quiet, now: () => NOW });
  const stored = (key: string) => JSON.parse(Buffer.from(s3.get(key) ?? []).toString('utf8')) as QueryRef[];
  beforeEach(() => {
    s3 = fakeS3();
  });
  afterEach(() => s3.restore());

  it('stores OPTIMIZE then VACUUM of each Iceberg table, in the Athena text of the history database', async () => {
    const plan = await planMaintenance({}, deps());
    assert.equal(plan.runId, 'maintain-2026-11-30T03-30-00-000Z');
    assert.deepEqual(plan.tables, [...MAINTAINED_TABLES]);
    assert.deepEqual(plan.queries, { queriesKey: 'jobs/maintenance/maintain-2026-11-30T03-30-00-000Z/queries.json', count: 8 });
    assert.deepEqual(plan.statements, MAINTAINED_TABLES.flatMap((t) => [`optimize-${t}`, `vacuum-${t}`]));
    const refs = stored(plan.queries.queriesKey);
    assert.deepEqual(
      refs.slice(0, 2).map((r) => r.athena.QueryString),
      ['OPTIMIZE "tidemark_mnt"."history" REWRITE DATA USING BIN_PACK', 'VACUUM "tidemark_mnt"."history"'],
    );
    // The local engine has nothing to run for any of them: the machine completes as a no-op there.
    assert.deepEqual(refs.filter((r) => render(statementOf(r.statement), duckdb).sql !== null), []);
  });

  it('narrows to the tables asked for, in maintenance order; refuses anything but the four Iceberg tables', async () => {
    const plan = await planMaintenance({ runId: 'm1', tables: ['table_hours', 'history'] }, deps());
    assert.deepEqual(plan.tables, ['history', 'table_hours']);
    assert.deepEqual(plan.statements, ['optimize-history', 'vacuum-history', 'optimize-table_hours', 'vacuum-table_hours']);
    for (const tables of [['raw_lines'], [], ['history', 'orders']]) await assert.rejects(planMaintenance({ runId: 'm2', tables }, deps()), JobInputError, JSON.stringify(tables));
    assert.equal(s3.keys().some((k) => k.includes('/m2/')), false, 'a refused request stores nothing');
  });
});
