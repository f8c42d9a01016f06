/**
 * How a source primary key maps onto a DynamoDB key (docs/contract.md, "the merge rule"):
 * one column → partition key; two columns → partition + sort key; more → a canonical encoded
 * `__key` partition key, with the columns kept as ordinary attributes.
 */
import { DecodeError } from './errors.js';
import { isLosslessNumber, type JsonValue, LosslessNumber } from './json.js';
import type { ChangeEvent, Key } from './types.js';

/** The DynamoDB attribute type of a key column. */
export const KEY_TYPES = ['string', 'number'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

/** A table's key as core reads it (the config's table entries have this shape). */
export interface KeyedTable {
  /** Source primary-key columns, in order. */
  readonly key: readonly string[];
  /** DynamoDB type of each key column; a column not listed is a string. */
  readonly keyTypes: Readonly<Record<string, KeyType>>;
}

export const COMPOSITE_KEY_ATTRIBUTE = '__key';

export interface KeyAttribute {
  readonly name: string;
  /** DynamoDB scalar type. */
  readonly type: 'S' | 'N';
}

export interface KeyLayout {
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute | null;
  /** True when the key has more than two columns and is stored as `__key`. */
  readonly composite: boolean;
}

const dynamoType = (t: KeyType | undefined): 'S' | 'N' => (t === 'number' ? 'N' : 'S');
/** The declared type of a key column; own properties only, so a column named `constructor` is not a function. */
const declaredType = (table: Pick<KeyedTable, 'keyTypes'>, col: string): KeyType | undefined => (Object.hasOwn(table.keyTypes, col) ? table.keyTypes[col] : undefined);

export function keyLayout(table: KeyedTable): KeyLayout {
  const [first, second] = table.key;
  if (table.key.length === 1 && first !== undefined) return { partitionKey: { name: first, type: dynamoType(declaredType(table, first)) }, sortKey: null, composite: false };
  if (table.key.length === 2 && first !== undefined && second !== undefined) {
    return {
      partitionKey: { name: first, type: dynamoType(declaredType(table, first)) },
      sortKey: { name: second, type: dynamoType(declaredType(table, second)) },
      composite: false,
    };
  }
  return { partitionKey: { name: COMPOSITE_KEY_ATTRIBUTE, type: 'S' }, sortKey: null, composite: true };
}

/**
 * Coerces one key value to its declared type. Numbers stay exact (a LosslessNumber when large);
 * digit strings become numbers when the column is declared `number` (Canal sends every value as text).
 * Throws DecodeError `bad-key` when the value cannot be a key.
 */
export function coerceKeyValue(column: string, value: JsonValue | undefined, type: KeyType | undefined): string | number | LosslessNumber {
  if (value === undefined || value === null) throw new DecodeError('missing-key', `key column "${column}" is missing or null`);
  return type === 'number' ? numberKeyValue(column, value) : textKeyValue(column, value);
}

/** A key column declared `number`: a finite number, an exact large number, or a number in text. */
function numberKeyValue(column: string, value: Exclude<JsonValue, null>): number | LosslessNumber {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (isLosslessNumber(value)) return value;
  if (typeof value === 'string' && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value.trim())) {
    const n = Number(value);
    return Number.isSafeInteger(n) || String(n) === value.trim() ? n : new LosslessNumber(value.trim());
  }
  throw new DecodeError('bad-key', `key column "${column}" is declared number but holds a ${typeof value}`);
}

/** Any other key column: a non-empty string, or a scalar in its text form. */
function textKeyValue(column: string, value: Exclude<JsonValue, null>): string {
  if (typeof value === 'string') {
    if (value === '') throw new DecodeError('bad-key', `key column "${column}" is an empty string`);
    return value;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (isLosslessNumber(value)) return value.value;
  throw new DecodeError('bad-key', `key column "${column}" holds an ${Array.isArray(value) ? 'array' : 'object'}, not a scalar`);
}

/**
 * A column of an object, own properties only: `row.constructor` on a row without a `constructor`
 * column is Object's constructor function, which must read as "missing", never as a value.
 */
export function ownValue(row: Readonly<Record<string, JsonValue>> | null | undefined, column: string): JsonValue | undefined {
  if (row === null || row === undefined || !Object.hasOwn(row, column)) return undefined;
  const v = row[column];
  // A decoder that read an image through its prototype may have copied a built-in function here.
  return typeof v === 'function' ? undefined : v;
}

/**
 * Where a key column's value comes from: the decoder's key, then the after image, the patch, and
 * the before image, the first that has the column non-null (own properties only).
 */
export function keySource(event: Pick<ChangeEvent, 'key' | 'after' | 'patch' | 'before'>, column: string): JsonValue | undefined {
  for (const image of [event.key, event.after, event.patch?.set, event.before]) {
    const v = ownValue(image, column);
    if (v !== undefined && v !== null) return v;
  }
  for (const image of [event.key, event.after, event.patch?.set, event.before]) if (ownValue(image, column) === null) return null;
  return undefined;
}

/** The key with every column coerced to its declared type, in configured column order (own properties only). */
export function normalizeKey(table: KeyedTable, key: Key): Key {
  const out: Key = {};
  for (const col of table.key) out[col] = coerceKeyValue(col, ownValue(key, col), declaredType(table, col));
  return out;
}

const keyText = (v: JsonValue | undefined): string => (isLosslessNumber(v) ? v.value : typeof v === 'number' ? String(v) : String(v));

/**
 * A canonical string for a normalized key, used to group events per key and as the `__key`
 * attribute of composite keys: a JSON array of the values as text, in column order.
 * `{order_id: 7, line_no: 2, sku: "A"}` → `["7","2","A"]`.
 */
export function keyId(table: Pick<KeyedTable, 'key'>, key: Key): string {
  return JSON.stringify(table.key.map((col) => keyText(key[col])));
}
