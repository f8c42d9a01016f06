/**
 * One key bucket of a replay, applied in key and position order (issue 20, item 20): replay-select
 * (functions/sql/statements/replay-select.ts) writes every selected event to the bucket of its key,
 * each file sorted by (source_table, key id, position, arrival, sequence) but the files not ordered
 * relative to each other; this module merges a bucket's files by that same order (a k-way merge
 * over a heap, one line of each file in memory) and applies the merged stream in consecutive
 * chunks, so each key's events reach the guarded writer in position order whatever the bucket count
 * and whatever order the buckets run in. A placeholder update or a patch therefore always meets the
 * row its earlier events built.
 *
 *   for await (const row of mergeSorted(files.map(rowsOf), compareRows)) …
 *   await applyRows(engine, mergeSorted(…), selection, { chunkRows: 2000 })
 *
 * Each row names one event: the record rebuilt from it is normalized, and only the event the row
 * names (its table, key id and position) is applied from it. A multi-row record's other events are
 * other rows', maybe in another bucket. Text is compared by Unicode code point, as both engines
 * order UTF-8 text.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { TidemarkError } from '../core/errors.js';
import type { RawRecord } from '../core/normalize.js';
import type { TransportMeta } from '../core/types.js';
import { addTally, emptyTally, type ReplayEngine, type ReplayResult, type ReplayTally } from './engine.js';
import { eventName, type ReplaySelection } from './selection.js';

export class ReplayRowError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayRowError';
  }
}

/** A row of replay-select's output (REPLAY_EVENTS, less the bucket: it is the file's partition). */
export interface ReplayRow {
  readonly source_table: string;
  /** Null for a truncate. */
  readonly key_id: string | null;
  readonly position: string;
  readonly op: string;
  readonly arrival_ts: number;
  readonly transport_kind: TransportMeta['kind'];
  readonly stream: string;
  readonly shard: string;
  readonly sequence: string;
  readonly partition_key: string | null;
  readonly topic: string | null;
  readonly headers: Readonly<Record<string, string>> | null;
  readonly message_key: string | null;
  readonly message_key_base64: string | null;
  readonly message: string | null;
  readonly message_base64: string | null;
  readonly raw_object: string;
}

/** Code unit → a value ordered as code points are: surrogates above the rest of the BMP. */
const unit = (c: number): number => (c >= 0xe000 ? c - 0x800 : c >= 0xd800 ? c + 0x2000 : c);

/** Compares text by Unicode code point (UTF-8 byte order), as Athena and DuckDB order varchar. */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return unit(x) - unit(y);
  }
  return a.length - b.length;
}

/** replay-select's ORDER BY: source_table, key id (a truncate's as ''), position, arrival, sequence. */
export function compareRows(a: ReplayRow, b: ReplayRow): number {
  return (
    compareText(a.source_table, b.source_table) ||
    compareText(a.key_id ?? '', b.key_id ?? '') ||
    compareText(a.position, b.position) ||
    a.arrival_ts - b.arrival_ts ||
    compareText(a.sequence, b.sequence)
  );
}

interface Head<T> {
  value: T;
  source: number;
  iterator: AsyncIterator<T>;
}

/** A binary min-heap of stream heads. */
class Heap<T> {
  private readonly items: Head<T>[] = [];
  constructor(private readonly less: (a: Head<T>, b: Head<T>) => boolean) {}
  get size(): number {
    return this.items.length;
  }
  push(h: Head<T>): void {
    const a = this.items;
    a.push(h);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i] as Head<T>, a[p] as Head<T>)) break;
      [a[i], a[p]] = [a[p] as Head<T>, a[i] as Head<T>];
      i = p;
    }
  }
  pop(): Head<T> | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l] as Head<T>, a[m] as Head<T>)) m = l;
        if (r < a.length && this.less(a[r] as Head<T>, a[m] as Head<T>)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as Head<T>, a[i] as Head<T>];
        i = m;
      }
    }
    return top;
  }
}

/**
 * Merges streams each sorted by `compare` into one sorted stream, holding one value per stream.
 * Ties keep the earlier stream first. A stream out of order is refused (ReplayRowError): merging it
 * would apply a key's events out of position order.
 */
export async function* mergeSorted<T>(sources: readonly AsyncIterable<T>[], compare: (a: T, b: T) => number): AsyncGenerator<T> {
  const heap = new Heap<T>((a, b) => {
    const c = compare(a.value, b.value);
    return c < 0 || (c === 0 && a.source < b.source);
  });
  const advance = async (source: number, iterator: AsyncIterator<T>, previous?: T): Promise<void> => {
    const next = await iterator.next();
    if (next.done) return;
    if (previous !== undefined && compare(previous, next.value) > 0) throw new ReplayRowError(`stream ${source} of the merge is not in order`);
    heap.push({ value: next.value, source, iterator });
  };
  for (const [i, s] of sources.entries()) await advance(i, s[Symbol.asyncIterator]());
  while (heap.size > 0) {
    const head = heap.pop() as Head<T>;
    yield head.value;
    await advance(head.source, head.iterator, head.value);
  }
}

/** The JSON objects of a gzip JSON Lines stream, one line in memory at a time. */
export async function* jsonLines(body: Readable, name: string): AsyncGenerator<Record<string, unknown>> {
  const lines = createInterface({ input: body.pipe(createGunzip()), crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new ReplayRowError(`${name} line ${n} is not JSON`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ReplayRowError(`${name} line ${n} is not a JSON object`);
    yield parsed as Record<string, unknown>;
  }
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const TRANSPORTS = new Set(['kinesis', 'kafka', 'file']);

/** A replay_events line as a row; ReplayRowError naming the field (never a value) when it is not one. */
export function rowOf(line: Record<string, unknown>, where: string): ReplayRow {
  const need = (field: string): string => {
    const v = line[field];
    if (typeof v !== 'string') throw new ReplayRowError(`${where}: ${field} must be text`);
    return v;
  };
  const arrival = line.arrival_ts;
  if (typeof arrival !== 'number' || !Number.isSafeInteger(arrival)) throw new ReplayRowError(`${where}: arrival_ts must be an integer`);
  const kind = need('transport_kind');
  if (!TRANSPORTS.has(kind)) throw new ReplayRowError(`${where}: transport_kind must be kinesis, kafka or file`);
  const headers: Record<string, string> = Object.create(null);
  if (typeof line.headers === 'object' && line.headers !== null && !Array.isArray(line.headers)) for (const [k, h] of Object.entries(line.headers)) if (typeof h === 'string') headers[k] = h;
  const op = need('op');
  const keyId = text(line.key_id);
  if (keyId === null && op !== 't') throw new ReplayRowError(`${where}: only a truncate has no key_id`);
  return {
    source_table: need('source_table'),
    key_id: keyId,
    position: need('position'),
    op,
    arrival_ts: arrival,
    transport_kind: kind as TransportMeta['kind'],
    stream: need('stream'),
    shard: need('shard'),
    sequence: need('sequence'),
    partition_key: text(line.partition_key),
    topic: text(line.topic),
    headers,
    message_key: text(line.message_key),
    message_key_base64: text(line.message_key_base64),
    message: text(line.message),
    message_base64: text(line.message_base64),
    raw_object: need('raw_object'),
  };
}

/** Base64 text (no regex: a message may be large): the alphabet, then at most two `=`, length a multiple of 4. */
function isBase64(v: string): boolean {
  if (v.length % 4 !== 0) return false;
  let pad = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x3d) {
      pad++;
      continue;
    }
    const ok = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
    if (!ok || pad > 0) return false;
  }
  return pad <= 2;
}

function bytes(textValue: string | null, base64: string | null, what: string): Uint8Array | null {
  if (base64 !== null) {
    if (!isBase64(base64)) throw new ReplayRowError(`${what} is not valid base64`);
    return Buffer.from(base64, 'base64');
  }
  return textValue !== null && textValue.length > 0 ? Buffer.from(textValue, 'utf8') : null;
}

/** The delivered record a row came from, as raw-reader.ts rebuilds it from its raw line. */
export function recordOf(row: ReplayRow): RawRecord {
  const value = bytes(row.message, row.message_base64, 'message_base64');
  const key = bytes(row.message_key, row.message_key_base64, 'message_key_base64');
  const transport: TransportMeta = { kind: row.transport_kind, stream: row.stream, shard: row.shard, sequence: row.sequence, partitionKey: row.partition_key, arrivalTime: row.arrival_ts };
  // A tombstone repeats what it did when it landed: a keyed change line is a delete.
  return { value, key, topic: row.topic, headers: row.headers ?? {}, transport, ...(value === null ? { tombstone: 'delete' as const } : {}) };
}


export interface ApplyRowsResult {
  readonly tally: ReplayTally;
  readonly rows: number;
  readonly chunks: number;
  readonly failures: ReplayResult['failures'];
  /** With `dryRun`: per key, what a real run would do (the last chunk's line of a key that spans two). */
  readonly dryRun: ReplayResult['dryRun'];
}

/**
 * Applies a sorted stream of rows through the engine, `chunkRows` rows at a time, in order: each
 * chunk's records once (a record several rows name is rebuilt once), and of their events only those
 * the chunk's rows name.
 */
export async function applyRows(engine: ReplayEngine, rows: AsyncIterable<ReplayRow>, selection: ReplaySelection, options: { readonly chunkRows: number; readonly dryRun?: boolean }): Promise<ApplyRowsResult> {
  if (!Number.isSafeInteger(options.chunkRows) || options.chunkRows < 1) throw new ReplayRowError(`chunkRows must be a positive integer, got ${options.chunkRows}`);
  const tally = emptyTally();
  const failures: ReplayResult['failures'][number][] = [];
  // Nothing is written in a dry run, so a later chunk's line of the same key (its higher positions) is the run's answer.
  const dryRun = new Map<string, ReplayResult['dryRun'][number]>();
  let records = new Map<string, RawRecord>();
  let names = new Set<string>();
  let inChunk = 0;
  let total = 0;
  let chunks = 0;
  const flush = async () => {
    if (inChunk === 0) return;
    const r = await engine.replay([...records.values()], { ...selection, events: names }, options.dryRun ? { dryRun: true } : {});
    addTally(tally, r.tally);
    failures.push(...r.failures);
    for (const line of r.dryRun) dryRun.set(JSON.stringify([line.table, line.key]), line);
    chunks++;
    records = new Map();
    names = new Set();
    inChunk = 0;
  };
  for await (const row of rows) {
    const id = JSON.stringify([row.transport_kind, row.stream, row.shard, row.sequence, row.message ?? row.message_base64 ?? '']);
    if (!records.has(id)) records.set(id, recordOf(row));
    names.add(eventName(row.source_table, row.op === 't' ? null : row.key_id, row.position));
    inChunk++;
    total++;
    if (inChunk >= options.chunkRows) await flush();
  }
  await flush();
  return { tally, rows: total, chunks, failures, dryRun: [...dryRun.values()] };
}
