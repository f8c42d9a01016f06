/**
 * The copies of a key outside raw that erase reaches: quarantine lines (original bytes that did not
 * normalize), the event source mapping's on-failure objects (whole failed batches, under
 * `aws/lambda/`), and spilled rows. Each object is rewritten under `If-Match` (conditional-rewrite.ts),
 * so two erasures of keys sharing an object cannot undo each other, and its older versions are
 * deleted.
 *
 * Quarantine, the on-failure objects and the reports are read once per run for all its keys: one
 * listing and one conditional rewrite per object, matched against the keys indexed by table (and by
 * canonical key id), never once per key. Each key's count comes out as one key at a time made it:
 * a line or record carrying several of the keys is the first one's.
 *
 * Costs are bounded by what those prefixes hold, never by raw's history: quarantine expires after
 * `raw.quarantineRetentionDays`, on-failure objects exist only for batches Lambda gave up on (each
 * one alarmed), spilled rows are listed by the key's own prefix.
 */
import { DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import { isJsonObject, isLosslessNumber, parseJson, stringifyJson } from '../core/json.js';
import { keyId, normalizeKey } from '../core/keys.js';
import { Normalizer, type RawRecord } from '../core/normalize.js';
import { rewriteIfUnchanged } from '../adapters/conditional-rewrite.js';
import { withoutRecords } from '../adapters/on-failure.js';
import { jobOutputsPrefix, mayHoldKeys, spillPrefixes } from '../adapters/raw-layout.js';
import { listObjectKeys } from '../adapters/s3-list.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The key being erased: its table, canonical text, normalized columns and keyed hash. */
export interface ErasedKey {
  readonly table: TableConfig;
  readonly canonical: string;
  readonly columns: JsonObject;
  readonly hash: string;
}

/** Deletes every version of `key` but `keep` (see erase.ts); null when the store has no versions. */
export type DeleteVersions = (s3: S3Client, bucket: string, key: string, keep: string | undefined, all?: boolean) => Promise<number | null>;


const valueText = (v: unknown): string => (isLosslessNumber(v) ? v.value : String(v));

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** The index of the first character at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  let at = i;
  while (at < text.length && isSpace(text[at])) at++;
  return at;
}

/**
 * Whether the bytes of a quarantine line mention the key: of the key's table (when `table` is given,
 * its last dotted part appears as a JSON string; lines that name their table are matched on it
 * before this) and holding every key column as `"column": value`. A plain scan, no pattern built
 * from the key, linear in the text.
 */
export function mentionsKey(text: string, key: JsonObject, table: string | null): boolean {
  const bare = table === null ? null : (table.split('.').pop() ?? table);
  if (bare !== null && !text.includes(JSON.stringify(bare))) return false;
  return Object.entries(key).every(([col, v]) => {
    const value = valueText(v);
    return valuesHeld(text, col, { texts: new Set([value]), longest: value.length }).has(value);
  });
}

/** One of the run's keys, by its place among the keys given, with its columns as the text they match. */
interface Entry {
  readonly index: number;
  readonly key: ErasedKey;
  readonly pairs: readonly (readonly [string, string])[];
}

/** The run's keys of one table, indexed so that one pass over a text matches them all. */
interface TableKeys {
  /** The first key's table (every key of one source shares its table's config). */
  readonly table: TableConfig;
  /** The table's last dotted part as a JSON string: what the bytes of a quarantine line that names no table must hold. */
  readonly bare: string;
  /** The smallest index among the table's keys. */
  readonly first: number;
  /** Canonical key id → the first index naming it (a second request for one key finds its copies gone, as one key at a time did). */
  readonly byCanonical: ReadonlyMap<string, number>;
  /** Per column: the values (as text) the table's keys hold there, and the longest of them. */
  readonly values: ReadonlyMap<string, { readonly texts: ReadonlySet<string>; readonly longest: number }>;
  /** A key's first column → its value there → the keys with that value, in order. */
  readonly byLead: ReadonlyMap<string, ReadonlyMap<string, readonly Entry[]>>;
  /** Keys with no column (none in a valid config): every line of the table holds them. */
  readonly always: readonly Entry[];
}

/** The run's keys, by table. */
interface RunKeys {
  readonly keys: readonly ErasedKey[];
  readonly tables: ReadonlyMap<string, TableKeys>;
}

function runKeys(keys: readonly ErasedKey[]): RunKeys {
  const tables = new Map<string, { table: TableConfig; first: number; byCanonical: Map<string, number>; values: Map<string, { texts: Set<string>; longest: number }>; byLead: Map<string, Map<string, Entry[]>>; always: Entry[] }>();
  for (const [index, key] of keys.entries()) {
    const source = key.table.source;
    let t = tables.get(source);
    if (t === undefined) {
      t = { table: key.table, first: index, byCanonical: new Map(), values: new Map(), byLead: new Map(), always: [] };
      tables.set(source, t);
    }
    if (!t.byCanonical.has(key.canonical)) t.byCanonical.set(key.canonical, index);
    const pairs = Object.entries(key.columns).map(([col, v]) => [col, valueText(v)] as const);
    const entry: Entry = { index, key, pairs };
    for (const [col, text] of pairs) {
      const v = t.values.get(col) ?? { texts: new Set<string>(), longest: 0 };
      v.texts.add(text);
      v.longest = Math.max(v.longest, text.length);
      t.values.set(col, v);
    }
    const lead = pairs[0];
    if (lead === undefined) t.always.push(entry);
    else {
      const byValue = t.byLead.get(lead[0]) ?? new Map<string, Entry[]>();
      byValue.set(lead[1], [...(byValue.get(lead[1]) ?? []), entry]);
      t.byLead.set(lead[0], byValue);
    }
  }
  const out = new Map<string, TableKeys>();
  for (const [source, t] of tables) out.set(source, { ...t, bare: JSON.stringify(source.split('.').pop() ?? source) });
  return { keys, tables: out };
}

/** The smaller of two indexes, either absent. */
const earlier = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined || b >= a ? a : b);

const VALUE_GOES_ON = /[0-9A-Za-z.]/;

/**
 * Which of `wanted` the text holds as `"column"`, optional spaces, `:`, optional spaces and the
 * value (quoted, or bare and not running on into a longer value), in one scan: at each place a
 * value starts, only the texts up to the longest wanted are looked up. Linear in the text times
 * the longest value, no pattern built from a key.
 */
function valuesHeld(text: string, column: string, wanted: { readonly texts: ReadonlySet<string>; readonly longest: number }): Set<string> {
  const found = new Set<string>();
  const name = JSON.stringify(column);
  for (let at = text.indexOf(name); at >= 0 && found.size < wanted.texts.size; at = text.indexOf(name, at + 1)) {
    const colon = skipSpace(text, at + name.length);
    if (text[colon] !== ':') continue;
    const i = skipSpace(text, colon + 1);
    const quoted = text[i] === '"';
    const start = quoted ? i + 1 : i;
    const last = Math.min(text.length, start + wanted.longest);
    for (let end = start; end <= last; end++) {
      const next = text[end];
      const ends = quoted ? next === '"' : next === undefined || !VALUE_GOES_ON.test(next);
      if (!ends) continue;
      const value = text.slice(start, end);
      if (wanted.texts.has(value)) found.add(value);
    }
  }
  return found;
}

/** The first of a table's keys (by index) whose every column the text holds, as {@link mentionsKey} matches one. */
function firstHeld(text: string, t: TableKeys): number | undefined {
  const held = new Map<string, Set<string>>();
  const heldAt = (col: string): Set<string> => {
    let s = held.get(col);
    if (s === undefined) {
      const wanted = t.values.get(col);
      s = wanted === undefined ? new Set() : valuesHeld(text, col, wanted);
      held.set(col, s);
    }
    return s;
  };
  let first = t.always[0]?.index;
  for (const [lead, byValue] of t.byLead) {
    for (const value of heldAt(lead)) {
      for (const e of byValue.get(value) ?? []) {
        if (first !== undefined && e.index >= first) break;
        if (e.pairs.every(([col, v]) => heldAt(col).has(v))) {
          first = e.index;
          break;
        }
      }
    }
  }
  return first;
}

/**
 * The first of the run's keys (by index) a quarantine line carries: of the line's table when it
 * names one, else of a table whose last dotted part its bytes hold as a JSON string; and every key
 * column held as `"column": value` (see {@link mentionsKey}). One at a time, an earlier key blanks
 * the line and a later one finds nothing left in it, so the line is the first key's.
 */
function quarantineMatch(q: Record<string, unknown>, run: RunKeys): number | undefined {
  const bytes = [q.valueBase64, q.keyBase64].map((b) => (typeof b === 'string' ? Buffer.from(b, 'base64').toString('utf8') : '')).join('\n');
  if (typeof q.table === 'string') {
    const t = run.tables.get(q.table);
    return t === undefined ? undefined : firstHeld(bytes, t);
  }
  let first: number | undefined;
  for (const t of run.tables.values()) {
    if (first !== undefined && t.first >= first) continue;
    if (bytes.includes(t.bare)) first = earlier(first, firstHeld(bytes, t));
  }
  return first;
}

/** A quarantine line with a key's bytes blanked, and which key; null when the line carries none of the run's keys. */
function eraseQuarantineLine(line: string, run: RunKeys, now: number): { text: string; index: number } | null {
  if (line.trim() === '') return null;
  let q: Record<string, unknown>;
  try {
    q = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (q === null || typeof q !== 'object') return null;
  const index = quarantineMatch(q, run);
  const k = index === undefined ? undefined : run.keys[index];
  if (index === undefined || k === undefined) return null;
  return { text: JSON.stringify({ ...q, valueBase64: null, keyBase64: null, erased: { keyHash: k.hash, at: now } }), index };
}

/** What one pass over a prefix removed of the run's keys. */
export interface CopiesErased {
  /** Objects read. */
  readonly objects: number;
  /** Per key, in the order of the keys given: what went of it (lines, records, entries). */
  readonly perKey: readonly number[];
  /** All the keys' together. */
  readonly total: number;
}

/**
 * Blanks the keys' bytes in every quarantine object, in one listing and one conditional rewrite
 * per object for all the run's keys; per key, how many lines changed.
 */
export async function eraseFromQuarantine(s3: S3Client, config: TidemarkConfig, keys: readonly ErasedKey[], now: number, deleteVersions: DeleteVersions): Promise<CopiesErased> {
  const bucket = config.raw.bucket;
  const run = runKeys(keys);
  const perKey = keys.map(() => 0);
  let objects = 0;
  for await (const objectKey of listObjectKeys(s3, bucket, config.raw.quarantinePrefix)) {
    if (!objectKey.endsWith('.jsonl.gz') || keys.length === 0) continue;
    objects++;
    const out = await rewriteIfUnchanged<number[]>(s3, bucket, objectKey, async (body) => {
      const text = (await gunzipAsync(body)).toString('utf8');
      const changed = keys.map(() => 0);
      let any = false;
      const lines = text.split('\n').map((line) => {
        const erased = eraseQuarantineLine(line, run, now);
        if (erased === null) return line;
        changed[erased.index] = (changed[erased.index] ?? 0) + 1;
        any = true;
        return erased.text;
      });
      if (!any) return { decision: { kind: 'keep' } };
      const gz = await gzipAsync(Buffer.from(lines.join('\n'), 'utf8'));
      return { decision: { kind: 'put', body: gz, contentType: 'application/x-ndjson', contentEncoding: 'gzip' }, detail: changed };
    });
    if (out.outcome === 'put') {
      addInto(perKey, out.detail);
      await deleteVersions(s3, bucket, objectKey, out.versionId);
    }
  }
  return { objects, perKey, total: perKey.reduce((a, b) => a + b, 0) };
}

/** Adds one object's per-key counts to the run's. */
function addInto(into: number[], from: readonly number[] | undefined): void {
  for (const [i, n] of (from ?? []).entries()) into[i] = (into[i] ?? 0) + n;
}

export interface OnFailureErased extends CopiesErased {
  readonly objectsRewritten: number;
  readonly objectsDeleted: number;
}

/**
 * Removes the records that carry one of the keys from every on-failure object (a whole failed
 * batch, the records' exact bytes), in one listing and one conditional rewrite per object for all
 * the run's keys: each record decoded once as ingest decodes it, and it goes when any of its rows
 * is one of the keys' (counted for the first of them). An object left with no record is deleted.
 * `replay --from-dlq` would otherwise bring the keys back.
 */
export async function eraseFromOnFailure(s3: S3Client, config: TidemarkConfig, keys: readonly ErasedKey[], deleteVersions: DeleteVersions): Promise<OnFailureErased> {
  const bucket = config.replay.onFailureBucket ?? config.raw.bucket;
  const run = runKeys(keys);
  const normalizer = new Normalizer(config);
  /** The first of the keys (by index) one of the record's rows is, or undefined. */
  const carried = (record: RawRecord): number | undefined => {
    const n = normalizer.normalize(record);
    if (!n.ok) return undefined;
    let first: number | undefined;
    for (const e of n.events) {
      if (e.kind !== 'change') continue;
      const byCanonical = run.tables.get(e.table)?.byCanonical;
      if (byCanonical !== undefined) first = earlier(first, byCanonical.get(normalizer.keyIdOf(e)));
    }
    return first;
  };
  const perKey = keys.map(() => 0);
  const tally = { objects: 0, objectsRewritten: 0, objectsDeleted: 0 };
  for await (const objectKey of listObjectKeys(s3, bucket, config.replay.onFailurePrefix)) {
    tally.objects++;
    if (keys.length === 0) continue;
    const out = await rewriteIfUnchanged<number[]>(s3, bucket, objectKey, (body) => {
      let doc: unknown;
      try {
        doc = JSON.parse(body.toString('utf8'));
      } catch {
        return { decision: { kind: 'keep' } };
      }
      const removed = keys.map(() => 0);
      const w = withoutRecords(doc, (record) => {
        const index = carried(record);
        if (index === undefined) return false;
        removed[index] = (removed[index] ?? 0) + 1;
        return true;
      });
      if (w.removed === 0) return { decision: { kind: 'keep' } };
      if (w.doc === null) return { decision: { kind: 'delete' }, detail: removed };
      return { decision: { kind: 'put', body: Buffer.from(JSON.stringify(w.doc), 'utf8'), contentType: 'application/json' }, detail: removed };
    });
    if (out.outcome === 'put' || out.outcome === 'deleted') {
      addInto(perKey, out.detail);
      if (out.outcome === 'put') tally.objectsRewritten++;
      else tally.objectsDeleted++;
      await deleteVersions(s3, bucket, objectKey, out.outcome === 'put' ? out.versionId : undefined, out.outcome === 'deleted');
    }
  }
  return { ...tally, perKey, total: perKey.reduce((a, b) => a + b, 0) };
}

/** Spilled copies of the key's rows, under either encoding of the table's name: deleted with every version. Returns the objects deleted. */
export async function deleteSpilled(s3: S3Client, config: TidemarkConfig, k: ErasedKey, deleteVersions: DeleteVersions): Promise<number> {
  let n = 0;
  for (const prefix of spillPrefixes(config.raw.prefix, k.table.source, k.canonical)) {
    for await (const objectKey of listObjectKeys(s3, config.raw.bucket, prefix)) {
      await s3.send(new DeleteObjectCommand({ Bucket: config.raw.bucket, Key: objectKey }));
      n += 1 + ((await deleteVersions(s3, config.raw.bucket, objectKey, undefined, true)) ?? 0);
    }
  }
  return n;
}

/** The canonical key id a report's key text (JSON of the key columns) names in the table; null for anything unreadable. */
function keyIdIn(t: TableKeys, text: unknown): string | null {
  if (typeof text !== 'string') return null;
  try {
    const parsed = parseJson(text);
    if (!isJsonObject(parsed)) return null;
    return keyId(t.table, normalizeKey(t.table, parsed));
  } catch {
    return null;
  }
}

/**
 * The keys a walk over a report still looks for: of these tables, and with an index below
 * `below` (one key at a time, the keys before the one that drops an entry still looked inside it).
 */
interface Looking {
  readonly tables: ReadonlySet<string>;
  readonly below: number;
}

/** The first key (by index) the report's key text is, among the table's keys looked for. */
function sameKeyFirst(run: RunKeys, table: string, text: unknown, looking: Looking): number | undefined {
  const t = looking.tables.has(table) ? run.tables.get(table) : undefined;
  if (t === undefined || t.first >= looking.below) return undefined;
  const id = keyIdIn(t, text);
  const index = id === null ? undefined : t.byCanonical.get(id);
  return index !== undefined && index < looking.below ? index : undefined;
}

/**
 * The first key (by index) an object names: a finding (`table`, `key` as JSON text) or a row of a
 * job's SQL output (`source_table`, with `key_id` the canonical key or `key_json`).
 */
function namesKeyFirst(v: JsonObject, run: RunKeys, looking: Looking): number | undefined {
  let first: number | undefined;
  if (typeof v.table === 'string') first = earlier(first, sameKeyFirst(run, v.table, v.key, looking));
  if (typeof v.source_table === 'string' && looking.tables.has(v.source_table)) {
    const t = run.tables.get(v.source_table);
    const index = typeof v.key_id === 'string' ? t?.byCanonical.get(v.key_id) : undefined;
    if (index !== undefined && index < looking.below) first = earlier(first, index);
    first = earlier(first, sameKeyFirst(run, v.source_table, v.key_json, looking));
  }
  return first;
}

/** Whether any key is still looked for. */
function lookingForAny(run: RunKeys, looking: Looking): boolean {
  for (const table of looking.tables) if ((run.tables.get(table)?.first ?? Number.POSITIVE_INFINITY) < looking.below) return true;
  return false;
}

/**
 * A JSON report without the keys: gone from its per-table key lists (the snapshot report's
 * `orphans.keys`) and from its lists of findings (a reconcile table report's `firstFindings`).
 * Each entry removed is counted for the first key that removes it as one key at a time did.
 */
class ReportScrub {
  constructor(
    private readonly run: RunKeys,
    readonly removed: number[],
  ) {}

  walk(v: JsonValue, table: string | null, l: Looking): JsonValue {
    if (!lookingForAny(this.run, l)) return v;
    if (Array.isArray(v)) return this.list(v, table, l, (x) => (isJsonObject(x) ? namesKeyFirst(x, this.run, l) : undefined));
    if (!isJsonObject(v)) return v;
    const here = typeof v.table === 'string' ? v.table : table;
    const own = here === null ? undefined : this.run.tables.get(here);
    const ownKeys = here !== null && own !== undefined && l.tables.has(here) && own.first < l.below;
    const out: JsonObject = {};
    for (const [name, child] of Object.entries(v)) {
      if (name === 'keys' && Array.isArray(child) && ownKeys && here !== null) out[name] = this.keys(child, here, l);
      else out[name] = this.walk(child, here, l);
    }
    return out;
  }

  /** A table's `keys` list: its own keys drop matching key texts (and never look inside an entry); the other tables' keys walk it as any list. */
  private keys(child: readonly JsonValue[], here: string, l: Looking): JsonValue[] {
    const others: Looking = { ...l, tables: new Set([...l.tables].filter((t) => t !== here)) };
    return this.list(child, here, others, (x) => earlier(sameKeyFirst(this.run, here, x, l), isJsonObject(x) ? namesKeyFirst(x, this.run, others) : undefined));
  }

  /** The entries no key drops, each walked by the keys `inside` looks for; a dropped entry is walked (for the counts only) by the keys before the one that dropped it. */
  private list(v: readonly JsonValue[], table: string | null, inside: Looking, dropper: (x: JsonValue) => number | undefined): JsonValue[] {
    const kept: JsonValue[] = [];
    for (const x of v) {
      const index = dropper(x);
      if (index === undefined) kept.push(this.walk(x, table, inside));
      else {
        this.removed[index] = (this.removed[index] ?? 0) + 1;
        this.walk(x, table, { ...inside, below: index });
      }
    }
    return kept;
  }
}

/**
 * A report's text without the keys, and how many entries went per key; null when nothing changes.
 * A report that never names a key's table cannot hold the key: only the tables it names are looked for.
 */
function scrubReportText(text: string, lines: boolean, run: RunKeys): { next: string; removed: number[] } | null {
  const tables = new Set([...run.tables.keys()].filter((table) => text.includes(table) || text.includes(JSON.stringify(table).slice(1, -1))));
  if (tables.size === 0) return null;
  const looking: Looking = { tables, below: Number.POSITIVE_INFINITY };
  const removed = run.keys.map(() => 0);
  if (lines) {
    const kept = text.split('\n').filter((line) => {
      if (line === '') return true;
      let parsed: JsonValue;
      try {
        parsed = parseJson(line);
      } catch {
        return true;
      }
      const index = isJsonObject(parsed) ? namesKeyFirst(parsed, run, looking) : undefined;
      if (index === undefined) return true;
      removed[index] = (removed[index] ?? 0) + 1;
      return false;
    });
    return { next: kept.join('\n'), removed };
  }
  let parsed: JsonValue;
  try {
    parsed = parseJson(text);
  } catch {
    return null;
  }
  const scrubbed = new ReportScrub(run, removed).walk(parsed, null, looking);
  return { next: stringifyJson(scrubbed), removed };
}

/** The objects erase reads as reports: the reports' own (by extension), and every job SQL output (JSON Lines). */
async function* reportObjects(s3: S3Client, config: TidemarkConfig): AsyncGenerator<{ key: string; lines: boolean }> {
  for await (const key of listObjectKeys(s3, config.raw.bucket, config.jobs.reportPrefix)) {
    const lines = key.endsWith('.jsonl.gz') || key.endsWith('.jsonl');
    if (lines || key.endsWith('.json')) yield { key, lines };
  }
  // UNLOAD outputs (findings, orphans, window keys of a run that did not get to delete them): JSON Lines, gzip by content.
  // Only the outputs that can hold keys are read; counts and anomalies are never fetched. The
  // `expire-job-outputs` lifecycle rule bounds what is left here to the runs of its last days.
  for await (const key of listObjectKeys(s3, config.raw.bucket, jobOutputsPrefix(config.history.prefix))) if (mayHoldKeys(config.history.prefix, key)) yield { key, lines: true };
}

const isGzip = (body: Uint8Array): boolean => body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;

/**
 * Erases the keys from the jobs' reports under `jobs.reportPrefix` and their SQL outputs under
 * `<history>unload/`, in one listing and one conditional rewrite per object for all the run's keys:
 * reconcile's findings (JSON Lines, one finding a line, gzipped or not) and the outputs' rows lose
 * the keys' lines, and JSON reports lose the keys from their per-table `keys` (the snapshot report's
 * orphans) and their finding lists (reconcile's first findings per table). Returns, per key, the
 * lines and list entries removed.
 */
export async function eraseFromReports(s3: S3Client, config: TidemarkConfig, keys: readonly ErasedKey[], deleteVersions: DeleteVersions): Promise<CopiesErased> {
  const bucket = config.raw.bucket;
  const run = runKeys(keys);
  const perKey = keys.map(() => 0);
  let objects = 0;
  for await (const { key: objectKey, lines } of reportObjects(s3, config)) {
    if (keys.length === 0) continue;
    objects++;
    const out = await rewriteIfUnchanged<number[]>(s3, bucket, objectKey, async (body) => {
      const gz = isGzip(body);
      const text = (gz ? await gunzipAsync(body) : Buffer.from(body)).toString('utf8');
      const scrubbed = scrubReportText(text, lines, run);
      if (scrubbed === null) return { decision: { kind: 'keep' } };
      const { next, removed } = scrubbed;
      if (removed.every((n) => n === 0)) return { decision: { kind: 'keep' } };
      const bytes = Buffer.from(next, 'utf8');
      return gz
        ? { decision: { kind: 'put', body: await gzipAsync(bytes), contentType: 'application/x-ndjson', contentEncoding: 'gzip' }, detail: removed }
        : { decision: { kind: 'put', body: bytes, contentType: lines ? 'application/x-ndjson' : 'application/json' }, detail: removed };
    });
    if (out.outcome === 'put') {
      addInto(perKey, out.detail);
      await deleteVersions(s3, bucket, objectKey, out.versionId);
    }
  }
  return { objects, perKey, total: perKey.reduce((a, b) => a + b, 0) };
}
