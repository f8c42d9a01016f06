/**
 * A compact per-object key filter: a Bloom filter of the keys in a raw object, kept in the object's
 * user metadata at landing time. Erase HEADs an object and GETs it only when the filter says the
 * key may be inside, so finding a key's objects never means reading all of raw.
 *
 * S3 caps all user metadata at 2 KB, so the filter is at most 1,400 bytes (11,200 bits): for a
 * 500-key batch that is 22 bits per key and a false-positive rate near 1e-5; at 5,000 keys it
 * degrades to about 0.2, which still only costs an extra GET, never a missed key.
 *
 *   const meta = keyFilterMetadata(['{"id":1}', '{"id":2}']);   // { 'tm-keys': 'b1.<k>.<base64>' }
 *   mayContainKey(meta, '{"id":1}')                              // true
 *   mayContainKey({}, '{"id":1}')                                // undefined: no filter, read the object
 *
 * Members are the canonical key text of raw lines (`keyId` form, see {@link canonicalKeyText}), so a
 * key written `{"id":7}` and `{"id":"7"}` by two decoders of a number column still match.
 */
import { createHash } from 'node:crypto';
import { isLosslessNumber, type JsonValue, parseJson } from './json.js';

/** User-metadata name (S3 stores it as `x-amz-meta-tm-keys`). */
export const KEY_FILTER_METADATA = 'tm-keys';
const VERSION = 'b1';
const MAX_BYTES = 1400;
const MIN_BYTES = 16;

/**
 * A raw line's `key` (JSON of the normalized key, columns in configured order) as the canonical
 * `keyId` text: `{"order_id":7,"line":2}` → `["7","2"]`. Null when the text is not a key object.
 */
export function canonicalKeyText(lineKey: string): string | null {
  let parsed: JsonValue;
  try {
    parsed = parseJson(lineKey);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || isLosslessNumber(parsed)) return null;
  return JSON.stringify(Object.values(parsed).map((v) => (isLosslessNumber(v) ? v.value : String(v))));
}

function indexes(member: string, k: number, bits: number): number[] {
  const d = createHash('sha256').update(member).digest();
  const h1 = d.readUInt32BE(0);
  const h2 = d.readUInt32BE(4) | 1;
  const out: number[] = [];
  for (let i = 0; i < k; i++) out.push(((h1 + Math.imul(i, h2)) >>> 0) % bits);
  return out;
}

/** Builds the filter of a set of canonical keys. */
export function buildKeyFilter(members: Iterable<string>): string {
  const unique = [...new Set(members)];
  const bytes = Math.max(MIN_BYTES, Math.min(MAX_BYTES, Math.ceil((unique.length * 20) / 8)));
  const bits = bytes * 8;
  const k = Math.max(1, Math.min(12, Math.round((bits / Math.max(1, unique.length)) * Math.LN2)));
  const array = Buffer.alloc(bytes);
  for (const m of unique) for (const i of indexes(m, k, bits)) array[i >> 3] = (array[i >> 3] ?? 0) | (1 << (i & 7));
  return `${VERSION}.${k}.${array.toString('base64')}`;
}

/** True when the filter may hold the key, false when it certainly does not, undefined when there is no usable filter. */
export function filterMayContain(filter: string | undefined, member: string): boolean | undefined {
  if (filter === undefined) return undefined;
  const [version, kText, b64] = filter.split('.');
  const k = Number(kText);
  if (version !== VERSION || !Number.isInteger(k) || k < 1 || b64 === undefined) return undefined;
  const array = Buffer.from(b64, 'base64');
  if (array.length === 0) return undefined;
  return indexes(member, k, array.length * 8).every((i) => ((array[i >> 3] ?? 0) & (1 << (i & 7))) !== 0);
}

/** The user metadata RawStore.land attaches to an object: the filter of its lines' keys. */
export function keyFilterMetadata(lines: readonly { readonly key: string | null }[]): Record<string, string> {
  const members: string[] = [];
  for (const l of lines) {
    const c = l.key === null ? null : canonicalKeyText(l.key);
    if (c !== null) members.push(c);
  }
  return { [KEY_FILTER_METADATA]: buildKeyFilter(members) };
}

/** Reads an object's metadata (as HeadObject returns it): may it hold the key? undefined when it has no filter. */
export function mayContainKey(metadata: Readonly<Record<string, string>> | undefined, canonicalKey: string): boolean | undefined {
  return filterMayContain(metadata?.[KEY_FILTER_METADATA], canonicalKey);
}
