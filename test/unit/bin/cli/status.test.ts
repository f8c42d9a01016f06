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

  it('keeps counts within five characters', () => {
    assert.deepEqual([0, 999, 1000, 12_345, 456_789, 7_800_000].map(compactCount), ['0', '999', '1k', '12.3k', '457k', '7.8M']);
  });
});
