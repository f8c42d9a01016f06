/**
 * The replay job on SQL (lib/replay/definitions.ts `replaySqlDefinition`): one selection query over
 * history and the raw not compacted yet, then one apply per key bucket.
 *
 *   plan      safety, ledger key, fresh table; the replay-select statement (tables, landing times,
 *             positions, keys) stored as the run's query, UNLOADing to <run>/events/ by key bucket
 *   Select    the query loop (lib/jobs/asl.ts): Athena on AWS, DuckDB locally
 *   buckets   lists the buckets the query wrote into <run>/buckets.json, the Map's ItemReader
 *   bucket    one bucket: its files merged in key and position order (bucket-merge.ts) and applied
 *             through the guarded writer; its result to <run>/results/<bucket>.json
 *   summarize and verify as job.ts's
 *
 * History holds the hours before compaction's frontier; raw the hours from it (replay-select reads
 * each hour from exactly one of them). Only the batch layout of raw is read: raw of the first,
 * per-table layout reaches replay once compaction has put it into history.
 */
import { listObjectKeys } from '../adapters/s3-list.js';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { TidemarkConfig } from '../config/types.js';
import { historyDatabase } from '../config/types.js';
import { compactionFrontierKey, parseRawObjectKey, rawBatchesPrefix, resultKey, runFile, runFolder } from '../adapters/raw-layout.js';
import { athena, buildStatements, HOUR_MS, render, type StatementArgs, type TableKeys } from '../sql/index.js';
import { applyRows, compareRows, jsonLines, mergeSorted, type ReplayRow, rowOf } from './bucket-merge.js';
import { buildReplayEngine, ledgerViewFor, replayTables } from './deps.js';
import { createFreshTable } from './fresh.js';
import { type BatchOutput, type JobContext, ReplayBatchError, type ReplayManifest, type ReplayRequest, runPrefix } from './job.js';
import type { ReplayResult } from './engine.js';
import { validateReplayRequest } from './inputs.js';
import { checkReplaySafety, parseTarget } from './safety.js';
import { getJsonIfPresent, putJson } from '../adapters/s3-json.js';

/** Athena's longest query string, in bytes (StartQueryExecution, QueryString). */
const MAX_QUERY_BYTES = 262_144;

/** The run's queries, stored for the query loop (lib/jobs/asl.ts): as functions/jobs/queries.ts stores them. */
export interface StoredQueries {
  readonly queriesKey: string;
  readonly count: number;
}

/**
 * replay-select as the query loop's `QueryRef`s (functions/jobs/sql-run.ts's shape): the statement
 * and its Athena text, every value inline. Replay may not import the jobs layer, so it renders here.
 */
function selectRefs(args: StatementArgs<'replay-select'>, database: string) {
  return buildStatements('replay-select', args).map((s, index) => {
    const r = render(s, athena(database), { inline: true });
    if (r.sql === null) throw new ReplayBatchError(`${s.name} has no Athena form`);
    const bytes = Buffer.byteLength(r.sql, 'utf8');
    if (bytes > MAX_QUERY_BYTES) throw new ReplayBatchError(`${s.name} is ${bytes} bytes of SQL, over Athena's ${MAX_QUERY_BYTES}: narrow the replay (fewer keys or tables)`);
    return { statement: { name: 'replay-select', args, index }, athena: { QueryString: r.sql } };
  });
}

/** Rows applied per engine call: one pre-read and one write round per chunk. */
export const CHUNK_ROWS = 2000;

export interface SqlPlanOutput {
  readonly runId: string;
  readonly manifestKey: string;
  /** The raw bucket: where the query's output and the Map's items are. */
  readonly bucket: string;
  readonly queries: StoredQueries;
  readonly freshTable: 'created' | 'present' | null;
  [k: string]: unknown;
}

export interface BucketsOutput {
  readonly itemsKey: string;
  readonly buckets: number;
  readonly files: number;
  [k: string]: unknown;
}

export const eventsPrefix = (config: TidemarkConfig, runId: string): string => runFolder(runPrefix(config, runId), 'events');

/**
 * The first hour history does not hold (compaction's frontier), and the oldest raw batch hour:
 * when nothing is compacted, everything is read from raw, from its oldest hour.
 */
export async function replaySources(config: TidemarkConfig, s3: S3Client, now: number): Promise<{ uncompactedFrom: number; oldestRaw: number | null; compacted: boolean }> {
  const frontier = await getJsonIfPresent<{ compactedThrough: number | null }>(s3, config.raw.bucket, compactionFrontierKey(config.history.prefix));
  const page = await s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: rawBatchesPrefix(config.raw.prefix), MaxKeys: 50 }));
  let oldestRaw: number | null = null;
  for (const o of page.Contents ?? []) {
    const parts = o.Key ? parseRawObjectKey(config.raw.prefix, o.Key) : null;
    if (parts?.layout === 'batch') {
      oldestRaw = parts.hourStart;
      break;
    }
  }
  const compacted = frontier?.compactedThrough ?? null;
  const uncompactedFrom = compacted !== null ? compacted + HOUR_MS : (oldestRaw ?? Math.floor(now / HOUR_MS) * HOUR_MS);
  return { uncompactedFrom, oldestRaw, compacted: compacted !== null };
}

/**
 * The oldest landing time a replay may reach, for the safety check: `--since`, else the oldest raw
 * hour, else (once compaction has begun, history may hold any landing time) the beginning.
 */
export function oldestLandingOf(since: number | undefined, sources: { oldestRaw: number | null; compacted: boolean }): number | null {
  return since ?? (sources.compacted ? 0 : sources.oldestRaw);
}

/** The `--keys` the CLI stored (canonical keys per table), as the statement takes them. */
async function keysOf(ctx: JobContext, request: ReplayRequest): Promise<TableKeys[] | undefined> {
  if (!request.keysKey) return undefined;
  const stored = await getJsonIfPresent<Record<string, string[]>>(ctx.clients.s3, ctx.config.raw.bucket, request.keysKey);
  if (stored === null) throw new ReplayBatchError(`the run's keys (${request.keysKey}) are gone`);
  return Object.entries(stored).map(([table, keyIds]) => ({ table, keyIds }));
}

export async function planReplaySql(ctx: JobContext, request: ReplayRequest): Promise<SqlPlanOutput> {
  const { config, clients } = ctx;
  // The CLI's rules, checked again by the state machine's first step before anything is read or
  // written: an inverted or malformed range would otherwise select nothing and succeed (issue 20, item 19).
  validateReplayRequest(config, request);
  const tables = request.tables.length > 0 ? [...request.tables] : config.tables.map((t) => t.source);
  const target = parseTarget(request.into, config.name);
  const tableConfigs = replayTables(config, tables, target);
  // The ledger key is checked before anything is written (issue 20, items 5 and 16).
  await ledgerViewFor(config, clients.dynamodb, tables, ctx.env);
  const now = request.now ?? Date.now();
  const sources = await replaySources(config, clients.s3, now);
  // Without --since, everything history and raw hold. Once compaction has begun, history may hold
  // any landing time, so the safety check judges an unbounded live replay as reaching the oldest.
  const since = request.since ?? 0;
  const until = request.until ?? now + 1;
  const oldestLanding = oldestLandingOf(request.since, sources);
  checkReplaySafety({ config, tables, target, oldestLanding, now, force: request.force === true });
  let freshTable: SqlPlanOutput['freshTable'] = null;
  if (target.kind === 'fresh') {
    const [only] = tableConfigs.keys();
    const live = config.tables.find((t) => t.source === only);
    if (live) freshTable = await createFreshTable(clients.dynamodb, { config, live, target, runId: request.runId });
  }
  const keys = await keysOf(ctx, request);
  const output = `s3://${config.raw.bucket}/${eventsPrefix(config, request.runId)}`;
  const queries = selectRefs(
    {
      tables,
      since,
      until,
      buckets: config.history.replayBuckets,
      uncompactedFrom: sources.uncompactedFrom,
      output,
      ...(request.fromPosition !== undefined ? { fromPosition: request.fromPosition } : {}),
      ...(request.toPosition !== undefined ? { toPosition: request.toPosition } : {}),
      ...(keys !== undefined ? { keys } : {}),
    },
    historyDatabase(config),
  );
  const prefix = runPrefix(config, request.runId);
  const queriesKey = runFile(prefix, 'queries');
  await putJson(clients.s3, config.raw.bucket, queriesKey, queries);
  const manifest: ReplayManifest = { runId: request.runId, request, tables, target, objects: 0, oldestLanding: since, sql: { eventsPrefix: eventsPrefix(config, request.runId), buckets: config.history.replayBuckets, uncompactedFrom: sources.uncompactedFrom } };
  const manifestKey = runFile(prefix, 'manifest');
  await putJson(clients.s3, config.raw.bucket, manifestKey, manifest);
  ctx.log.info('replay planned', { runId: request.runId, tables, buckets: config.history.replayBuckets, uncompactedFrom: sources.uncompactedFrom, target: request.into });
  return { runId: request.runId, manifestKey, bucket: config.raw.bucket, queries: { queriesKey, count: queries.length }, freshTable };
}

async function manifestOf(ctx: JobContext, manifestKey: string): Promise<ReplayManifest> {
  const m = await getJsonIfPresent<ReplayManifest>(ctx.clients.s3, ctx.config.raw.bucket, manifestKey);
  if (m === null || !m.sql) throw new ReplayBatchError(`${manifestKey} is not the manifest of a replay on SQL`);
  return m;
}

/** `<events>bucket=<n>/…` → n, or null for anything else under the prefix. */
function bucketOfKey(prefix: string, key: string): number | null {
  const rest = key.slice(prefix.length);
  if (!rest.startsWith('bucket=')) return null;
  const end = rest.indexOf('/', 7);
  const n = end > 7 ? Number(rest.slice(7, end)) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** The buckets the query wrote files to, as the Map's items (a JSON array in S3). */
export async function listReplayBuckets(ctx: JobContext, input: { manifestKey: string }): Promise<BucketsOutput> {
  const m = await manifestOf(ctx, input.manifestKey);
  const seen = new Set<number>();
  let files = 0;
  for await (const key of listObjectKeys(ctx.clients.s3, ctx.config.raw.bucket, m.sql.eventsPrefix)) {
    const b = bucketOfKey(m.sql.eventsPrefix, key);
    if (b === null) continue;
    seen.add(b);
    files++;
  }
  const items = [...seen].sort((a, b) => a - b).map((bucket) => ({ bucket }));
  const itemsKey = runFile(runPrefix(ctx.config, m.runId), 'buckets');
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, itemsKey, items);
  ctx.log.info('replay selected', { runId: m.runId, buckets: items.length, files });
  return { itemsKey, buckets: items.length, files };
}

async function* rowsOfFile(s3: S3Client, bucket: string, key: string): AsyncGenerator<ReplayRow> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  // In Node the SDK's body is a stream: read a line at a time. Any other body is read whole.
  const body = got.Body instanceof Readable ? got.Body : Readable.from([Buffer.from((await got.Body?.transformToByteArray()) ?? [])]);
  let n = 0;
  for await (const line of jsonLines(body, key)) yield rowOf(line, `${key} row ${++n}`);
}

/** Applies one bucket: its files merged by key and position, in chunks, through the guarded writer. */
export async function replayBucket(ctx: JobContext, input: { manifestKey: string; bucket: number }, options: { dryRun?: boolean } = {}): Promise<BatchOutput & { rows: number; result: ReplayResult }> {
  const m = await manifestOf(ctx, input.manifestKey);
  if (!Number.isSafeInteger(input.bucket) || input.bucket < 0 || input.bucket >= m.sql.buckets) throw new ReplayBatchError(`run ${m.runId} has no bucket ${input.bucket}`);
  const prefix = `${m.sql.eventsPrefix}bucket=${input.bucket}/`;
  const files: string[] = [];
  for await (const key of listObjectKeys(ctx.clients.s3, ctx.config.raw.bucket, prefix)) files.push(key);
  const ledger = await ledgerViewFor(ctx.config, ctx.clients.dynamodb, m.tables, ctx.env);
  const engine = buildReplayEngine(ctx.storage, { tables: replayTables(ctx.config, m.tables, m.target), target: m.target, ledger, log: ctx.log, ...(ctx.keyRef ? { keyRef: ctx.keyRef } : {}) });
  // The statement already selected by time, position and keys: the engine checks only the tables (and the ledger).
  const rows = mergeSorted(
    files.map((key) => rowsOfFile(ctx.clients.s3, ctx.config.raw.bucket, key)),
    compareRows,
  );
  const applied = await applyRows(engine, rows, { tables: m.tables }, { chunkRows: CHUNK_ROWS, ...(options.dryRun ? { dryRun: true } : {}) });
  const result: ReplayResult = { tally: applied.tally, dryRun: applied.dryRun, failures: applied.failures };
  if (!options.dryRun) {
    await putJson(ctx.clients.s3, ctx.config.raw.bucket, resultKey(runPrefix(ctx.config, m.runId), input.bucket), {
      bucket: input.bucket,
      files: files.length,
      rows: applied.rows,
      tally: applied.tally,
      failures: applied.failures,
    });
  }
  if (applied.failures.length > 0) throw new ReplayBatchError(`bucket ${input.bucket} of run ${m.runId}: ${applied.failures.length} writes failed (see its result object)`);
  return { batch: input.bucket, tally: applied.tally, failures: 0, rows: applied.rows, result };
}
