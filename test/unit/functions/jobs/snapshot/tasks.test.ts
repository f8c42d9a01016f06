/** Anomalies against per-hour history, the hour-row key, the complete-snapshot finder, and the jobs config section. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../../../lib/config/config.js';
import { AnomalyThresholdsSchema, JobsConfigSchema } from '../../../../../lib/config/jobs.js';
import { detectAnomalies } from '../../../../../functions/jobs/snapshot/anomalies.js';
import type { HourCounter, HourRow } from '../../../../../functions/jobs/snapshot/hours.js';
import { hourOfRowKey, hourRowKey } from '../../../../../functions/telemetry/status-layout.js';
import { completeSnapshot, snapshotMarker } from '../../../../../functions/jobs/snapshot/tasks.js';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-11-30T12:30:00Z');
const th = AnomalyThresholdsSchema.parse({});
const zero: Record<HourCounter, number> = { received: 0, applied: 0, opC: 0, opU: 0, opD: 0, opR: 0, placeholders: 0, beforeNullUpdates: 0, snapshotEvents: 0, resnapshots: 0, quarantined: 0 };
const hour = (hoursAgo: number, counters: Partial<Record<HourCounter, number>>, table = 't'): HourRow => ({
  hourStart: Math.floor((NOW - hoursAgo * HOUR) / HOUR) * HOUR,
  table,
  counters: { ...zero, ...counters },
});
/** A steady week: 100 creates, 200 updates, 30 deletes an hour, 5% placeholders. */
const history = (from = 4): HourRow[] => Array.from({ length: 7 * 24 - from }, (_, i) => hour(from + i, { opC: 100, opU: 200, opD: 30, placeholders: 16 }));
const kinds = (rows: HourRow[]) => detectAnomalies('t', rows, NOW, th).map((a) => a.kind).sort();

describe('anomalies against history', () => {
  it('a steady table has none', () => {
    assert.deepEqual(kinds([...history(), hour(1, { opC: 100, opU: 200, opD: 30, placeholders: 16 }), hour(0, { opC: 100, opU: 200, opD: 30, placeholders: 16 })]), []);
  });
  it('flags deletes stopping, and only deletes', () => {
    assert.deepEqual(kinds([...history(), hour(1, { opC: 150, opU: 200 }), hour(0, { opU: 100 })]), ['no-deletes']);
    assert.deepEqual(kinds([...history(), hour(1, { opD: 300 }), hour(0, { opD: 200 })]), ['only-deletes']);
  });
  it('flags a jump in before-image nulls and in placeholders', () => {
    assert.deepEqual(kinds([...history(), hour(1, { opC: 100, opU: 300, opD: 30, beforeNullUpdates: 250, placeholders: 16 })]), ['before-null-rate']);
    assert.deepEqual(kinds([...history(), hour(1, { opC: 100, opU: 300, opD: 30, placeholders: 300 })]), ['placeholder-rate']);
  });
  it('flags an update storm and a quarantine spike', () => {
    assert.deepEqual(kinds([...history(), hour(1, { opC: 100, opU: 3000, opD: 30, placeholders: 160 })]), ['update-storm']);
    assert.deepEqual(kinds([...history(), hour(1, { opC: 100, opU: 200, opD: 30, placeholders: 16, quarantined: 100 })]), ['quarantine-spike']);
  });
  it('flags a table gone silent while another table flows, and a re-snapshot after streaming', () => {
    const others = [hour(0, { opC: 5 }, 'other')];
    assert.deepEqual(kinds([...history(), ...others]), ['silent']);
    assert.deepEqual(kinds(history()), [], 'the whole stream is idle, not only this table');
    assert.deepEqual(kinds([...history(), hour(1, { opR: 500, snapshotEvents: 500, resnapshots: 1, opU: 200, opD: 30, opC: 100 })]), ['resnapshot']);
    // Snapshot reads that ingest judged a redelivery of the earlier snapshot (no resnapshots) are not one.
    assert.deepEqual(kinds([...history(), hour(1, { opR: 500, snapshotEvents: 500, opU: 200, opD: 30, opC: 100 })]), []);
  });
  it('stays quiet without enough events to judge', () => {
    assert.deepEqual(kinds([hour(30, { opC: 3, opD: 1 }), hour(1, { opC: 5 })]), []);
  });
  it('reads only its own table', () => {
    assert.deepEqual(detectAnomalies('t', history().map((r) => ({ ...r, table: 'other' })), NOW, th), []);
  });
  it('takes whether others flow from the caller when it is given (the job works it out once per run)', () => {
    assert.deepEqual(detectAnomalies('t', history(), NOW, th, true).map((a) => a.kind), ['silent']);
    assert.deepEqual(detectAnomalies('t', [...history(), hour(0, { opC: 5 }, 'other')], NOW, th, false), []);
  });
  it('hour-row sort keys round-trip', () => {
    const key = hourRowKey(NOW);
    assert.equal(key, 'hour#2026-11-30T12');
    assert.equal(hourOfRowKey(key), '2026-11-30T12');
    assert.equal(hourOfRowKey(`${key}#v1`), '2026-11-30T12', 'an hour moved from layout 1');
    assert.equal(hourOfRowKey('status'), null);
  });
});

describe('complete snapshot', () => {
  const read = (arrival: number, id: string, marker: string | null) => ({ position: 'a11.a11', arrival, id, marker });
  it('is the latest end marker back to its start marker', () => {
    const found = completeSnapshot([read(1, 'old', 'first'), read(2, 'old2', 'last'), read(10, 'a', 'first'), read(11, 'b', 'true'), read(12, 'c', 'last'), read(20, 'late', 'true')]);
    assert.ok(found);
    assert.equal(found.start, 10);
    assert.deepEqual([...found.keys].sort(), ['a', 'b', 'c']);
  });
  it('without a start marker, starts after the previous end; without an end marker there is none', () => {
    const found = completeSnapshot([read(1, 'x', 'last'), read(5, 'a', 'true'), read(6, 'b', 'last_in_data_collection')]);
    assert.deepEqual([...(found?.keys ?? [])].sort(), ['a', 'b']);
    assert.equal(completeSnapshot([read(1, 'a', 'first'), read(2, 'b', 'true')]), null);
  });
  it("is complete once the table's streamed changes followed it (the end marker may be on another table)", () => {
    const reads = [read(1, 'a', 'first'), read(2, 'b', 'true')];
    assert.equal(completeSnapshot(reads, 2), null, 'no change after the last read');
    assert.deepEqual([...(completeSnapshot(reads, 3)?.keys ?? [])].sort(), ['a', 'b']);
  });
  it("reads Debezium's source.snapshot, bare or schema-wrapped", () => {
    assert.equal(snapshotMarker({ source: { snapshot: 'last' } }), 'last');
    assert.equal(snapshotMarker({ schema: {}, payload: { source: { snapshot: 'first' } } }), 'first');
    assert.equal(snapshotMarker({ op: 'c' }), null);
  });
});

describe('jobs config', () => {
  const base = { name: 'shop', tables: [{ source: 'public.t', target: 'shop-t', key: ['id'] }], raw: { bucket: 'shop-raw' } };
  it('defaults every field when "jobs" is left out', () => {
    const config = parseConfig(base);
    assert.equal(config.jobs.reconcile.window.schedule, 'rate(1 hour)');
    assert.equal(config.jobs.reconcile.window.enabled, true);
    assert.equal(config.jobs.reconcile.full.schedule, 'cron(0 3 ? * SUN *)');
    assert.equal(config.jobs.snapshot.anomalies.minEvents, 200);
    assert.equal(config.jobs.reportPrefix, 'reports/');
  });
  it('turns a schedule off and keeps the other defaults', () => {
    const jobs = JobsConfigSchema.parse({ reconcile: { full: { enabled: false } }, snapshot: { anomalies: { silentHours: 6 } } });
    assert.equal(jobs.reconcile.full.enabled, false);
    assert.equal(jobs.reconcile.full.schedule, 'cron(0 3 ? * SUN *)');
    assert.equal(jobs.snapshot.anomalies.silentHours, 6);
    assert.equal(jobs.snapshot.anomalies.beforeNullRateJump, 0.2);
  });
  it('reports every bad field with its path', () => {
    assert.throws(
      () => parseConfig({ ...base, jobs: { reconcile: { window: { schedule: 'hourly' }, partitions: 0 }, reportPrefix: 'reports' } }),
      (err: Error) => /jobs\.reconcile\.window\.schedule/.test(err.message) && /jobs\.reconcile\.partitions/.test(err.message) && /jobs\.reportPrefix/.test(err.message),
    );
  });
});
