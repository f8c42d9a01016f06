/**
 * The copies of a key outside raw that erase reaches: quarantine lines (original bytes that did not
 * normalize), the event source mapping's on-failure objects (whole failed batches, under
 * `aws/lambda/`), and spilled rows. Each object is rewritten under `If-Match` (conditional-rewrite.ts),
 * so two erasures of keys sharing an object cannot undo each other, and its older versions are
 * deleted.
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

/** Whether `value` (quoted or not) starts at `i` and does not run on into a longer value. */
function valueAt(text: string, i: number, value: string): boolean {
  const quoted = text[i] === '"';
  const start = quoted ? i + 1 : i;
  if (!text.startsWith(value, start)) return false;
  const next = text[start + value.length];
  if (quoted) return next === '"';
  return next === undefined || !/[0-9A-Za-z.]/.test(next);
}

/** Whether `text` holds `"column"`, optional spaces, `:`, optional spaces and `value`: a plain scan, linear in the text. */
function holdsPair(text: string, column: string, value: string): boolean {
  const name = JSON.stringify(column);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    const colon = skipSpace(text, at + name.length);
    if (text[colon] === ':' && valueAt(text, skipSpace(text, colon + 1), value)) return true;
  }
  return false;
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
  return Object.entries(key).every(([col, v]) => holdsPair(text, col, valueText(v)));
}

/** A quarantine line with the key's bytes blanked, or null when the line does not carry the key. */
function eraseQuarantineLine(line: string, k: ErasedKey, now: number): string | null {
  if (line.trim() === '') return null;
  let q: Record<string, unknown>;
  try {
    q = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  const bytes = [q.valueBase64, q.keyBase64].map((b) => (typeof b === 'string' ? Buffer.from(b, 'base64').toString('utf8') : '')).join('\n');
  const lineTable = typeof q.table === 'string' ? q.table : null;
  if (lineTable !== null && lineTable !== k.table.source) return null;
  if (!mentionsKey(bytes, k.columns, lineTable === null ? k.table.source : null)) return null;
  return JSON.stringify({ ...q, valueBase64: null, keyBase64: null, erased: { keyHash: k.hash, at: now } });
}

/** Blanks the key's bytes in every quarantine object; returns how many lines changed. */
export async function eraseFromQuarantine(s3: S3Client, config: TidemarkConfig, k: ErasedKey, now: number, deleteVersions: DeleteVersions): Promise<number> {
  const bucket = config.raw.bucket;
  let rewritten = 0;
  for await (const objectKey of listObjectKeys(s3, bucket, config.raw.quarantinePrefix)) {
    if (!objectKey.endsWith('.jsonl.gz')) continue;
    const out = await rewriteIfUnchanged<number>(s3, bucket, objectKey, async (body) => {
      const text = (await gunzipAsync(body)).toString('utf8');
      let changed = 0;
      const lines = text.split('\n').map((line) => {
        const erased = eraseQuarantineLine(line, k, now);
        if (erased === null) return line;
        changed++;
        return erased;
      });
      if (changed === 0) return { decision: { kind: 'keep' } };
      const gz = await gzipAsync(Buffer.from(lines.join('\n'), 'utf8'));
      return { decision: { kind: 'put', body: gz, contentType: 'application/x-ndjson', contentEncoding: 'gzip' }, detail: changed };
    });
    if (out.outcome === 'put') {
      rewritten += out.detail ?? 0;
      await deleteVersions(s3, bucket, objectKey, out.versionId);
    }
  }
  return rewritten;
}

export interface OnFailureErased {
  /** On-failure objects read. */
  readonly objects: number;
  /** Records that carried the key, removed from their objects. */
  readonly records: number;
  readonly objectsRewritten: number;
  readonly objectsDeleted: number;
}

/**
 * Removes the records that carry the key from every on-failure object (a whole failed batch, the
 * records' exact bytes): decoded as ingest decodes them, a record goes when any of its rows is the
 * key's. An object left with no record is deleted. `replay --from-dlq` would otherwise bring the
 * key back.
 */
export async function eraseFromOnFailure(s3: S3Client, config: TidemarkConfig, k: ErasedKey, deleteVersions: DeleteVersions): Promise<OnFailureErased> {
  const bucket = config.replay.onFailureBucket ?? config.raw.bucket;
  const normalizer = new Normalizer(config);
  const carriesKey = (record: RawRecord): boolean => {
    const n = normalizer.normalize(record);
    return n.ok && n.events.some((e) => e.kind === 'change' && e.table === k.table.source && normalizer.keyIdOf(e) === k.canonical);
  };
  const tally = { objects: 0, records: 0, objectsRewritten: 0, objectsDeleted: 0 };
  for await (const objectKey of listObjectKeys(s3, bucket, config.replay.onFailurePrefix)) {
    tally.objects++;
    const out = await rewriteIfUnchanged<number>(s3, bucket, objectKey, (body) => {
      let doc: unknown;
      try {
        doc = JSON.parse(body.toString('utf8'));
      } catch {
        return { decision: { kind: 'keep' } };
      }
      const w = withoutRecords(doc, carriesKey);
      if (w.removed === 0) return { decision: { kind: 'keep' } };
      if (w.doc === null) return { decision: { kind: 'delete' }, detail: w.removed };
      return { decision: { kind: 'put', body: Buffer.from(JSON.stringify(w.doc), 'utf8'), contentType: 'application/json' }, detail: w.removed };
    });
    if (out.outcome === 'put' || out.outcome === 'deleted') {
      tally.records += out.detail ?? 0;
      if (out.outcome === 'put') tally.objectsRewritten++;
      else tally.objectsDeleted++;
      await deleteVersions(s3, bucket, objectKey, out.outcome === 'put' ? out.versionId : undefined, out.outcome === 'deleted');
    }
  }
  return tally;
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

/** Whether a report's key text (JSON of the key columns) is the erased key; false for anything unreadable. */
function sameKey(k: ErasedKey, text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    const parsed = parseJson(text);
    if (!isJsonObject(parsed)) return false;
    return keyId(k.table, normalizeKey(k.table, parsed)) === k.canonical;
  } catch {
    return false;
  }
}

/**
 * Whether an object names the erased key: a finding (`table`, `key` as JSON text) or a row of a
 * job's SQL output (`source_table`, with `key_id` the canonical key or `key_json`).
 */
function namesKey(v: JsonObject, k: ErasedKey): boolean {
  if (v.table === k.table.source && sameKey(k, v.key)) return true;
  return v.source_table === k.table.source && (v.key_id === k.canonical || sameKey(k, v.key_json));
}

/** Whether a report line stays: false when it is a finding of the erased key (dropped whole). */
function keepReportLine(line: string, k: ErasedKey): boolean {
  if (line === '') return true;
  let parsed: JsonValue;
  try {
    parsed = parseJson(line);
  } catch {
    return true;
  }
  return !(isJsonObject(parsed) && namesKey(parsed, k));
}

/**
 * A JSON report without the erased key: gone from its per-table key lists (the snapshot report's
 * `orphans.keys`) and from its lists of findings (a reconcile table report's `firstFindings`).
 */
function scrubReport(value: JsonValue, k: ErasedKey): { value: JsonValue; removed: number } {
  let removed = 0;
  const walk = (v: JsonValue, table: string | null): JsonValue => {
    if (Array.isArray(v)) {
      const kept = v.filter((x) => !(isJsonObject(x) && namesKey(x, k)));
      removed += v.length - kept.length;
      return kept.map((x) => walk(x, table));
    }
    if (!isJsonObject(v)) return v;
    const here = typeof v.table === 'string' ? v.table : table;
    const out: JsonObject = {};
    for (const [name, child] of Object.entries(v)) {
      if (name === 'keys' && Array.isArray(child) && here === k.table.source) {
        const kept = child.filter((x) => !sameKey(k, x));
        removed += child.length - kept.length;
        out[name] = kept;
      } else out[name] = walk(child, here);
    }
    return out;
  };
  return { value: walk(value, null), removed };
}

/** A report's text without the erased key, and how many entries went; null when nothing changes. */
function scrubReportText(text: string, lines: boolean, k: ErasedKey): { next: string; changed: number } | null {
  // Cheap test first: a report that never names the table cannot hold the key.
  if (!text.includes(k.table.source) && !text.includes(JSON.stringify(k.table.source).slice(1, -1))) return null;
  if (lines) {
    const all = text.split('\n');
    const kept = all.filter((line) => keepReportLine(line, k));
    return { next: kept.join('\n'), changed: all.length - kept.length };
  }
  let parsed: JsonValue;
  try {
    parsed = parseJson(text);
  } catch {
    return null;
  }
  const scrubbed = scrubReport(parsed, k);
  return { next: stringifyJson(scrubbed.value), changed: scrubbed.removed };
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
 * Erases the key from the jobs' reports under `jobs.reportPrefix` and their SQL outputs under
 * `<history>unload/`: reconcile's findings (JSON Lines, one finding a line, gzipped or not) and the
 * outputs' rows lose the key's lines, and JSON reports lose the key from their per-table `keys` (the
 * snapshot report's orphans) and their finding lists (reconcile's first findings per table).
 * Rewrites are conditional, as every erase rewrite is. Returns the lines and list entries removed.
 */
export async function eraseFromReports(s3: S3Client, config: TidemarkConfig, k: ErasedKey, deleteVersions: DeleteVersions): Promise<number> {
  const bucket = config.raw.bucket;
  let removed = 0;
  for await (const { key: objectKey, lines } of reportObjects(s3, config)) {
    const out = await rewriteIfUnchanged<number>(s3, bucket, objectKey, async (body) => {
      const gz = isGzip(body);
      const text = (gz ? await gunzipAsync(body) : Buffer.from(body)).toString('utf8');
      const scrubbed = scrubReportText(text, lines, k);
      if (scrubbed === null) return { decision: { kind: 'keep' } };
      const { next, changed } = scrubbed;
      if (changed === 0) return { decision: { kind: 'keep' } };
      const bytes = Buffer.from(next, 'utf8');
      return gz
        ? { decision: { kind: 'put', body: await gzipAsync(bytes), contentType: 'application/x-ndjson', contentEncoding: 'gzip' }, detail: changed }
        : { decision: { kind: 'put', body: bytes, contentType: lines ? 'application/x-ndjson' : 'application/json' }, detail: changed };
    });
    if (out.outcome === 'put') {
      removed += out.detail ?? 0;
      await deleteVersions(s3, bucket, objectKey, out.versionId);
    }
  }
  return removed;
}
