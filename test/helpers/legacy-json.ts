/**
 * The JSON parser, canonical form and content hash as they were before the fast paths: every
 * message through `lossless-json`, canonical JSON built with closures, a full SHA-256 digest.
 * Kept verbatim as the oracle of the differential fuzz test (test/unit/functions/core/json.fuzz.test.ts):
 * the new code must give the same values, the same errors and byte-identical canonical text.
 */
import { createHash } from 'node:crypto';
import { isLosslessNumber, isSafeNumber, LosslessNumber, parse } from 'lossless-json';
import type { JsonValue } from '../../functions/core/json.js';
import type { ChangeEvent } from '../../functions/core/types.js';

function parseNumber(text: string): number | LosslessNumber {
  return isSafeNumber(text) ? Number(text) : new LosslessNumber(text);
}

/** Parses JSON text without ever rounding a number. Throws `SyntaxError` on bad input. */
export function legacyParseJson(text: string): JsonValue {
  return parse(text, null, parseNumber) as JsonValue;
}

/**
 * A canonical text form: object keys sorted, numbers in their exact decimal text.
 * Two values are the same content exactly when their canonical forms are equal.
 */
export function legacyCanonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (isLosslessNumber(value)) return normalizeNumberText(value.value);
  if (typeof value === 'number') return normalizeNumberText(String(value));
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(legacyCanonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${legacyCanonicalJson(obj[k])}`).join(',')}}`;
}

function normalizeNumberText(text: string): string {
  // 1e3, 1000 and 1000.0 are the same number; integers are compared by their digits.
  if (/^-?\d+$/.test(text)) return BigInt(text).toString();
  const n = Number(text);
  return Number.isFinite(n) && isSafeNumber(text, { approx: true }) ? String(n) : text;
}

/** The content hash as it was: SHA-256 of the canonical JSON, all 43 base64url characters. */
export function legacyContentHash(event: ChangeEvent): string {
  const canonical = legacyCanonicalJson({
    op: event.op,
    before: event.before,
    after: event.after,
    patch: event.patch,
    placeholders: [...event.placeholders].sort(),
  });
  return createHash('sha256').update(canonical).digest('base64url');
}
