/**
 * The scale bench's arithmetic (test/bench/scale): the bill's pricing rules (Athena's 10 MB minimum
 * and megabyte rounding, multipart PUTs, Parquet GETs), what the model reads from the statements of
 * functions/sql, and the model's shape: a full reconcile costs the same after a day and after a
 * year, an erasure's history part grows with retention, landing does not depend on tables.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildStatements } from '../../../functions/sql/index.js';
import { Bill } from '../../bench/scale/bill.js';
import { bytes, count, money } from '../../bench/scale/format.js';
import { compactionBill, eraseBill, expectedRowsWithChurn, reconcileBill, replayBill, shape } from '../../bench/scale/model.js';
import { ATHENA, FORMATS, S3 } from '../../bench/scale/prices.js';
import { columnsRead, daysRead, hoursRead } from '../../bench/scale/reads.js';
import { EVENTS_PER_DAY, EVENTS_PER_HOUR, REFERENCE } from '../../bench/scale/reference.js';
import { scaleFigures } from '../../bench/scale/report.js';
import type { MeasuredSizes } from '../../bench/scale/sizes.js';

const MB = 1024 * 1024;
const HOUR = Date.UTC(2026, 10, 30, 6);

/** Sizes of the order of the measured ones (docs/performance.md, At scale), fixed so the arithmetic is checked, not the sample. */
const SIZES: MeasuredSizes = {
  sampleEvents: 20_000,
  sampleKeys: 5_000,
  rowBytes: 1000,
  rawNdjsonPerEvent: 1880,
  rawGzipPerEvent: 350,
  history: {
    snappy: { source_table: 0.1, key_id: 3, key_json: 3, position: 5, op: 0.3, kind: 0.1, hash: 20, message: 350, raw_object: 0.5, arrival_ts: 2, dt: 0.01, hr: 0.01 },
    zstd: { source_table: 0.1, key_id: 2.2, key_json: 2.2, position: 4, op: 0.2, kind: 0.1, hash: 17.2, message: 220, raw_object: 0.3, arrival_ts: 1.5, dt: 0.01, hr: 0.01 },
    rows: 20_000,
  },
  expected: { snappy: { source_table: 0.1, key_id: 3, key_json: 3, position: 5, hash: 20, deleted: 0.2 }, zstd: { source_table: 0.1, key_id: 2.2, key_json: 2.2, position: 4, hash: 17.2, deleted: 0.1 }, rows: 5_000 },
  tableSideGzipPerKey: 42,
  itemBytes: 1081,
  exportGzipPerItem: 298,
  exportToSideMicros: 19,
  rewriteObjectMicros: 200_000,
  rawObjectEvents: 3000,
};

describe('scale bench: the bill', () => {
  it('bills every Athena query at least 10 MB, rounded up to the megabyte', () => {
    const bill = new Bill().query(1).query(10 * MB + 1).query(0);
    assert.equal(bill.athenaBytes, 10 * MB + 2);
    assert.equal(bill.athenaBilledBytes, 10 * MB + 11 * MB + 10 * MB);
    assert.equal(bill.dollars().athena, 31 * MB * ATHENA.perByteScanned);
    assert.equal(ATHENA.perByteScanned * 1e12, 5);
  });

  it('counts one PUT for a small file and the parts plus create and complete for a multipart one (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 2000 }), (files, mbEach) => {
        const bill = new Bill().write(files * mbEach * MB, files);
        const each = mbEach * MB <= FORMATS.multipartPartBytes ? 1 : Math.ceil(mbEach / 16) + 2;
        assert.equal(bill.put, files * each);
      }),
    );
    assert.equal(new Bill().write(0, 0).put, 0);
    assert.equal(new Bill().write(100 * MB, 1).put, 7 + 2);
  });

  it('prices requests and sums every part into the total', () => {
    const bill = new Bill().parquetRead(3 * FORMATS.rowGroupBytes, 2, 4);
    assert.equal(bill.get, FORMATS.icebergMetadataGetsPerQuery + 2 + 3 * 4);
    bill.put += 1000;
    bill.list += 1000;
    bill.wru += 1e6;
    bill.lambda(10, 100, 2048);
    const d = bill.dollars();
    assert.equal(bill.lambdaGbSeconds, 200);
    assert.ok(Math.abs(d.s3 - (2000 * S3.putOrList + bill.get * S3.get)) < 1e-12);
    assert.ok(Math.abs(d.requests - (d.s3 + d.lambdaRequests + d.dynamodbRequests)) < 1e-12);
    assert.ok(Math.abs(d.total - (d.athena + d.lambdaCompute + d.dynamodbExport + d.requests)) < 1e-12);
    const sum = new Bill().add(bill).add(bill);
    assert.equal(sum.put, 2 * bill.put);
    assert.equal(sum.queries.length, 2 * bill.queries.length);
  });
});

describe('scale bench: what the statements read', () => {
  const keys = { runId: 'erase-bench', tables: ['public.t0001'] };
  it('takes the columns from the Athena SQL and the partitions from the reads', () => {
    // Erase removes whole messages (a multi-row message holds the key's values too): a key's lines name them.
    assert.deepEqual(columnsRead(buildStatements('erase-history', keys)[0] as never, 'history'), ['source_table', 'key_id', 'stream', 'shard', 'sequence', 'raw_object']);
    const find = buildStatements('erase-find-raw', { ...keys, since: HOUR - 3 * 86_400_000, until: HOUR })[0];
    assert.ok(find);
    assert.equal(hoursRead(find, 'raw_lines'), 73);
    const rec = buildStatements('reconcile-full', { tables: ['public.t0001'], runId: 'r', cutoff: HOUR, unsettled: { from: HOUR, to: HOUR + 3_600_000 }, part: 'counts' })[0];
    assert.ok(rec);
    assert.equal(hoursRead(rec, 'raw_lines'), 2);
    assert.equal(daysRead(rec, 'history'), null, 'a full reconcile names no history partition');
    assert.deepEqual(columnsRead(rec, 'history'), [], 'and reads no history column');
    assert.ok(columnsRead(rec, 'expected_state').includes('hash'));
    assert.ok(!columnsRead(buildStatements('replay-select', { tables: ['public.t0001'], since: HOUR, until: HOUR + 3_600_000, buckets: 100, uncompactedFrom: HOUR + 86_400_000 })[0] as never, 'history').includes('nope'));
  });
});

describe('scale bench: the model', () => {
  for (const tables of REFERENCE.tableCounts) {
    it(`costs a full reconcile of ${tables} table(s) the same after a day and after a year`, () => {
      const day = reconcileBill(SIZES, { tables, retentionDays: 1 });
      const year = reconcileBill(SIZES, { tables, retentionDays: 365 });
      assert.ok(day.athenaBytes > 0);
      assert.equal(year.athenaBytes / day.athenaBytes, 1);
      assert.equal(year.dollars().total / day.dollars().total, 1);
      assert.equal(year.get, day.get);
    });
  }

  it('reads two queries of expected state in reconcile columns, the table side and the unsettled raw hours', () => {
    const p = { tables: 10, retentionDays: 365 };
    const d = shape(SIZES, p);
    const cols = ['source_table', 'key_id', 'key_json', 'position', 'hash', 'deleted'].reduce((n, c) => n + (SIZES.expected.zstd[c] ?? 0), 0);
    const each = REFERENCE.liveRows * cols + REFERENCE.liveRows * SIZES.tableSideGzipPerKey + 2 * d.rawHourBytes;
    const got = reconcileBill(SIZES, p).athenaBytes;
    assert.ok(Math.abs(got - 2 * each) / got < 1e-9, `${got} vs ${2 * each}`);
  });

  it('grows a reconcile with the rows expected state keeps, not with days of history', () => {
    const p = { tables: 1, retentionDays: 365 };
    const rows = expectedRowsWithChurn(365, 0.01);
    assert.equal(rows, REFERENCE.liveRows + 0.01 * EVENTS_PER_DAY * 365);
    assert.ok(reconcileBill(SIZES, p, rows).athenaBytes > reconcileBill(SIZES, p).athenaBytes);
  });

  it('grows an erasure with retention and a replay hardly at all', () => {
    const day = eraseBill(SIZES, { tables: 10, retentionDays: 1 });
    const year = eraseBill(SIZES, { tables: 10, retentionDays: 365 });
    assert.ok(year.athenaBytes > 100 * day.athenaBytes);
    const rDay = replayBill(SIZES, { tables: 10, retentionDays: 1 }).dollars().total;
    const rYear = replayBill(SIZES, { tables: 10, retentionDays: 365 }).dollars().total;
    assert.ok(rYear >= rDay && rYear / rDay < 1.01);
  });

  it('compacts an hour at the same cost whatever the retention, in proportion to the hour', () => {
    const c = compactionBill(SIZES, { tables: 10, retentionDays: 1 });
    assert.ok(c.athenaBytes > EVENTS_PER_HOUR * SIZES.rawGzipPerEvent);
    assert.deepEqual(compactionBill(SIZES, { tables: 10, retentionDays: 365 }).dollars(), c.dollars());
  });

  it('sets each target from the figures it names', () => {
    const figures = { batches: 4, records: 12_000, changeLines: 11_990, rawPuts: 4, quarantinePuts: 1, otherS3Requests: 0, quarantinedRecords: 1, failedBatches: 0, firstLayoutObjects: 40, ndjsonBytes: 1, gzipBytes: 1, maxTablesPerBatch: 10 };
    const ok = scaleFigures(SIZES, [{ tables: 10, batch: 3000, figures }]);
    assert.equal(ok.targets.onePutPerBatch, true);
    assert.equal(ok.targets.reconcileFlat, true);
    assert.equal(ok.landing[0]?.objectsPerDay, EVENTS_PER_DAY / 3000);
    assert.equal(ok.landing[0]?.firstLayoutPerBatch, 10);
    assert.equal(ok.landing[0]?.rawPerMillion, (4 / 12_000) * 1e6);
    assert.equal(scaleFigures(SIZES, [{ tables: 10, batch: 3000, figures: { ...figures, rawPuts: 5 } }]).targets.onePutPerBatch, false);
    assert.equal(scaleFigures(SIZES, [{ tables: 10, batch: 3000, figures: { ...figures, otherS3Requests: 1 } }]).targets.onePutPerBatch, false);
    const erase = ok.erase.find((e) => e.pipeline.tables === 10 && e.pipeline.retentionDays === 365);
    assert.ok(erase);
    assert.ok(Math.abs(erase.perErasure.requests * REFERENCE.erasuresPerDay - erase.dollars.requests) < 1e-9);
    assert.equal(ok.targets.eraseUnderADollar, ok.erase.filter((e) => e.pipeline.retentionDays === 365).every((e) => e.perErasure.requests < 1));
  });
});

describe('scale bench: formatting', () => {
  it('prints counts, bytes and dollars short', () => {
    assert.equal(count(2_880_000), '2.88 M');
    assert.equal(count(333), '333');
    assert.equal(count(999_900), '1.00 M');
    assert.equal(bytes(512), '512 B');
    assert.equal(bytes(2.5 * 1024 ** 4), '2.50 TiB');
    assert.equal(money(13_891.4), '$13,891');
    assert.equal(money(0.00312), '$0.00312');
    assert.equal(money(0), '$0');
  });
});
