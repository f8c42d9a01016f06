/**
 * Erase keys everywhere tidemark keeps them, in the order that never lets them come back. One run
 * erases one key or many (the day's requests), each with its own ledger entry and result:
 *
 *   begin    every request validated first; then per key the ledger entry (keyed hash, stored
 *            position, time, reason) and the item: deleted, by default replaced by a bare tombstone
 *            (key and position, no values) for tombstoneTtlDays so a redelivered older change cannot
 *            revive it through ingest. The run's keys go to `erase_keys`
 *            (`<history>erase_keys/run_id=<run>/keys.jsonl.gz`), which the SQL joins, and the run's
 *            queries are stored for the state machine's query loops (find.ts)
 *   Find     (query loop) erase-find-raw: the raw objects still in S3 holding a line of a key, over
 *            the hours raw holds (compacted ones through history) and the first layout's; erase-find-history: what history holds of
 *            each key (count, highest position). Athena on AWS, DuckDB locally
 *   objects  the objects found, in batches, as the Map's items (find.ts)
 *   rewrite  per batch of objects: drop the keys' lines (and every line of a record that carried
 *            one: a multi-row message holds the key's values too), PUT the object back with a new
 *            key filter, delete its older versions
 *   History  (query loop) erase-history and erase-expected delete the keys' lines from history and
 *            expected_state, OPTIMIZE (narrowed to the run's tables) rewrites the files that held
 *            them and VACUUM expires the snapshots that still reference the old files
 *   finish   once for all the run's keys: quarantine lines, the on-failure objects' records and the
 *            reports' entries (copies.ts: one listing and one rewrite per object); then per key:
 *            spilled rows, raise the ledger to the highest position found in raw and history, delete
 *            the item again if a concurrent replay revived it; the summary with one result per key;
 *            the run's erase_keys objects and its request deleted with every version
 *
 * Every object rewrite is conditional (`If-Match` on the ETag read, conditional-rewrite.ts): two
 * erasures of keys in one object each re-read and re-decide instead of undoing the other's.
 *
 * A key found nowhere (no item, no raw line, no history line, no spilled row, no copy) is reported
 * as not found and leaves no ledger entry, unless its request asked to block its future arrivals
 * (`blockFuture`): then the ledger and a tombstone that never expires hold it at a position above
 * every other.
 *
 * The keys themselves only ever sit in the request object (<jobsPrefix>erase/<run>/request.json)
 * and the run's erase_keys object, both deleted when the run ends, failed or not; query texts,
 * manifests, results, summaries, state-machine state and logs carry the keyed hash only.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, ListObjectVersionsCommand, type ListObjectVersionsCommandOutput, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { mapLimit } from '../core/concurrency.js';
import { asError, errorMessage, TidemarkError } from '../core/errors.js';
import { type JsonObject, parseJson } from '../core/json.js';
import { keyId, normalizeKey } from '../core/keys.js';
import { keyAttributes, META } from '../adapters/item-codec.js';
import { eraseKeysObjectKey, eraseKeysRunPrefix, jobRunPrefix, resultKey, resultsPrefix, runFile } from '../adapters/raw-layout.js';
import { rewriteIfUnchanged } from '../adapters/conditional-rewrite.js';
import type { Log } from '../telemetry/sinks.js';
import { canonicalKeyText, keyFilterMetadata } from '../core/key-filter.js';
import { BLOCK_ALL_POSITION, EraseLedger, type LedgerKeyring, loadLedgerKeys } from '../adapters/erase-ledger.js';
import { deleteSpilled, type ErasedKey, eraseFromOnFailure, eraseFromQuarantine, eraseFromReports } from './copies.js';
import { listObjectKeys } from '../adapters/s3-list.js';
import { type EraseQueries, eraseQueries, readFound } from './find.js';
import { getJson, putJson } from '../adapters/s3-json.js';

export { mentionsKey } from './copies.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

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

/** The request object of a run: its requests, in order (a result per request, by its index). */
interface StoredRequests {
  readonly requests: readonly EraseRequest[];
}

/** At most this many keys per run: each costs a ledger write and a listing of its spilled rows in finish (the other copies outside raw are read once per run). */
export const MAX_KEYS_PER_RUN = 1000;
/** Keys Finish settles at once (their spilled rows, ledger entry and item): 1,000 keys in about 1,000 ÷ 16 round trips of a few requests. */
const FINISH_KEYS_AT_ONCE = 16;

export interface EraseContext {
  readonly config: TidemarkConfig;
  readonly clients: { readonly dynamodb: DynamoDBClient; readonly s3: S3Client };
  readonly log: Log;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
}

/** One request of a run, checked and hashed. */
export interface Resolved {
  /** Its index in the run's request object: what erase_keys and the results name it by. */
  readonly index: number;
  readonly table: TableConfig;
  readonly canonical: string;
  readonly hash: string;
  /** The ledger key that made `hash`. */
  readonly keyId: string;
  readonly request: EraseRequest;
}

export const erasePrefix = (config: TidemarkConfig, runId: string) => jobRunPrefix(config.replay.jobsPrefix, 'erase', runId);
const beginKey = (config: TidemarkConfig, runId: string) => runFile(erasePrefix(config, runId), 'begin');
/** The run's keys as erase_keys holds them. */
export const eraseKeysObject = (config: TidemarkConfig, runId: string) => eraseKeysObjectKey(config.history.prefix, runId);

/** Checks one request completely but the ledger key; EraseError naming the request when it is one of several. */
function checkRequest(config: TidemarkConfig, request: EraseRequest, where: string): void {
  const at = (m: string) => new EraseError(where === '' ? m : `${where}: ${m}`);
  if (typeof request !== 'object' || request === null) throw at('a request is {"table", "key", "reason"}');
  if (typeof request.reason !== 'string' || request.reason.trim() === '') throw at('an erase needs a reason (--reason), kept in the ledger');
  if (typeof request.table !== 'string') throw at('an erase needs a table');
  if (typeof request.key !== 'object' || request.key === null || Array.isArray(request.key)) throw at('an erase needs a key: a JSON object of the key columns');
  try {
    canonicalOf(resolveTable(config, request.table), request.key);
  } catch (err) {
    throw err instanceof EraseError ? at(err.message) : err;
  }
}

/** Checks every request of a run, naming the first wrong one by its place (1-based) when there are several. */
function checkRequests(config: TidemarkConfig, requests: readonly EraseRequest[]): void {
  for (const [i, r] of requests.entries()) checkRequest(config, r, requests.length === 1 ? '' : `request ${i + 1}`);
}

/**
 * Validates every request completely (table, key columns, reason, the ledger key and its
 * fingerprint) and only then stores them (the only place the keys are written); returns the request
 * object's S3 key. A run that cannot run leaves nothing behind.
 */
export async function submitEraseBatch(ctx: EraseContext, runId: string, requests: readonly EraseRequest[]): Promise<string> {
  if (requests.length === 0) throw new EraseError('an erase run needs at least one key');
  if (requests.length > MAX_KEYS_PER_RUN) throw new EraseError(`an erase run takes at most ${MAX_KEYS_PER_RUN} keys, got ${requests.length}: split the requests over several runs`);
  checkRequests(ctx.config, requests);
  await ledgerKeysOf(ctx);
  const key = runFile(erasePrefix(ctx.config, runId), 'request');
  const stored: StoredRequests = { requests: requests.map((r) => ({ table: r.table, key: r.key, reason: r.reason, ...(r.blockFuture === true ? { blockFuture: true } : {}) })) };
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, key, stored);
  return key;
}

/** One key: `submitEraseBatch` of one request. */
export const submitErase = (ctx: EraseContext, runId: string, request: EraseRequest): Promise<string> => submitEraseBatch(ctx, runId, [request]);

/** Deletes an object and every version of it (a plain delete where the store keeps none). */
async function deleteEverywhere(s3: S3Client, bucket: string, key: string): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  await deleteOlderVersions(s3, bucket, key, undefined, true);
}

/** Deletes the run's erase_keys objects with every version; returns how many objects there were. */
async function deleteRunKeys(ctx: EraseContext, runId: string): Promise<number> {
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  let n = 0;
  for await (const key of listObjectKeys(s3, bucket, eraseKeysRunPrefix(ctx.config.history.prefix, runId))) {
    await deleteEverywhere(s3, bucket, key);
    n++;
  }
  // An object whose current version is already gone may still keep older ones.
  await deleteOlderVersions(s3, bucket, eraseKeysObject(ctx.config, runId), undefined, true);
  return n;
}

/** Deletes the request object and the run's keys (with their versions): every run ends with both gone, failed or not. */
export async function abandonErase(ctx: EraseContext, input: { runId?: string; requestKey: string }): Promise<{ requestDeleted: true; keysDeleted: number }> {
  await deleteEverywhere(ctx.clients.s3, ctx.config.raw.bucket, input.requestKey);
  const keysDeleted = input.runId ? await deleteRunKeys(ctx, input.runId) : 0;
  return { requestDeleted: true, keysDeleted };
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

/** A run's requests (the object of one request, as runs before batching stored it, reads as a run of one). */
async function requestsOf(ctx: EraseContext, requestKey: string): Promise<readonly EraseRequest[]> {
  const stored = await getJson<StoredRequests | EraseRequest>(ctx.clients.s3, ctx.config.raw.bucket, requestKey);
  return 'requests' in stored && Array.isArray(stored.requests) ? stored.requests : [stored as EraseRequest];
}

/** The run's requests and their keyed hashes; `verify` (the steps that write the ledger) checks the key's fingerprint first. */
export async function resolveErase(ctx: EraseContext, requestKey: string, verify = false): Promise<Resolved[]> {
  const requests = await requestsOf(ctx, requestKey);
  checkRequests(ctx.config, requests);
  const keys = verify ? await ledgerKeysOf(ctx) : await loadLedgerKeys(ctx.config.replay.erase.ledgerKeySecret, ctx.env);
  return requests.map((request, index) => {
    const table = resolveTable(ctx.config, request.table);
    const canonical = canonicalOf(table, request.key);
    const hashed = keys.hash(table.source, canonical);
    return { index, table, canonical, hash: hashed.keyHash, keyId: hashed.keyId, request };
  });
}

/** What begin found and did for one request (stored in S3, never in the state: a run may hold many keys). */
export interface BeginEntry {
  readonly request: number;
  readonly keyHash: string;
  readonly table: string;
  readonly storedPosition: string | null;
  /** The table held an item of the key (live or a tombstone). */
  readonly itemFound: boolean;
  readonly itemDeleted: boolean;
}

export interface BeginOutput {
  /** The raw bucket: where the queries' outputs and the Map's items are. */
  readonly bucket: string;
  readonly keys: number;
  readonly tables: readonly string[];
  readonly itemsDeleted: number;
  readonly queries: EraseQueries;
  [k: string]: unknown;
}

/**
 * Per request: the ledger entry, then the item (and a bare tombstone unless configured off); a key
 * the table does not hold gets its ledger entry in finish, once raw, history and the copies were
 * searched, and only if something was found there or the request blocks future arrivals. Then the
 * run's keys go to erase_keys and its queries are stored.
 */
export async function beginErase(ctx: EraseContext, input: { runId: string; requestKey: string }): Promise<BeginOutput> {
  const all = await resolveErase(ctx, input.requestKey, true);
  const now = (ctx.now ?? Date.now)();
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const ledger = new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name);
  const entries: BeginEntry[] = [];
  for (const r of all) {
    const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
    const got = await ctx.clients.dynamodb.send(new GetItemCommand({ TableName: r.table.target, Key: key, ConsistentRead: true, ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': META.position } }));
    const itemFound = got.Item !== undefined;
    const storedPosition = got.Item?.[META.position]?.S ?? null;
    const blockFuture = r.request.blockFuture === true;
    let itemDeleted = false;
    if (itemFound || blockFuture) {
      const position = blockFuture ? BLOCK_ALL_POSITION : (storedPosition ?? '');
      await ledger.record({ table: r.table.source, keyHash: r.hash, keyId: r.keyId, position, erasedAt: now, reason: r.request.reason });
      itemDeleted = await eraseItem(ctx, r.table, key, position, now, blockFuture);
    }
    ctx.log.info(itemFound ? 'erase begun' : 'erase begun: no item', { runId: input.runId, table: r.table.source, keyHash: r.hash, position: storedPosition });
    entries.push({ request: r.index, keyHash: r.hash, table: r.table.source, storedPosition, itemFound, itemDeleted });
  }
  await putJson(s3, bucket, beginKey(ctx.config, input.runId), entries);
  const lines = all.map((r) => JSON.stringify({ source_table: r.table.source, key_id: r.canonical, key_hash: r.hash, request: String(r.index) }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: eraseKeysObject(ctx.config, input.runId), Body: await gzipAsync(Buffer.from(`${lines.join('\n')}\n`, 'utf8')), ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }));
  const tables = [...new Set(all.map((r) => r.table.source))];
  const queries = await eraseQueries(ctx, { runId: input.runId, tables, now });
  return { bucket, keys: all.length, tables, itemsDeleted: entries.filter((e) => e.itemDeleted).length, queries };
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

/** What one request lost from raw: its own lines and their highest position. */
export interface KeyRemoved {
  lines: number;
  maxPosition: string;
}

export interface RewriteResult {
  readonly batch: number;
  readonly objectsRead: number;
  readonly objectsRewritten: number;
  readonly objectsDeleted: number;
  /** Named by the query, and no longer holding a key when read (a concurrent erasure got there first). */
  readonly falsePositives: number;
  readonly linesRemoved: number;
  /** Lines of other keys removed with the keys' own: rows of the same multi-row message. */
  readonly otherRowsRemoved: number;
  readonly versionsDeleted: number;
  /** Objects that changed between their read and their rewrite, and were read and decided again. */
  readonly contended: number;
  /**
   * False when the store does not implement versions (s3rver): only the current copy existed.
   * Null when nothing was rewritten, so nothing told.
   */
  readonly versioning: boolean | null;
  /** Highest position among the removed lines of the keys. */
  readonly maxPosition: string;
  /** Per request (by index): its lines removed and their highest position. */
  readonly byRequest: Readonly<Record<string, KeyRemoved>>;
  [k: string]: unknown;
}

interface Line {
  readonly text: string;
  readonly coord: string | null;
  /** The requests whose key the line is of; empty for another key's. */
  readonly mine: readonly number[];
  readonly position: string | null;
  readonly key: string | null;
}

/** The run's keys by table and canonical key text → the requests naming them. */
type KeyIndex = ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;

export function keyIndex(all: readonly Resolved[]): KeyIndex {
  const out = new Map<string, Map<string, number[]>>();
  for (const r of all) {
    const byKey = out.get(r.table.source) ?? new Map<string, number[]>();
    byKey.set(r.canonical, [...(byKey.get(r.canonical) ?? []), r.index]);
    out.set(r.table.source, byKey);
  }
  return out;
}

const NONE: readonly number[] = [];

function readLines(body: string, keys: KeyIndex): Line[] {
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
        const mine = typeof l.table === 'string' && lineKeyId !== null ? (keys.get(l.table)?.get(lineKeyId) ?? NONE) : NONE;
        return { text, coord: JSON.stringify([t.kind, t.stream, t.shard, t.sequence]), mine, position: typeof l.position === 'string' ? l.position : null, key: lineKey };
      } catch {
        return { text, coord: null, mine: NONE, position: null, key: null };
      }
    });
}

/** The counts of a rewrite, as they are added up. */
interface Tally {
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
  byRequest: Record<string, KeyRemoved>;
}
type RewriteTally = Tally & { batch: number };

/** What one object loses: its kept lines (none: delete it), and the counts of what goes. */
interface ObjectCut {
  readonly kept: readonly Line[];
  readonly otherRowsRemoved: number;
  readonly byRequest: Readonly<Record<string, KeyRemoved>>;
}

/** The object's lines without the keys' messages; null when it holds none of the keys. */
function cutObject(body: string, keys: KeyIndex): ObjectCut | null {
  const lines = readLines(body, keys);
  const tainted = new Set(lines.filter((l) => l.mine.length > 0 && l.coord !== null).map((l) => l.coord));
  if (tainted.size === 0) return null;
  const byRequest: Record<string, KeyRemoved> = {};
  let otherRowsRemoved = 0;
  for (const l of lines) {
    if (l.coord === null || !tainted.has(l.coord)) continue;
    if (l.mine.length === 0) otherRowsRemoved++;
    for (const i of l.mine) {
      const k = removedOf(byRequest, String(i));
      k.lines++;
      if (l.position !== null && l.position > k.maxPosition) k.maxPosition = l.position;
    }
  }
  return { kept: lines.filter((l) => !(l.coord !== null && tainted.has(l.coord))), otherRowsRemoved, byRequest };
}

/** The tally of request `i` in `into`, created empty. */
function removedOf(into: Record<string, KeyRemoved>, i: string): KeyRemoved {
  const existing = into[i];
  if (existing) return existing;
  const created = { lines: 0, maxPosition: '' };
  into[i] = created;
  return created;
}

/** Adds one object's or batch's removals to a tally. */
function addRemoved(into: Record<string, KeyRemoved>, from: Readonly<Record<string, KeyRemoved>>): void {
  for (const [i, k] of Object.entries(from)) {
    const t = removedOf(into, i);
    t.lines += k.lines;
    if (k.maxPosition > t.maxPosition) t.maxPosition = k.maxPosition;
  }
}

/**
 * Rewrites one object without the keys' messages (conditionally: re-read and re-decided when
 * another writer changed it meanwhile), and deletes its older versions.
 */
async function rewriteObject(s3: S3Client, bucket: string, objectKey: string, keys: KeyIndex, out: RewriteTally): Promise<void> {
  out.objectsRead++;
  const done = await rewriteIfUnchanged<ObjectCut>(s3, bucket, objectKey, async (body) => {
    const cut = cutObject((await gunzipAsync(body)).toString('utf8'), keys);
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
  const cut = done.detail;
  for (const k of Object.values(cut.byRequest)) {
    out.linesRemoved += k.lines;
    if (k.maxPosition > out.maxPosition) out.maxPosition = k.maxPosition;
  }
  out.otherRowsRemoved += cut.otherRowsRemoved;
  addRemoved(out.byRequest, cut.byRequest);
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

/** A raw object's key from the query's `s3://bucket/key`; null for another bucket's or anything outside raw. */
function rawKeyOf(config: TidemarkConfig, uri: string): string | null {
  const root = `s3://${config.raw.bucket}/`;
  if (!uri.startsWith(root)) return uri.startsWith('s3://') ? null : uri.startsWith(config.raw.prefix) ? uri : null;
  const key = uri.slice(root.length);
  return key.startsWith(config.raw.prefix) ? key : null;
}

/** Rewrites one batch of the objects the query found without the run's keys. */
export async function rewriteEraseBatch(ctx: EraseContext, input: { runId: string; requestKey: string; batch: number; objects: readonly string[] }): Promise<RewriteResult> {
  const keys = keyIndex(await resolveErase(ctx, input.requestKey));
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const out: RewriteTally = { batch: input.batch, objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: null, maxPosition: '', byRequest: {} };
  for (const uri of input.objects) {
    const objectKey = rawKeyOf(ctx.config, uri);
    if (objectKey === null) throw new EraseError(`${uri} is not a raw object of s3://${bucket}/${ctx.config.raw.prefix}`);
    await rewriteObject(s3, bucket, objectKey, keys, out);
  }
  await putJson(s3, bucket, resultKey(erasePrefix(ctx.config, input.runId), input.batch), out);
  return { ...out };
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

/** One request's result: what was found of its key, and what the run did about it. */
export interface EraseKeyResult {
  /** The request's index in the run (the order of the CLI's keys). */
  readonly request: number;
  readonly table: string;
  readonly keyHash: string;
  /**
   * False when the key was found nowhere: no item, no raw line, no history line, no spilled row,
   * no copy in quarantine, the on-failure objects or the reports. Nothing was erased, and no ledger
   * entry was written unless `blocked`.
   */
  readonly found: boolean;
  /** The ledger holds the key (and, with `blockFuture`, refuses all its future arrivals). */
  readonly ledgerRecorded: boolean;
  /** The request blocks the key's future arrivals. */
  readonly blocked: boolean;
  readonly ledgerPosition: string;
  readonly itemDeleted: boolean;
  /** The key's own raw lines removed. */
  readonly rawLinesRemoved: number;
  /** The key's history lines found (and deleted by erase-history). */
  readonly historyLines: number;
  readonly spilledDeleted: number;
  readonly quarantineLinesRewritten: number;
  readonly onFailureRecordsRemoved: number;
  readonly reportEntriesRemoved: number;
  [k: string]: unknown;
}

/** The run's counts (see {@link RewriteResult}) added up, one result per key, and for a run of one key that key's result at the top. */
export interface EraseSummary extends Omit<RewriteResult, 'batch' | 'maxPosition' | 'byRequest'> {
  readonly runId: string;
  readonly keys: number;
  /** Keys found somewhere (and erased), and keys found nowhere. */
  readonly keysFound: number;
  readonly keysNotFound: number;
  /** Raw objects the query named as holding a key (`candidates`: the same, the name of before). */
  readonly objects: number;
  readonly candidates: number;
  /** History lines of the run's keys, deleted by erase-history. */
  readonly historyLines: number;
  readonly itemsDeleted: number;
  readonly spilledDeleted: number;
  readonly quarantineLinesRewritten: number;
  readonly reportEntriesRemoved: number;
  readonly onFailureRecordsRemoved: number;
  /** The run's erase_keys objects deleted (with every version). */
  readonly keysObjectsDeleted: number;
  readonly results: readonly EraseKeyResult[];
  [k: string]: unknown;
}

type Totals = Tally;

/** Every rewrite batch's result, added up: all pages of the results listing. */
async function addUpResults(s3: S3Client, bucket: string, prefix: string): Promise<Totals> {
  const totals: Totals = { objectsRead: 0, objectsRewritten: 0, objectsDeleted: 0, falsePositives: 0, linesRemoved: 0, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: null, maxPosition: '', byRequest: {} };
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
    addRemoved(totals.byRequest, res.byRequest ?? {});
  }
  return totals;
}

/** The highest of positions (text, compared as text). */
function highest(...positions: readonly string[]): string {
  let top = '';
  for (const p of positions) if (p > top) top = p;
  return top;
}

/** What the run's passes over quarantine, the on-failure objects and the reports removed of one key. */
interface KeyCopies {
  readonly quarantineLinesRewritten: number;
  readonly onFailureRecordsRemoved: number;
  readonly reportEntriesRemoved: number;
}

/** Finishes one request: its spilled rows, the ledger at the highest position found, a revived item deleted again. */
async function finishKey(ctx: EraseContext, r: Resolved, begun: BeginEntry | undefined, raw: KeyRemoved | undefined, history: { lines: number; maxPosition: string } | undefined, copies: KeyCopies, now: number): Promise<EraseKeyResult> {
  const { s3 } = ctx.clients;
  const spilledDeleted = await deleteSpilled(s3, ctx.config, erasedKey(r), deleteOlderVersions);
  const { quarantineLinesRewritten, onFailureRecordsRemoved, reportEntriesRemoved } = copies;
  const blocked = r.request.blockFuture === true;
  const itemFound = begun?.itemFound ?? false;
  const rawLines = raw?.lines ?? 0;
  const historyLines = history?.lines ?? 0;
  const found = itemFound || rawLines > 0 || historyLines > 0 || spilledDeleted > 0 || quarantineLinesRewritten > 0 || onFailureRecordsRemoved > 0 || reportEntriesRemoved > 0;
  const ledgerPosition = blocked ? BLOCK_ALL_POSITION : highest(begun?.storedPosition ?? '', raw?.maxPosition ?? '', history?.maxPosition ?? '');
  const ledgerRecorded = found || blocked;
  let itemDeleted = begun?.itemDeleted ?? false;
  if (ledgerRecorded) {
    await new EraseLedger(ctx.clients.dynamodb, ctx.config.statusTable, ctx.config.name).record({ table: r.table.source, keyHash: r.hash, keyId: r.keyId, position: ledgerPosition, erasedAt: now, reason: r.request.reason });
    // A concurrent replay may have revived the item from raw before its lines were removed.
    const key = keyAttributes(r.table, normalizeKey(r.table, r.request.key));
    itemDeleted = (await eraseItem(ctx, r.table, key, ledgerPosition, now, blocked)) || itemDeleted;
  }
  return {
    request: r.index,
    table: r.table.source,
    keyHash: r.hash,
    found,
    ledgerRecorded,
    blocked,
    ledgerPosition: ledgerRecorded ? ledgerPosition : '',
    itemDeleted: found && itemDeleted,
    rawLinesRemoved: rawLines,
    historyLines,
    spilledDeleted,
    quarantineLinesRewritten,
    onFailureRecordsRemoved,
    reportEntriesRemoved,
  };
}

const sum = (results: readonly EraseKeyResult[], field: keyof EraseKeyResult): number => results.reduce((n, r) => n + Number(r[field] ?? 0), 0);

/**
 * The copies outside raw in quarantine, the on-failure objects and the reports, read once for all
 * the run's keys; then per key: its spilled rows, the ledger raised to what raw and history held,
 * a revived item deleted again. Then the summary, and the run's keys and request deleted with
 * every version.
 */
export async function finishErase(ctx: EraseContext, input: { runId: string; requestKey: string; objects?: number }): Promise<EraseSummary> {
  const all = await resolveErase(ctx, input.requestKey);
  const { s3 } = ctx.clients;
  const bucket = ctx.config.raw.bucket;
  const prefix = erasePrefix(ctx.config, input.runId);
  const begun = new Map((await getJson<BeginEntry[]>(s3, bucket, beginKey(ctx.config, input.runId))).map((e) => [e.request, e]));
  const totals = await addUpResults(s3, bucket, resultsPrefix(prefix));
  const history = await readFound(ctx, input.runId);
  const now = (ctx.now ?? Date.now)();
  const keys = all.map(erasedKey);
  const quarantine = await eraseFromQuarantine(s3, ctx.config, keys, now, deleteOlderVersions);
  const onFailure = await eraseFromOnFailure(s3, ctx.config, keys, deleteOlderVersions);
  const reports = await eraseFromReports(s3, ctx.config, keys, deleteOlderVersions);
  // Keys are independent (the ledger and the item writes are conditional, so a key named twice settles either way): a few at once.
  const results = await mapLimit(all, FINISH_KEYS_AT_ONCE, async (r, i) => {
    const copies: KeyCopies = { quarantineLinesRewritten: quarantine.perKey[i] ?? 0, onFailureRecordsRemoved: onFailure.perKey[i] ?? 0, reportEntriesRemoved: reports.perKey[i] ?? 0 };
    const result = await finishKey(ctx, r, begun.get(r.index), totals.byRequest[String(r.index)], history.get(String(r.index)), copies, now);
    ctx.log.info(result.found ? 'erase finished' : 'erase finished: key not found', { runId: input.runId, table: r.table.source, keyHash: r.hash, rawLines: result.rawLinesRemoved, historyLines: result.historyLines, ledgerRecorded: result.ledgerRecorded });
    return result;
  });
  const keysObjectsDeleted = await deleteRunKeys(ctx, input.runId);
  const { maxPosition: _max, byRequest: _by, ...counts } = totals;
  const objects = input.objects ?? totals.objectsRead;
  const only = results.length === 1 ? results[0] : undefined;
  const summary: EraseSummary = {
    runId: input.runId,
    keys: results.length,
    keysFound: results.filter((r) => r.found).length,
    keysNotFound: results.filter((r) => !r.found).length,
    // A run of one key: its result at the top level too, as a one-key erase reported it before batching.
    ...(only ? { table: only.table, keyHash: only.keyHash, found: only.found, ledgerRecorded: only.ledgerRecorded, blocked: only.blocked, ledgerPosition: only.ledgerPosition, itemDeleted: only.itemDeleted } : {}),
    objects,
    candidates: objects,
    ...counts,
    historyLines: sum(results, 'historyLines'),
    itemsDeleted: results.filter((r) => r.itemDeleted).length,
    spilledDeleted: sum(results, 'spilledDeleted'),
    quarantineLinesRewritten: sum(results, 'quarantineLinesRewritten'),
    onFailureRecordsRemoved: sum(results, 'onFailureRecordsRemoved'),
    reportEntriesRemoved: sum(results, 'reportEntriesRemoved'),
    keysObjectsDeleted,
    results,
  };
  await putJson(s3, bucket, runFile(prefix, 'summary'), summary);
  await deleteEverywhere(s3, bucket, input.requestKey);
  return summary;
}
