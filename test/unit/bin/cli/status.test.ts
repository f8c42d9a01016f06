/** `tidemark status` renders table rows, then the jobs' rows (`reconcile#…`, `snapshot#…`) as their own table. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statusTable } from '../../../../bin/cli/state.js';

describe('tidemark status text', () => {
  it('shows table rows first and the last reconcile and snapshot runs with their findings after them', () => {
    const text = statusTable([
      { pipeline: 'shop', table: 'public.orders', state: 'RUNNING', phase: 'streaming', applied: 12 },
      { pipeline: 'shop', table: 'reconcile#public.orders', lastRunAt: Date.UTC(2026, 10, 30, 6), mode: 'window', findings: { missing: 2, stale: 0, ahead: 1 } },
      { pipeline: 'shop', table: 'snapshot#public.orders', lastRunAt: Date.UTC(2026, 10, 30, 7), openFindings: ['resnapshot', 'orphan'] },
      { pipeline: 'shop', table: 'reconcile#public.customers', lastRunAt: Date.UTC(2026, 10, 30, 6), mode: 'full', findings: { missing: 0 } },
    ]);
    const [tables, jobs] = text.split('\n\n');
    assert.ok(tables?.includes('public.orders') && tables.includes('RUNNING'));
    assert.ok(!tables?.includes('reconcile#'), 'job rows are not shown as tables');
    const lines = jobs?.split('\n') ?? [];
    assert.match(lines[0] ?? '', /^job\s+table\s+lastRunAt\s+mode\s+findings$/);
    assert.match(lines[2] ?? '', /^reconcile\s+public\.orders\s+2026-11-30T06:00:00\.000Z\s+window\s+missing 2, ahead 1$/);
    assert.match(lines[3] ?? '', /^snapshot\s+public\.orders\s+2026-11-30T07:00:00\.000Z\s+-\s+resnapshot, orphan$/);
    assert.match(lines[4] ?? '', /^reconcile\s+public\.customers\s+.*\s+full\s+none$/);
  });

  it('prints only the table rows when no job has run', () => {
    assert.ok(!statusTable([{ pipeline: 'shop', table: 'public.orders', state: 'RUNNING' }]).includes('\n\n'));
  });
});
