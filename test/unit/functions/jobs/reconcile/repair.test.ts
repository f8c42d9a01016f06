/**
 * reconcile --repair on SQL (functions/jobs/reconcile/repair.ts) over an in-memory S3: which
 * findings become repair keys, the replay-select queries of them (chunked, each to its own output
 * part, history before the frontier and raw from it), and the outcomes of keys nothing selected.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../../../../lib/config/config.js';
import { compactionFrontierKey } from '../../../../../functions/adapters/raw-layout.js';
import type { JobDeps } from '../../../../../functions/jobs/deps.js';
import { queryAt } from '../../../../../functions/jobs/queries.js';
import { applyRepair, planRepairOf, REPAIR_KEYS_PER_QUERY, readRepairOutcomes, repairKeyId, repairKeysOf, repairQueries, repairWrite } from '../../../../../functions/jobs/reconcile/repair.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const HOUR = 3_600_000;
const config = parseConfig({ name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } });
const run = { runId: 'full-1', startedAt: Date.UTC(2026, 10, 30, 6), tables: ['public.orders'], prefix: 'reports/reconcile/full-1/', bucket: 'shop-raw' };
const row = (key: number, cls: string, hash: string | null = null) => ({ source_table: 'public.orders', key_id: `["${key}"]`, class: cls, actual_hash: hash });

describe('reconcile repair', () => {
  let s3: FakeS3;
  const deps = () => ({ config, s3: s3.client, log: memoryLog(), now: () => run.startedAt }) as unknown as JobDeps;
  beforeEach(() => {
    s3 = fakeS3();
  });
  afterEach(() => s3.restore());

  it('repairs missing, deleted-live, stale and mismatch keys, each once; never ahead or extra', () => {
    const keys = repairKeysOf([row(1, 'missing'), row(2, 'ahead'), row(3, 'mismatch', 'h3'), row(3, 'mismatch', 'h3'), row(4, 'extra'), row(5, 'deleted-live'), row(6, 'stale')]);
    assert.deepEqual(
      keys.map((k) => [k.keyId, k.class, k.actualHash]),
      [
        ['["1"]', 'missing', null],
        ['["3"]', 'mismatch', 'h3'],
        ['["5"]', 'deleted-live', null],
        ['["6"]', 'stale', null],
      ],
    );
  });

  it('selects the keys with replay-select, a query per chunk of keys, each to its own output part', () => {
    const keys = repairKeysOf(Array.from({ length: REPAIR_KEYS_PER_QUERY + 1 }, (_, i) => row(i, 'missing')));
    const refs = repairQueries({ config } as JobDeps, run, keys, run.startedAt - 2 * HOUR);
    assert.equal(refs.length, 2);
    for (const [i, ref] of refs.entries()) {
      assert.equal(ref.statement.name, 'replay-select');
      assert.match(ref.athena.QueryString, /^UNLOAD/);
      assert.ok(ref.athena.QueryString.includes(`history/unload/reconcile/full-1/repair/part=0000${i}/`));
    }
    assert.ok(refs[1]?.athena.QueryString.includes(`'["${REPAIR_KEYS_PER_QUERY}"]'`), 'the second query names the last key');
    assert.ok(!refs[1]?.athena.QueryString.includes(`'["0"]'`), 'and not the first chunk’s');
  });

  it('plans no query when nothing is repairable; stores the keys and the queries otherwise, history read up to the frontier', async () => {
    const none = await planRepairOf(deps(), run, []);
    assert.equal(none.count, 0);
    assert.equal(none.keys, 0);
    s3.put(compactionFrontierKey('history/'), JSON.stringify({ compactedThrough: run.startedAt - 3 * HOUR, cleanedThrough: null }));
    const plan = await planRepairOf(deps(), run, repairKeysOf([row(1, 'missing'), row(2, 'stale')]));
    assert.equal(plan.count, 1);
    assert.equal(plan.keys, 2);
    assert.equal(plan.prefix, 'history/unload/reconcile/full-1/repair/');
    assert.deepEqual(JSON.parse(Buffer.from(s3.get(plan.keysKey) ?? []).toString('utf8')).map((k: { keyId: string }) => k.keyId), ['["1"]', '["2"]']);
    const q = await queryAt({ ...plan, index: 0 }, deps());
    assert.equal((q.query.statement.args as { uncompactedFrom: number }).uncompactedFrom, run.startedAt - 2 * HOUR);
  });

  it('a key nothing selected is unrepairable, counted as not repaired, its outcome stored for the report', async () => {
    const plan = await planRepairOf(deps(), run, repairKeysOf([row(1, 'missing')]));
    const out = await applyRepair({ run, repairPlan: plan }, deps());
    assert.deepEqual({ repaired: out.repaired, failed: out.failed }, { repaired: 0, failed: 1 });
    const outcomes = await readRepairOutcomes(s3.client, run.bucket, out.outcomesKey);
    assert.match(outcomes.get(repairKeyId('public.orders', '["1"]')) ?? '', /^unrepairable/);
    assert.equal(await repairWrite(deps(), { table: 'public.orders', keyId: '["1"]', class: 'missing', actualHash: null }, []), 'unrepairable: no event of the key in history or raw');
  });
});
