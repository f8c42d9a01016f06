/**
 * The cost model: the jobs of docs/history.md at the reference pipeline's size (reference.ts), from
 * byte sizes measured on a sample (sizes.ts) and from what each statement of functions/sql reads
 * (reads.ts), extrapolated linearly. Each job returns a Bill (bill.ts).
 *
 * How Athena reads are counted:
 * - JSON (raw_lines, table_side) whole: every object of every hour or run the statement's `reads` name;
 * - Iceberg (history, expected_state) in the columns the statement names, over the partitions its
 *   `reads` name, with Iceberg's file pruning on `hr` (each hourly compaction writes its own files,
 *   whose bounds hold one hour) and on `arrival_ts` for replay (the files holding the hour: the
 *   hour's files, or after the day's OPTIMIZE the 512 MB files it sits in);
 * - a MERGE reads every column of its target's partitions (it writes whole rows), a DELETE only the
 *   columns of its condition (Athena's Iceberg DELETE writes position deletes).
 *
 *   const bill = reconcileBill(sizes, { tables: 10, retentionDays: 365 });
 *   bill.dollars().total
 */
import { buildStatements, type Statement } from '../../../functions/sql/index.js';
import { Bill } from './bill.js';
import { FORMATS } from './prices.js';
import { columnsRead, daysRead, hoursRead } from './reads.js';
import { ASSUMPTIONS, EVENTS_PER_DAY, EVENTS_PER_HOUR, REFERENCE } from './reference.js';
import { bytesOf, type MeasuredSizes } from './sizes.js';
import { tableName } from './workload.js';

export interface Pipeline {
  readonly tables: number;
  readonly retentionDays: number;
}

const HOUR = Date.UTC(2026, 10, 30, 6);
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const GIB = 1024 ** 3;

const one = (xs: readonly Statement[]): Statement => {
  const s = xs[0];
  if (!s) throw new Error('no statement');
  return s;
};

/** The quantities every job derives from the pipeline's size and the measured sizes. */
export function shape(s: MeasuredSizes, p: Pipeline) {
  const historyPerEvent = bytesOf(s.history.zstd);
  const expectedPerKey = bytesOf(s.expected.zstd);
  const tableDayBytes = (EVENTS_PER_DAY / p.tables) * historyPerEvent;
  const keysPerTable = REFERENCE.liveRows / p.tables;
  const objectsPerHour = EVENTS_PER_HOUR / REFERENCE.batchRecords;
  return {
    historyPerEvent,
    expectedPerKey,
    tableDayBytes,
    tableHourBytes: tableDayBytes / 24,
    filesPerTableDay: Math.max(1, Math.ceil(tableDayBytes / FORMATS.targetFileBytes)),
    filesPerTableHour: Math.max(1, Math.ceil(tableDayBytes / 24 / FORMATS.targetFileBytes)),
    keysPerTable,
    expectedBytes: REFERENCE.liveRows * expectedPerKey,
    expectedFiles: p.tables * Math.max(1, Math.ceil((keysPerTable * expectedPerKey) / FORMATS.targetFileBytes)),
    objectsPerHour,
    rawHourBytes: EVENTS_PER_HOUR * s.rawGzipPerEvent,
    /** Keys with at least one event in an hour (events spread uniformly over the keys). */
    keysTouchedPerHour: REFERENCE.liveRows * (1 - Math.exp(-EVENTS_PER_HOUR / REFERENCE.liveRows)),
    tables: Array.from({ length: p.tables }, (_, t) => `public.${tableName(t)}`),
  };
}

/** Bytes per event (history) or per key (expected state) of the columns a statement reads. */
const historyColumns = (s: MeasuredSizes, st: Statement) => {
  const cols = columnsRead(st, 'history');
  return { cols, perEvent: bytesOf(s.history.zstd, cols) };
};

/**
 * One hourly compaction of every table: compact-hour, fold-expected's three MERGEs, count-table-hours,
 * the plan's listing of the late-scan window, the expiry of the raw hour that left the grace, and a 24th of the daily OPTIMIZE of history and of
 * expected state. Nothing here depends on how long history is.
 */
export function compactionBill(s: MeasuredSizes, p: Pipeline): Bill {
  const d = shape(s, p);
  const bill = new Bill();
  const hourFiles = p.tables * d.filesPerTableHour;
  // compact-hour: the hour's raw objects whole; history's own files of the hour (none before the run: pruned on hr).
  bill.query(d.rawHourBytes);
  bill.get += d.objectsPerHour;
  bill.list += Math.ceil(d.objectsPerHour / 1000);
  bill.write(EVENTS_PER_HOUR * d.historyPerEvent, hourFiles).commit();
  for (const st of buildStatements('fold-expected', { hour: HOUR })) {
    const h = historyColumns(s, st);
    let bytes = EVENTS_PER_HOUR * h.perEvent;
    bill.parquetRead(EVENTS_PER_HOUR * d.historyPerEvent, hourFiles, h.cols.length);
    if (st.name === 'fold-expected/merge-winners') {
      // The target's partitions (every table has events every hour) read whole; the hour's keys rewritten.
      bytes += d.expectedBytes;
      bill.parquetRead(d.expectedBytes, d.expectedFiles, Object.keys(s.expected.zstd).length);
      bill.write(d.keysTouchedPerHour * (d.expectedPerKey + ASSUMPTIONS.positionDeleteBytesPerRow), 2 * p.tables).commit();
    }
    // raise-truncates and apply-truncates change nothing in an hour without truncates (the reference has none).
    bill.query(bytes);
  }
  const count = one(buildStatements('count-table-hours', { from: HOUR, to: HOUR }));
  const counted = historyColumns(s, count);
  bill.query(EVENTS_PER_HOUR * counted.perEvent).parquetRead(EVENTS_PER_HOUR * d.historyPerEvent, hourFiles, counted.cols.length);
  bill.write(p.tables * 200, 1).commit();
  // Raw past the grace: listed, then deleted (DeleteObjects is free).
  bill.list += Math.ceil(d.objectsPerHour / 1000);
  // The plan's late-object scan (functions/jobs/history/compaction.ts lateHours): each hour of the window, its marker read and its objects listed.
  bill.get += REFERENCE.lateScanHours;
  bill.list += REFERENCE.lateScanHours * Math.ceil(d.objectsPerHour / 1000);
  // OPTIMIZE, a 24th of a day: history's closed day and the whole expected state, each read and written once.
  const share = 1 / ASSUMPTIONS.optimizeEveryHours;
  const optimized = (EVENTS_PER_DAY * d.historyPerEvent + d.expectedBytes) * share;
  bill.query(optimized).parquetRead(optimized, (p.tables * 24 + d.expectedFiles) * share, Object.keys(s.history.zstd).length);
  bill.write(optimized, (p.tables * d.filesPerTableDay + d.expectedFiles) * share).commit();
  return bill;
}

/**
 * One full reconcile of every table: a DynamoDB export, the export-to-table-side Lambda over each
 * export file, and reconcile-full twice (counts, findings), reading expected state, the table side,
 * the truncates and the raw of the hours not compacted yet. Its size is the table's, whatever the
 * retention: the only input that grows with time is expected state, and only with keys.
 */
export function reconcileBill(s: MeasuredSizes, p: Pipeline, expectedRows: number = REFERENCE.liveRows): Bill {
  const d = shape(s, p);
  const bill = new Bill();
  const items = REFERENCE.liveRows;
  bill.exportGb += (items * s.itemBytes) / GIB;
  const exportFiles = Math.max(p.tables, Math.ceil((items * s.exportGzipPerItem) / ASSUMPTIONS.exportFileBytes));
  bill.write(items * s.exportGzipPerItem, exportFiles);
  bill.get += exportFiles;
  bill.lambda(exportFiles, (items * s.exportToSideMicros) / 1e6, ASSUMPTIONS.tableSideLambdaMb);
  const sideBytes = items * s.tableSideGzipPerKey;
  bill.write(sideBytes, exportFiles);
  const expectedBytes = expectedRows * d.expectedPerKey;
  const expectedFiles = d.expectedFiles * (expectedRows / REFERENCE.liveRows);
  const unsettled = { from: HOUR, to: HOUR + (ASSUMPTIONS.unsettledHours - 1) * HOUR_MS };
  for (const part of ['counts', 'findings'] as const) {
    const st = one(buildStatements('reconcile-full', { tables: d.tables, runId: 'run', cutoff: HOUR, unsettled, part }));
    const cols = columnsRead(st, 'expected_state');
    const rawHours = hoursRead(st, 'raw_lines') ?? 0;
    bill.query(expectedRows * bytesOf(s.expected.zstd, cols) + sideBytes + rawHours * d.rawHourBytes);
    bill.parquetRead(expectedBytes, expectedFiles, cols.length);
    bill.get += exportFiles + rawHours * d.objectsPerHour;
    bill.list += rawHours * Math.ceil(d.objectsPerHour / 1000);
  }
  return bill;
}

/**
 * One replay of an hour of every table into a fresh table: replay-select unloaded by key bucket, then
 * the apply Lambda per bucket through the guarded writer (one write per key the hour touched).
 * Replaying into the live table instead costs reads, not writes (the pre-read finds every key
 * current): `warm`.
 */
export function replayBill(s: MeasuredSizes, p: Pipeline, warm = false): Bill {
  const d = shape(s, p);
  const bill = new Bill();
  const st = one(buildStatements('replay-select', { tables: d.tables, since: HOUR, until: HOUR + HOUR_MS, buckets: ASSUMPTIONS.replayBuckets, uncompactedFrom: HOUR + DAY_MS }));
  const sel = historyColumns(s, st);
  const days = Math.min(daysRead(st, 'history') ?? 1, p.retentionDays);
  // The selection: the files holding the hour, pruned on arrival_ts (a day's partition at most).
  const heldBytes = p.tables * Math.min(d.tableDayBytes, Math.max(d.tableHourBytes, FORMATS.targetFileBytes));
  // The messageRef lookup (`firsts`): its filter columns over every table's named days (its message columns only for records with messageRef lines: none in PostgreSQL).
  const firstsCols = ['raw_object', 'message_ref'];
  const firstsRows = days * EVENTS_PER_DAY;
  bill.query((heldBytes * sel.perEvent) / d.historyPerEvent + firstsRows * bytesOf(s.history.zstd, firstsCols));
  bill.parquetRead(heldBytes, heldBytes / Math.min(FORMATS.targetFileBytes, d.tableDayBytes), sel.cols.length);
  bill.parquetRead(firstsRows * d.historyPerEvent, days * p.tables * d.filesPerTableDay, firstsCols.length);
  const unloaded = EVENTS_PER_HOUR * s.rawGzipPerEvent;
  bill.write(unloaded, ASSUMPTIONS.replayBuckets);
  bill.get += ASSUMPTIONS.replayBuckets;
  bill.lambda(ASSUMPTIONS.replayBuckets, (EVENTS_PER_HOUR * ASSUMPTIONS.applyMicrosPerEvent) / 1e6, ASSUMPTIONS.applyLambdaMb);
  if (warm) bill.rru += d.keysTouchedPerHour * 0.5;
  else bill.wru += d.keysTouchedPerHour * Math.ceil(s.itemBytes / 1024);
  return bill;
}

/**
 * One day's erasure pass of `requests` keys (spread over the tables), as the erase state machine
 * runs it (functions/erase/find.ts): erase-find-raw (raw of the hours not compacted yet and of the
 * late ones; the grace's compacted hours through history's raw_object), erase-find-history over the
 * keys' tables' history (what it holds of each key: its lines and highest position), a conditional
 * rewrite (GET, PUT with If-Match, the old version listed and deleted) of each raw object found and
 * of no other (no listing or HEAD of raw), erase-history and erase-expected (Iceberg DELETE),
 * OPTIMIZE of the data files holding the keys' rows (the physical removal), VACUUM, and one ledger
 * write per key.
 */
export function eraseBill(s: MeasuredSizes, p: Pipeline, requests: number = REFERENCE.erasuresPerDay): Bill {
  const d = shape(s, p);
  const bill = new Bill();
  const touched = p.tables * (1 - (1 - 1 / p.tables) ** requests);
  const keysPerTable = requests / touched;
  // The run's keys are read from erase_keys by run id: the statements name only the run and its tables.
  const keys = { runId: 'erase-bench', tables: [d.tables[0] ?? 'public.t0001'] };
  const graceDays = Math.min(REFERENCE.rawGraceDays, p.retentionDays);
  // The frontier two hours behind (an hour closes 80 minutes after it began); the grace's compacted hours found through history.
  const since = HOUR - graceDays * DAY_MS;
  const through = HOUR - ASSUMPTIONS.unsettledHours * HOUR_MS;
  const late = Array.from({ length: ASSUMPTIONS.eraseLateHours }, (_, i) => through - i * HOUR_MS);
  const find = one(buildStatements('erase-find-raw', { ...keys, since, until: HOUR, compacted: { from: since, through, late } }));
  const hours = hoursRead(find, 'raw_lines') ?? 0;
  bill.query(hours * d.rawHourBytes);
  bill.get += hours * d.objectsPerHour;
  bill.list += hours * Math.ceil(d.objectsPerHour / 1000);
  // The compacted hours: each marker read and each hour listed (find.ts), then history in the columns erase-find-raw reads over the grace's days.
  const compactedHours = (through - since) / HOUR_MS + 1;
  bill.get += compactedHours;
  bill.list += compactedHours * Math.ceil(d.objectsPerHour / 1000);
  const graceCols = columnsRead(find, 'history');
  const graceDaysRead = daysRead(find, 'history') ?? 0;
  bill.query(touched * graceDaysRead * (EVENTS_PER_DAY / p.tables) * bytesOf(s.history.zstd, graceCols));
  bill.parquetRead(touched * graceDaysRead * d.tableDayBytes, touched * graceDaysRead * d.filesPerTableDay, graceCols.length);
  const found = Math.min(hours * d.objectsPerHour, requests * ASSUMPTIONS.erasedKeyEventsPerDay * graceDays);
  bill.get += found;
  bill.put += found;
  bill.list += found;
  bill.lambda(found, (found * s.rewriteObjectMicros * (REFERENCE.batchRecords / s.rawObjectEvents)) / 1e6, ASSUMPTIONS.eraseLambdaMb);
  const partitions = touched * p.retentionDays;
  // erase-find-history: the keys' lines in their tables' history, every day of retention (keys are not clustered).
  const findHistory = one(buildStatements('erase-find-history', keys));
  const findCols = columnsRead(findHistory, 'history');
  bill.query(partitions * (EVENTS_PER_DAY / p.tables) * bytesOf(s.history.zstd, findCols));
  bill.parquetRead(partitions * d.tableDayBytes, partitions * d.filesPerTableDay, findCols.length);
  const del = one(buildStatements('erase-history', keys));
  const delCols = columnsRead(del, 'history');
  bill.query(partitions * (EVENTS_PER_DAY / p.tables) * bytesOf(s.history.zstd, delCols));
  bill.parquetRead(partitions * d.tableDayBytes, partitions * d.filesPerTableDay, delCols.length);
  // A data file of a partition holds one of the keys' rows unless each of their events of the day is in another file.
  const f = d.filesPerTableDay;
  const affected = partitions * f * (1 - (1 - 1 / f) ** (keysPerTable * ASSUMPTIONS.erasedKeyEventsPerDay));
  bill.write(affected * 1024, affected).commit();
  const delExpected = one(buildStatements('erase-expected', keys));
  const expCols = columnsRead(delExpected, 'expected_state');
  bill.query(touched * d.keysPerTable * bytesOf(s.expected.zstd, expCols)).parquetRead(touched * d.keysPerTable * d.expectedPerKey, touched, expCols.length);
  bill.write(requests * 64, touched).commit();
  // OPTIMIZE: the affected files rewritten without the deleted rows; VACUUM then deletes the old ones (free).
  const rewritten = affected * (d.tableDayBytes / f);
  bill.query(rewritten).parquetRead(rewritten, affected, Object.keys(s.history.zstd).length);
  bill.write(rewritten, affected).commit().commit();
  bill.wru += requests;
  return bill;
}

/** Rows expected_state holds after `days` when a share of events creates keys that are later deleted: it keeps deleted rows. */
export const expectedRowsWithChurn = (days: number, newKeyShare: number): number => REFERENCE.liveRows + newKeyShare * EVENTS_PER_DAY * days;
