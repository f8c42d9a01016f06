/**
 * Reads raw back: the replay, erase and reconcile jobs start here.
 *
 * Raw objects live under Hive-style partitions (see raw-store.ts):
 *   <prefix>table=<segment>/dt=2026-11-30/hr=06/<shard>-<first seq>-<last seq>[-<digest>].jsonl.gz
 * The reader lists a table's objects for a landing-time range, gunzips and parses their lines and
 * rebuilds each delivered record (value bytes, key bytes, topic, headers, transport) so it can be
 * normalized again by the very Normalizer ingest uses. Example:
 *
 *   const objects = await listRawObjects(s3, { bucket, prefix: 'raw/', table: 'public.orders', since, until });
 *   const set = new RawRecordSet();
 *   for (const o of objects) set.add(parseRawObject(await readRawObject(s3, bucket, o.key), o.key));
 *   for (const r of set.records()) normalizer.normalize(r.record);
 *
 * Both raw line layouts are accepted:
 * - the first one: every line carries `message` / `messageKey` as UTF-8 text, and a multi-row
 *   message is repeated on each of its rows' lines;
 * - the compact one: `messageBase64` / `messageKeyBase64` when the bytes are not UTF-8, and only the
 *   first line of a record in an object carries the message; the record's later lines (same
 *   stream, shard and sequence) hold `message: null, messageRef: true`.
 * Table segments may be the first, lossy form (`public.caf_`) or percent-encoded (`public.caf%C3%A9`);
 * lines always name their table, so a lossy segment shared by two tables is split by the line's own
 * `table`. A record repeated across objects (a partial batch landed again on retry) is kept once.
 * Unreadable lines are returned as problems with a reason, never dropped silently.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { RawRecord } from '../core/normalize.js';
import type { TransportMeta } from '../core/types.js';
import { parseRawObjectKey, rawBatchesPrefix, rawDayPrefix, type RawObjectKeyParts, rawTableDayPrefix, rawTablePrefix, rawTablesPrefix, segmentNames } from './raw-layout.js';

const gunzipAsync = promisify(gunzip);
const HOUR_MS = 3_600_000;

export type { RawObjectKeyParts } from './raw-layout.js';
export { parseRawObjectKey } from './raw-layout.js';

export interface RawObjectRef extends RawObjectKeyParts {
  readonly key: string;
  readonly size: number;
  readonly lastModified: number | null;
}

export interface RawRange {
  /** Landing time, epoch ms, inclusive. */
  readonly since?: number;
  /** Landing time, epoch ms, exclusive. */
  readonly until?: number;
}

/**
 * Whether an object's partition hour can hold records that arrived in the range. A batch lands in
 * the hour of its first record, so its later records may have arrived up to a batching window
 * later: one hour of slack before `since` keeps them.
 */
export function hourOverlaps(hourStart: number, range: RawRange): boolean {
  if (range.since !== undefined && hourStart + 2 * HOUR_MS <= range.since) return false;
  if (range.until !== undefined && hourStart >= range.until) return false;
  return true;
}

export interface ListRawOptions extends RawRange {
  readonly bucket: string;
  readonly prefix: string;
  readonly table: string;
}

async function listAll(s3: S3Client, bucket: string, prefix: string, delimiter?: string): Promise<{ keys: RawObjectRefLike[]; prefixes: string[] }> {
  const keys: RawObjectRefLike[] = [];
  const prefixes: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key) keys.push({ key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified?.getTime() ?? null });
    for (const p of page.CommonPrefixes ?? []) if (p.Prefix) prefixes.push(p.Prefix);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { keys, prefixes };
}

interface RawObjectRefLike {
  readonly key: string;
  readonly size: number;
  readonly lastModified: number | null;
}

/**
 * Every table segment under `<prefix>table=`. One delimited listing on S3; s3rver answers a
 * delimited listing of nested keys with nothing at all, so an empty answer falls back to listing
 * the keys (names only) and taking their first path segment.
 */
export async function allTableSegments(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const base = rawTablesPrefix(prefix);
  const { prefixes, keys } = await listAll(s3, bucket, base, '/');
  if (prefixes.length > 0 || keys.length > 0) return prefixes.map((p) => p.slice(base.length, -1));
  const segments = new Set<string>();
  for (const k of (await listAll(s3, bucket, base)).keys) {
    const seg = k.key.slice(base.length).split('/')[0];
    if (seg) segments.add(seg);
  }
  return [...segments].sort();
}

/** The table segments that may hold the table's objects (both encodings). */
export async function tableSegments(s3: S3Client, bucket: string, prefix: string, table: string): Promise<string[]> {
  return (await allTableSegments(s3, bucket, prefix)).filter((seg) => segmentNames(seg, table));
}

/**
 * Lists the raw objects that may hold a table's lines and whose partition hour overlaps the
 * landing-time range, oldest first: the batch objects (every table's lines; readers keep the
 * table's by the lines' own `table`) and the table's objects of the first layout.
 */
export async function listRawObjects(s3: S3Client, options: ListRawOptions): Promise<RawObjectRef[]> {
  const out: RawObjectRef[] = await listBatchObjects(s3, options);
  for (const segment of await tableSegments(s3, options.bucket, options.prefix, options.table)) {
    const whole = rawTablePrefix(options.prefix, segment);
    for (const listPrefix of dayPrefixes(whole, (day) => rawTableDayPrefix(options.prefix, segment, day), options)) {
      const { keys } = await listAll(s3, options.bucket, listPrefix);
      for (const k of keys) {
        const parts = parseRawObjectKey(options.prefix, k.key);
        if (parts && parts.tableSegment === segment && hourOverlaps(parts.hourStart, options)) out.push({ ...k, ...parts });
      }
    }
  }
  return out.sort((a, b) => a.hourStart - b.hourStart || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The batch objects (one per batch, every table) whose hour overlaps the range. */
export async function listBatchObjects(s3: S3Client, options: RawRange & { readonly bucket: string; readonly prefix: string }): Promise<RawObjectRef[]> {
  const out: RawObjectRef[] = [];
  for (const listPrefix of dayPrefixes(rawBatchesPrefix(options.prefix), (day) => rawDayPrefix(options.prefix, day), options)) {
    const { keys } = await listAll(s3, options.bucket, listPrefix);
    for (const k of keys) {
      const parts = parseRawObjectKey(options.prefix, k.key);
      if (parts?.layout === 'batch' && hourOverlaps(parts.hourStart, options)) out.push({ ...k, ...parts });
    }
  }
  return out;
}

/** One listing per day of a bounded range (a month at most), each `dayPrefix` of the day's start; `whole` otherwise. */
function dayPrefixes(whole: string, dayPrefix: (dayStart: number) => string, range: RawRange): string[] {
  if (range.since === undefined) return [whole];
  const end = range.until ?? Date.now();
  const first = Math.floor((range.since - 2 * HOUR_MS) / (24 * HOUR_MS));
  const last = Math.floor(end / (24 * HOUR_MS));
  if (last - first > 31) return [whole];
  const out: string[] = [];
  for (let d = first; d <= last; d++) out.push(dayPrefix(d * 24 * HOUR_MS));
  return out;
}

/** GETs and gunzips one raw object (optionally one version of it). */
export async function readRawObject(s3: S3Client, bucket: string, key: string, versionId?: string): Promise<Buffer> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
  const body = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  // Gzip magic bytes: an object stored without compression (or decoded by a proxy) is read as is.
  return body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b ? gunzipAsync(body) : body;
}

/** What a raw line says about the row it was landed for. */
export interface RawLineInfo {
  readonly kind: 'change' | 'control';
  readonly table: string | null;
  /** JSON text of the normalized key. */
  readonly key: string | null;
  readonly position: string | null;
  readonly op: string | null;
}

/** A delivered record rebuilt from raw, with where it was found and the lines that named it. */
export interface RawReplayRecord {
  readonly record: RawRecord;
  /** Stable identity: transport coordinates plus a digest of the delivered bytes. */
  readonly id: string;
  readonly objectKey: string;
  readonly lines: readonly RawLineInfo[];
}

export type RawLineProblemReason = 'invalid-line' | 'bad-transport' | 'bad-base64' | 'orphan-message-ref';

export interface RawLineProblem {
  readonly objectKey: string;
  /** 1-based line number in the object. */
  readonly line: number;
  readonly reason: RawLineProblemReason;
  readonly detail: string;
}

export interface ParsedRawObject {
  readonly objectKey: string;
  readonly records: readonly RawReplayRecord[];
  readonly problems: readonly RawLineProblem[];
  readonly lineCount: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function transportOf(v: unknown): TransportMeta | null {
  if (!isObj(v)) return null;
  const { kind, stream, shard, sequence, partitionKey, arrivalTime } = v;
  if (kind !== 'kinesis' && kind !== 'kafka' && kind !== 'file') return null;
  if (typeof stream !== 'string' || typeof shard !== 'string' || typeof sequence !== 'string') return null;
  if (typeof arrivalTime !== 'number' || !Number.isFinite(arrivalTime)) return null;
  return { kind, stream, shard, sequence, partitionKey: typeof partitionKey === 'string' ? partitionKey : null, arrivalTime };
}

function headersOf(v: unknown): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (isObj(v)) for (const [k, h] of Object.entries(v)) if (typeof h === 'string') out[k] = h;
  return out;
}

/** Bytes from `<field>` (UTF-8 text) or `<field>Base64`; undefined when the base64 is malformed. */
function bytesOf(line: Obj, field: 'message' | 'messageKey'): Uint8Array | null | undefined {
  const b64 = line[`${field}Base64`];
  if (typeof b64 === 'string') return BASE64.test(b64) && b64.length % 4 === 0 ? Buffer.from(b64, 'base64') : undefined;
  const text = line[field];
  return typeof text === 'string' && text.length > 0 ? Buffer.from(text, 'utf8') : null;
}

const coordinates = (t: TransportMeta) => JSON.stringify([t.kind, t.stream, t.shard, t.sequence]);

function recordId(t: TransportMeta, value: Uint8Array | null, key: Uint8Array | null): string {
  const h = createHash('sha256');
  h.update(value ?? new Uint8Array());
  h.update('\0');
  h.update(key ?? new Uint8Array());
  return `${coordinates(t)}#${h.digest('base64url').slice(0, 22)}`;
}

interface Building {
  record: RawRecord;
  id: string;
  lines: RawLineInfo[];
}

interface LineProblem {
  readonly reason: RawLineProblemReason;
  readonly detail: string;
}

interface DecodedLine {
  readonly parsed: Obj;
  readonly transport: TransportMeta;
  readonly info: RawLineInfo;
}

/** One raw line: its fields, transport and what it names, or why it cannot be read. */
function decodeLine(row: string): DecodedLine | LineProblem {
  let parsed: unknown;
  try {
    parsed = JSON.parse(row);
  } catch (err) {
    return { reason: 'invalid-line', detail: `not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!isObj(parsed)) return { reason: 'invalid-line', detail: 'a raw line must be a JSON object' };
  const transport = transportOf(parsed.transport);
  if (!transport) return { reason: 'bad-transport', detail: 'transport must hold kind, stream, shard, sequence (text) and arrivalTime (number)' };
  const info: RawLineInfo = {
    kind: parsed.kind === 'control' ? 'control' : 'change',
    table: str(parsed.table),
    key: str(parsed.key),
    position: str(parsed.position),
    op: str(parsed.op),
  };
  return { parsed, transport, info };
}

/**
 * Adds a line to the record it belongs to (a messageRef line, or a repeat of the same message) or
 * opens a new record with it; returns the problem when it can do neither.
 */
function placeLine({ parsed, transport, info }: DecodedLine, open: Map<string, Building>, building: Building[]): LineProblem | null {
  const coord = coordinates(transport);
  const owner = open.get(coord);
  if (parsed.messageRef === true) {
    if (!owner) return { reason: 'orphan-message-ref', detail: `messageRef line has no earlier line of ${transport.shard}/${transport.sequence} carrying the message` };
    owner.lines.push(info);
    return null;
  }
  const value = bytesOf(parsed, 'message');
  const key = bytesOf(parsed, 'messageKey');
  if (value === undefined || key === undefined) return { reason: 'bad-base64', detail: 'messageBase64 / messageKeyBase64 is not valid base64' };
  const id = recordId(transport, value, key);
  // The first layout repeats a multi-row message on every row's line: same coordinates, same bytes.
  if (owner && owner.id === id) {
    owner.lines.push(info);
    return null;
  }
  // A tombstone repeats what it did when it landed: a change line is a delete, a control line was ignored.
  const landedAs = value === null ? { tombstone: info.kind === 'change' ? ('delete' as const) : ('ignore' as const) } : {};
  const b: Building = {
    record: { value, key, topic: str(parsed.topic), headers: headersOf(parsed.headers), transport, ...landedAs },
    id,
    lines: [info],
  };
  building.push(b);
  open.set(coord, b);
  return null;
}

/** Parses an object's JSON Lines into rebuilt records, in line order. Never throws for bad lines. */
export function parseRawObject(body: Buffer | string, objectKey: string): ParsedRawObject {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  const problems: RawLineProblem[] = [];
  const building: Building[] = [];
  // The record each transport coordinate last opened in this object: where messageRef lines point.
  const open = new Map<string, Building>();
  const rows = text.split('\n');
  let lineCount = 0;
  for (const [i, row] of rows.entries()) {
    if (row.trim() === '') continue;
    lineCount++;
    const decoded = decodeLine(row);
    const problem = 'reason' in decoded ? decoded : placeLine(decoded, open, building);
    if (problem) problems.push({ objectKey, line: i + 1, reason: problem.reason, detail: problem.detail });
  }
  return { objectKey, records: building.map((b) => ({ ...b, objectKey })), problems, lineCount };
}

/**
 * Records from many objects, each kept once: a partial batch landed again on retry repeats
 * records (same coordinates, same bytes) in a second object. Records whose coordinates repeat
 * with different bytes (two files applied with the same line numbers) are distinct and both kept.
 */
export class RawRecordSet {
  private readonly byId = new Map<string, RawReplayRecord>();
  private readonly problemList: RawLineProblem[] = [];
  duplicates = 0;
  lines = 0;

  /**
   * Adds an object's records; with `tables`, only those with a line of one of them (a batch object
   * holds every table's lines, and a lossy segment of the first layout may hold two tables).
   */
  add(parsed: ParsedRawObject, tables?: string | readonly string[]): void {
    this.lines += parsed.lineCount;
    for (const p of parsed.problems) this.problemList.push(p);
    const only = tables === undefined ? null : new Set(typeof tables === 'string' ? [tables] : tables);
    for (const r of parsed.records) {
      if (only !== null && !r.lines.some((l) => l.table !== null && only.has(l.table))) continue;
      const seen = this.byId.get(r.id);
      if (seen) this.duplicates++;
      else this.byId.set(r.id, r);
    }
  }

  get size(): number {
    return this.byId.size;
  }

  get problems(): readonly RawLineProblem[] {
    return this.problemList;
  }

  /** In transport order per shard (sequences compared as integers), shards by name. */
  records(): RawReplayRecord[] {
    return [...this.byId.values()].sort((a, b) => compareTransport(a.record.transport, b.record.transport));
  }
}

/** Orders by stream, shard, then sequence as an unsigned integer (Kinesis sequences are 56 digits). */
export function compareTransport(a: TransportMeta, b: TransportMeta): number {
  if (a.stream !== b.stream) return a.stream < b.stream ? -1 : 1;
  if (a.shard !== b.shard) return a.shard < b.shard ? -1 : 1;
  const x = /^\d+$/.test(a.sequence) ? BigInt(a.sequence) : null;
  const y = /^\d+$/.test(b.sequence) ? BigInt(b.sequence) : null;
  if (x !== null && y !== null) return x < y ? -1 : x > y ? 1 : 0;
  return a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0;
}

/** Keeps the records that arrived in the landing-time range. */
export const inRange = (r: RawReplayRecord, range: RawRange): boolean =>
  (range.since === undefined || r.record.transport.arrivalTime >= range.since) && (range.until === undefined || r.record.transport.arrivalTime < range.until);
