/**
 * Values between DuckDB and the engine's callers: statement parameters bound as DuckDB values
 * (integers as BIGINT, so epoch ms never pass through a double), and result rows streamed as plain
 * JSON-like objects (BIGINT as a number when exact, else its text; DATE as `YYYY-MM-DD`; MAP as an
 * object), one chunk at a time, never a whole result.
 *
 *   for await (const row of plainRows(await connection.stream(sql, bindable(params)))) …   // { source_table: 'public.orders', keys: 3 }
 */
import { type DuckDBResult, DuckDBTypeId, type DuckDBValue } from '@duckdb/node-api';
import type { SqlValue } from '../../functions/sql/sql.js';

export type PlainValue = string | number | boolean | null | PlainValue[] | { [k: string]: PlainValue };
export type PlainRow = Record<string, PlainValue>;

/** Statement parameters as DuckDB binds them. */
export function bindable(params: readonly SqlValue[]): DuckDBValue[] {
  return params.map((v) => (typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v));
}

function plain(value: unknown, typeId: DuckDBTypeId | null): PlainValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
  if (value instanceof Date) return typeId === DuckDBTypeId.DATE ? value.toISOString().slice(0, 10) : value.toISOString();
  if (Array.isArray(value)) {
    if (typeId === DuckDBTypeId.MAP) return Object.fromEntries(value.map((e: { key: unknown; value: unknown }) => [String(e.key), plain(e.value, null)]));
    return value.map((v) => plain(v, null));
  }
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v, null)]));
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  return String(value);
}

/** The rows of a (streaming) result, chunk by chunk. */
export async function* plainRows(result: DuckDBResult): AsyncGenerator<PlainRow> {
  const types = result.columnTypes().map((t) => t.typeId);
  const names = result.columnNames();
  for await (const chunk of result.yieldRowsJs()) {
    for (const row of chunk) {
      const out: PlainRow = {};
      row.forEach((v, i) => {
        out[names[i] ?? `column${i}`] = plain(v, types[i] ?? null);
      });
      yield out;
    }
  }
}
