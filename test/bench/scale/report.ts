/**
 * The printed figures of `npm run bench:scale`: each section a table (1, 10 and 1,000 tables, after
 * a day and after a year) with the formula it follows underneath, then the targets, PASS or FAIL.
 * `scaleFigures` computes everything the report prints, so the unit test checks the same numbers.
 */
import type { Bill, Dollars } from './bill.js';
import { bytes, count, money, passFail, row } from './format.js';
import type { LandingFigures } from './landing.js';
import { compactionBill, eraseBill, expectedRowsWithChurn, type Pipeline, reconcileBill, replayBill, shape } from './model.js';
import { ATHENA, DYNAMODB, LAMBDA, S3 } from './prices.js';
import { ASSUMPTIONS, EVENTS_PER_DAY, EVENTS_PER_HOUR, EVENTS_PER_SECOND, REFERENCE } from './reference.js';
import { bytesOf, type MeasuredSizes } from './sizes.js';

/** A landing measurement: `tables` tables, batches of `batch` records. */
export interface LandingCase {
  readonly tables: number;
  readonly batch: number;
  readonly figures: LandingFigures;
}

export interface JobFigures {
  readonly pipeline: Pipeline;
  readonly bill: Bill;
  readonly dollars: Dollars;
}

export interface ScaleFigures {
  readonly landing: readonly (LandingCase & { rawPerBatch: number; quarantinePerBatch: number; firstLayoutPerBatch: number; rawPerMillion: number; objectsPerDay: number; firstLayoutPerDay: number })[];
  readonly compaction: readonly JobFigures[];
  readonly reconcile: readonly JobFigures[];
  readonly replay: readonly JobFigures[];
  /** A day's pass of REFERENCE.erasuresPerDay requests; `perErasure` is its dollars ÷ the requests. */
  readonly erase: readonly (JobFigures & { perErasure: Dollars; lone: Dollars })[];
  readonly targets: { readonly onePutPerBatch: boolean; readonly reconcileFlat: boolean; readonly eraseUnderADollar: boolean; readonly eraseLoneUnderADollar: boolean };
}

const scale = (d: Dollars, by: number): Dollars => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v / by])) as unknown as Dollars;

const pipelines = (): Pipeline[] => REFERENCE.tableCounts.flatMap((tables) => [REFERENCE.retentionDays.day, REFERENCE.retentionDays.year].map((retentionDays) => ({ tables, retentionDays })));

const job = (pipeline: Pipeline, bill: Bill): JobFigures => ({ pipeline, bill, dollars: bill.dollars() });

export function scaleFigures(sizes: MeasuredSizes, landing: readonly LandingCase[]): ScaleFigures {
  const land = landing.map((c) => {
    const f = c.figures;
    const perBatch = (n: number) => n / Math.max(1, f.batches);
    const batchesPerDay = EVENTS_PER_DAY / (f.records / f.batches);
    return {
      ...c,
      rawPerBatch: perBatch(f.rawPuts),
      quarantinePerBatch: perBatch(f.quarantinePuts),
      firstLayoutPerBatch: perBatch(f.firstLayoutObjects),
      rawPerMillion: (f.rawPuts / f.records) * 1e6,
      objectsPerDay: batchesPerDay * perBatch(f.rawPuts),
      firstLayoutPerDay: batchesPerDay * perBatch(f.firstLayoutObjects),
    };
  });
  const all = pipelines();
  const erase = all.map((p) => {
    const j = job(p, eraseBill(sizes, p));
    return { ...j, perErasure: scale(j.dollars, REFERENCE.erasuresPerDay), lone: eraseBill(sizes, p, 1).dollars() };
  });
  const reconcile = all.map((p) => job(p, reconcileBill(sizes, p)));
  const flat = REFERENCE.tableCounts.every((t) => {
    const [day, year] = reconcile.filter((r) => r.pipeline.tables === t);
    return day !== undefined && year !== undefined && day.dollars.total === year.dollars.total && day.bill.athenaBytes === year.bill.athenaBytes;
  });
  const yearErase = erase.filter((e) => e.pipeline.retentionDays === REFERENCE.retentionDays.year);
  return {
    landing: land,
    compaction: all.filter((p) => p.retentionDays === REFERENCE.retentionDays.day).map((p) => job(p, compactionBill(sizes, p))),
    reconcile,
    replay: all.map((p) => job(p, replayBill(sizes, p))),
    erase,
    targets: {
      onePutPerBatch: land.every((l) => l.rawPerBatch <= 1 && l.figures.otherS3Requests === 0 && l.figures.failedBatches === 0),
      reconcileFlat: flat,
      eraseUnderADollar: yearErase.every((e) => e.perErasure.requests < 1),
      eraseLoneUnderADollar: yearErase.every((e) => e.lone.requests < 1),
    },
  };
}

const retention = (p: Pipeline): string => (p.retentionDays === 1 ? 'day' : 'year');

/** Every line of the cost half of the report. */
export function costReport(sizes: MeasuredSizes, figures: ScaleFigures): string[] {
  const out: string[] = [];
  const h = bytesOf(sizes.history.zstd);
  const e = bytesOf(sizes.expected.zstd);
  out.push(
    `reference (SCALE.md): ${REFERENCE.shards} shards × ${REFERENCE.recordsPerShardPerSecond.toLocaleString('en-US')} records/s = ${count(EVENTS_PER_SECOND)} events/s, ${count(EVENTS_PER_DAY)} a day;`,
    `  batches of ${REFERENCE.batchRecords.toLocaleString('en-US')} every ${REFERENCE.batchWindowSeconds} s per shard (${count(EVENTS_PER_DAY / REFERENCE.batchRecords)} a day), and of ${REFERENCE.slowRecordsPerShardPerSecond * REFERENCE.batchWindowSeconds} at ${REFERENCE.slowRecordsPerShardPerSecond} records/s;`,
    `  ${count(REFERENCE.liveRows)} live rows of ${REFERENCE.rowBytes} B split evenly over the tables; raw grace ${REFERENCE.rawGraceDays} days; ${REFERENCE.erasuresPerDay.toLocaleString('en-US')} erasures a day`,
    `sizes measured on ${sizes.sampleEvents.toLocaleString('en-US')} events of ${sizes.sampleKeys.toLocaleString('en-US')} keys (rows of ~${sizes.rowBytes} B), landed by RawStore.land, compacted and folded by the DuckDB engine:`,
    `  raw ${Math.round(sizes.rawNdjsonPerEvent)} B/event NDJSON, ${Math.round(sizes.rawGzipPerEvent)} B gzip (RAW_GZIP); history ${h.toFixed(0)} B/event Parquet ZSTD, Athena's Iceberg default (${bytesOf(sizes.history.snappy).toFixed(0)} B as the stand-in writes it, Snappy),`,
    `  of which message ${(sizes.history.zstd.message ?? 0).toFixed(0)} B, hash ${(sizes.history.zstd.hash ?? 0).toFixed(1)} B, key_id ${(sizes.history.zstd.key_id ?? 0).toFixed(1)} B; expected_state ${e.toFixed(1)} B/key; table side ${sizes.tableSideGzipPerKey.toFixed(1)} B/key gzip;`,
    `  DynamoDB item ${Math.round(sizes.itemBytes)} B (export line ${Math.round(sizes.exportGzipPerItem)} B gzip); CPU: export line → table side ${sizes.exportToSideMicros.toFixed(1)} µs, one raw object of ${sizes.rawObjectEvents} events rewritten by erase ${(sizes.rewriteObjectMicros / 1000).toFixed(0)} ms`,
    `prices (test/bench/scale/prices.ts, with sources): S3 PUT/LIST $${(S3.putOrList * 1000).toFixed(3)}/1k, GET $${(S3.get * 1000).toFixed(4)}/1k; Athena $${ATHENA.perByteScanned * 1e12}/TB, ≥ 10 MB a query;`,
    `  Lambda $${LAMBDA.gbSecond}/GB-s, $${(LAMBDA.request * 1e6).toFixed(2)}/M requests; DynamoDB export $${DYNAMODB.exportPerGb}/GB, $${(DYNAMODB.writeRequestUnit * 1e6).toFixed(3)}/M WRU`,
    '',
  );

  out.push('-- raw landing: processBatch (the real ingest wiring) against a counting S3; the first layout (one object per table per batch) counted from the tables in each raw object --');
  const lw = [7, 6, 10, 11, 12, 11, 12, 13, 11, 13];
  out.push(row(['tables', 'batch', 'raw/batch', 'quar./batch', 'first/batch', 'raw PUTs/M', 'raw obj./day', 'first lay./day', 'PUT $/day', 'first lay. $/day'], lw));
  for (const l of figures.landing) {
    out.push(
      row(
        [String(l.tables), String(l.batch), l.rawPerBatch.toFixed(2), l.quarantinePerBatch.toFixed(2), l.firstLayoutPerBatch.toFixed(1), count(l.rawPerMillion), count(l.objectsPerDay), count(l.firstLayoutPerDay), money(l.objectsPerDay * S3.putOrList), money(l.firstLayoutPerDay * S3.putOrList)],
        lw,
      ),
    );
  }
  out.push(
    `  raw PUTs/M = 10^6 ÷ records per batch × raw PUTs per batch; objects/day = ${count(EVENTS_PER_DAY)} ÷ records per batch × PUTs per batch; PUT $ = objects × $${S3.putOrList * 1000}/1k`,
    `  quarantine is its own object, only in batches holding a refused record (1 record in 1,000 malformed in these batches; the cost model assumes 1 in ${ASSUMPTIONS.badRecordEvery.toLocaleString('en-US')});`,
    `  events spread uniformly over the tables; other S3 requests the ingest sent: ${figures.landing.reduce((n, l) => n + l.figures.otherS3Requests, 0)}, batches with failed records: ${figures.landing.reduce((n, l) => n + l.figures.failedBatches, 0)}`,
    '',
  );

  out.push(`-- one hourly compaction of every table (${count(EVENTS_PER_HOUR)} events): compact-hour, fold-expected (3 MERGEs), count-table-hours, the late-object listing, raw expiry, 1/24 of the daily OPTIMIZE --`);
  const cw = [7, 13, 11, 11, 10, 10, 12, 11, 13];
  out.push(row(['tables', 'Athena read', 'Athena $', 'S3 PUTs', 'S3 GETs', 'S3 LISTs', 'S3 req. $', '$/hour', '$/M events'], cw));
  for (const c of figures.compaction) {
    const dd = c.dollars;
    out.push(row([String(c.pipeline.tables), bytes(c.bill.athenaBytes), money(dd.athena), count(c.bill.put), count(c.bill.get), count(c.bill.list), money(dd.s3), money(dd.total), money((dd.total / EVENTS_PER_HOUR) * 1e6)], cw));
  }
  const d1 = shape(sizes, { tables: 1, retentionDays: 1 });
  out.push(
    `  Athena read = raw hour (${count(EVENTS_PER_HOUR)} × ${Math.round(sizes.rawGzipPerEvent)} B, JSON read whole) + the hour's history in each statement's columns + expected_state whole (${count(REFERENCE.liveRows)} × ${e.toFixed(1)} B = ${bytes(d1.expectedBytes)}:`,
    `  merge-winners' target) + (a day of history + expected_state) ÷ 24 for OPTIMIZE; the same for a day or a year of history;`,
    `  LISTs: the plan lists every raw object of the ${REFERENCE.lateScanHours}-hour late-scan window each run (${count(d1.objectsPerHour * REFERENCE.lateScanHours)} objects)`,
    '',
  );

  const jobTable = (title: string, rows: readonly JobFigures[], extra: (j: JobFigures) => string[] = () => []) => {
    out.push(title);
    const w = [7, 9, 13, 11, 11, 12, 11, 12, 11];
    out.push(row(['tables', 'history', 'Athena read', 'Athena $', 'export $', 'Lambda $', 'S3 req. $', 'DynamoDB $', 'total $', ...extra(rows[0] as JobFigures).map(() => '')], w));
    for (const j of rows) {
      const dd = j.dollars;
      out.push(row([String(j.pipeline.tables), retention(j.pipeline), bytes(j.bill.athenaBytes), money(dd.athena), money(dd.dynamodbExport), money(dd.lambdaCompute + dd.lambdaRequests), money(dd.s3), money(dd.dynamodbRequests), money(dd.total)], w));
    }
  };

  jobTable('-- one full reconcile of every table: DynamoDB export, export → table side (Lambda), reconcile-full (counts and findings) --', figures.reconcile);
  const rec = figures.reconcile[0];
  const churned = expectedRowsWithChurn(REFERENCE.retentionDays.year, 0.01);
  const churnBill = reconcileBill(sizes, { tables: 1, retentionDays: 365 }, churned).dollars();
  out.push(
    `  export = ${count(REFERENCE.liveRows)} items × ${Math.round(sizes.itemBytes)} B × $${DYNAMODB.exportPerGb}/GB; Lambda = items × ${sizes.exportToSideMicros.toFixed(1)} µs at ${ASSUMPTIONS.tableSideLambdaMb} MB, one invocation per ~${bytes(ASSUMPTIONS.exportFileBytes)} export file;`,
    `  Athena = 2 queries × (expected_state in reconcile's columns + table side ${sizes.tableSideGzipPerKey.toFixed(0)} B/key + ${ASSUMPTIONS.unsettledHours} raw hours not compacted yet); no term has the retention in it`,
    `  memory: every task holds a bounded slice (one export file per Lambda, Athena's workers, S3 references in the state); measured locally below`,
    `  but expected_state keeps deleted keys: if 1% of events created keys later deleted, a year would hold ${count(churned)} rows (not ${count(REFERENCE.liveRows)}), and one reconcile would cost ${money(churnBill.total)} instead of ${money(rec?.dollars.total ?? 0)}`,
    '',
  );

  jobTable(`-- one replay of an hour of every table into a fresh table: replay-select (UNLOAD by ${ASSUMPTIONS.replayBuckets} key buckets), apply per bucket --`, figures.replay);
  const warm = replayBill(sizes, { tables: 1, retentionDays: 365 }, true).dollars();
  out.push(
    `  Athena = the files holding the hour (pruned on arrival_ts; after the day's OPTIMIZE the ${bytes(2 ** 29)} files it sits in) in replay-select's columns + the messageRef lookup's`,
    `  filter columns (raw_object, message_ref) over every table's two named days; apply = ${count(EVENTS_PER_HOUR)} events × ${ASSUMPTIONS.applyMicrosPerEvent} µs at ${ASSUMPTIONS.applyLambdaMb} MB, one guarded write of ${Math.ceil(sizes.itemBytes / 1024)} WRU`,
    `  per key the hour touched (${count(d1.keysTouchedPerHour)}); into the live table (already applied) the writes become eventually consistent pre-reads: ${money(warm.total)} in all (1 table, a year)`,
    '',
  );

  out.push(`-- one erasure: a day's pass of ${REFERENCE.erasuresPerDay.toLocaleString('en-US')} requests (erase-find-raw: raw of the hours not compacted and of ${ASSUMPTIONS.eraseLateHours} late hour, history for the rest of the ${REFERENCE.rawGraceDays}-day grace; erase-find-history, conditional rewrites of the objects found, erase-history + erase-expected, OPTIMIZE, VACUUM, ledger) --`);
  const ew = [7, 9, 13, 12, 13, 14, 13, 14, 13];
  // The path this replaced: a LIST page per 1,000 objects and a HEAD of each, for every erasure alone.
  const yearObjects = d1.objectsPerHour * 24 * 365;
  const headScan = yearObjects * S3.get + Math.ceil(yearObjects / 1000) * S3.putOrList;
  out.push(row(['tables', 'history', 'Athena read', 'pass $', 'pass req. $', 'req. $/erasure', 'all $/erasure', 'lone: req. $', 'lone: all $'], ew));
  for (const x of figures.erase) {
    out.push(row([String(x.pipeline.tables), retention(x.pipeline), bytes(x.bill.athenaBytes), money(x.dollars.total), money(x.dollars.requests), money(x.perErasure.requests), money(x.perErasure.total), money(x.lone.requests), money(x.lone.total)], ew));
  }
  out.push(
    `  requests = erase-find-raw's GETs of the raw hours it reads (${ASSUMPTIONS.unsettledHours} not compacted + ${ASSUMPTIONS.eraseLateHours} late, ${count(d1.objectsPerHour)} objects each) + a LIST of every compacted hour of the grace (its late objects)`,
    `  + GET, PUT (If-Match) and LIST per object holding a key (${ASSUMPTIONS.erasedKeyEventsPerDay.toFixed(1)} events a key a day) + Iceberg's GETs and multipart PUTs + a ledger write;`,
    `  Athena = those raw hours whole + the keys' tables' history in raw_object and key_id over the grace + in key_id`,
    '  over every day of retention + OPTIMIZE of the data files holding a key (a key has rows on nearly every day): that part grows with retention',
    "  'lone' is a pass for one request: the history scans over every day of retention are paid once per pass, whatever the keys (history is not clustered by key)",
    `  before erase ran on SQL it listed and HEADed every raw object of the table: over a year of raw (${count(yearObjects)} objects) ${money(headScan)} in requests per erasure, and history was not reached`,
    '',
  );
  return out;
}

/** The targets, one line each. */
export function targetLines(f: ScaleFigures, local?: { readonly ok: boolean; readonly flat: boolean; readonly line: string }): string[] {
  const t = f.targets;
  const lines = [
    `≤ 1 raw PUT per batch (every table count and batch size): ${passFail(t.onePutPerBatch)} (max ${Math.max(...f.landing.map((l) => l.rawPerBatch)).toFixed(2)})`,
    `full reconcile cost independent of history length (day = year, 1/10/1,000 tables): ${passFail(t.reconcileFlat)}`,
    `one erasure over a year < $1 in requests, a day's pass of ${REFERENCE.erasuresPerDay.toLocaleString('en-US')}: ${passFail(t.eraseUnderADollar)} (max ${money(Math.max(...f.erase.filter((e) => e.pipeline.retentionDays === 365).map((e) => e.perErasure.requests)))} per erasure)`,
    `one erasure over a year < $1 in requests, alone in its pass: ${passFail(t.eraseLoneUnderADollar)} (max ${money(Math.max(...f.erase.filter((e) => e.pipeline.retentionDays === 365).map((e) => e.lone.requests)))})`,
  ];
  if (local) lines.push(local.line, `local full reconcile memory independent of history length (first day vs the whole history): ${passFail(local.flat)}`);
  return lines;
}
