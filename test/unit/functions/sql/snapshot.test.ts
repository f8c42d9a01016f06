/**
 * Snapshot detection's SQL on DuckDB: count-table-hours recounts an hour's counters from history and
 * quarantine (a rerun replaces, never adds); detect-anomalies finds exactly what anomalies.ts finds
 * from the same hour rows (a property over generated counters); detect-resnapshots counts the reads
 * delivered after streaming began, not those sharing a delivery with the first streamed change.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, describe, it } from 'node:test';
import fc from 'fast-check';
import type { AnomalyThresholds } from '../../../../functions/config/types.js';
import { detectAnomalies as detectInTs } from '../../../../functions/jobs/snapshot/anomalies.js';
import type { HourRow } from '../../../../functions/jobs/snapshot/hours.js';
import { countTableHours } from '../../../../functions/sql/statements/count-table-hours.js';
import { anomalyOf, detectAnomalies } from '../../../../functions/sql/statements/detect-anomalies.js';
import { detectResnapshots } from '../../../../functions/sql/statements/detect-resnapshots.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';
import { historyRow, pos } from '../../../helpers/history-rows.js';

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 10, 30, 6);

describe('count-table-hours', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
    const q = (table: string | null) => JSON.stringify({ reason: 'bad-json', detail: 'x', table, transport: { kind: 'kinesis', stream: 's', shard: 'sh', sequence: '1', partitionKey: null, arrivalTime: H0 }, topic: null, headers: {}, valueBase64: null, keyBase64: null });
    bench.object('quarantine/dt=2026-11-30/hr=06/sh-1-2-aa.jsonl.gz', gzipSync(`${[q('public.orders'), q('public.orders'), q(null), q('public.quiet')].join('\n')}\n`));
    bench.object('quarantine/dt=2026-11-30/hr=07/sh-3-4-bb.jsonl.gz', gzipSync(`${q('public.orders')}\n`));
    await bench.sources();
    await bench.insert('history', [
      historyRow({ op: 'c', hour: H0 }),
      historyRow({ op: 'u', beforeNull: true, partial: true, hour: H0 }),
      historyRow({ op: 'u', hour: H0 }),
      historyRow({ op: 'd', hour: H0 }),
      historyRow({ op: 'r', hour: H0 }),
      historyRow({ op: 't', key: null, hour: H0 }),
      historyRow({ kind: 'control', key: null, position: null, hour: H0 }),
      historyRow({ table: 'public.customers', op: 'c', hour: H0 }),
      historyRow({ op: 'c', hour: H0 + HOUR }),
    ]);
  });
  after(() => bench.close());

  const counts = async () => bench.query('SELECT * EXCLUDE (dt) FROM table_hours ORDER BY hour, source_table');
  const orders = { source_table: 'public.orders', hour: H0, events: 6, op_c: 1, op_u: 2, op_d: 1, op_r: 1, op_t: 1, snapshot_reads: 1, before_null_updates: 1, partial_events: 1, quarantined: 2, controls: 1 };
  const zero = { events: 0, op_c: 0, op_u: 0, op_d: 0, op_r: 0, op_t: 0, snapshot_reads: 0, before_null_updates: 0, partial_events: 0, quarantined: 0, controls: 0 };

  it('counts each table of the hour, quarantines included', async () => {
    await bench.run(countTableHours({ from: H0, to: H0 }));
    assert.deepEqual(await counts(), [
      { ...zero, source_table: 'public.customers', hour: H0, events: 1, op_c: 1 },
      orders,
      { ...zero, source_table: 'public.quiet', hour: H0, quarantined: 1 },
    ]);
  });

  it('replaces an hour\'s counts when run again after a late object, and counts a range of hours', async () => {
    await bench.insert('history', [historyRow({ op: 'd', hour: H0 })]);
    await bench.run(countTableHours({ from: H0, to: H0 + HOUR }));
    const rows = await counts();
    assert.deepEqual(rows.find((r) => r.source_table === 'public.orders' && r.hour === H0), { ...orders, events: 7, op_d: 2 });
    assert.deepEqual(rows.find((r) => r.hour === H0 + HOUR), { ...zero, source_table: 'public.orders', hour: H0 + HOUR, events: 1, op_c: 1, quarantined: 1 });
    assert.equal(rows.length, 4);
  });
});

const TH: AnomalyThresholds = { historyHours: 6, recentHours: 2, minEvents: 20, deleteShare: 0.05, beforeNullRateJump: 0.2, placeholderRateJump: 0.2, quarantineRateJump: 0.1, updateStormFactor: 3, silentMinHourlyEvents: 3, silentHours: 2 };
const NOW = H0 + 30 * 60_000;

interface Counters {
  c: number;
  u: number;
  d: number;
  r: number;
  partial: number;
  beforeNull: number;
  quarantined: number;
}
const counterArb: fc.Arbitrary<Counters> = fc.record({ c: fc.nat(30), u: fc.nat(40), d: fc.nat(6), r: fc.nat(5), partial: fc.nat(20), beforeNull: fc.nat(20), quarantined: fc.nat(10) });
/** Rows of three tables over the hours the checks read, each hour present or not; a table may go quiet. */
const hoursArb = fc.array(fc.record({ table: fc.constantFrom('public.a', 'public.b', 'public.c'), back: fc.integer({ min: 0, max: TH.historyHours + TH.recentHours }), counters: counterArb, quiet: fc.boolean() }), { maxLength: 30 });

describe('detect-anomalies', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
  });
  after(() => bench.close());
  beforeEach(() => bench.db.run('DELETE FROM table_hours'));

  it('finds exactly the anomalies anomalies.ts finds from the same hour rows', async () => {
    let found = 0;
    await fc.assert(
      fc.asyncProperty(hoursArb, async (generated) => {
        await bench.db.run('DELETE FROM table_hours');
        const seen = new Map<string, HourRow>();
        for (const g of generated) {
          const hourStart = Math.floor(NOW / HOUR) * HOUR - g.back * HOUR;
          const k = g.quiet && g.back < TH.silentHours ? { c: 0, u: 0, d: 0, r: 0, partial: 0, beforeNull: 0, quarantined: 0 } : g.counters;
          seen.set(`${g.table}|${hourStart}`, { hourStart, table: g.table, counters: { received: 0, applied: 0, opC: k.c, opU: k.u, opD: k.d, opR: k.r, placeholders: k.partial, beforeNullUpdates: k.beforeNull, snapshotEvents: k.r, resnapshots: 0, quarantined: k.quarantined } });
        }
        const rows = [...seen.values()];
        await bench.insert('table_hours', rows.map((h) => ({ source_table: h.table, hour: h.hourStart, dt: new Date(h.hourStart).toISOString().slice(0, 10), events: 0, op_c: h.counters.opC, op_u: h.counters.opU, op_d: h.counters.opD, op_r: h.counters.opR, op_t: 0, snapshot_reads: 0, before_null_updates: h.counters.beforeNullUpdates, partial_events: h.counters.placeholders, quarantined: h.counters.quarantined, controls: 0 })));
        const inSql = (await bench.run(detectAnomalies({ now: NOW, thresholds: TH }))).map((r) => anomalyOf({ source_table: String(r.source_table), kind: String(r.kind), recent: Number(r.recent), history: Number(r.history) }, TH));
        const inTs = ['public.a', 'public.b', 'public.c'].flatMap((t) => detectInTs(t, rows, NOW, TH));
        found += inTs.length;
        assert.deepEqual(inSql, inTs);
      }),
      { numRuns: 80 },
    );
    assert.ok(found > 20, `the generated rows raised ${found} anomalies: too few to test the checks`);
  });

  it('words no-deletes and only-deletes as anomalies.ts does', async () => {
    const rows: HourRow[] = [];
    const add = (table: string, back: number, opC: number, opD: number) =>
      rows.push({ table, hourStart: Math.floor(NOW / HOUR) * HOUR - back * HOUR, counters: { received: 0, applied: 0, opC, opU: 0, opD, opR: 0, placeholders: 0, beforeNullUpdates: 0, snapshotEvents: 0, resnapshots: 0, quarantined: 0 } });
    for (let back = 3; back <= 8; back++) {
      add('public.del', back, 20, 5);
      add('public.nodel', back, 20, 5);
    }
    for (let back = 0; back <= 2; back++) {
      add('public.del', back, 0, 10);
      add('public.nodel', back, 20, 0);
    }
    await bench.insert('table_hours', rows.map((h) => ({ source_table: h.table, hour: h.hourStart, dt: '2026-11-30', events: 0, op_c: h.counters.opC, op_u: 0, op_d: h.counters.opD, op_r: 0, op_t: 0, snapshot_reads: 0, before_null_updates: 0, partial_events: 0, quarantined: 0, controls: 0 })));
    const inSql = (await bench.run(detectAnomalies({ now: NOW, thresholds: TH }))).map((r) => anomalyOf({ source_table: String(r.source_table), kind: String(r.kind), recent: Number(r.recent), history: Number(r.history) }, TH));
    assert.deepEqual(inSql, [
      { kind: 'only-deletes', table: 'public.del', detail: { recentEvents: 30, historyDeleteShare: 0.2 } },
      { kind: 'no-deletes', table: 'public.nodel', detail: { recentEvents: 60, historyDeleteShare: 0.2 } },
    ]);
    assert.deepEqual(inSql, ['public.del', 'public.nodel'].flatMap((t) => detectInTs(t, rows, NOW, TH)));
  });

  it('reports only the tables asked for, while the others still count for silent', async () => {
    const row = (table: string, back: number, events: number) => ({ source_table: table, hour: Math.floor(NOW / HOUR) * HOUR - back * HOUR, dt: '2026-11-30', events, op_c: events, op_u: 0, op_d: 0, op_r: 0, op_t: 0, snapshot_reads: 0, before_null_updates: 0, partial_events: 0, quarantined: 0, controls: 0 });
    await bench.insert('table_hours', [row('public.a', 5, 40), row('public.a', 6, 40), row('public.b', 0, 5)]);
    const rows = await bench.run(detectAnomalies({ now: NOW, thresholds: TH, tables: ['public.a'] }));
    assert.deepEqual(rows, [{ source_table: 'public.a', kind: 'silent', recent: 0, history: 80 / 6 }]);
    assert.deepEqual(await bench.run(detectAnomalies({ now: NOW, thresholds: TH, tables: ['public.b'] })), []);
  });
});

describe('detect-resnapshots', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
    const o = (n: number) => `s3://bench-bucket/raw/o${n}.jsonl.gz`;
    await bench.insert('history', [
      // public.a: the initial snapshot, then streaming whose first delivery also carries the last reads, then a re-snapshot
      historyRow({ table: 'public.a', key: 1, op: 'r', position: pos(1), hour: H0, arrival: H0 + 1, rawObject: o(1) }),
      historyRow({ table: 'public.a', key: 2, op: 'r', position: pos(1), hour: H0, arrival: H0 + 2, rawObject: o(1) }),
      historyRow({ table: 'public.a', key: 3, op: 'r', position: pos(1), hour: H0, arrival: H0 + 11, rawObject: o(2) }),
      historyRow({ table: 'public.a', key: 1, op: 'u', position: pos(5), hour: H0, arrival: H0 + 10, rawObject: o(2) }),
      historyRow({ table: 'public.a', key: 1, op: 'r', position: pos(1), hour: H0 + HOUR, arrival: H0 + HOUR + 5, rawObject: o(3) }),
      historyRow({ table: 'public.a', key: 2, op: 'r', position: pos(1), hour: H0 + HOUR, arrival: H0 + HOUR + 6, rawObject: o(3) }),
      // public.b streams only; public.c only reads
      historyRow({ table: 'public.b', key: 1, op: 'c', position: pos(1), hour: H0, arrival: H0 + 1, rawObject: o(4) }),
      historyRow({ table: 'public.c', key: 1, op: 'r', position: pos(1), hour: H0, arrival: H0 + 1, rawObject: o(5) }),
      // public.d on two shards: shard 1 streams first while shard 2 is still delivering the initial
      // snapshot (no re-snapshot); then shard 2 reads again after its own streaming began (one read).
      historyRow({ table: 'public.d', key: 1, op: 'r', position: pos(1), hour: H0, arrival: H0 + 1, rawObject: o(6), shard: 's1' }),
      historyRow({ table: 'public.d', key: 1, op: 'u', position: pos(5), hour: H0, arrival: H0 + 3, rawObject: o(7), shard: 's1' }),
      historyRow({ table: 'public.d', key: 2, op: 'r', position: pos(1), hour: H0, arrival: H0 + 6, rawObject: o(8), shard: 's2' }),
      historyRow({ table: 'public.d', key: 2, op: 'u', position: pos(6), hour: H0, arrival: H0 + 8, rawObject: o(9), shard: 's2' }),
      historyRow({ table: 'public.d', key: 2, op: 'r', position: pos(1), hour: H0, arrival: H0 + 20, rawObject: o(10), shard: 's2' }),
    ]);
  });
  after(() => bench.close());

  it('counts the snapshot reads delivered after streaming began', async () => {
    const rows = await bench.run(detectResnapshots({ tables: ['public.a', 'public.b', 'public.c'], since: H0, until: H0 + 2 * HOUR }));
    assert.deepEqual(rows, [{ source_table: 'public.a', streaming_since: H0 + 10, resnapshot_reads: 2, first_read_at: H0 + HOUR + 5 }]);
  });

  it('judges each shard by its own streaming: another shard still delivering the initial snapshot is not a re-snapshot', async () => {
    const rows = await bench.run(detectResnapshots({ tables: ['public.d'], since: H0, until: H0 + 2 * HOUR }));
    assert.deepEqual(rows, [{ source_table: 'public.d', streaming_since: H0 + 8, resnapshot_reads: 1, first_read_at: H0 + 20 }]);
  });

  it('looks only within the lookback', async () => {
    assert.deepEqual(await bench.run(detectResnapshots({ tables: ['public.a'], since: H0, until: H0 + HOUR })), []);
  });
});
