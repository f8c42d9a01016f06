/**
 * Erase's SQL (functions/sql/statements/erase-*.ts, maintenance.ts), as the erase state machine's
 * query loops run it (lib/jobs/asl.ts `queryLoop`: Athena on AWS, DuckDB locally), and what its
 * Lambda reads back:
 *
 *   Find     erase-find-raw UNLOADs the raw objects still in S3 that hold a line of a run's key
 *            (batch objects over the hours raw holds, from its oldest hour, the compacted hours'
 *            through history's raw_object; first-layout objects of the run's tables, from each
 *            table's oldest) to `<run>/objects/`; erase-find-history
 *            UNLOADs per request how many history lines its key has and their highest position to
 *            `<run>/found/`
 *   objects  the objects found, in batches of `replay.objectsPerBatch`, one JSON line per batch in
 *            `<run>/objects.jsonl`: the Rewrite Map's ItemReader reads it
 *   History  erase-history and erase-expected (the keys' lines out of history and expected_state),
 *            OPTIMIZE of both narrowed to the run's tables (the files holding deleted rows rewritten
 *            without them) and VACUUM (snapshots past the tables' retention expired, the files only
 *            they reference deleted). On the Parquet stand-in the MERGEs rewrite the partitions and
 *            remove the old files with every version; OPTIMIZE and VACUUM have nothing to do
 *
 * The queries name the run and its tables, never a key: they join `erase_keys`. Each query is
 * stored as a `QueryRef` (functions/jobs/sql-run.ts's shape, rendered here: erase may not import
 * the jobs layer) and fetched one at a time by `eraseQueryAt`, so the state holds an index and a
 * count.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { gunzipSync } from 'node:zlib';
import type { TidemarkConfig } from '../config/types.js';
import { historyDatabase } from '../config/types.js';
import { TidemarkError } from '../core/errors.js';
import { hasLateObject, oldestBatchHour, oldestHourUnder, readCompactionFrontier, readHourMarker } from '../adapters/compaction-state.js';
import { jobRunPrefix, jobRunsPrefix, rawTablePrefix, runFile, runFolder, tableSegments } from '../adapters/raw-layout.js';
import { mapLimit } from '../core/concurrency.js';
import { listObjectKeys } from '../adapters/s3-list.js';
import { athena, buildStatements, HOUR_MS, type LegacyTable, render, type StatementArgs, type StatementName } from '../sql/index.js';
import type { Log } from '../telemetry/sinks.js';

/** Athena's longest query string, in bytes (StartQueryExecution, QueryString). */
const MAX_QUERY_BYTES = 262_144;
/** At most this many Map items (batches of objects): a batch grows past `objectsPerBatch` beyond it. */
const MAX_BATCHES = 5000;

export class EraseQueryError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'EraseQueryError';
  }
}

/** What a step needs here: as erase.ts's EraseContext. */
interface Ctx {
  readonly config: TidemarkConfig;
  readonly clients: { readonly s3: S3Client };
  readonly log: Log;
}

/** A stored list of queries, as the query loop takes it. */
export interface StoredQueries {
  readonly queriesKey: string;
  readonly count: number;
}

export interface EraseQueries {
  /** erase-find-raw, erase-find-history. */
  readonly find: StoredQueries;
  /** erase-history, erase-expected, OPTIMIZE and VACUUM of both. */
  readonly history: StoredQueries;
}

/** A query of the loop: the statement (name, arguments, index) and its Athena text, every value inline. */
export interface EraseQueryRef {
  readonly statement: { readonly name: StatementName; readonly args: Record<string, unknown>; readonly index: number };
  readonly athena: { readonly QueryString: string };
}

const runPrefix = (config: TidemarkConfig, runId: string) => jobRunPrefix(config.replay.jobsPrefix, 'erase', runId);
export const objectsOutputPrefix = (config: TidemarkConfig, runId: string) => runFolder(runPrefix(config, runId), 'objects');
export const foundOutputPrefix = (config: TidemarkConfig, runId: string) => runFolder(runPrefix(config, runId), 'found');
const s3Uri = (config: TidemarkConfig, key: string) => `s3://${config.raw.bucket}/${key}`;

function refs<N extends StatementName>(name: N, args: StatementArgs<N>, database: string): EraseQueryRef[] {
  return buildStatements(name, args).map((s, index) => {
    const r = render(s, athena(database), { inline: true });
    if (r.sql === null) throw new EraseQueryError(`${s.name} has no Athena form`);
    const bytes = Buffer.byteLength(r.sql, 'utf8');
    if (bytes > MAX_QUERY_BYTES) throw new EraseQueryError(`${s.name} is ${bytes} bytes of SQL, over Athena's ${MAX_QUERY_BYTES}`);
    return { statement: { name, args: args as unknown as Record<string, unknown>, index }, athena: { QueryString: r.sql } };
  });
}

const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** Compacted hours of the grace whose listing is read at once. */
const HOUR_LISTINGS_AT_ONCE = 8;

/**
 * What erase-find-raw reads: batch objects from the oldest hour raw holds (compaction deletes
 * hours past the grace; history keeps their lines) to now, and the first layout's objects of the
 * run's tables that have any (compaction never deletes those), from each one's oldest hour.
 *
 * Of the batch hours, those compacted (up to the frontier) and not yet cleaned past the grace are
 * found through history's `raw_object` instead of their raw JSON read whole, except the late ones:
 * an hour without a marker, or holding an object modified after it (a late batch, a rewrite by an
 * earlier erasure), whose raw is read too. A listing of each such hour, up to its first late
 * object, tells them apart, as compaction's own late scan does, over the same window
 * (`history.compaction.lateScanHours`): the raw of a compacted hour older than it is read unlisted.
 */
async function rawRange(ctx: Ctx, tables: readonly string[], now: number): Promise<Pick<StatementArgs<'erase-find-raw'>, 'since' | 'until' | 'legacy' | 'compacted'>> {
  const until = hourOf(now);
  const since = Math.min((await oldestBatchHour(ctx.clients.s3, ctx.config)) ?? until, until);
  const legacy = await legacyRange(ctx, tables, until);
  const compacted = await compactedRange(ctx, since, until);
  return { since, until, ...(legacy ? { legacy } : {}), ...(compacted ? { compacted } : {}) };
}

/** The first layout's objects of the run's tables that have any, from the oldest of them to `until`; undefined when none has. */
async function legacyRange(ctx: Ctx, tables: readonly string[], until: number): Promise<StatementArgs<'erase-find-raw'>['legacy']> {
  const { config } = ctx;
  const legacy: LegacyTable[] = [];
  let since = until;
  for (const source of tables) {
    const table = config.tables.find((t) => t.source === source);
    if (!table) continue;
    let oldest: number | null = null;
    for (const segment of tableSegments(source)) {
      const h = await oldestHourUnder(ctx.clients.s3, config.raw, rawTablePrefix(config.raw.prefix, segment), 'table');
      if (h !== null && (oldest === null || h < oldest)) oldest = h;
    }
    if (oldest === null) continue;
    legacy.push({ table: source, segments: tableSegments(source), key: [...table.key] });
    since = Math.min(since, oldest);
  }
  return legacy.length > 0 ? { tables: legacy, since, until } : undefined;
}

/** The batch hours from `since` history stands for (see rawRange), and the late ones among them; undefined when none is compacted. */
async function compactedRange(ctx: Ctx, since: number, until: number): Promise<StatementArgs<'erase-find-raw'>['compacted']> {
  const { config } = ctx;
  const { s3 } = ctx.clients;
  const frontier = await readCompactionFrontier(s3, config);
  // Hours up to cleanedThrough hold only the objects compaction kept past the grace (late ones): raw is read for them.
  const from = frontier.cleanedThrough !== null ? Math.max(since, frontier.cleanedThrough + HOUR_MS) : since;
  if (frontier.compactedThrough === null || frontier.compactedThrough < from) return undefined;
  const through = Math.min(frontier.compactedThrough, until);
  const hours: number[] = [];
  for (let h = from; h <= through; h += HOUR_MS) hours.push(h);
  // Compaction looks for late objects over its late-scan window only: an older hour's are never compacted, so its raw is read unlisted.
  const window = Math.max(1, config.history.compaction.lateScanHours ?? config.history.rawGraceDays * 24);
  const oldestListed = frontier.compactedThrough - (window - 1) * HOUR_MS;
  const late = await mapLimit(hours, HOUR_LISTINGS_AT_ONCE, async (h) => {
    if (h < oldestListed) return h;
    const marker = await readHourMarker(s3, config, h);
    if (marker === null) return h;
    return (await hasLateObject(s3, config, h, marker)) ? h : null;
  });
  return { from, through, late: late.filter((h): h is number => h !== null) };
}

async function store(s3: S3Client, bucket: string, key: string, queries: readonly EraseQueryRef[]): Promise<StoredQueries> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(queries), ContentType: 'application/json' }));
  return { queriesKey: key, count: queries.length };
}

/** Stores the run's Find and History queries (begin calls it once the run's keys are in erase_keys). */
export async function eraseQueries(ctx: Ctx, input: { runId: string; tables: readonly string[]; now: number }): Promise<EraseQueries> {
  const { config } = ctx;
  const db = historyDatabase(config);
  const run = { runId: input.runId, tables: [...input.tables] };
  const range = await rawRange(ctx, input.tables, input.now);
  const find = [
    ...refs('erase-find-raw', { ...run, ...range, output: s3Uri(config, objectsOutputPrefix(config, input.runId)) }, db),
    ...refs('erase-find-history', { ...run, output: s3Uri(config, foundOutputPrefix(config, input.runId)) }, db),
  ];
  const history = [
    ...refs('erase-history', run, db),
    ...refs('erase-expected', run, db),
    ...refs('optimize', { table: 'history', tables: run.tables }, db),
    ...refs('optimize', { table: 'expected_state', tables: run.tables }, db),
    ...refs('vacuum', { table: 'history' }, db),
    ...refs('vacuum', { table: 'expected_state' }, db),
  ];
  const prefix = runPrefix(config, input.runId);
  return { find: await store(ctx.clients.s3, config.raw.bucket, runFile(prefix, 'findQueries'), find), history: await store(ctx.clients.s3, config.raw.bucket, runFile(prefix, 'historyQueries'), history) };
}

const cache = new Map<string, readonly EraseQueryRef[]>();

/** The query loop's fetch (`${JobQueryAtFunction}` of the erase machine): the query at `index`, and whether another follows. */
export async function eraseQueryAt(ctx: Ctx, input: { queriesKey: string; index: number; count: number }): Promise<{ query: EraseQueryRef; next: number; more: boolean }> {
  const root = jobRunsPrefix(ctx.config.replay.jobsPrefix, 'erase');
  if (typeof input.queriesKey !== 'string' || !input.queriesKey.startsWith(root)) throw new EraseQueryError(`the erase function reads only the erase runs' queries (under ${root})`);
  let queries = cache.get(input.queriesKey);
  if (!queries) {
    queries = JSON.parse((await bodyOf(ctx.clients.s3, ctx.config.raw.bucket, input.queriesKey)).toString('utf8')) as EraseQueryRef[];
    if (cache.size > 16) cache.clear();
    cache.set(input.queriesKey, queries);
  }
  const query = queries[input.index];
  if (!query) throw new EraseQueryError(`no query ${input.index} in ${input.queriesKey} (it holds ${queries.length})`);
  return { query, next: input.index + 1, more: input.index + 1 < queries.length };
}

async function bodyOf(s3: S3Client, bucket: string, key: string): Promise<Buffer> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
}

/** Every row of the UNLOAD files under a prefix (gzip JSON Lines). */
async function* outputRows(ctx: Ctx, prefix: string): AsyncGenerator<Record<string, unknown>> {
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  for await (const key of listObjectKeys(s3, bucket, prefix)) {
    for (const line of (await bodyOf(s3, bucket, key)).toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      yield JSON.parse(line) as Record<string, unknown>;
    }
  }
}

export interface ObjectsOutput {
  readonly bucket: string;
  /** `<run>/objects.jsonl`: one line per batch, `{ batch, objects }`. */
  readonly itemsKey: string;
  readonly objects: number;
  readonly batches: number;
  [k: string]: unknown;
}

/** The objects erase-find-raw found, in batches, as the Rewrite Map's items. */
export async function listEraseObjects(ctx: Ctx, input: { runId: string }): Promise<ObjectsOutput> {
  const { config } = ctx;
  const seen = new Set<string>();
  for await (const row of outputRows(ctx, objectsOutputPrefix(config, input.runId))) if (typeof row.raw_object === 'string') seen.add(row.raw_object);
  const objects = [...seen].sort();
  const per = Math.max(config.replay.objectsPerBatch, Math.ceil(objects.length / MAX_BATCHES));
  const lines: string[] = [];
  for (let i = 0; i < objects.length; i += per) lines.push(JSON.stringify({ batch: lines.length, objects: objects.slice(i, i + per) }));
  const itemsKey = runFile(runPrefix(config, input.runId), 'objects');
  await ctx.clients.s3.send(new PutObjectCommand({ Bucket: config.raw.bucket, Key: itemsKey, Body: lines.length > 0 ? `${lines.join('\n')}\n` : '', ContentType: 'application/x-ndjson' }));
  ctx.log.info('erase found', { runId: input.runId, objects: objects.length, batches: lines.length });
  return { bucket: config.raw.bucket, itemsKey, objects: objects.length, batches: lines.length };
}

/** What erase-find-history found, per request (its index as text): the key's history lines and their highest position. */
export async function readFound(ctx: Ctx, runId: string): Promise<Map<string, { lines: number; maxPosition: string }>> {
  const out = new Map<string, { lines: number; maxPosition: string }>();
  for await (const row of outputRows(ctx, foundOutputPrefix(ctx.config, runId))) {
    const request = String(row.request);
    const prev = out.get(request) ?? { lines: 0, maxPosition: '' };
    const max = typeof row.max_position === 'string' ? row.max_position : '';
    const next = { lines: prev.lines + Number(row.lines ?? 0), maxPosition: prev.maxPosition };
    if (max > next.maxPosition) next.maxPosition = max;
    out.set(request, next);
  }
  return out;
}
