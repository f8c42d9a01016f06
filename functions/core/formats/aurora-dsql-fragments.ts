/**
 * Split ("chunked") Aurora DSQL CDC records, the pure part: reading the two record kinds and
 * rebuilding the full record once every piece is there. Wiring it across batches and shards is the
 * ingest's job (the buffer, the window); this file decides, and does no I/O.
 *
 * When a record's JSON exceeds 9 MiB, Aurora DSQL splits its `before` and/or `after` image
 * ("Understanding CDC records", "Handling oversized records"):
 * - the **main record** has `type: "chunked"` and, instead of the split image, `chunked: {after:
 *   {chunk_id, total_fragments, crc32c}}` (and/or `before`); its `op`, `source` and timestamps are
 *   those of a full record;
 * - each **fragment** is its own Kinesis record `{type: "fragment", chunk_id, index, data}`: `data`
 *   is a piece of the image's JSON text, `index` its zero-based place.
 * They may arrive on any shard, in any order, more than once (a fragment keeps its chunk_id).
 *
 * Example: main `{type: "chunked", op: "c", after: null, chunked: {after: {chunk_id: "k",
 * total_fragments: 2, crc32c: "…"}}, …}` with fragments `{chunk_id: "k", index: 1, data: "2}"}` and
 * `{chunk_id: "k", index: 0, data: "{\"id\":4"}` assembles to `{type: "full", op: "c", after:
 * {id: 42}, …}`, which decodes like any full record.
 */
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from '../json.js';
import { crc32c } from './crc32c.js';
import { decodeError, describe, put } from './kit.js';

/** The images a main record can split. */
export const IMAGES = ['before', 'after'] as const;
export type Image = (typeof IMAGES)[number];

/** One fragment record: a piece of one image's JSON text. */
export interface FragmentPart {
  readonly chunkId: string;
  readonly index: number;
  readonly data: string;
}

/** What a main record says about one split image. */
export interface ChunkRef {
  readonly image: Image;
  readonly chunkId: string;
  readonly totalFragments: number;
  /** CRC32C of the reassembled image text (its UTF-8 bytes). */
  readonly crc32c: number;
}

/** A chunk id longer than this is refused: Aurora DSQL's are short identifiers. */
const MAX_CHUNK_ID = 256;
/** More fragments than this would be a record of gigabytes: refused as malformed. */
export const MAX_FRAGMENTS = 10_000;
const CRC_TEXT = /^\d{1,10}$/;

const invalid = (message: string) => decodeError('fragment-invalid', message);

function chunkId(value: JsonValue | undefined, where: string): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_CHUNK_ID) {
    throw invalid(`expected ${where}.chunk_id to be a non-empty string of at most ${MAX_CHUNK_ID} characters, got ${describe(value)}`);
  }
  return value;
}

function count(value: JsonValue | undefined, what: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > MAX_FRAGMENTS) {
    throw invalid(`expected ${what} to be a whole number from ${min} to ${MAX_FRAGMENTS}, got ${describe(value)}`);
  }
  return value;
}

/** True for a fragment record `{type: "fragment", chunk_id, index, data}`. */
export function isFragmentRecord(value: JsonValue | null): value is JsonObject {
  return isJsonObject(value) && value.type === 'fragment' && 'chunk_id' in value;
}

/** Reads a fragment record; a malformed one is `fragment-invalid`. */
export function fragmentPart(value: JsonObject): FragmentPart {
  const id = chunkId(value.chunk_id, 'fragment');
  const index = count(value.index, 'fragment.index', 0);
  if (index >= MAX_FRAGMENTS) throw invalid(`fragment.index must be below ${MAX_FRAGMENTS}, got ${index}`);
  if (typeof value.data !== 'string') throw invalid(`expected fragment.data to be a piece of JSON text (a string), got ${describe(value.data)}`);
  return { chunkId: id, index, data: value.data };
}

/** The split images a main record (`type: "chunked"`) refers to, in `before`, `after` order. */
export function chunkRefs(main: JsonObject): ChunkRef[] {
  const chunked = main.chunked;
  if (!isJsonObject(chunked)) throw invalid(`expected a chunked record to carry a chunked object {after: {chunk_id, total_fragments, crc32c}}, got ${describe(chunked)}`);
  const refs: ChunkRef[] = [];
  for (const image of IMAGES) {
    const ref = chunked[image];
    if (ref === undefined || ref === null) continue;
    if (!isJsonObject(ref)) throw invalid(`expected chunked.${image} to be {chunk_id, total_fragments, crc32c}, got ${describe(ref)}`);
    const crc = ref.crc32c;
    if (typeof crc !== 'string' || !CRC_TEXT.test(crc) || Number(crc) > 0xffffffff) {
      throw invalid(`expected chunked.${image}.crc32c to be a CRC32C as a decimal string (e.g. "2073618257"), got ${describe(crc)}`);
    }
    refs.push({ image, chunkId: chunkId(ref.chunk_id, `chunked.${image}`), totalFragments: count(ref.total_fragments, `chunked.${image}.total_fragments`, 1), crc32c: Number(crc) });
  }
  if (refs.length === 0) throw invalid('a chunked record must split its before or after image: chunked has neither');
  if (refs.length === 2 && refs[0]?.chunkId === refs[1]?.chunkId) throw invalid('chunked.before and chunked.after name the same chunk_id');
  return refs;
}

/** The outcome of an assembly: the full record, or what is still missing. */
export type Assembly = { readonly complete: true; readonly record: JsonObject } | { readonly complete: false; readonly missing: readonly { readonly chunkId: string; readonly indexes: readonly number[] }[] };

/** The text of one image, its pieces joined in index order, or the indexes still missing; inconsistent pieces are `fragment-invalid`. */
function imageText(ref: ChunkRef, parts: readonly FragmentPart[]): { readonly text: string } | { readonly missing: number[] } {
  const pieces = new Array<string | undefined>(ref.totalFragments);
  for (const part of parts) {
    if (part.chunkId !== ref.chunkId) continue;
    if (part.index >= ref.totalFragments) throw invalid(`fragment ${part.index} of chunk ${ref.chunkId} is outside its ${ref.totalFragments} fragments`);
    const seen = pieces[part.index];
    // A redelivered fragment carries the same text; a different text for one index is not a redelivery.
    if (seen !== undefined && seen !== part.data) throw invalid(`fragment ${part.index} of chunk ${ref.chunkId} arrived twice with different data`);
    pieces[part.index] = part.data;
  }
  const missing: number[] = [];
  for (let i = 0; i < pieces.length; i++) if (pieces[i] === undefined) missing.push(i);
  return missing.length > 0 ? { missing } : { text: pieces.join('') };
}

/** Parses one reassembled image, checking its CRC32C first. */
function imageOf(ref: ChunkRef, text: string): JsonObject {
  const crc = crc32c(new TextEncoder().encode(text));
  if (crc !== ref.crc32c) throw invalid(`chunk ${ref.chunkId} (${ref.image}) reassembles to text whose CRC32C is ${crc}, the main record says ${ref.crc32c}`);
  let image: JsonValue;
  try {
    image = parseJson(text);
  } catch {
    throw invalid(`chunk ${ref.chunkId} (${ref.image}) reassembles to text that is not JSON`);
  }
  if (!isJsonObject(image)) throw invalid(`chunk ${ref.chunkId} (${ref.image}) reassembles to ${describe(image)}, not a row object`);
  return image;
}

/**
 * Rebuilds the full record of a main record from its fragments (any order, duplicates allowed):
 * `{complete: true, record}` with `type: "full"`, the images in place and `chunked` gone, when every
 * fragment is there; `{complete: false, missing}` otherwise. Pieces that do not fit (an index outside
 * the count, two texts for one index, a fragment of a chunk the main record does not name, a CRC32C
 * mismatch, an image that is not a JSON object) throw `fragment-invalid`.
 */
export function assembleFragments(main: JsonObject, parts: readonly FragmentPart[]): Assembly {
  const refs = chunkRefs(main);
  const stray = parts.find((p) => !refs.some((r) => r.chunkId === p.chunkId));
  if (stray !== undefined) throw invalid(`fragment ${stray.index} of chunk ${stray.chunkId} belongs to no image of this main record`);
  const texts = refs.map((ref) => ({ ref, image: imageText(ref, parts) }));
  const missing = texts.flatMap(({ ref, image }) => ('missing' in image ? [{ chunkId: ref.chunkId, indexes: image.missing }] : []));
  if (missing.length > 0) return { complete: false, missing };
  const record: JsonObject = {};
  for (const [k, v] of Object.entries(main)) if (k !== 'chunked') put(record, k, v);
  record.type = 'full';
  for (const { ref, image } of texts) if ('text' in image) record[ref.image] = imageOf(ref, image.text);
  return { complete: true, record };
}

/** What the ingest holds for one split record while it waits (see docs/formats.md, "Aurora DSQL"). */
export interface PendingSplit {
  /** The main record, once it has arrived. */
  readonly main: JsonObject | null;
  /** Every fragment seen so far, redeliveries included. */
  readonly parts: readonly FragmentPart[];
  /** Arrival time (epoch ms) of the first part, main record or fragment, that opened the wait. */
  readonly firstSeenMs: number;
}

export type SplitDecision = { readonly kind: 'complete'; readonly record: JsonObject } | { readonly kind: 'wait'; readonly untilMs: number };

/**
 * The decision for a pending split record at `nowMs`: the full record when every part is there;
 * else keep waiting until `firstSeenMs + windowMs`; past that, `fragment-incomplete` (the caller
 * quarantines the parts it holds). Inconsistent parts are `fragment-invalid` at once.
 * Example: a main record seen at t=0 whose fragment 1 never comes: `wait` until t=windowMs, then
 * `fragment-incomplete: … chunk k misses fragments 1`.
 */
export function decideSplit(pending: PendingSplit, nowMs: number, windowMs: number): SplitDecision {
  const untilMs = pending.firstSeenMs + windowMs;
  const assembly = pending.main === null ? null : assembleFragments(pending.main, pending.parts);
  if (assembly?.complete) return { kind: 'complete', record: assembly.record };
  if (nowMs < untilMs) return { kind: 'wait', untilMs };
  const what =
    assembly === null
      ? `its main record never arrived (${pending.parts.length} fragment${pending.parts.length === 1 ? '' : 's'} held)`
      : assembly.missing.map((m) => `chunk ${m.chunkId} misses fragment${m.indexes.length === 1 ? '' : 's'} ${m.indexes.slice(0, 10).join(', ')}${m.indexes.length > 10 ? ', …' : ''}`).join('; ');
  throw decodeError('fragment-incomplete', `a split Aurora DSQL record was not complete ${windowMs} ms after its first part: ${what}`);
}
