/**
 * `tidemark status` text: the facts and the counters of each table within 100 columns, lag as
 * `4m05s`, the position in its source's notation, then the jobs' latest results, where a repaired
 * reconcile run reads as repaired rather than as open findings.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compactCount, reconcileResult, statusTable } from '../../../../bin/cli/status-text.js';
import { encodePosition } from '../../../../functions/core/position.js';
import type { JsonObject } from '../../../../functions/core/json.js';

const NOW = Date.UTC(2026, 10, 30, 6, 12);

describe('tidemark status text', () => {
  const rows: JsonObject[] = [
    {
      pipeline: 'shop',
      table: 'public.orders',
      state: 'RUNNING',
      phase: 'streaming',
      received: 123_456,
      applied: 51,
      lagMs: 245_052,
      format: 'debezium-postgresql',
      orderingStrength: 'source',
      lastPosition: encodePosition([23_808_840n, 23_808_840n]),
    },
    { pipeline: 'shop', table: 'reconcile#public.orders', lastRunAt: Date.UTC(2026, 10, 30, 6), mode: 'window', findings: { missing: 1, stale: 1, ahead: 0 }, repaired: 2, repairFailed: 0 },
    { pipeline: 'shop', table: 'snapshot#public.orders', lastRunAt: Date.UTC(2026, 10, 30, 5), openFindings: ['resnapshot', 'orphan'] },
    { pipeline: 'shop', table: 'reconcile#public.customers', lastRunAt: Date.UTC(2026, 10, 30, 6), mode: 'full', findings: { missing: 0 } },
  ];

  it('fits 100 columns and shows lag as 4m05s and the position as a PostgreSQL LSN', () => {
    const text = statusTable(rows, { now: NOW });
    for (const line of text.split('\n')) assert.ok(line.length <= 100, `${line.length}: ${line}`);
    const [facts, counters] = text.split('\n\n');
    assert.match(facts ?? '', /public\.orders\s+RUNNING\s+streaming\s+4m05s\s+LSN 0\/16B4B48\s+source/);
    assert.match(counters ?? '', /public\.orders\s+123k\s+51\s/);
    assert.ok(!facts?.includes('reconcile#'), 'job rows are not shown as tables');
  });

  it('shows the jobs last: a run whose repair fixed every finding reads as repaired', () => {
    const jobs = statusTable(rows, { now: NOW }).split('\n\n').at(-1)?.split('\n') ?? [];
    assert.match(jobs[0] ?? '', /^job\s+table\s+last run\s+mode\s+result$/);
    assert.match(jobs[2] ?? '', /^reconcile\s+public\.orders\s+12m00s ago\s+window\s+missing 1, stale 1: all 2 repaired$/);
    assert.match(jobs[3] ?? '', /^snapshot\s+public\.orders\s+1h12m ago\s+-\s+resnapshot, orphan$/);
    assert.match(jobs[4] ?? '', /^reconcile\s+public\.customers\s+.*\s+full\s+clean$/);
  });

  it('says how many findings stay open when a repair fixed only some', () => {
    assert.equal(reconcileResult({ findings: { missing: 3 }, repaired: 1, repairFailed: 2 }), 'missing 3: 1 repaired, 2 open (2 repairs failed)');
    assert.equal(reconcileResult({ findings: { missing: 3 } }), 'missing 3');
  });

  it('prints only the table rows when no job has run, and the last error of a table in error', () => {
    const text = statusTable([{ pipeline: 'shop', table: 'public.orders', state: 'ERROR', lastError: 'write failed', lastErrorAt: NOW - 65_000 }], { now: NOW });
    assert.equal(text.split('\n\n').length, 3);
    assert.match(text, /public\.orders: last error 1m05s ago: write failed/);
  });

  it('shows lag over the last hour as p50/p99 from the hourly histograms, >1d past the last bucket', async () => {
    const { lagPercentiles } = await import('../../../../bin/cli/state.js');
    const { LAG_BOUNDS_MS, lagAttribute } = await import('../../../../functions/core/lag-histogram.js');
    const hour = (ms: number) => new Date(ms).toISOString().slice(0, 13);
    // This hour: 98 keys within 2 s; the previous hour's row: 1 within 30 s, 1 above a day.
    const open = { hour: hour(NOW), [lagAttribute(1, 'h_')]: 98 };
    const previous = { [lagAttribute(4)]: 1, [lagAttribute(LAG_BOUNDS_MS.length)]: 1 };
    assert.deepEqual(lagPercentiles(open, previous, NOW), { lagP50Ms: 2_000, lagP99Ms: 30_000 });
    assert.deepEqual(lagPercentiles({ hour: hour(NOW), [lagAttribute(LAG_BOUNDS_MS.length, 'h_')]: 5 }, undefined, NOW), { lagP50Ms: null, lagP99Ms: null });
    assert.deepEqual(lagPercentiles({ hour: hour(NOW - 3 * 3_600_000), [lagAttribute(1, 'h_')]: 5 }, undefined, NOW), {}, 'an open hour older than the last hour says nothing');
    assert.deepEqual(lagPercentiles({ hour: hour(NOW - 3_600_000), [lagAttribute(2, 'h_')]: 5 }, { [lagAttribute(9)]: 100 }, NOW), { lagP50Ms: 5_000, lagP99Ms: 5_000 }, 'the open hour is the last hour: its row is not closed yet, so not added twice');
    const text = statusTable([{ ...rows[0], lagP50Ms: 2_000, lagP99Ms: null } as JsonObject], { now: NOW });
    assert.match(text, /lag 1h p50\/p99/);
    assert.match(text, /public\.orders\s+RUNNING\s+streaming\s+2\.0s\/>1d\s+LSN/);
  });

  it('keeps counts within five characters', () => {
    assert.deepEqual([0, 999, 1000, 12_345, 456_789, 7_800_000].map(compactCount), ['0', '999', '1k', '12.3k', '457k', '7.8M']);
  });
});
