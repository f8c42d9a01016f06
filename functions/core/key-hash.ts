/**
 * The keyed hash tidemark uses wherever a primary key must be named without being stored: the erase
 * ledger's entries, and every log line about one key. HMAC-SHA-256 of the table and the canonical
 * key text, so the hash alone cannot be matched against guessed keys (an `id` of 42 is easy to
 * guess; its HMAC is not without the secret). An operator who holds the secret can compute the hash
 * of a key and find its ledger entry and its log lines.
 *
 *   keyHash(secret, 'public.customers', '["42"]')   // 43 base64url characters, never the key
 *   keyFingerprint(secret)                          // 22 characters, stored to tell a wrong key
 */
import { createHmac } from 'node:crypto';

/** The ledger's keyed hash of a key: `["42"]` in `public.customers` → 43 base64url characters. */
export function keyHash(secret: Uint8Array, table: string, canonicalKey: string): string {
  return createHmac('sha256', secret).update(table).update('\0').update(canonicalKey).digest('base64url');
}

/**
 * A fingerprint of a secret: an HMAC of a fixed label, cut to 132 bits. Stored with the ledger, it
 * tells a wrong key from the right one without storing the key: a replay given a wrong key would
 * find no erased key blocked and bring erased rows back.
 */
export function keyFingerprint(secret: Uint8Array): string {
  return createHmac('sha256', secret).update('tidemark erase-ledger key fingerprint v1').digest('base64url').slice(0, 22);
}
