/**
 * `tidemark reconcile`'s reading of a run (bin/cli/reconcile.ts): the findings objects, gzip or
 * plain by their bytes, and the exit code of a report with and without --repair.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { findingsOfBytes, jsonLines, reconcileExitCode } from '../../../../bin/cli/reconcile.js';
import type { Finding, ReconcileReport } from '../../../../functions/jobs/reconcile/types.js';

const finding = (key: number, cls: Finding['class'] = 'missing', repair?: string): Finding => ({
  class: cls,
  table: 'public.orders',
  key: JSON.stringify({ order_id: key }),
  expected: { position: `a${key}`, op: 'u', deleted: false, hash: 'h' },
  actual: null,
  ...(repair !== undefined ? { repair } : {}),
});
const text = (findings: readonly Finding[]) => findings.map((f) => `${JSON.stringify(f)}\n`).join('');

describe('tidemark reconcile: reading a run back', () => {
  it('reads a findings object gzip-compressed or plain, by its magic bytes, skipping blank lines', () => {
    const findings = [finding(1), finding(2, 'stale', 'applied')];
    assert.deepEqual(findingsOfBytes(gzipSync(Buffer.from(text(findings), 'utf8'))), findings);
    assert.deepEqual(findingsOfBytes(Buffer.from(`${text(findings)}\n  \n`, 'utf8')), findings);
    assert.deepEqual(findingsOfBytes(new Uint8Array()), []);
    assert.deepEqual(findingsOfBytes(gzipSync(Buffer.alloc(0))), []);
    assert.throws(() => findingsOfBytes(Buffer.from('{"not json\n', 'utf8')), SyntaxError);
  });

  it('exits 1 while findings remain, 0 when there are none or --repair repaired every one', () => {
    const report = (total: number, repair: boolean, repaired: number) => ({ findings: { total }, repair, counts: { repaired } }) as unknown as ReconcileReport;
    assert.equal(reconcileExitCode(report(0, false, 0)), 0);
    assert.equal(reconcileExitCode(report(2, false, 2)), 1, 'repaired counts only for a repair run');
    assert.equal(reconcileExitCode(report(2, true, 1)), 1);
    assert.equal(reconcileExitCode(report(2, true, 2)), 0);
  });

  it('prints a line per finding with its key as JSON (kept as text when it is not), then the summary', () => {
    const report = {
      runId: 'r',
      mode: 'full',
      cutoff: '2026-11-30T06:00:00.000Z',
      findings: { total: 2, byClass: { missing: 2 }, byTable: { 'public.orders': { missing: 2 } } },
      counts: { inFlight: 1, unverifiable: 0 },
    } as unknown as ReconcileReport;
    const lines = jsonLines(report, [finding(1, 'missing', 'applied'), { ...finding(2), key: 'not json' }], 1).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(lines[0], { table: 'public.orders', key: { order_id: 1 }, class: 'missing', expected: { position: 'a1', op: 'u', deleted: false, hash: 'h' }, actual: null, repair: 'applied' });
    assert.equal(lines[1]?.key, 'not json');
    assert.equal('repair' in (lines[1] ?? {}), false);
    const summary = lines[2]?.summary as Record<string, unknown>;
    assert.deepEqual([summary.missing, summary.total, summary.exitCode, summary.runId], [2, 2, 1, 'r']);
    assert.deepEqual(summary.notJudged, { inFlight: 1, unverifiable: 0, cutoff: '2026-11-30T06:00:00.000Z' });
  });
});
