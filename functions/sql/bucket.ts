/**
 * The key bucket of a replay row, as both engines compute it in SQL (dialect entry `bucket`): the
 * first 8 hex digits (32 bits) of the MD5 of the key id's UTF-8 bytes, as an unsigned integer, mod
 * the bucket count. The apply step and tests use this to know which bucket a key is in.
 *
 *   bucketOf('["1"]', 16)   // 0x4d8a15e3 % 16 = 3
 */
import { createHash } from 'node:crypto';
import { bucketCount } from './dialect.js';

export function bucketOf(keyId: string, buckets: number): number {
  const first32 = Number.parseInt(createHash('md5').update(keyId, 'utf8').digest('hex').slice(0, 8), 16);
  return first32 % bucketCount(buckets);
}
