/**
 * What the tasks generated for a Distributed Map do (map-rewrite.ts puts them in the definition):
 * read the Map's items from S3, or from its input when only an ItemBatcher is given, and batch
 * them; and remove them again from the Map's output. As AWS documents it
 * (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html,
 * …/input-output-itembatcher.html):
 * - `s3:listObjectsV2` (`Bucket`, `Prefix`): every page; one item per object,
 *   `{ Etag, Key, LastModified (epoch seconds), Size, StorageClass }` (`Etag` so spelled, as AWS's
 *   example and LocalStack's AWS-validated snapshot show);
 * - `s3:getObject` (`Bucket`, `Key`, `VersionId`) with `ReaderConfig.InputType` `JSON` (an array) or
 *   `JSONL` (one item per non-blank line); gzip-compressed objects are read as such;
 * - `ReaderConfig.MaxItems`: at most that many items;
 * - `ItemBatcher`: `{ "Items": [...] }` per child, plus `"BatchInput": {…}` when given (nested, as
 *   AWS passes it), at most `MaxItemsPerBatch` items and `MaxInputBytesPerBatch` bytes of JSON.
 * An S3 failure or an unreadable object fails the task with `States.ItemReaderFailed`.
 *
 *   await readMapItems({ source: 'getObject', inputType: 'JSONL', batch: true },
 *     { Reader: { Bucket: 'b', Key: 'export/manifest-files.json' }, MaxItemsPerBatch: 2 }, s3)
 *   // [{ Items: [line1, line2] }, { Items: [line3] }]
 *
 * The items are held in memory: this is for the embedded default's sizes, not AWS's.
 */
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, type _Object, type S3Client } from '@aws-sdk/client-s3';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import { invalidInput, LocalTaskError } from './task-error.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where the item-reading task puts the items in the Map's input: removed again from its output. */
export const ITEMS_KEY = '__tidemarkItems';
export const ITEM_READER_FAILED = 'States.ItemReaderFailed';

/** What the item-reading task of one Map does, decided when the definition is localized. */
export interface MapItemsPlan {
  /** The S3 action, or `input` when the items come from `ItemsPath` (ItemBatcher only). */
  readonly source: 'listObjectsV2' | 'getObject' | 'input';
  readonly inputType?: 'JSON' | 'JSONL';
  readonly batch: boolean;
}

/** A copy of a value without the items key in any object: the Map's output as AWS gives it. */
export function withoutItems(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withoutItems);
  if (!isObject(value) || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value as JsonObject)) if (k !== ITEMS_KEY) out[k] = withoutItems(v);
  return out;
}

const positiveInt = (what: string, v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalidInput(`${what} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
};

const text = (what: string, v: unknown, required: boolean): string | undefined => {
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v === '') throw invalidInput(`ItemReader.Parameters.${what} must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
};

const readerFailed = (what: string, err: unknown): LocalTaskError =>
  err instanceof LocalTaskError ? err : new LocalTaskError(ITEM_READER_FAILED, `${what}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });

/** One listed object as the Distributed Map passes it. */
const listedItem = (o: _Object): JsonObject => ({
  ...(o.ETag !== undefined ? { Etag: o.ETag } : {}),
  Key: o.Key ?? '',
  ...(o.LastModified !== undefined ? { LastModified: Math.floor(o.LastModified.getTime() / 1000) } : {}),
  Size: o.Size ?? 0,
  StorageClass: o.StorageClass ?? 'STANDARD',
});

/** ListObjectsV2, every page, at most `max` items. */
async function listedItems(s3: S3Client, bucket: string, prefix: string | undefined, max: number): Promise<JsonValue[]> {
  const items: JsonValue[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ...(prefix !== undefined ? { Prefix: prefix } : {}), ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) {
      if (items.length >= max) return items;
      items.push(listedItem(o));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return items;
}

/** GetObject of a JSON array or JSON Lines object (gunzipped when gzip): its items. */
async function objectItems(s3: S3Client, p: Json, inputType: 'JSON' | 'JSONL', max: number): Promise<JsonValue[]> {
  const got = await s3.send(new GetObjectCommand(p as never));
  const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  const body = (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('utf8');
  if (inputType === 'JSON') {
    const parsed = JSON.parse(body) as unknown;
    if (!Array.isArray(parsed)) throw new LocalTaskError(ITEM_READER_FAILED, 'a JSON ItemReader object must hold an array');
    return (parsed as JsonValue[]).slice(0, max);
  }
  const items: JsonValue[] = [];
  const lines = body.split('\n');
  for (let i = 0; i < lines.length && items.length < max; i++) {
    const line = lines[i]?.trim() ?? '';
    if (line === '') continue;
    try {
      items.push(JSON.parse(line) as JsonValue);
    } catch (err) {
      throw new LocalTaskError(ITEM_READER_FAILED, `line ${i + 1} is not JSON: ${(err as Error).message}`);
    }
  }
  return items;
}

/** Groups items as ItemBatcher does: `{ Items, BatchInput? }`, within the item and byte limits. */
export function batchItems(items: readonly JsonValue[], o: { maxItems?: number; maxBytes?: number; batchInput?: JsonValue }): JsonObject[] {
  const shell = (batch: JsonValue[]): JsonObject => (o.batchInput !== undefined ? { BatchInput: o.batchInput, Items: batch } : { Items: batch });
  const base = Buffer.byteLength(JSON.stringify(shell([])));
  const out: JsonObject[] = [];
  let current: JsonValue[] = [];
  let bytes = base;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item));
    if (o.maxBytes !== undefined && base + size > o.maxBytes) throw invalidInput(`an item of ${size} bytes does not fit MaxInputBytesPerBatch ${o.maxBytes}`);
    const full = (o.maxItems !== undefined && current.length >= o.maxItems) || (o.maxBytes !== undefined && bytes + 1 + size > o.maxBytes);
    if (current.length > 0 && full) {
      out.push(shell(current));
      current = [];
      bytes = base;
    }
    bytes += size + (current.length > 0 ? 1 : 0);
    current.push(item);
  }
  if (current.length > 0) out.push(shell(current));
  return out;
}

/** The items an S3 ItemReader names. */
async function s3Items(plan: MapItemsPlan, reader: unknown, s3: S3Client | undefined, max: number): Promise<JsonValue[]> {
  const p = isObject(reader) ? reader : {};
  const bucket = text('Bucket', p.Bucket, true) ?? '';
  const where = `${plan.source} s3://${bucket}/${String(p.Prefix ?? p.Key ?? '')}`;
  if (!s3) throw invalidInput(`${where}: no S3 client (pass options.s3)`);
  try {
    if (plan.source === 'listObjectsV2') return await listedItems(s3, bucket, text('Prefix', p.Prefix, false), max);
    return await objectItems(s3, { ...p, Key: text('Key', p.Key, true) }, plan.inputType ?? 'JSON', max);
  } catch (err) {
    throw readerFailed(where, err);
  }
}

/**
 * The item-reading task: the Map's items (or batches), from S3 or from the input's ItemsPath.
 * `input` is the task's resolved Parameters: `{ Reader: <ItemReader.Parameters> | Items, MaxItems?,
 * MaxItemsPerBatch?, MaxInputBytesPerBatch?, BatchInput? }` (map-rewrite.ts).
 */
export async function readMapItems(plan: MapItemsPlan, input: JsonValue, s3: S3Client | undefined): Promise<JsonValue[]> {
  if (!isObject(input)) throw invalidInput('the item reader received no parameters');
  const max = positiveInt('ReaderConfig.MaxItems', input.MaxItems) ?? Number.POSITIVE_INFINITY;
  if (plan.source === 'input' && !Array.isArray(input.Items)) throw invalidInput('the Map ItemsPath must point to an array');
  const items = plan.source === 'input' ? (input.Items as JsonValue[]) : await s3Items(plan, input.Reader, s3, max);
  if (!plan.batch) return items;
  const maxItems = positiveInt('ItemBatcher.MaxItemsPerBatch', input.MaxItemsPerBatch);
  const maxBytes = positiveInt('ItemBatcher.MaxInputBytesPerBatch', input.MaxInputBytesPerBatch);
  return batchItems(items, { ...(maxItems !== undefined ? { maxItems } : {}), ...(maxBytes !== undefined ? { maxBytes } : {}), ...(input.BatchInput !== undefined ? { batchInput: input.BatchInput as JsonValue } : {}) });
}
