/**
 * The S3 key layout of everything tidemark keeps in its bucket, in one place: raw objects, spilled
 * rows, quarantine, Lambda's on-failure objects, and the jobs' runs and reports. Nothing else
 * builds or parses these keys; ingest, replay, erase, the jobs, the Glue table (lib/history.ts) and
 * the CLI call these functions.
 *
 *   <raw>dt=2026-11-30/hr=06/<shard>-<first seq>-<last seq>-<digest>.jsonl.gz        raw, one object per batch
 *   <raw>table=<table>/dt=2026-11-30/hr=06/<shard>-<first seq>-<last seq>-<digest>.jsonl.gz   raw, the first layout (per table)
 *   <raw>spill/table=<table>/<key digest>/<position>.json.gz                                spilled rows
 *   <quarantine>dt=2026-11-30/hr=06/<shard>-<first seq>-<last seq>-<digest>.jsonl.gz         quarantine
 *   aws/lambda/<mapping id>/<shard>/2026/11/30/...                                          on-failure (Lambda's)
 *   <jobs>replay/<run>/…   <jobs>erase/<run>/…   <reports>reconcile/<run>/…   <reports>snapshot/<run>/…
 *   <run>queries.json  <run>summary.json  <run>results/000042.json  …                      a run's objects (`RUN_FILES`, `RUN_FOLDERS`)
 *
 * Table and shard names are path segments in one of two encodings:
 * - current, injective (`encodeSegment`): ASCII letters, digits, `.`, `_` and `-` kept, every other
 *   character `%XX` per UTF-8 byte: `public.café` → `public.caf%C3%A9`, `dbo.Order Details` →
 *   `dbo.Order%20Details`;
 * - legacy, lossy (`legacySegment`), written by the first versions: every other character `_`
 *   (`public.caf_`). Readers look under both (`tableSegments`), and lines name their table, so a
 *   lossy segment shared by two tables is told apart by its lines.
 */

/**
 * Key prefix under which Lambda writes whole failed batches to an S3 on-failure destination
 * (`aws/lambda/<mapping id>/<shard or partition>/YYYY/MM/DD/...`). Lambda fixes it, so the raw and
 * quarantine prefixes must stay clear of it.
 */
export const ON_FAILURE_PREFIX = 'aws/lambda/';

/** The object of a batch of lines: shard, first and last sequence, and the first record's arrival. */
export interface BatchCoordinates {
  readonly shard: string;
  readonly firstSequence: string;
  readonly lastSequence: string;
  /** Epoch ms of the batch's first record. */
  readonly firstArrival: number;
}

const HOUR_MS = 3_600_000;
const PLAIN = /^[A-Za-z0-9._-]$/;

// ---------------------------------------------------------------------------------------------
// Segment encodings

/**
 * Injective path-segment encoding: ASCII letters, digits, `.`, `_` and `-` are kept; every other
 * character becomes `%XX` per UTF-8 byte (so `%` itself is `%25` and `/` is `%2F`); a lone UTF-16
 * surrogate, which has no UTF-8 form, becomes `%uXXXX`. Athena's `table=` partition (an injected
 * projection) reads the encoded form: query `source_table = 'public.caf%C3%A9'`.
 */
export function encodeSegment(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] ?? '';
    if (PLAIN.test(ch)) {
      out += ch;
      continue;
    }
    const code = s.charCodeAt(i);
    const next = s.charCodeAt(i + 1);
    const pair = code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
    if (!pair && code >= 0xd800 && code <= 0xdfff) {
      out += `%u${code.toString(16).toUpperCase().padStart(4, '0')}`;
      continue;
    }
    const text = pair ? s.slice(i, i + 2) : ch;
    if (pair) i++;
    for (const byte of Buffer.from(text, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * The inverse of {@link encodeSegment}: `%XX` UTF-8 bytes and `%uXXXX` lone surrogates. A segment
 * that is not such an encoding decodes to itself.
 */
export function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  let out = '';
  let bytes: number[] = [];
  const flush = () => {
    if (bytes.length > 0) out += Buffer.from(bytes).toString('utf8');
    bytes = [];
  };
  for (let i = 0; i < segment.length; ) {
    const rest = segment.slice(i, i + 6);
    if (/^%u[0-9A-Fa-f]{4}$/.test(rest)) {
      flush();
      out += String.fromCharCode(Number.parseInt(rest.slice(2), 16));
      i += 6;
    } else if (/^%[0-9A-Fa-f]{2}/.test(rest)) {
      bytes.push(Number.parseInt(rest.slice(1, 3), 16));
      i += 3;
    } else {
      flush();
      out += segment[i];
      i++;
    }
  }
  flush();
  return out;
}

/** The first, lossy segment form: kept so that objects landed before the injective one are found. */
export const legacySegment = (name: string): string => name.replace(/[^A-Za-z0-9._=-]/g, '_');

/** Both segments a table's (or shard's) objects may sit under: the current encoding first. */
export function tableSegments(name: string): string[] {
  return [...new Set([encodeSegment(name), legacySegment(name)])];
}

/** Whether `segment` names `name` in either encoding. */
export const segmentNames = (segment: string, name: string): boolean => segment === legacySegment(name) || decodeSegment(segment) === name;

// ---------------------------------------------------------------------------------------------
// Hours

/** `dt=YYYY-MM-DD/hr=HH` of an epoch ms (UTC). */
export function hourPath(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `dt=${iso.slice(0, 10)}/hr=${iso.slice(11, 13)}`;
}

/** `dt=YYYY-MM-DD` of an epoch ms (UTC). */
export const dayPath = (ms: number): string => `dt=${new Date(ms).toISOString().slice(0, 10)}`;

/** Every hour start (epoch ms) from the hour of `fromMs` to that of `toMs`, inclusive. */
export function hoursBetween(fromMs: number, toMs: number): number[] {
  const out: number[] = [];
  for (let t = Math.floor(fromMs / HOUR_MS) * HOUR_MS; t <= toMs; t += HOUR_MS) out.push(t);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Raw, quarantine, spill

const batchFileName = (batch: BatchCoordinates, digest: string) =>
  `${encodeSegment(batch.shard)}-${encodeSegment(batch.firstSequence)}-${encodeSegment(batch.lastSequence)}-${digest}.jsonl.gz`;

/**
 * The raw object of one batch: every table's lines and the control messages, in the hour of the
 * batch's first arrival (docs/history.md §1). One PUT per batch, whatever the number of tables.
 */
export function rawBatchKey(rawPrefix: string, batch: BatchCoordinates, digest: string): string {
  return `${rawPrefix}${hourPath(batch.firstArrival)}/${batchFileName(batch, digest)}`;
}

/** Where every raw batch object sits (list it whole, or an hour or a day of it). */
export const rawBatchesPrefix = (rawPrefix: string): string => `${rawPrefix}dt=`;

/** One hour of raw batch objects: list it to find every batch that began in the hour. */
export const rawHourPrefix = (rawPrefix: string, hourStart: number): string => `${rawPrefix}${hourPath(hourStart)}/`;

/** One day of raw batch objects. */
export const rawDayPrefix = (rawPrefix: string, dayStart: number): string => `${rawPrefix}${dayPath(dayStart)}/`;

/** One day of a table segment's raw objects (the first layout). */
export const rawTableDayPrefix = (rawPrefix: string, segment: string, dayStart: number): string => `${rawTablePrefix(rawPrefix, segment)}${dayPath(dayStart)}/`;

/** A raw object of one table's lines of one batch: the first layout, still read by every reader. */
export function rawObjectKey(rawPrefix: string, table: string, batch: BatchCoordinates, digest: string): string {
  return `${rawPrefix}table=${encodeSegment(table)}/${hourPath(batch.firstArrival)}/${batchFileName(batch, digest)}`;
}

/** Where a table's raw objects sit under one of its segments (list it, or one of its hours). */
export const rawTablePrefix = (rawPrefix: string, segment: string): string => `${rawPrefix}table=${segment}/`;

/**
 * The Glue table's `storage.location.template` over raw (lib/history.ts): the partition keys
 * `source_table` (the table's segment, injected), `dt` and `hr` in the raw object layout.
 */
export const rawLocationTemplate = (root: string): string => `${root}table=\${source_table}/dt=\${dt}/hr=\${hr}/`;

/** The Glue table's `storage.location.template` over the batch objects: partition keys `dt` and `hr`. */
export const rawBatchLocationTemplate = (root: string): string => `${root}dt=\${dt}/hr=\${hr}/`;

/** Where every table segment sits: list it with a delimiter. */
export const rawTablesPrefix = (rawPrefix: string): string => `${rawPrefix}table=`;

/** One hour of a table segment's raw objects. */
export const rawTableHourPrefix = (rawPrefix: string, segment: string, hourStart: number): string => `${rawTablePrefix(rawPrefix, segment)}${hourPath(hourStart)}/`;

/** A quarantine object of one batch. */
export function quarantineObjectKey(quarantinePrefix: string, batch: BatchCoordinates, digest: string): string {
  return `${quarantineHourPrefix(quarantinePrefix, batch.firstArrival)}${batchFileName(batch, digest)}`;
}

/** One hour of quarantine objects: where the batches that began in the hour put what they could not land. */
export const quarantineHourPrefix = (quarantinePrefix: string, hourStart: number): string => `${quarantinePrefix}${hourPath(hourStart)}/`;

/** Where a raw object sits in the layout, read from its key. */
export interface RawObjectKeyParts {
  /** `batch`: one object per batch (every table); `table`: the first layout, one object per table per batch. */
  readonly layout: 'batch' | 'table';
  /** The table segment of a first-layout object; null for a batch object. */
  readonly tableSegment: string | null;
  /** Epoch ms of the partition hour (the batch's first arrival, truncated to the hour). */
  readonly hourStart: number;
  /** The file name without `.jsonl.gz`: `<shard>-<first seq>-<last seq>[-<digest>]`. */
  readonly name: string;
}

const TABLE_KEY = /^table=([^/]+)\/dt=(\d{4}-\d{2}-\d{2})\/hr=(\d{2})\/([^/]+)\.jsonl\.gz$/;
const BATCH_KEY = /^dt=(\d{4}-\d{2}-\d{2})\/hr=(\d{2})\/([^/]+)\.jsonl\.gz$/;

/**
 * Parses `<raw>dt=…/hr=…/<name>.jsonl.gz` (a batch object) or `<raw>table=…/dt=…/hr=…/<name>.jsonl.gz`
 * (the first layout); null for anything else (spill objects, stray files). Keys are at most 1,024
 * bytes in S3; longer text is refused before any pattern runs.
 */
export function parseRawObjectKey(rawPrefix: string, key: string): RawObjectKeyParts | null {
  if (!key.startsWith(rawPrefix) || key.length - rawPrefix.length > 4096) return null;
  const rest = key.slice(rawPrefix.length);
  const table = TABLE_KEY.exec(rest);
  const batch = table === null ? BATCH_KEY.exec(rest) : null;
  const [dt, hr, name] = table !== null ? [table[2], table[3], table[4]] : batch !== null ? [batch[1], batch[2], batch[3]] : [];
  if (dt === undefined || hr === undefined || name === undefined) return null;
  const hourStart = Date.parse(`${dt}T${hr}:00:00.000Z`);
  if (Number.isNaN(hourStart)) return null;
  return table !== null ? { layout: 'table', tableSegment: table[1] ?? '', hourStart, name } : { layout: 'batch', tableSegment: null, hourStart, name };
}

/** Whether a raw object's file name is of a batch of `shard` (either encoding). */
export function rawObjectOfShard(parts: RawObjectKeyParts, shard: string): boolean {
  return tableSegments(shard).some((segment) => parts.name.startsWith(`${segment}-`));
}

/** The digest naming a key's spilled rows: its canonical text, base64url, at most 200 characters. */
const spillKeyDigest = (keyId: string): string => Buffer.from(keyId).toString('base64url').slice(0, 200);

/** A spilled row: one object per (table, key, position). */
export function spillObjectKey(rawPrefix: string, table: string, keyId: string, position: string): string {
  return `${spillPrefix(rawPrefix, encodeSegment(table), keyId)}${position}.json.gz`;
}

/** Where every spilled row sits (the ingest's and replay's grants, and their acknowledgements). */
export const spilledRowsPrefix = (rawPrefix: string): string => `${rawPrefix}spill/`;

/** Where a key's spilled rows sit under one table segment. */
export const spillPrefix = (rawPrefix: string, segment: string, keyId: string): string => `${spilledRowsPrefix(rawPrefix)}table=${segment}/${spillKeyDigest(keyId)}/`;

/**
 * A spilled row's object key as a log line or an error may show it: the segment naming the key
 * (its canonical text in base64url, reversible) replaced by `<key>` (issue 20, item 8: no key
 * values in logs). Other keys are returned as they are.
 */
export function shownSpillKey(key: string): string {
  const at = key.indexOf('spill/table=');
  if (at < 0) return key;
  const segmentEnd = key.indexOf('/', at + 'spill/table='.length);
  const digestEnd = segmentEnd < 0 ? -1 : key.indexOf('/', segmentEnd + 1);
  return digestEnd < 0 ? key : `${key.slice(0, segmentEnd + 1)}<key>${key.slice(digestEnd)}`;
}

/** Every prefix that may hold a key's spilled rows: one per segment encoding of its table. */
export const spillPrefixes = (rawPrefix: string, table: string, keyId: string): string[] => tableSegments(table).map((segment) => spillPrefix(rawPrefix, segment, keyId));

// ---------------------------------------------------------------------------------------------
// Jobs and reports

/** The jobs whose runs keep state and results under the jobs prefix. */
export type JobRunKind = 'replay' | 'erase' | 'compaction' | 'maintenance';
/** The jobs whose runs keep scratch space and reports under the report prefix. */
export type ReportRunKind = 'reconcile' | 'snapshot';

/** Where every run of one job sits: `<jobs><kind>/` (a grant over all of them, or a check that a key is one of theirs). */
export const jobRunsPrefix = (jobsPrefix: string, kind: JobRunKind): string => `${jobsPrefix}${kind}/`;

/**
 * Where one run of a replay, an erase, a compaction or a table maintenance keeps its objects
 * (`RUN_FILES`, `RUN_FOLDERS`). A run id of `*` gives the IAM resource pattern of one object of
 * every run (lib/replay/jobs.ts): `runFile(jobRunPrefix('jobs/', 'replay', '*'), 'queries')`.
 */
export const jobRunPrefix = (jobsPrefix: string, kind: JobRunKind, runId: string): string => `${jobRunsPrefix(jobsPrefix, kind)}${runId}/`;

/** Where every run of reconcile or of snapshot detection sits: `<reports><kind>/`. */
export const reportRunsPrefix = (reportPrefix: string, kind: ReportRunKind): string => `${reportPrefix}${kind}/`;

/** Where one run of reconcile or snapshot detection keeps its scratch objects and its report. */
export const reportRunPrefix = (reportPrefix: string, kind: ReportRunKind, runId: string): string => `${reportRunsPrefix(reportPrefix, kind)}${runId}/`;

/** Where reconcile keeps a table's reports, one pair of objects per run. */
export const tableReportKey = (reportPrefix: string, table: string, runId: string, suffix: string): string => `${reportRunsPrefix(reportPrefix, 'reconcile')}${encodeURIComponent(table)}/${runId}${suffix}`;

/** Where uploaded key-set manifests go (reconcile reads them). */
export const manifestUploadsPrefix = (reportPrefix: string): string => `${reportPrefix}manifests/`;

/** Where an uploaded key-set manifest goes. */
export const manifestUploadKey = (reportPrefix: string, name: string, at: number): string => `${manifestUploadsPrefix(reportPrefix)}${at}-${name}`;

/**
 * The objects a job run keeps under its run prefix (`jobRunPrefix`, `reportRunPrefix`), by the
 * name `runFile` takes:
 * - replay: `manifest`, `keys` (the CLI's `--keys`), `queries`, `buckets` (the Map's items),
 *   `summary`, `verify` (fresh only);
 * - erase: `request` (the keys: with erase_keys the only objects that hold them), `begin`,
 *   `findQueries`, `historyQueries`, `objects` (the Rewrite Map's items), `summary`;
 * - compaction, table maintenance and snapshot detection: `queries`; snapshot detection: `report`;
 * - reconcile: `run`, `exports` (the export Map's items), `classifyQueries`, `windowQueries`,
 *   `repairKeys`, `repairQueries`, `repairOutcomes`, `report`.
 */
export const RUN_FILES = {
  begin: 'begin.json',
  buckets: 'buckets.json',
  classifyQueries: 'classify-queries.json',
  exports: 'exports.json',
  findQueries: 'find-queries.json',
  historyQueries: 'history-queries.json',
  keys: 'keys.json',
  manifest: 'manifest.json',
  objects: 'objects.jsonl',
  queries: 'queries.json',
  repairKeys: 'repair-keys.json',
  repairOutcomes: 'repair-outcomes.json',
  repairQueries: 'repair-queries.json',
  report: 'report.json',
  request: 'request.json',
  run: 'run.json',
  summary: 'summary.json',
  verify: 'verify.json',
  windowQueries: 'window-queries.json',
} as const;

export type RunFileName = keyof typeof RUN_FILES;

/** One object of a run: `runFile('jobs/erase/r1/', 'request')` is `jobs/erase/r1/request.json`. */
export const runFile = (runPrefix: string, name: RunFileName): string => `${runPrefix}${RUN_FILES[name]}`;

/**
 * The folders a job run keeps under its run prefix, by the name `runFolder` takes: `results` (one
 * object per batch or bucket applied: replay, erase), `events` (replay's selection, UNLOADed by key
 * bucket), `objects` and `found` (erase's finds, UNLOADed), `findings` (reconcile's, as parts).
 */
export const RUN_FOLDERS = {
  events: 'events/',
  findings: 'findings/',
  found: 'found/',
  objects: 'objects/',
  results: 'results/',
} as const;

export type RunFolderName = keyof typeof RUN_FOLDERS;

/** One folder of a run: `runFolder('jobs/replay/r1/', 'events')` is `jobs/replay/r1/events/`. */
export const runFolder = (runPrefix: string, name: RunFolderName): string => `${runPrefix}${RUN_FOLDERS[name]}`;

/** Where a run's per-batch results sit: list it to add them up. */
export const resultsPrefix = (runPrefix: string): string => runFolder(runPrefix, 'results');

/** The result of batch (or key bucket) `n` of a run: `<run>results/000042.json`, six digits so a listing is in batch order. */
export const resultKey = (runPrefix: string, n: number): string => `${resultsPrefix(runPrefix)}${String(n).padStart(6, '0')}.json`;

/** Part `n` of reconcile's findings: `<run>findings/part-00003.jsonl.gz`. */
export const findingsPartKey = (runPrefix: string, n: number): string => `${runFolder(runPrefix, 'findings')}part-${String(n).padStart(5, '0')}.jsonl.gz`;

// ---------------------------------------------------------------------------------------------
// History (docs/history.md)
//
//   <history>warehouse/<table>/…           the Iceberg tables (Parquet stand-ins locally): history, expected_state, truncates, table_hours
//   <history>table_side/run_id=<run>/…     reconcile's table side (the DynamoDB export, keyed as the jobs key)
//   <history>erase_keys/run_id=<run>/…     the keys of one erase run (deleted, with every version, when the run ends)
//   <history>state/compaction.json         compaction's frontier; <history>state/hours/<dt>/<hr>.json one marker per compacted hour
//   <history>unload/<job>/<run>/<part>/    the jobs' query outputs (UNLOAD needs an empty prefix: one per run and part)
//   <history>athena/                       the Athena workgroup's query results

/** The Iceberg tables' warehouse (and the local Parquet stand-in's). */
export const historyWarehousePrefix = (historyPrefix: string): string => `${historyPrefix}warehouse/`;

/** Where reconcile's table side files go: `<prefix>run_id=<run>/…`. */
export const tableSidePrefix = (historyPrefix: string): string => `${historyPrefix}table_side/`;

/** One run's partition of a table keyed by run (table_side, erase_keys): `<root>run_id=<run>/`. */
export const runPartitionPrefix = (root: string, runId: string): string => `${root}run_id=${encodeSegment(runId)}/`;

/** The table side files of one reconcile run. */
export const tableSideRunPrefix = (historyPrefix: string, runId: string): string => runPartitionPrefix(tableSidePrefix(historyPrefix), runId);

/** Where the erase runs' keys tables go: `<prefix>run_id=<run>/keys.jsonl.gz` (the Glue table `erase_keys`). */
export const eraseKeysPrefix = (historyPrefix: string): string => `${historyPrefix}erase_keys/`;

/** The keys of one erase run: the only place besides the requests that holds the keys themselves. */
export const eraseKeysRunPrefix = (historyPrefix: string, runId: string): string => runPartitionPrefix(eraseKeysPrefix(historyPrefix), runId);

/** The one object of an erase run's keys: `<history>erase_keys/run_id=<run>/keys.jsonl.gz`. */
export const eraseKeysObjectKey = (historyPrefix: string, runId: string): string => `${eraseKeysRunPrefix(historyPrefix, runId)}keys.jsonl.gz`;

/** Where compaction keeps its state (its frontier and the hour markers). */
export const compactionStatePrefix = (historyPrefix: string): string => `${historyPrefix}state/`;

/** Compaction's state: its frontier, and one marker per compacted hour. */
export const compactionFrontierKey = (historyPrefix: string): string => `${compactionStatePrefix(historyPrefix)}compaction.json`;
export const compactedHourKey = (historyPrefix: string, hourStart: number): string => `${compactionStatePrefix(historyPrefix)}hours/${hourPath(hourStart)}.json`;

/** Every job's SQL outputs (UNLOAD files), under `<history>unload/`. */
export const jobOutputsPrefix = (historyPrefix: string): string => `${historyPrefix}unload/`;

/** Every query output of one job: `<history>unload/<job>/`. */
export const jobUnloadPrefix = (historyPrefix: string, job: string): string => `${jobOutputsPrefix(historyPrefix)}${encodeSegment(job)}/`;

/** The prefix of one query output of one job run: `<history>unload/<job>/<run>/<part>/`. */
export const unloadPrefix = (historyPrefix: string, job: string, runId: string, part: string): string => `${jobUnloadPrefix(historyPrefix, job)}${encodeSegment(runId)}/${encodeSegment(part)}/`;

/**
 * The job outputs whose rows can hold keys or row values: reconcile's findings, window keys, export
 * and repair selection, and snapshot detection's orphans. The others (reconcile's counts, snapshot
 * detection's anomalies and re-snapshot counts) hold only tables, classes and numbers.
 */
export const KEYED_OUTPUT_PARTS: readonly string[] = ['findings', 'window-keys', 'export', 'repair', 'orphans'];

/** Whether an object under `<history>unload/` belongs to an output that can hold keys (`KEYED_OUTPUT_PARTS`); true for a key of another shape. */
export function mayHoldKeys(historyPrefix: string, key: string): boolean {
  const root = jobOutputsPrefix(historyPrefix);
  if (!key.startsWith(root)) return true;
  const segments = key.slice(root.length).split('/');
  if (segments.length < 4) return true;
  return KEYED_OUTPUT_PARTS.some((p) => encodeSegment(p) === segments[2]);
}

/** The Athena workgroup's result location. */
export const athenaResultsPrefix = (historyPrefix: string): string => `${historyPrefix}athena/`;

/** True when the configured format can decode Aurora DSQL records (`auto` or `aurora-dsql`): the ingest then keeps split records' parts. */
export const readsAuroraDsql = (config: { readonly format: string }): boolean => config.format === 'auto' || config.format === 'aurora-dsql';

/** Where split Aurora DSQL records' parts wait in the raw bucket (functions/adapters/split-parts-store.ts). */
export const splitPartsPrefix = (rawPrefix: string): string => `${rawPrefix}dsql-parts/`;
