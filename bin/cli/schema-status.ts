/**
 * `tidemark status --schema`: each table's recorded columns and its schema drift (additions,
 * removals, type changes) with the position where each first appeared, and the DDL of its
 * schema-change records, read from the `schema#<table>` rows of the status table
 * (functions/adapters/schema-store.ts).
 *
 *   public.orders: 4 columns (1 removed), 3 changes, 1 the target cannot hold; baseline at [33228000, 33228008]
 *     columns: email string, id int32, name string, total Decimal
 *     position               commit time               change        column  from     to
 *     [33228416, 33228700]   2025-01-01T12:00:05.000Z  added         email            string
 *     …
 */
import type { JsonObject } from '../../functions/core/json.js';
import { decodePosition } from '../../functions/core/position.js';
import { isSchemaState, type SchemaState } from '../../functions/core/schema-drift.js';
import { SCHEMA_ROW_PREFIX } from '../../functions/telemetry/contract.js';

/** Whether a status row is a table's schema row (shown by `--schema`, not as a table). */
export const isSchemaRow = (row: JsonObject): boolean => String(row.table).startsWith(SCHEMA_ROW_PREFIX);

/** The schema rows among status rows: source table → recorded state. */
export function schemaStates(rows: readonly JsonObject[], table?: string): Map<string, SchemaState> {
  const out = new Map<string, SchemaState>();
  for (const r of rows) {
    if (!isSchemaRow(r) || typeof r.schema !== 'string') continue;
    const source = String(r.table).slice(SCHEMA_ROW_PREFIX.length);
    if (table !== undefined && source !== table) continue;
    try {
      const state: unknown = JSON.parse(r.schema);
      if (isSchemaState(state)) out.set(source, state);
    } catch {
      // An unreadable row is left out, never guessed at.
    }
  }
  return out;
}

/** An encoded position as its tuple, `[33228416, 33228700]` (the empty position as `[]`). */
export function showPosition(encoded: string | null): string {
  if (encoded === null) return '-';
  try {
    return `[${decodePosition(encoded).join(', ')}]`;
  } catch {
    return encoded;
  }
}

const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());

function aligned(columns: readonly string[], body: readonly (readonly string[])[]): string[] {
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((b) => (b[i] ?? '').length)));
  const fmt = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [fmt(columns), ...body.map(fmt)];
}

/** One table's schema and drift as text. */
export function renderTableSchema(table: string, s: SchemaState): string {
  const present = s.columns.filter((c) => c.present);
  const removed = s.columns.length - present.length;
  const head = `${table}: ${present.length} columns${removed > 0 ? ` (${removed} removed)` : ''}, ${s.total} changes, ${s.incompatible} the target cannot hold; baseline at ${showPosition(s.since)}`;
  const lines = [head, `  columns: ${present.map((c) => `${c.name} ${c.type}`).join(', ') || '-'}`];
  if (s.changes.length > 0) {
    const shown = s.total > s.changes.length ? `  (the last ${s.changes.length} of ${s.total} changes)` : null;
    if (shown) lines.push(shown);
    const body = s.changes.map((c) => [showPosition(c.position), time(c.commitTs), c.kind, c.column, c.from ?? '', c.to ?? '', c.holds ? '' : 'the target cannot hold it as before']);
    lines.push(...aligned(['position', 'commit time', 'change', 'column', 'from', 'to', 'note'], body).map((l) => `  ${l}`));
  } else lines.push('  no changes since the baseline');
  if (s.ddl.length > 0) {
    lines.push('  DDL:');
    for (const d of s.ddl) lines.push(`  ${showPosition(d.position)}  ${time(d.commitTs)}  ${d.type ? `${d.type}: ` : ''}${d.ddl.replace(/\s+/g, ' ')}`);
  }
  return lines.join('\n');
}

/** Every table's schema and drift, or a line saying none is recorded yet. */
export function renderSchemas(rows: readonly JsonObject[], table?: string): string {
  const states = schemaStates(rows, table);
  if (states.size === 0) return table ? `no schema recorded for ${table} yet` : 'no schema recorded yet';
  return [...states].sort(([a], [b]) => (a < b ? -1 : 1)).map(([t, s]) => renderTableSchema(t, s)).join('\n\n');
}
