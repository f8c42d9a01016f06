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
 *            concurrent replay revived it, rewrite quarantine lines that mention the key, summary
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
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { asError, errorMessage, TidemarkError } from '../core/errors.js';
import { type JsonObject, parseJson } from '../core/json.js';
import { keyId, normalizeKey } from '../core/keys.js';
import { keyAttributes, META } from '../adapters/item-codec.js';
import { jobRunPrefix, spillPrefixes } from '../adapters/raw-layout.js';
import { listRawObjects, readRawObject } from '../adapters/raw-reader.js';
import type { Log } from '../telemetry/sinks.js';
import { mapLimit } from '../core/concurrency.js';
import { canonicalKeyText, keyFilterMetadata, mayContainKey } from '../core/key-filter.js';
import { EraseLedger, type LedgerKeyring, loadLedgerKeys } from '../adapters/erase-ledger.js';

const gzipAsync = promisify(gzip);
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
  readonly itemDeleted: boolean;
  [k: string]: unknown;
}

/** Ledger entry, then the item (and a bare tombstone unless configured off). */
export async function beginErase(ctx: EraseContext, input: { requestKey: string }): Promise<BeginOutput> {
  const r = await resolve(ctx, input.requestKey, true);
  const now = (ctx.now ?? Date.now)();
  const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
  const got = await ctx.clients.dynamodb.send(new GetItemCommand({ TableName: r.table.target, Key: key, ConsistentRead: true, ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': META.position } }));
  const storedPosition = got.Item?.[META.position]?.S ?? null;
  const ledger = new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name);
  await ledger.record({ table: r.table.source, keyHash: r.hash, keyId: r.keyId, position: storedPosition ?? '', erasedAt: now, reason: r.request.reason });
  const itemDeleted = await eraseItem(ctx, r.table, key, storedPosition ?? '', now);
  ctx.log.info('erase begun', { table: r.table.source, keyHash: r.hash, position: storedPosition });
  return { keyHash: r.hash, table: r.table.source, storedPosition, itemDeleted };
}

/** Deletes the item at or below `position`; leaves a bare tombstone at that position when configured. */
async function eraseItem(ctx: EraseContext, table: TableConfig, key: Record<string, AttributeValue>, position: string, now: number): Promise<boolean> {
  const guard = { ConditionExpression: 'attribute_not_exists(#pos) OR #pos <= :p', ExpressionAttributeNames: { '#pos': META.position }, ExpressionAttributeValues: { ':p': { S: position } } };
  try {
    if (ctx.config.replay.erase.keepTombstone && position !== '') {
      const ttl = Math.floor(now / 1000) + Math.round(table.tombstoneTtlDays * 86_400);
      await ctx.clients.dynamodb.send(
        new PutItemCommand({
          TableName: table.target,
          Item: { ...key, [META.position]: { S: position }, [META.deleted]: { BOOL: true }, [META.op]: { S: 'd' }, [META.appliedAt]: { N: String(now) }, [META.expiresAt]: { N: String(ttl) }, __erased: { BOOL: true } },
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
  /** False when the store does not implement versions (s3rver): only the current copy existed. */
  readonly versioning: boolean;
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
        const mine = l.table === table && lineKey !== null && canonicalKeyText(lineKey) === canonical;
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

/** Writes the kept lines back over the object (or deletes it when none are left); returns the new version. */
async function writeKept(s3: S3Client, bucket: string, objectKey: string, kept: readonly Line[], out: RewriteTally): Promise<string | undefined> {
  if (kept.length === 0) {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey }));
    out.objectsDeleted++;
    return undefined;
  }
  const body = await gzipAsync(Buffer.from(`${kept.map((l) => l.text).join('\n')}\n`, 'utf8'));
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: objectKey,
      Body: body,
      ContentType: 'application/x-ndjson',
      ContentEncoding: 'gzip',
      Metadata: keyFilterMetadata(kept),
    }),
  );
  out.objectsRewritten++;
  return put.VersionId;
}

/** Rewrites one object without the key's messages, and deletes its older versions. */
async function rewriteObject(s3: S3Client, bucket: string, objectKey: string, r: Resolved, out: RewriteTally): Promise<void> {
  out.objectsRead++;
  const lines = readLines((await readRawObject(s3, bucket, objectKey)).toString('utf8'), r.table.source, r.canonical);
  const tainted = new Set(lines.filter((l) => l.mine && l.coord !== null).map((l) => l.coord));
  if (tainted.size === 0) {
    out.falsePositives++;
    return;
  }
  const kept = lines.filter((l) => !(l.coord !== null && tainted.has(l.coord)));
  countRemoved(out, lines, tainted);
  const currentVersion = await writeKept(s3, bucket, objectKey, kept, out);
  const removed = await deleteOlderVersions(s3, bucket, objectKey, currentVersion, kept.length === 0);
  if (removed === null) out.versioning = false;
  else out.versionsDeleted += removed;
}

/** Rewrites one batch of candidate objects without the key. */
export async function rewriteEraseBatch(ctx: EraseContext, input: { runId: string; requestKey: string; manifestKey: string; batch: number }): Promise<RewriteResult> {
  const r = await resolve(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const manifest = await getJson<{ batches: string[][] }>(s3, bucket, input.manifestKey);
  const keys = manifest.batches[input.batch] ?? [];
  const out: RewriteTally = { batch: input.batch, objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, versioning: true, maxPosition: '' };
  for (const objectKey of keys) await rewriteObject(s3, bucket, objectKey, r, out);
  out.versionsDeleted += await deleteSpilled(ctx, r);
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

/**
 * Spilled copies of the key's rows (RawStore.spill), under either encoding of the table's name
 * (raw-layout.ts): deleted with every version.
 */
async function deleteSpilled(ctx: EraseContext, r: Resolved): Promise<number> {
  let n = 0;
  for (const prefix of spillPrefixes(ctx.config.raw.prefix, r.table.source, r.canonical)) {
    let token: string | undefined;
    do {
      const page = await ctx.clients.s3.send(new ListObjectsV2Command({ Bucket: ctx.config.raw.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        if (!o.Key) continue;
        await ctx.clients.s3.send(new DeleteObjectCommand({ Bucket: ctx.config.raw.bucket, Key: o.Key }));
        n += 1 + ((await deleteOlderVersions(ctx.clients.s3, ctx.config.raw.bucket, o.Key, undefined, true)) ?? 0);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
  return n;
}

/** The rewrite batches' counts added up (see {@link RewriteResult}), with what the other steps did. */
export interface EraseSummary extends Omit<RewriteResult, 'batch' | 'maxPosition'> {
  readonly runId: string;
  readonly table: string;
  readonly keyHash: string;
  readonly ledgerPosition: string;
  readonly itemDeleted: boolean;
  readonly objects: number;
  readonly candidates: number;
  readonly quarantineLinesRewritten: number;
  [k: string]: unknown;
}

/** Raises the ledger to what raw held, re-deletes a revived item, cleans quarantine, stores the summary. */
export async function finishErase(
  ctx: EraseContext,
  input: { runId: string; requestKey: string; begin: BeginOutput; find: Pick<FindOutput, 'objects' | 'candidates'> },
): Promise<EraseSummary> {
  const r = await resolve(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const totals = { objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, versioning: true, maxPosition: '' };
  const list = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${erasePrefix(ctx.config, input.runId)}results/` }));
  for (const o of list.Contents ?? []) {
    if (!o.Key) continue;
    const res = await getJson<RewriteResult>(s3, bucket, o.Key);
    totals.objectsRead += res.objectsRead;
    totals.objectsRewritten += res.objectsRewritten;
    totals.objectsDeleted += res.objectsDeleted;
    totals.falsePositives += res.falsePositives;
    totals.linesRemoved += res.linesRemoved;
    totals.otherRowsRemoved += res.otherRowsRemoved;
    totals.versionsDeleted += res.versionsDeleted;
    totals.versioning &&= res.versioning;
    if (res.maxPosition > totals.maxPosition) totals.maxPosition = res.maxPosition;
  }
  const now = (ctx.now ?? Date.now)();
  const ledgerPosition = [input.begin.storedPosition ?? '', totals.maxPosition].reduce((a, b) => (b > a ? b : a), '');
  await new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name).record({
    table: r.table.source,
    keyHash: r.hash,
    keyId: r.keyId,
    position: ledgerPosition,
    erasedAt: now,
    reason: r.request.reason,
  });
  const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
  const itemDeleted = (await eraseItem(ctx, r.table, key, ledgerPosition, now)) || input.begin.itemDeleted;
  const quarantineLinesRewritten = await eraseFromQuarantine(ctx, r, now);
  const summary: EraseSummary = {
    runId: input.runId,
    table: r.table.source,
    keyHash: r.hash,
    ledgerPosition,
    itemDeleted,
    objects: input.find.objects,
    candidates: input.find.candidates,
    ...totals,
    quarantineLinesRewritten,
  };
  delete (summary as { maxPosition?: string }).maxPosition;
  await putJson(s3, bucket, `${erasePrefix(ctx.config, input.runId)}summary.json`, summary);
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: input.requestKey }));
  await deleteOlderVersions(s3, bucket, input.requestKey, undefined, true);
  ctx.log.info('erase finished', { table: r.table.source, keyHash: r.hash, linesRemoved: totals.linesRemoved, objectsRewritten: totals.objectsRewritten });
  return summary;
}

/**
 * Quarantine lines hold original bytes that did not normalize, so they carry no key field. A line
 * mentions the key when it is of the key's table (its `table` field when the decoder got that far,
 * else its bytes name the table's last dotted part as a JSON string, as every supported format
 * carries it) and its bytes hold every key column as `"column": value`; such a line keeps its
 * reason and transport, and loses its bytes.
 */
export function mentionsKey(text: string, key: JsonObject, table: string | null): boolean {
  const bare = table === null ? null : (table.split('.').pop() ?? table);
  if (bare !== null && !text.includes(JSON.stringify(bare))) return false;
  return Object.entries(key).every(([col, v]) => {
    const value = String(v instanceof Object && 'value' in v ? (v as { value: string }).value : v).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const name = JSON.stringify(col).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`${name}\\s*:\\s*"?${value}"?(?![0-9A-Za-z])`).test(text);
  });
}

/** A quarantine line with the key's bytes blanked, or null when the line does not carry the key. */
function eraseQuarantineLine(line: string, r: Resolved, key: ReturnType<typeof normalizeKey>, now: number): string | null {
  if (line.trim() === '') return null;
  let q: Record<string, unknown>;
  try {
    q = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  const bytes = [q.valueBase64, q.keyBase64].map((b) => (typeof b === 'string' ? Buffer.from(b, 'base64').toString('utf8') : '')).join('\n');
  // Lines that name their table (when the decoder got that far) are matched on it exactly.
  const lineTable = typeof q.table === 'string' ? q.table : null;
  if (lineTable !== null && lineTable !== r.table.source) return null;
  if (!mentionsKey(bytes, key, lineTable === null ? r.table.source : null)) return null;
  return JSON.stringify({ ...q, valueBase64: null, keyBase64: null, erased: { keyHash: r.hash, at: now } });
}

/** Rewrites one quarantine object without the key's bytes; returns how many lines changed. */
async function eraseQuarantineObject(s3: S3Client, bucket: string, objectKey: string, r: Resolved, key: ReturnType<typeof normalizeKey>, now: number): Promise<number> {
  const text = (await readRawObject(s3, bucket, objectKey)).toString('utf8');
  let changed = 0;
  const lines = text.split('\n').map((line) => {
    const erased = eraseQuarantineLine(line, r, key, now);
    if (erased === null) return line;
    changed++;
    return erased;
  });
  if (changed === 0) return 0;
  const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: objectKey, Body: await gzipAsync(Buffer.from(lines.join('\n'), 'utf8')), ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
  await deleteOlderVersions(s3, bucket, objectKey, put.VersionId);
  return changed;
}

async function eraseFromQuarantine(ctx: EraseContext, r: Resolved, now: number): Promise<number> {
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const key = normalizeKey(r.table, r.request.key);
  let rewritten = 0;
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: ctx.config.raw.quarantinePrefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (o.Key?.endsWith('.jsonl.gz')) rewritten += await eraseQuarantineObject(s3, bucket, o.Key, r, key, now);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return rewritten;
}
