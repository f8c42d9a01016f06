/**
 * The replay job's steps, shared by the Step Functions tasks on AWS and the local run of the same
 * definition (bin/local/stepfunctions.ts):
 *
 *   plan      list the selected tables' raw objects, check safety, create a fresh table, write the
 *             manifest (batches of raw object keys) to S3, return the batch numbers as Map items
 *   batch     replay one batch of objects (engine.ts) and write its result to S3
 *   summarize add the batch results up, write the summary next to them
 *   verify    (fresh only) full diff of fresh against live, and the steps to switch readers
 *
 * S3 layout, in the raw bucket: <jobsPrefix>replay/<runId>/{manifest.json, keys.json,
 * results/<batch>.json, summary.json}. Items stay tiny (a batch number), so the Map's input never
 * nears Step Functions' payload limit; the manifest holds the object keys.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../config/types.js';
import { TidemarkError } from '../core/errors.js';
import { jobRunPrefix } from '../adapters/raw-layout.js';
import { listRawObjects, parseRawObject, type RawObjectRef, RawRecordSet, readRawObject } from '../adapters/raw-reader.js';
import type { Storage } from '../adapters/storage.js';
import type { KeyRef, Log } from '../telemetry/sinks.js';
import { addTally, emptyTally, type ReplayResult, type ReplayTally } from './engine.js';
import { buildReplayEngine, ledgerViewFor, type ReplayClients, replayTables } from './deps.js';
import { createFreshTable, type DiffReport, diffTables, switchSteps } from './fresh.js';
import { checkReplaySafety, parseTarget, type ReplayTarget } from './safety.js';
import type { ReplaySelection } from './selection.js';
import { validateReplayRequest } from './inputs.js';

/** What the CLI (or an operator starting the state machine) asks for. Times are epoch ms. */
export interface ReplayRequest {
  readonly runId: string;
  /** Source tables; empty means every configured table. */
  readonly tables: readonly string[];
  readonly since?: number;
  readonly until?: number;
  readonly fromPosition?: string;
  readonly toPosition?: string;
  /** Canonical keys per table, stored by the CLI at <run>/keys.json when `--keys` was given. */
  readonly keysKey?: string;
  /** `live` or `fresh:<table>`. */
  readonly into: string;
  readonly force?: boolean;
  /** Evaluation time for the safety check. @default Date.now() */
  readonly now?: number;
}

export interface ReplayManifest {
  readonly runId: string;
  readonly request: ReplayRequest;
  readonly tables: readonly string[];
  readonly target: ReplayTarget;
  readonly objects: number;
  readonly bytes: number;
  readonly oldestLanding: number | null;
  readonly batches: readonly (readonly string[])[];
  /** A replay on SQL (sql-job.ts): where the selection's rows are, by key bucket; batches is empty. */
  readonly sql?: { readonly eventsPrefix: string; readonly buckets: number; readonly uncompactedFrom: number };
}

export interface PlanOutput {
  readonly runId: string;
  readonly manifestKey: string;
  readonly objects: number;
  readonly batches: number[];
  readonly freshTable: 'created' | 'present' | null;
  [k: string]: unknown;
}

export interface BatchOutput {
  readonly batch: number;
  readonly tally: ReplayTally;
  readonly failures: number;
  [k: string]: unknown;
}

export interface ReplaySummary {
  readonly runId: string;
  readonly target: string;
  readonly tables: readonly string[];
  readonly objects: number;
  readonly batches: number;
  readonly batchesDone: number;
  readonly tally: ReplayTally;
  readonly summaryKey: string;
  [k: string]: unknown;
}

export class ReplayBatchError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayBatchError';
  }
}

/** What every step of a replay run works with; `replayContext` (functions/composition.ts) builds it. */
export interface JobContext {
  readonly config: TidemarkConfig;
  readonly clients: ReplayClients;
  readonly storage: Storage;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. @default none */
  readonly keyRef?: KeyRef;
  readonly env?: NodeJS.ProcessEnv;
}

/** Most Map items a run makes; past it, batches grow. Each item is a small number. */
const MAX_ITEMS = 5000;

export const runPrefix = (config: TidemarkConfig, runId: string) => jobRunPrefix(config.replay.jobsPrefix, 'replay', runId);

async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(value), ContentType: 'application/json' }));
}

async function getJson<T>(s3: S3Client, bucket: string, key: string): Promise<T> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as T;
}

/** Splits objects into batches of about `size`, more per batch when there would be too many items. */
export function batchObjects(objects: readonly RawObjectRef[], size: number): string[][] {
  const per = Math.max(size, Math.ceil(objects.length / MAX_ITEMS));
  const out: string[][] = [];
  for (let i = 0; i < objects.length; i += per) out.push(objects.slice(i, i + per).map((o) => o.key));
  return out;
}

export async function planReplay(ctx: JobContext, request: ReplayRequest): Promise<PlanOutput> {
  const { config, clients } = ctx;
  validateReplayRequest(config, request);
  const tables = request.tables.length > 0 ? [...request.tables] : config.tables.map((t) => t.source);
  const target = parseTarget(request.into, config.name);
  const tableConfigs = replayTables(config, tables, target);
  // The ledger key is checked before anything is written: without it (or with a wrong one) every
  // batch would fail on it, or erased rows would come back (issue 20, item 16).
  await ledgerViewFor(config, clients.dynamodb, tables, ctx.env);
  // A batch object holds every table's lines, so it is listed once per table: keep it once.
  const byKey = new Map<string, RawObjectRef>();
  for (const table of tables) {
    for (const o of await listRawObjects(clients.s3, { bucket: config.raw.bucket, prefix: config.raw.prefix, table, since: request.since, until: request.until })) byKey.set(o.key, o);
  }
  const objects = [...byKey.values()].sort((a, b) => a.hourStart - b.hourStart || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  // No spread into Math.min: a year of objects is past the call stack's argument limit.
  const oldestListed = objects.reduce<number | null>((min, o) => (min === null || o.hourStart < min ? o.hourStart : min), null);
  const oldestLanding = oldestListed === null ? null : Math.max(oldestListed, request.since ?? oldestListed);
  checkReplaySafety({ config, tables, target, oldestLanding, now: request.now ?? Date.now(), force: request.force === true });
  let freshTable: PlanOutput['freshTable'] = null;
  if (target.kind === 'fresh') {
    const [only] = tableConfigs.keys();
    const live = config.tables.find((t) => t.source === only);
    if (live) freshTable = await createFreshTable(clients.dynamodb, { config, live, target, runId: request.runId });
  }
  const batches = batchObjects(objects, config.replay.objectsPerBatch);
  const manifest: ReplayManifest = {
    runId: request.runId,
    request,
    tables,
    target,
    objects: objects.length,
    bytes: objects.reduce((n, o) => n + o.size, 0),
    oldestLanding,
    batches,
  };
  const manifestKey = `${runPrefix(config, request.runId)}manifest.json`;
  await putJson(clients.s3, config.raw.bucket, manifestKey, manifest);
  ctx.log.info('replay planned', { runId: request.runId, tables, objects: objects.length, batches: batches.length, target: request.into });
  return { runId: request.runId, manifestKey, objects: objects.length, batches: batches.map((_b, i) => i), freshTable };
}

const manifests = new Map<string, ReplayManifest>();

async function manifestOf(ctx: JobContext, manifestKey: string): Promise<ReplayManifest> {
  const cached = manifests.get(manifestKey);
  if (cached) return cached;
  const m = await getJson<ReplayManifest>(ctx.clients.s3, ctx.config.raw.bucket, manifestKey);
  manifests.set(manifestKey, m);
  return m;
}

async function selectionOf(ctx: JobContext, m: ReplayManifest): Promise<ReplaySelection> {
  const r = m.request;
  let keys: Map<string, Set<string>> | undefined;
  if (r.keysKey) {
    const stored = await getJson<Record<string, string[]>>(ctx.clients.s3, ctx.config.raw.bucket, r.keysKey);
    keys = new Map(Object.entries(stored).map(([t, list]) => [t, new Set(list)]));
  }
  return { tables: m.tables, since: r.since, until: r.until, fromPosition: r.fromPosition, toPosition: r.toPosition, keys };
}

/** Replays the objects of one batch; throws ReplayBatchError (after storing the result) if any write failed. */
export async function replayBatch(ctx: JobContext, input: { manifestKey: string; batch: number }, options: { dryRun?: boolean } = {}): Promise<BatchOutput & { result: ReplayResult }> {
  const m = await manifestOf(ctx, input.manifestKey);
  const keys = m.batches[input.batch];
  if (!keys) throw new ReplayBatchError(`run ${m.runId} has no batch ${input.batch}`);
  const selection = await selectionOf(ctx, m);
  const ledger = await ledgerViewFor(ctx.config, ctx.clients.dynamodb, m.tables, ctx.env);
  const engine = buildReplayEngine(ctx.storage, { tables: replayTables(ctx.config, m.tables, m.target), target: m.target, ledger, log: ctx.log, ...(ctx.keyRef ? { keyRef: ctx.keyRef } : {}) });
  const set = new RawRecordSet();
  // Only the replayed tables' records: a batch object holds every table's.
  for (const key of keys) set.add(parseRawObject(await readRawObject(ctx.clients.s3, ctx.config.raw.bucket, key), key), m.tables);
  const result = await engine.replay(
    set.records().map((r) => r.record),
    selection,
    options,
  );
  result.tally.copies += set.duplicates;
  result.tally.badLines += set.problems.length;
  for (const p of set.problems) ctx.log.warn('raw line not readable', { object: p.objectKey, line: p.line, reason: p.reason });
  if (!options.dryRun) {
    await putJson(ctx.clients.s3, ctx.config.raw.bucket, `${runPrefix(ctx.config, m.runId)}results/${String(input.batch).padStart(6, '0')}.json`, {
      batch: input.batch,
      objects: keys,
      tally: result.tally,
      failures: result.failures,
    });
  }
  if (result.failures.length > 0) throw new ReplayBatchError(`batch ${input.batch} of run ${m.runId}: ${result.failures.length} writes failed (see its result object)`);
  return { batch: input.batch, tally: result.tally, failures: 0, result };
}

export async function summarizeReplay(ctx: JobContext, input: { manifestKey: string }): Promise<ReplaySummary> {
  const m = await manifestOf(ctx, input.manifestKey);
  const prefix = `${runPrefix(ctx.config, m.runId)}results/`;
  const tally = emptyTally();
  let done = 0;
  let token: string | undefined;
  do {
    const page = await ctx.clients.s3.send(new ListObjectsV2Command({ Bucket: ctx.config.raw.bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (!o.Key) continue;
      const r = await getJson<{ tally: ReplayTally }>(ctx.clients.s3, ctx.config.raw.bucket, o.Key);
      addTally(tally, { ...emptyTally(), ...r.tally });
      done++;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  const summaryKey = `${runPrefix(ctx.config, m.runId)}summary.json`;
  const summary: ReplaySummary = {
    runId: m.runId,
    target: m.request.into,
    tables: m.tables,
    objects: m.objects,
    // On SQL a batch is a key bucket the selection wrote to: one result each.
    batches: m.sql ? done : m.batches.length,
    batchesDone: done,
    tally,
    summaryKey,
  };
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, summaryKey, summary);
  return summary;
}

/** After a fresh replay: the full diff and the switch-over steps, stored next to the summary. */
export async function verifyFresh(ctx: JobContext, input: { manifestKey: string }): Promise<{ diff: DiffReport | null; steps: string[] }> {
  const m = await manifestOf(ctx, input.manifestKey);
  if (m.target.kind !== 'fresh') return { diff: null, steps: [] };
  const table = ctx.config.tables.find((t) => t.source === m.tables[0]);
  if (!table) throw new ReplayBatchError(`table ${m.tables[0]} is no longer configured`);
  const diff = await diffTables(ctx.clients.dynamodb, table, m.target.target);
  const steps = switchSteps(table, m.target.target, diff, m.target.createdBy ?? m.runId);
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, `${runPrefix(ctx.config, m.runId)}verify.json`, { diff, steps });
  return { diff, steps };
}
