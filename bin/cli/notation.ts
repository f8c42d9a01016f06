/**
 * Positions and keys as people read them, for human output only (`--json` keeps the encoded forms).
 * A position is shown in its source's own notation, chosen by the format that decoded the table (the
 * status row's `format`) and the ordering strength:
 *
 *   debezium-postgresql  [lastCommitLsn, lsn]          → LSN 0/16B3748
 *   debezium-mysql       [file, pos, row]              → binlog.000003:4567 (row 2 when row > 0)
 *   debezium-sqlserver   [commit_lsn, change_lsn, n]   → LSN 0000002d:00000bd0:0003 #1
 *   debezium-oracle      [commit_scn, scn, n]          → SCN 30198344
 *   debezium-mongodb     [seconds, ord]                → Timestamp(1735732800, 3)
 *   cockroachdb          [wall ns, logical]            → HLC 1735732800123456789.0000000002
 *   transport order      [sequence, …]                 → Kinesis seq 4959…0002 / Kafka offset 11
 *
 * Keys are shown as typed values in key-column order (`order_id=7`, `sku="A-1"`) and sorted by their
 * column types: number columns numerically (1, 2, 10, not 1, 10, 2), string columns by code point.
 */
import type { TableConfig } from '../../lib/config/config.js';
import { decodePosition } from '../../functions/core/position.js';

export interface PositionHint {
  /** The format that decoded the table, e.g. `debezium-postgresql` (the status row's `format`). */
  readonly format?: string | undefined;
  /** `source`, `transport` or `none` (the status row's `orderingStrength`). */
  readonly ordering?: string | undefined;
  /** The stream the pipeline reads, for transport positions. @default kinesis */
  readonly transport?: 'kinesis' | 'msk';
}

const hex = (n: bigint, width = 0) => n.toString(16).toUpperCase().padStart(width, '0');
const pgLsn = (n: bigint) => `${hex(n >> 32n)}/${hex(n & 0xffffffffn)}`;
const binlog = (file: bigint, pos: bigint, row: bigint | undefined) => `binlog.${String(file).padStart(6, '0')}:${pos}${row !== undefined && row > 0n ? ` row ${row}` : ''}`;
/** SQL Server's `vlf:block:slot` form of an 80-bit LSN. */
const sqlServerLsn = (n: bigint) => `${hex(n >> 48n, 8)}:${hex((n >> 16n) & 0xffffffffn, 8)}:${hex(n & 0xffffn, 4)}`.toLowerCase();

/** The change format of a status row's `format` (`debezium-postgresql+debezium-control` → `debezium-postgresql`). */
function mainFormat(format: string | undefined): string {
  if (format === undefined) return '';
  return format.split('+').find((f) => !f.endsWith('-control') && f !== 'kafka-tombstone') ?? format;
}

type Notation = (t: readonly bigint[]) => string | null;

/** PostgreSQL-style LSN of the last element of a one- or two-element tuple. */
const lsnOfLast: Notation = (t) => {
  const lsn = t.length === 2 ? t[1] : t[0];
  return lsn !== undefined ? `LSN ${pgLsn(lsn)}` : null;
};
const binlogOf: Notation = ([file, pos, row]) => (file !== undefined && pos !== undefined ? binlog(file, pos, row) : null);

/** The notation of each format's source positions. */
const NOTATIONS: Readonly<Record<string, Notation>> = {
  'debezium-postgresql': lsnOfLast,
  generic: lsnOfLast,
  'debezium-mysql': binlogOf,
  maxwell: binlogOf,
  'debezium-sqlserver': ([, change, n]) => (change !== undefined ? `LSN ${sqlServerLsn(change)}${n !== undefined ? ` #${n}` : ''}` : null),
  'debezium-oracle': ([, scn]) => (scn !== undefined ? `SCN ${scn}` : null),
  'debezium-mongodb': ([seconds, ord]) => (seconds !== undefined && ord !== undefined ? `Timestamp(${seconds}, ${ord})` : null),
  cockroachdb: ([wall, logical]) => (wall !== undefined ? `HLC ${wall}.${String(logical ?? 0n).padStart(10, '0')}` : null),
  'debezium-flattened': (t) => (t.length === 3 ? binlogOf(t) : lsnOfLast(t)),
};

function sourceNotation(format: string, t: readonly bigint[]): string | null {
  return NOTATIONS[format]?.(t) ?? null;
}

/** An encoded position (`__pos`) in its source's notation; the tuple when the format is unknown; `-` for none. */
export function positionText(encoded: string | null | undefined, hint: PositionHint = {}): string {
  if (encoded === null || encoded === undefined || encoded === '') return '-';
  let tuple: bigint[];
  try {
    tuple = decodePosition(encoded);
  } catch {
    return encoded;
  }
  const format = mainFormat(hint.format);
  const transport = hint.ordering === 'transport' || format === 'dms' || format === 'canal';
  const [first, second] = tuple;
  if (transport && first !== undefined) {
    // MongoDB from Debezium 3.4 orders by [2^32, offset]: the constant marks transport order.
    const sequence = format === 'debezium-mongodb' && second !== undefined ? second : first;
    return hint.transport === 'msk' ? `Kafka offset ${sequence}` : `Kinesis seq ${sequence}`;
  }
  return sourceNotation(format, tuple) ?? `[${tuple.join(', ')}]`;
}

type KeyValue = string | number | boolean | null | object;

/** A key's values in key-column order, from a key object (`{"order_id": 7}`) or canonical text (`["7"]`). */
export function keyValues(table: Pick<TableConfig, 'key'>, key: unknown): KeyValue[] {
  if (typeof key === 'string') {
    try {
      return keyValues(table, JSON.parse(key));
    } catch {
      return [key];
    }
  }
  if (Array.isArray(key)) return key as KeyValue[];
  if (key !== null && typeof key === 'object') return table.key.map((c) => ((key as Record<string, KeyValue>)[c] ?? null) as KeyValue);
  return [key as KeyValue];
}

/** A key as typed values: `order_id=7`, `region="eu", id=12`. */
export function keyText(table: Pick<TableConfig, 'key' | 'keyTypes'>, key: unknown): string {
  const values = keyValues(table, key);
  return table.key
    .map((column, i) => {
      const v = values[i];
      const text = v === null || v === undefined ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      return `${column}=${table.keyTypes[column] === 'number' ? text : JSON.stringify(text)}`;
    })
    .join(', ');
}

const INTEGER = /^-?\d{1,400}$/;
const cmp = <T>(a: T, b: T): number => (a < b ? -1 : a > b ? 1 : 0);

/** Compares two decimal texts numerically (`-2` < `10` < `10.5`); non-numbers sort after numbers. */
export function compareNumberText(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  const nanX = Number.isNaN(x);
  const nanY = Number.isNaN(y);
  if (nanX || nanY) return nanX && nanY ? cmp(a, b) : nanX ? 1 : -1;
  if (x !== y) return cmp(x, y);
  // Equal as doubles: integers past 2^53 still compare exactly as BigInt.
  return INTEGER.test(a) && INTEGER.test(b) ? cmp(BigInt(a), BigInt(b)) : 0;
}

/** Orders keys by their column types (numbers numerically, strings by code point), column by column. */
export function compareKeys(table: Pick<TableConfig, 'key' | 'keyTypes'>, a: unknown, b: unknown): number {
  const x = keyValues(table, a);
  const y = keyValues(table, b);
  for (let i = 0; i < table.key.length; i++) {
    const column = table.key[i] ?? '';
    const p = String(x[i] ?? '');
    const q = String(y[i] ?? '');
    const c = table.keyTypes[column] === 'number' ? compareNumberText(p, q) : cmp(p, q);
    if (c !== 0) return c;
  }
  return 0;
}
