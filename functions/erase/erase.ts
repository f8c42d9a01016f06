/**
 * Erase one key everywhere tidemark keeps it, in the order that never lets it come back:
 *
 *   begin    ledger entry first (keyed hash, stored position, time, reason), then the item: deleted,
 *            and by default replaced by a bare tombstone (key and position, no values) for
 *            tombstoneTtlDays so a redelivered older change cannot revive it through ingest
 *   find     list the table's raw objects and HEAD each: the key filter in its metadata (written
 *            at landing) says whether the key may be inside; only those are read
 *   rewrite  per object: drop the key's lines (and every line of a record that carried it: a
 *            multi-row message holds the key's values too), PUT the object back with a new key
 *            filter, delete its older versions; spilled rows of the key are deleted
 *   finish   raise the ledger to the highest position found in raw, delete the item again if a
 *            concurrent replay revived it, blank quarantine lines that mention the key, remove the
 *            records that carry it from the on-failure objects (copies.ts), summary
 *
 * Every object rewrite is conditional (`If-Match` on the ETag read, conditional-rewrite.ts): two
 * erasures of keys in one object each re-read and re-decide instead of undoing the other's.
 *
 * A key found nowhere (no item, no raw line, no spilled row, no copy) is reported as not found and
 * leaves no ledger entry, unless the request asked to block its future arrivals (`blockFuture`):
 * then the ledger and a tombstone that never expires hold it at a position above every other.
 *
 * The key itself only ever sits in the request object (<jobsPrefix>erase/<run>/request.json), which
 * finish deletes; manifests, results, summaries and logs carry the keyed hash only.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { asError, errorMessage, TidemarkError } from '../core/errors.js';
import { type JsonObject, parseJson } from '../core/json.js';
import { keyId, normalizeKey } from '../core/keys.js';
import { keyAttributes, META } from '../adapters/item-codec.js';
import { jobRunPrefix } from '../adapters/raw-layout.js';
import { listRawObjects } from '../adapters/raw-reader.js';
import { rewriteIfUnchanged } from '../adapters/conditional-rewrite.js';
import type { Log } from '../telemetry/sinks.js';
import { mapLimit } from '../core/concurrency.js';
import { canonicalKeyText, keyFilterMetadata, mayContainKey } from '../core/key-filter.js';
import { BLOCK_ALL_POSITION, EraseLedger, type LedgerKeyring, loadLedgerKeys } from '../adapters/erase-ledger.js';
import { deleteSpilled, type ErasedKey, eraseFromOnFailure, eraseFromQuarantine, eraseFromReports } from './copies.js';
import { listObjectKeys } from '../adapters/s3-list.js';

export { mentionsKey } from './copies.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
const HEAD_CONCURRENCY = 16;

export class EraseError extends TidemarkError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EraseError';
  }
}

export interface EraseRequest {
  readonly table: string;
  readonly key: JsonObject;
  readonly reason: string;
  /**
   * Refuse the key's future arrivals too: the ledger and a tombstone that never expires hold it
   * at a position above every other, found or not. @default false
   */
  readonly blockFuture?: boolean;
}

export interface EraseContext {
  readonly config: TidemarkConfig;
  readonly clients: { readonly dynamodb: DynamoDBClient; readonly s3: S3Client };
  readonly log: Log;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
}

interface Resolved {
  readonly table: TableConfig;
  readonly canonical: string;
  readonly hash: string;
  /** The ledger key that made `hash`. */
  readonly keyId: string;
  readonly request: EraseRequest;
}

export const erasePrefix = (config: TidemarkConfig, runId: string) => jobRunPrefix(config.replay.jobsPrefix, 'erase', runId);

async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(value), ContentType: 'application/json' }));
}

async function getJson<T>(s3: S3Client, bucket: string, key: string): Promise<T> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as T;
}

/**
 * Validates the request completely (table, key columns, reason, the ledger key and its fingerprint)
 * and only then stores it (the only place the key is written); returns its S3 key. A request that
 * cannot run leaves nothing behind.
 */
export async function submitErase(ctx: EraseContext, runId: string, request: EraseRequest): Promise<string> {
  if (request.reason.trim() === '') throw new EraseError('an erase needs a reason (--reason), kept in the ledger');
  canonicalOf(resolveTable(ctx.config, request.table), request.key);
  await ledgerKeysOf(ctx);
  const key = `${erasePrefix(ctx.config, runId)}request.json`;
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, key, request);
  return key;
}

/** Deletes the request object (and its versions): every run ends with it gone, failed or not. */
export async function abandonErase(ctx: EraseContext, input: { requestKey: string }): Promise<{ requestDeleted: true }> {
  await ctx.clients.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.raw.bucket, Key: input.requestKey }));
  await deleteOlderVersions(ctx.clients.s3, ctx.config.raw.bucket, input.requestKey, undefined, true);
  return { requestDeleted: true };
}

/** The canonical text of a request's key; EraseError naming what is wrong with it. */
function canonicalOf(table: TableConfig, key: JsonObject): string {
  const missing = table.key.filter((col) => key[col] === undefined || key[col] === null);
  if (missing.length > 0) throw new EraseError(`--key must hold every key column of ${table.source} (${table.key.join(', ')}); missing ${missing.join(', ')}`);
  return keyId(table, normalizeKey(table, parseJson(JSON.stringify(key)) as JsonObject));
}

/** The ledger keys, checked against the fingerprints stored with the ledger. */
async function ledgerKeysOf(ctx: EraseContext): Promise<LedgerKeyring> {
  const keys = await loadLedgerKeys(ctx.config.replay.erase.ledgerKeySecret, ctx.env);
  await new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name).verify(keys);
  return keys;
}

function resolveTable(config: TidemarkConfig, source: string): TableConfig {
  const table = config.tables.find((t) => t.source === source);
  if (!table) throw new EraseError(`table "${source}" is not configured`);
  return table;
}

/** The request and its keyed hash; `verify` (the steps that write the ledger) checks the key's fingerprint first. */
async function resolve(ctx: EraseContext, requestKey: string, verify = false): Promise<Resolved> {
  const request = await getJson<EraseRequest>(ctx.clients.s3, ctx.config.raw.bucket, requestKey);
  const table = resolveTable(ctx.config, request.table);
  const canonical = canonicalOf(table, request.key);
  const keys = verify ? await ledgerKeysOf(ctx) : await loadLedgerKeys(ctx.config.replay.erase.ledgerKeySecret, ctx.env);
  const hashed = keys.hash(table.source, canonical);
  return { table, canonical, hash: hashed.keyHash, keyId: hashed.keyId, request };
}

export interface BeginOutput {
  readonly keyHash: string;
  readonly table: string;
  readonly storedPosition: string | null;
  /** The table held an item of the key (live or a tombstone). */
  readonly itemFound: boolean;
  readonly itemDeleted: boolean;
  [k: string]: unknown;
}

/**
 * Ledger entry, then the item (and a bare tombstone unless configured off). A key the table does
 * not hold gets its ledger entry in finish, once raw and the copies were searched, and only if
 * something was found there or the request blocks future arrivals.
 */
export async function beginErase(ctx: EraseContext, input: { requestKey: string }): Promise<BeginOutput> {
  const r = await resolve(ctx, input.requestKey, true);
  const now = (ctx.now ?? Date.now)();
  const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
  const got = await ctx.clients.dynamodb.send(new GetItemCommand({ TableName: r.table.target, Key: key, ConsistentRead: true, ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': META.position } }));
  const itemFound = got.Item !== undefined;
  const storedPosition = got.Item?.[META.position]?.S ?? null;
  const blockFuture = r.request.blockFuture === true;
  if (!itemFound && !blockFuture) {
    ctx.log.info('erase begun: no item', { table: r.table.source, keyHash: r.hash });
    return { keyHash: r.hash, table: r.table.source, storedPosition, itemFound, itemDeleted: false };
  }
  const position = blockFuture ? BLOCK_ALL_POSITION : (storedPosition ?? '');
  const ledger = new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name);
  await ledger.record({ table: r.table.source, keyHash: r.hash, keyId: r.keyId, position, erasedAt: now, reason: r.request.reason });
  const itemDeleted = await eraseItem(ctx, r.table, key, position, now, blockFuture);
  ctx.log.info('erase begun', { table: r.table.source, keyHash: r.hash, position: storedPosition });
  return { keyHash: r.hash, table: r.table.source, storedPosition, itemFound, itemDeleted };
}

/**
 * Deletes the item at or below `position`; leaves a bare tombstone at that position when configured
 * (for `tombstoneTtlDays`), or for good when the request blocks future arrivals.
 */
async function eraseItem(ctx: EraseContext, table: TableConfig, key: Record<string, AttributeValue>, position: string, now: number, forever = false): Promise<boolean> {
  const guard = { ConditionExpression: 'attribute_not_exists(#pos) OR #pos <= :p', ExpressionAttributeNames: { '#pos': META.position }, ExpressionAttributeValues: { ':p': { S: position } } };
  try {
    if (forever || (ctx.config.replay.erase.keepTombstone && position !== '')) {
      const ttl = Math.floor(now / 1000) + Math.round(table.tombstoneTtlDays * 86_400);
      await ctx.clients.dynamodb.send(
        new PutItemCommand({
          TableName: table.target,
          Item: {
            ...key,
            [META.position]: { S: position },
            [META.deleted]: { BOOL: true },
            [META.op]: { S: 'd' },
            [META.appliedAt]: { N: String(now) },
            ...(forever ? {} : { [META.expiresAt]: { N: String(ttl) } }),
            __erased: { BOOL: true },
          },
          ...guard,
        }),
      );
    } else {
      await ctx.clients.dynamodb.send(new DeleteItemCommand({ TableName: table.target, Key: key, ...guard }));
    }
    return true;
  } catch (err) {
    // A change newer than the erasure arrived meanwhile: it is a genuine later change and stays.
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

export interface FindOutput {
  readonly manifestKey: string;
  readonly objects: number;
  readonly heads: number;
  readonly candidates: number;
  /** Objects landed before key filters existed: read without a HEAD verdict. */
  readonly unfiltered: number;
  readonly batches: number[];
  [k: string]: unknown;
}

/** Lists the table's raw objects and keeps those whose key filter may hold the key. */
export async function findEraseObjects(ctx: EraseContext, input: { runId: string; requestKey: string }): Promise<FindOutput> {
  const r = await resolve(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const objects = await listRawObjects(s3, { bucket, prefix: ctx.config.raw.prefix, table: r.table.source });
  let unfiltered = 0;
  const verdicts = await mapLimit(objects, HEAD_CONCURRENCY, async (o) => {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: o.key }));
    const may = mayContainKey(head.Metadata, r.canonical);
    if (may === undefined) unfiltered++;
    return may !== false;
  });
  const candidates = objects.filter((_o, i) => verdicts[i]).map((o) => o.key);
  const per = Math.max(ctx.config.replay.objectsPerBatch, Math.ceil(candidates.length / 5000));
  const batches: string[][] = [];
  for (let i = 0; i < candidates.length; i += per) batches.push(candidates.slice(i, i + per));
  const manifestKey = `${erasePrefix(ctx.config, input.runId)}manifest.json`;
  await putJson(s3, bucket, manifestKey, { keyHash: r.hash, table: r.table.source, batches });
  return { manifestKey, objects: objects.length, heads: objects.length, candidates: candidates.length, unfiltered, batches: batches.map((_b, i) => i) };
}

export interface RewriteResult {
  readonly batch: number;
  readonly objectsRead: number;
  readonly objectsRewritten: number;
  readonly objectsDeleted: number;
  /** Read because the filter said "maybe", and the key was not there. */
  readonly falsePositives: number;
  readonly linesRemoved: number;
  /** Lines of other keys removed with the key's own: rows of the same multi-row message. */
  readonly otherRowsRemoved: number;
  readonly versionsDeleted: number;
  /** Objects that changed between their read and their rewrite, and were read and decided again. */
  readonly contended: number;
  /**
   * False when the store does not implement versions (s3rver): only the current copy existed.
   * Null when nothing was rewritten, so nothing told.
   */
  readonly versioning: boolean | null;
  /** Highest position among the removed lines of the key. */
  readonly maxPosition: string;
  [k: string]: unknown;
}

interface Line {
  readonly text: string;
  readonly coord: string | null;
  readonly mine: boolean;
  readonly position: string | null;
  readonly key: string | null;
}

function readLines(body: string, table: string, canonical: string): Line[] {
  return body
    .split('\n')
    .filter((t) => t.trim() !== '')
    .map((text) => {
      try {
        const l = JSON.parse(text) as Record<string, unknown>;
        const t = (l.transport ?? {}) as Record<string, unknown>;
        const lineKey = typeof l.key === 'string' ? l.key : null;
        // Lines of the batch layout carry their canonical key text; the first layout's are derived from the key.
        const lineKeyId = typeof l.keyId === 'string' ? l.keyId : lineKey !== null ? canonicalKeyText(lineKey) : null;
        const mine = l.table === table && lineKeyId === canonical;
        return { text, coord: JSON.stringify([t.kind, t.stream, t.shard, t.sequence]), mine, position: typeof l.position === 'string' ? l.position : null, key: lineKey };
      } catch {
        return { text, coord: null, mine: false, position: null, key: null };
      }
    });
}

type RewriteTally = { -readonly [K in keyof RewriteResult]: RewriteResult[K] };

/** Counts the lines removed with the key's messages: its own (and their highest position) and other rows of them. */
function countRemoved(out: RewriteTally, lines: readonly Line[], tainted: ReadonlySet<string | null>): void {
  for (const l of lines) {
    if (l.coord === null || !tainted.has(l.coord)) continue;
    if (l.mine) {
      out.linesRemoved++;
      if (l.position !== null && l.position > out.maxPosition) out.maxPosition = l.position;
    } else out.otherRowsRemoved++;
  }
}

/** What one object loses: its kept lines (none: delete it), and the counts of what goes. */
interface ObjectCut {
  readonly kept: readonly Line[];
  readonly removed: { linesRemoved: number; otherRowsRemoved: number; maxPosition: string };
}

/** The object's lines without the key's messages; null when it does not hold the key. */
function cutObject(body: string, r: Resolved): ObjectCut | null {
  const lines = readLines(body, r.table.source, r.canonical);
  const tainted = new Set(lines.filter((l) => l.mine && l.coord !== null).map((l) => l.coord));
  if (tainted.size === 0) return null;
  const removed = { linesRemoved: 0, otherRowsRemoved: 0, maxPosition: '' };
  countRemoved(removed as RewriteTally, lines, tainted);
  return { kept: lines.filter((l) => !(l.coord !== null && tainted.has(l.coord))), removed };
}

/**
 * Rewrites one object without the key's messages (conditionally: re-read and re-decided when
 * another writer changed it meanwhile), and deletes its older versions.
 */
async function rewriteObject(s3: S3Client, bucket: string, objectKey: string, r: Resolved, out: RewriteTally): Promise<void> {
  out.objectsRead++;
  const done = await rewriteIfUnchanged<ObjectCut>(s3, bucket, objectKey, async (body) => {
    const cut = cutObject((await gunzipAsync(body)).toString('utf8'), r);
    if (cut === null) return { decision: { kind: 'keep' } };
    if (cut.kept.length === 0) return { decision: { kind: 'delete' }, detail: cut };
    const gz = await gzipAsync(Buffer.from(`${cut.kept.map((l) => l.text).join('\n')}\n`, 'utf8'));
    return { decision: { kind: 'put', body: gz, contentType: 'application/x-ndjson', contentEncoding: 'gzip', metadata: keyFilterMetadata(cut.kept) }, detail: cut };
  });
  out.contended += done.retries;
  if (done.outcome === 'kept' || done.outcome === 'gone' || done.detail === undefined) {
    out.falsePositives++;
    return;
  }
  const { removed } = done.detail;
  out.linesRemoved += removed.linesRemoved;
  out.otherRowsRemoved += removed.otherRowsRemoved;
  if (removed.maxPosition > out.maxPosition) out.maxPosition = removed.maxPosition;
  if (done.outcome === 'put') out.objectsRewritten++;
  else out.objectsDeleted++;
  const versions = await deleteOlderVersions(s3, bucket, objectKey, done.outcome === 'put' ? done.versionId : undefined, done.outcome === 'deleted');
  if (versions === null) out.versioning = false;
  else {
    out.versionsDeleted += versions;
    if (out.versioning === null) out.versioning = true;
  }
}

/** The key as copies.ts names it. */
const erasedKey = (r: Resolved): ErasedKey => ({ table: r.table, canonical: r.canonical, columns: normalizeKey(r.table, r.request.key), hash: r.hash });

/** Rewrites one batch of candidate objects without the key. */
export async function rewriteEraseBatch(ctx: EraseContext, input: { runId: string; requestKey: string; manifestKey: string; batch: number }): Promise<RewriteResult> {
  const r = await resolve(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const manifest = await getJson<{ batches: string[][] }>(s3, bucket, input.manifestKey);
  const keys = manifest.batches[input.batch] ?? [];
  const out: RewriteTally = { batch: input.batch, objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: null, maxPosition: '' };
  for (const objectKey of keys) await rewriteObject(s3, bucket, objectKey, r, out);
  await putJson(s3, bucket, `${erasePrefix(ctx.config, input.runId)}results/${String(input.batch).padStart(6, '0')}.json`, out);
  return out;
}

/** One page of an object's versions, or null when the store does not implement versions. */
async function listVersionsPage(s3: S3Client, bucket: string, key: string, keyMarker: string | undefined, versionMarker: string | undefined): Promise<ListObjectVersionsCommandOutput | null> {
  try {
    return await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key, KeyMarker: keyMarker, VersionIdMarker: versionMarker }));
  } catch (err) {
    const name = asError(err).name;
    // s3rver answers ?versions with MethodNotAllowed (and ?versioning with NotImplemented).
    if (name === 'NotImplemented' || name === 'MethodNotAllowed' || /not implemented|not allowed/i.test(errorMessage(err))) return null;
    throw err;
  }
}

type VersionEntry = NonNullable<ListObjectVersionsCommandOutput['Versions']>[number] | NonNullable<ListObjectVersionsCommandOutput['DeleteMarkers']>[number];

/** The version id to delete, or undefined for the one kept (and for other keys under the prefix). */
function versionToDelete(v: VersionEntry, key: string, keep: string | undefined, all: boolean): string | undefined {
  if (v.Key !== key || !v.VersionId || v.VersionId === 'null' || v.VersionId === keep) return undefined;
  if (keep === undefined && !all && 'IsLatest' in v && v.IsLatest === true) return undefined;
  return v.VersionId;
}

/**
 * Deletes every version of `key` but `keep` (and delete markers); with `keep` undefined, every
 * version but the latest, unless `all`. Returns null when the store does not implement versions
 * (then the overwrite already replaced the only copy).
 */
export async function deleteOlderVersions(s3: S3Client, bucket: string, key: string, keep: string | undefined, all = false): Promise<number | null> {
  let deleted = 0;
  let keyMarker: string | undefined;
  let versionMarker: string | undefined;
  do {
    const page = await listVersionsPage(s3, bucket, key, keyMarker, versionMarker);
    if (page === null) return null;
    for (const v of [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])]) {
      const versionId = versionToDelete(v, key, keep, all);
      if (versionId === undefined) continue;
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
      deleted++;
    }
    keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
    versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
  } while (keyMarker);
  return deleted;
}

/** The rewrite batches' counts added up (see {@link RewriteResult}), with what the other steps did. */
export interface EraseSummary extends Omit<RewriteResult, 'batch' | 'maxPosition'> {
  readonly runId: string;
  readonly table: string;
  readonly keyHash: string;
  /**
   * False when the key was found nowhere: no item, no raw line, no spilled row, no copy in
   * quarantine or the on-failure objects. Nothing was erased, and no ledger entry was written
   * unless `blocked`.
   */
  readonly found: boolean;
  /** The ledger holds the key (and, with `blockFuture`, refuses all its future arrivals). */
  readonly ledgerRecorded: boolean;
  /** The request blocks the key's future arrivals. */
  readonly blocked: boolean;
  readonly ledgerPosition: string;
  readonly itemDeleted: boolean;
  readonly objects: number;
  readonly candidates: number;
  readonly spilledDeleted: number;
  readonly quarantineLinesRewritten: number;
  /** Reconcile findings and snapshot-report key entries of the key removed from the jobs' reports. */
  readonly reportEntriesRemoved: number;
  /** Records removed from the event source mapping's on-failure objects. */
  readonly onFailureRecordsRemoved: number;
  [k: string]: unknown;
}

interface Totals {
  objectsRead: number;
  objectsRewritten: number;
  objectsDeleted: number;
  falsePositives: number;
  linesRemoved: number;
  otherRowsRemoved: number;
  versionsDeleted: number;
  contended: number;
  versioning: boolean | null;
  maxPosition: string;
}

/** Every rewrite batch's result, added up: all pages of the results listing. */
async function addUpResults(s3: S3Client, bucket: string, prefix: string): Promise<Totals> {
  const totals: Totals = { objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: null, maxPosition: '' };
  for await (const key of listObjectKeys(s3, bucket, prefix)) {
    const res = await getJson<RewriteResult>(s3, bucket, key);
    totals.objectsRead += res.objectsRead;
    totals.objectsRewritten += res.objectsRewritten;
    totals.objectsDeleted += res.objectsDeleted;
    totals.falsePositives += res.falsePositives;
    totals.linesRemoved += res.linesRemoved;
    totals.otherRowsRemoved += res.otherRowsRemoved;
    totals.versionsDeleted += res.versionsDeleted;
    totals.contended += res.contended ?? 0;
    if (res.versioning !== null && res.versioning !== undefined) totals.versioning = (totals.versioning ?? true) && res.versioning;
    if (res.maxPosition > totals.maxPosition) totals.maxPosition = res.maxPosition;
  }
  return totals;
}

/**
 * Removes the copies outside raw (spilled rows, quarantine, on-failure objects), raises the ledger
 * to what raw held, re-deletes a revived item, stores the summary and deletes the request.
 */
export async function finishErase(
  ctx: EraseContext,
  input: { runId: string; requestKey: string; begin: BeginOutput; find: Pick<FindOutput, 'objects' | 'candidates'> },
): Promise<EraseSummary> {
  const r = await resolve(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const totals = await addUpResults(s3, bucket, `${erasePrefix(ctx.config, input.runId)}results/`);
  const now = (ctx.now ?? Date.now)();
  const k = erasedKey(r);
  const spilledDeleted = await deleteSpilled(s3, ctx.config, k, deleteOlderVersions);
  const quarantineLinesRewritten = await eraseFromQuarantine(s3, ctx.config, k, now, deleteOlderVersions);
  const onFailure = await eraseFromOnFailure(s3, ctx.config, k, deleteOlderVersions);
  const reportEntriesRemoved = await eraseFromReports(s3, ctx.config, k, deleteOlderVersions);
  const blocked = r.request.blockFuture === true;
  const itemFound = input.begin.itemFound ?? input.begin.storedPosition !== null;
  const found = itemFound || totals.linesRemoved > 0 || spilledDeleted > 0 || quarantineLinesRewritten > 0 || onFailure.records > 0 || reportEntriesRemoved > 0;
  const highest = [input.begin.storedPosition ?? '', totals.maxPosition].reduce((a, b) => (b > a ? b : a), '');
  const ledgerPosition = blocked ? BLOCK_ALL_POSITION : highest;
  const ledgerRecorded = found || blocked;
  let itemDeleted = input.begin.itemDeleted;
  if (ledgerRecorded) {
    await new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name).record({
      table: r.table.source,
      keyHash: r.hash,
      keyId: r.keyId,
      position: ledgerPosition,
      erasedAt: now,
      reason: r.request.reason,
    });
    // A concurrent replay may have revived the item from raw before its lines were removed.
    const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
    itemDeleted = (await eraseItem(ctx, r.table, key, ledgerPosition, now, blocked)) || itemDeleted;
  }
  const { maxPosition: _max, ...counts } = totals;
  const summary: EraseSummary = {
    runId: input.runId,
    table: r.table.source,
    keyHash: r.hash,
    found,
    ledgerRecorded,
    blocked,
    ledgerPosition: ledgerRecorded ? ledgerPosition : '',
    itemDeleted: found && itemDeleted,
    objects: input.find.objects,
    candidates: input.find.candidates,
    ...counts,
    spilledDeleted,
    quarantineLinesRewritten,
    onFailureRecordsRemoved: onFailure.records,
    reportEntriesRemoved,
  };
  await putJson(s3, bucket, `${erasePrefix(ctx.config, input.runId)}summary.json`, summary);
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: input.requestKey }));
  await deleteOlderVersions(s3, bucket, input.requestKey, undefined, true);
  ctx.log.info(found ? 'erase finished' : 'erase finished: key not found', { table: r.table.source, keyHash: r.hash, linesRemoved: totals.linesRemoved, objectsRewritten: totals.objectsRewritten, ledgerRecorded });
  return summary;
}
