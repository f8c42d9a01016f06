/**
 * The scale bench's measurements on the real code: processBatch (the ingest's own wiring) writes
 * exactly one raw object per batch whatever the number of tables, and quarantine on its own; and
 * the local full reconcile (history-load.ts landing through RawStore.land, local-jobs.ts running
 * compact-hour, fold-expected and reconcile-full through the DuckDB engine) finds exactly the
 * classes the table side was built with, over an in-memory S3.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DuckDbEngine } from '../../../bin/local/duckdb-engine.js';
import { loadHistory } from '../../bench/scale/history-load.js';
import { measureLanding } from '../../bench/scale/landing.js';
import { runJobs, s3Usage } from '../../bench/scale/local-jobs.js';
import { memoryS3 } from '../../bench/scale/memory-s3.js';
import { scaleBatches, scaleConfig, tableName } from '../../bench/scale/workload.js';

const START = Date.UTC(2026, 10, 30);

describe('scale bench: landing through processBatch', () => {
  it('lands one raw object per batch whatever the tables and the batch size (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 3 }), async (tables, batch, batches) => {
        const o = { tables, keys: tables * 2, events: tables * 2 + batch * batches, batch, start: START, hoursPerDay: 1, rowBytes: 200, badEvery: 0 };
        const all = [...scaleBatches(o)];
        const m = await measureLanding(all, scaleConfig(tables));
        assert.equal(m.batches, all.length);
        assert.equal(m.rawPuts, all.length);
        assert.equal(m.quarantinePuts, 0);
        assert.equal(m.otherS3Requests, 0);
        assert.equal(m.failedBatches, 0);
        assert.equal(m.changeLines, o.events);
        assert.ok(m.firstLayoutObjects >= m.rawPuts);
        assert.ok(m.maxTablesPerBatch <= tables);
      }),
      { numRuns: 8 },
    );
  });

  it('counts the first layout from the tables of each object, and refused records in their own object', async () => {
    const o = { tables: 50, keys: 50, events: 50 + 1000 * 2, batch: 1000, start: START, hoursPerDay: 1, rowBytes: 200, badEvery: 100 };
    const full = [...scaleBatches(o)].filter((b) => b.records.length === 1000);
    const m = await measureLanding(full, scaleConfig(50));
    assert.equal(m.rawPuts, full.length);
    assert.equal(m.quarantinePuts, full.length);
    assert.equal(m.quarantinedRecords, full.length * 10);
    assert.equal(m.firstLayoutObjects, full.length * 50, '1,000 uniform records reach all 50 tables');
    assert.ok(m.gzipBytes > 0 && m.gzipBytes < m.ndjsonBytes);
  });
});

describe('scale bench: the local full reconcile', () => {
  it('finds the built classes after the first day and at the end, reading expected state and the table side only', async () => {
    const s3 = memoryS3();
    try {
      const layout = { bucket: 'scale-unit', rawPrefix: 'raw/', quarantinePrefix: 'quarantine/', warehousePrefix: 'warehouse/', tableSidePrefix: 'reports/table_side/' };
      const tables = 3;
      const load = await loadHistory(s3.client, layout, { tables, keys: 1_000, events: 4_000, batch: 500, start: START, days: 2, hoursPerDay: 1, rowBytes: 200, checkpoints: [0, 1], extra: 7 });
      assert.equal(load.hours.length, 2);
      assert.equal(load.keys, 1_000);
      const engine = new DuckDbEngine({ s3: s3.client, ...layout });
      const r = await runJobs(engine, {
        hours: load.hours,
        checkpoints: load.checkpoints,
        tables: Array.from({ length: tables }, (_, t) => `public.${tableName(t)}`),
        findingsRoot: `s3://${layout.bucket}/reports/reconcile/`,
        usage: s3Usage(s3.client, layout.bucket),
        layout,
      });
      await engine.close();
      assert.equal(r.compactedRows, load.records - load.quarantined, 'every landed line compacted once');
      assert.equal(r.reconciles.length, 2);
      for (const c of load.checkpoints) {
        const got = r.reconciles.find((x) => x.runId === c.runId);
        assert.ok(got);
        assert.deepEqual(got.counts, Object.fromEntries(Object.entries(c.expected).filter(([, v]) => v > 0)));
        assert.equal(got.findings, c.expected.missing + c.expected.mismatch + c.expected.extra);
        assert.ok(c.expected.missing > 0 && c.expected.mismatch > 0 && c.expected.extra === 7);
      }
      const [first, last] = r.reconciles.map((x) => x.inputs);
      assert.ok(first && last);
      assert.ok(last.history.bytes > 1.5 * first.history.bytes, 'history grew');
      assert.ok(last.expectedState.bytes < 1.25 * first.expectedState.bytes, 'expected state did not');
      assert.ok(r.peakRss > 0);
    } finally {
      s3.restore();
    }
  });
});
