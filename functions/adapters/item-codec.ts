/**
 * Between rows and DynamoDB items. Source columns keep their JSON types (numbers stay exact through
 * `NumberValue`); tidemark's own attributes start with `__`.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { NumberValueImpl as NumberValue, unmarshall } from '@aws-sdk/util-dynamodb';
import type { TableConfig } from '../config/types.js';
import { isLosslessNumber, type JsonObject, type JsonValue, LosslessNumber, toPlainNumber } from '../core/json.js';
import { COMPOSITE_KEY_ATTRIBUTE, keyId, keyLayout } from '../core/keys.js';
import type { Key, Row, RowOp } from '../core/types.js';

export const META = {
  position: '__pos',
  op: '__op',
  deleted: '__deleted',
  commitTs: '__commitTs',
  txid: '__txid',
  appliedAt: '__appliedAt',
  expiresAt: '__expiresAt',
  hash: '__hash',
  missing: '__missing',
  partial: '__partial',
  spill: '__spill',
  decimalText: '__decimalText',
} as const;

/**
 * Sets an own, enumerable property even for names such as `__proto__`, which plain assignment would
 * turn into a prototype change (and so drop the column).
 */
export function setOwn<T>(target: Record<string, T>, name: string, value: T): void {
  if (name === '__proto__') Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
  else target[name] = value;
}

/**
 * One JSON value as a DynamoDB attribute. Written here rather than with util-dynamodb's `marshall`,
 * which rejects objects holding a `constructor` column ("Unsupported type passed") and reads
 * inherited names; this walks own keys only. Numbers keep their exact text (LosslessNumber).
 */
export function marshallValue(value: JsonValue): AttributeValue {
  if (value === null) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'boolean') return { BOOL: value };
  if (typeof value === 'number') return { N: String(value) };
  if (isLosslessNumber(value)) return { N: value.value };
  if (Array.isArray(value)) return { L: value.map(marshallValue) };
  return { M: marshallRow(value) };
}

/** A row (or a nested map) as DynamoDB attributes, own keys only. */
export function marshallRow(row: JsonObject): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const name of Object.keys(row)) {
    const value = row[name];
    if (value !== undefined) setOwn(out, name, marshallValue(value));
  }
  return out;
}

function fromPlain(value: unknown): JsonValue {
  if (value instanceof NumberValue) return toPlainNumber(new LosslessNumber(value.toString()));
  if (value instanceof Set) return [...value].map(fromPlain);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(fromPlain);
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, fromPlain(v));
    return out;
  }
  return value as JsonValue;
}

/** The DynamoDB key attributes of a normalized key. */
export function keyAttributes(table: TableConfig, key: Key): Record<string, AttributeValue> {
  const layout = keyLayout(table);
  if (layout.composite) return { [COMPOSITE_KEY_ATTRIBUTE]: { S: keyId(table, key) } };
  const out: Record<string, AttributeValue> = {};
  for (const attr of [layout.partitionKey, layout.sortKey]) {
    if (!attr) continue;
    const v = key[attr.name];
    const text = isLosslessNumber(v) ? v.value : String(v);
    out[attr.name] = attr.type === 'N' ? { N: text } : { S: text };
  }
  return out;
}

/** Key columns as ordinary attributes too, for composite keys (they are the key otherwise). */
export function keyColumnAttributes(table: TableConfig, key: Key): Record<string, AttributeValue> {
  return keyLayout(table).composite ? marshallRow(key) : {};
}

export interface DecodedItem {
  readonly row: Row;
  readonly position: string;
  readonly op: RowOp | null;
  readonly deleted: boolean;
  readonly commitTs: number | null;
  readonly txid: string | null;
  readonly appliedAt: number | null;
  readonly expiresAt: number | null;
  readonly contentHash: string;
  readonly missing: string[];
  readonly partial: boolean;
  readonly spill: string | null;
}

/** Splits a stored item into source columns (JSON types restored) and tidemark metadata. */
export function decodeItem(table: TableConfig, item: Record<string, AttributeValue>): DecodedItem {
  const plain = unmarshall(item, { wrapNumbers: true }) as Record<string, unknown>;
  const row: Row = {};
  for (const [k, v] of Object.entries(plain)) if (!k.startsWith('__')) setOwn(row, k, fromPlain(v));
  const layout = keyLayout(table);
  for (const attr of [layout.partitionKey, layout.sortKey]) {
    if (attr && !layout.composite && attr.name in row) {
      const v = row[attr.name];
      if (attr.type === 'S' && typeof v !== 'string') row[attr.name] = String(v);
    }
  }
  const num = (v: unknown): number | null => (v instanceof NumberValue ? Number(v.toString()) : typeof v === 'number' ? v : null);
  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const missingRaw = plain[META.missing];
  return {
    row,
    position: str(plain[META.position]) ?? '',
    op: str(plain[META.op]) as RowOp | null,
    deleted: plain[META.deleted] === true,
    commitTs: num(plain[META.commitTs]),
    txid: str(plain[META.txid]),
    appliedAt: num(plain[META.appliedAt]),
    expiresAt: num(plain[META.expiresAt]),
    contentHash: str(plain[META.hash]) ?? '',
    missing: missingRaw instanceof Set ? ([...missingRaw] as string[]).sort() : Array.isArray(missingRaw) ? (missingRaw as string[]) : [],
    partial: plain[META.partial] === true,
    spill: str(plain[META.spill]),
  };
}

/** Rough DynamoDB item size: attribute names plus JSON-encoded values. Errs on the large side. */
export function estimateItemBytes(item: Record<string, AttributeValue>): number {
  return Buffer.byteLength(JSON.stringify(item), 'utf8');
}
