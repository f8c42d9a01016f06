/**
 * Hourly compaction's plan and finish (functions/jobs/history/compaction.ts) over an in-memory S3:
 * which hours it takes (closed ones after the frontier, from the oldest raw the first time, at most
 * maxHoursPerRun), the queries it stores for the query loop (compact, fold, count per hour, by path
 * for late objects), how the frontier moves (an unbroken run only), and raw deleted only past the
 * grace and only for objects its hour's marker covers.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../../../../lib/config/config.js';
import { compactedHourKey, compactionFrontierKey, rawBatchKey, rawObjectKey } from '../../../../../functions/adapters/raw-layout.js';
import { finishCompaction, HOUR_CLOSES_AFTER_MS, planCompaction, readFrontier, uncompactedFrom } from '../../../../../functions/jobs/history/compaction.js';
import type { JobDeps } from '../../../../../functions/jobs/deps.js';
import { queryAt } from '../../../../../functions/jobs/queries.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const HOUR = 3_600_000;
const hourOf = (ms: number) => Math.floor(ms / HOUR) * HOUR;

function configWith(history: Record<string, unknown> = {}) {
  return parseConfig({ name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' }, history });
}

describe('hourly compaction (plan and finish)', () => {
  let s3: FakeS3;
  let n = 0;
  const land = (arrival: number) => {
    n += 1;
    const key = rawBatchKey('raw/', { shard: 'shardId-000000000000', firstSequence: `${n}00`, lastSequence: `${n}99`, firstArrival: arrival }, `d${n}`);
    s3.put(key, 'x');
    return key;
  };
  const depsOf = (config: ReturnType<typeof configWith>, now: number): JobDeps => ({ config, s3: s3.client, log: memoryLog(), now: () => now }) as unknown as JobDeps;
  const storedNames = async (deps: JobDeps, plan: Awaited<ReturnType<typeof planCompaction>>) => {
    const names: string[] = [];
    for (let i = 0; i < plan.queries.count; i++) names.push((await queryAt({ ...plan.queries, index: i }, deps)).query.statement.name);
    return names;
  };

  beforeEach(() => {
    s3 = fakeS3();
  });
  afterEach(() => s3.restore());

  it('starts from the oldest raw hour, takes only closed hours, and stores compact, fold and count for each', async () => {
    const now = Date.now();
    const first = hourOf(now - 5 * HOUR);
    land(first + 10 * 60_000);
    land(now - 10 * 60_000); // the current hour: not closed
    // A first-layout object is not a batch object: it never starts the range.
    s3.put(rawObjectKey('raw/', 'public.orders', { shard: 's', firstSequence: '1', lastSequence: '2', firstArrival: first - 48 * HOUR }, 'old'), 'x');
    const deps = depsOf(configWith(), now);
    const plan = await planCompaction({ now, runId: 'compact-1' }, deps);
    const lastClosed = hourOf(now - HOUR_CLOSES_AFTER_MS);
    assert.equal(plan.hours[0], first);
    assert.equal(plan.hours.at(-1), lastClosed);
    assert.equal(plan.hours.length, (lastClosed - first) / HOUR + 1);
    assert.deepEqual(plan.late, []);
    // Each statement may be several queries (fold-expected is); in order, hour after hour.
    const names = (await storedNames(deps, plan)).filter((x, i, all) => x !== all[i - 1]);
    // The first layout's hour is migrated once, before the batch hours (compact-legacy-hour per table, then fold and count).
    assert.deepEqual(plan.legacy?.hours, [hourOf(first - 48 * HOUR)]);
    assert.deepEqual(names, [...['compact-legacy-hour', 'fold-expected', 'count-table-hours'], ...plan.hours.flatMap(() => ['compact-hour', 'fold-expected', 'count-table-hours'])]);
    assert.ok(plan.queries.count >= plan.hours.length * 3);
    const q = await queryAt({ ...plan.queries, index: 0 }, deps);
    assert.match(q.query.athena.QueryString, /^INSERT INTO/);
    assert.equal(q.more, true);
    await assert.rejects(queryAt({ ...plan.queries, index: plan.queries.count }, deps), /no query/);
  });

  it('takes at most maxHoursPerRun hours; the frontier moves over them and the next run goes on from there', async () => {
    const now = Date.now();
    const first = hourOf(now - 30 * HOUR);
    land(first);
    const deps = depsOf(configWith({ compaction: { maxHoursPerRun: 4 } }), now);
    const plan = await planCompaction({ now }, deps);
    assert.deepEqual(plan.hours, [first, first + HOUR, first + 2 * HOUR, first + 3 * HOUR]);
    const summary = await finishCompaction({ plan }, deps);
    assert.equal(summary.compactedThrough, first + 3 * HOUR);
    // No first-layout raw: the migration is recorded as done.
    assert.deepEqual(await readFrontier(deps), { compactedThrough: first + 3 * HOUR, cleanedThrough: summary.cleanedThrough, legacy: { through: null, done: true } });
    assert.ok(s3.get(compactedHourKey('history/', first)));
    assert.equal(await uncompactedFrom(deps), first + 4 * HOUR);
    const next = await planCompaction({ now }, deps);
    assert.equal(next.hours[0], first + 4 * HOUR);
  });

  it('compacts an object that landed late in a compacted hour by its path only', async () => {
    const now = Date.now();
    const first = hourOf(now - 4 * HOUR);
    land(first + 60_000);
    const deps = depsOf(configWith(), now);
    await finishCompaction({ plan: await planCompaction({ now: now - 20 * 60_000 }, deps) }, deps);
    const late = land(first + 2 * 60_000);
    const plan = await planCompaction({ now }, deps);
    // Both objects were written after the first run planned (this test's clock), so both are late.
    assert.deepEqual(plan.late, [{ hour: first, objects: 2 }]);
    const q = await queryAt({ ...plan.queries, index: 0 }, deps);
    assert.equal(q.query.statement.name, 'compact-objects');
    assert.ok(q.query.athena.QueryString.includes(`s3://shop-raw/${late}`));
  });

  it('a run with --hour compacts those hours again and leaves a broken run out of the frontier', async () => {
    const now = Date.now();
    const first = hourOf(now - 10 * HOUR);
    land(first);
    const deps = depsOf(configWith(), now);
    const plan = await planCompaction({ now, hours: [first + 3 * HOUR + 5, first + 3 * HOUR] }, deps);
    assert.deepEqual(plan.hours, [first + 3 * HOUR]);
    const summary = await finishCompaction({ plan }, deps);
    // Nothing was compacted before, so the first hour compacted starts the run of hours.
    assert.equal(summary.compactedThrough, first + 3 * HOUR);
    const again = await planCompaction({ now, hours: [first + 6 * HOUR] }, deps);
    assert.equal((await finishCompaction({ plan: again }, deps)).compactedThrough, first + 3 * HOUR, 'a gap stops the frontier');
  });

  it('deletes raw past the grace only where the hour is compacted and the marker covers the object', async () => {
    const now = Date.now();
    const old = hourOf(now - 5 * 24 * HOUR);
    const a = land(old + 60_000);
    const b = land(old + HOUR + 60_000);
    const recent = land(hourOf(now - 3 * HOUR));
    const deps = depsOf(configWith({ rawGraceDays: 3, compaction: { maxHoursPerRun: 168 } }), now);
    // Planned a little in the future of the writes above: the markers cover them.
    const plan = await planCompaction({ now: now + 10 * 60_000 }, deps);
    const summary = await finishCompaction({ plan }, deps);
    assert.equal(summary.rawDeleted, 2);
    assert.equal(s3.get(a), undefined);
    assert.equal(s3.get(b), undefined);
    assert.ok(s3.get(recent), 'within the grace: kept');
    const frontier = JSON.parse(Buffer.from(s3.get(compactionFrontierKey('history/')) ?? []).toString('utf8')) as { cleanedThrough: number };
    assert.equal(frontier.cleanedThrough, hourOf(now - 3 * 24 * HOUR));
  });

  it('keeps raw of an hour with no marker, even past the grace', async () => {
    const now = Date.now();
    const old = hourOf(now - 5 * 24 * HOUR);
    const a = land(old + 60_000);
    const deps = depsOf(configWith({ rawGraceDays: 1, compaction: { maxHoursPerRun: 168 } }), now);
    const plan = await planCompaction({ now: now + 10 * 60_000 }, deps);
    // The run's markers are written by finish; one hour's is lost (a concurrent cleanup).
    const summary = await finishCompaction({ plan: { ...plan, hours: plan.hours.filter((h) => h !== old) } }, deps);
    assert.ok(s3.get(a));
    assert.equal(summary.rawDeleted, 0);
  });

  it('plans nothing on an empty bucket', async () => {
    const now = Date.now();
    const deps = depsOf(configWith(), now);
    const plan = await planCompaction({ now }, deps);
    assert.deepEqual(plan.hours, []);
    assert.equal(plan.queries.count, 0);
    assert.equal(await uncompactedFrom(deps), hourOf(now));
  });
});
