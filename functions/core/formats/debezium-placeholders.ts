/**
 * Debezium's "unchanged TOAST value" marker (`unavailable.value.placeholder`, default
 * `__debezium_unavailable_value`) in every form `UnchangedToastedPlaceholder` writes it:
 *
 * | column type          | form                                                        |
 * |----------------------|-------------------------------------------------------------|
 * | text, json, varchar  | the placeholder string                                      |
 * | bytea                | base64 of its UTF-8 bytes (the plain string in hex mode)    |
 * | text[] / bytea[]     | `[placeholder]` / `[base64]`                                |
 * | int[] / bigint[]     | its byte values `[95, 95, 100, ...]`                        |
 * | hstore               | `{placeholder: placeholder}` (or that map as JSON text)     |
 * | uuid[]               | `[UUID.nameUUIDFromBytes(bytes)]`, a v3 (MD5) UUID          |
 *
 * A column holding one of these is "unchanged, not carried", never a real value or a null.
 */
import { createHash } from 'node:crypto';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue } from '../json.js';

/** All the forms of one placeholder, precomputed. */
export interface PlaceholderForms {
  readonly text: string;
  readonly base64: string;
  readonly bytes: readonly number[];
  readonly hstoreJson: string;
  readonly uuid: string;
}

/**
 * Java's `UUID.nameUUIDFromBytes`: MD5 of the bytes with the version set to 3 and the IETF variant.
 * `nameUuidFromBytes(Buffer.from('__debezium_unavailable_value'))` → "b68a35a7-17ad-35b3-af2a-ae46edb4545a".
 */
export function nameUuidFromBytes(bytes: Uint8Array): string {
  const md5 = createHash('md5').update(bytes).digest();
  md5.writeUInt8((md5.readUInt8(6) & 0x0f) | 0x30, 6);
  md5.writeUInt8((md5.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = md5.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const cache = new Map<string, PlaceholderForms>();

/** Computes (once per placeholder) every wire form of `placeholder`. */
export function placeholderForms(placeholder: string): PlaceholderForms {
  let forms = cache.get(placeholder);
  if (!forms) {
    const bytes = Buffer.from(placeholder, 'utf8');
    forms = {
      text: placeholder,
      base64: bytes.toString('base64'),
      bytes: [...bytes],
      hstoreJson: JSON.stringify({ [placeholder]: placeholder }),
      uuid: nameUuidFromBytes(bytes),
    };
    cache.set(placeholder, forms);
  }
  return forms;
}

function isByteArray(value: readonly JsonValue[], bytes: readonly number[]): boolean {
  if (value.length !== bytes.length) return false;
  return value.every((v, i) => (typeof v === 'number' ? v : isLosslessNumber(v) ? Number(v.value) : Number.NaN) === bytes[i]);
}

/** True when `value` is the placeholder in any of its forms. */
export function isPlaceholderValue(value: JsonValue, forms: PlaceholderForms): boolean {
  if (typeof value === 'string') return value === forms.text || value === forms.base64 || value === forms.hstoreJson;
  if (Array.isArray(value)) {
    if (value.length === 1 && typeof value[0] === 'string') {
      const only = value[0];
      return only === forms.text || only === forms.base64 || only.toLowerCase() === forms.uuid;
    }
    return value.length > 1 && isByteArray(value, forms.bytes);
  }
  if (isJsonObject(value)) {
    const keys = Object.keys(value);
    return keys.length === 1 && keys[0] === forms.text && value[forms.text] === forms.text;
  }
  return false;
}

/** The columns of `row` that hold the placeholder (in any form), in column order. */
export function placeholderColumns(row: JsonObject | null, placeholder: string): string[] {
  if (!row) return [];
  const forms = placeholderForms(placeholder);
  return Object.entries(row)
    .filter(([, value]) => isPlaceholderValue(value, forms))
    .map(([column]) => column);
}
