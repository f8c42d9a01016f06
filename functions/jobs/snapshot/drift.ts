/**
 * The drift section of the snapshot-detection report (issue 24): per table, the schema changes the
 * ingest recorded (core/schema-drift.ts, the `schema` row of the table's partition) since the
 * table's previous snapshot report.
 *
 * "Since the previous report" is counted, not timed: the `job#snapshot` row keeps the schema row's
 * running counts (`schemaChanges`, `schemaIncompatible`) as the last report saw them, and the
 * changes since are the newest `total - seen` of the recorded history. No clock is compared, so a
 * change is reported by exactly one run whatever the schedule, commit times or late shards (a
 * change named at an older position, recorded after the last run, is still new to this one). A
 * table with no previous report (or one written before drift was reported) reports its whole
 * recorded history. The history keeps the last MAX_CHANGES changes: older ones since the last
 * report are counted (`unlisted`), not listed; the count of incompatible ones is exact either way.
 *
 * Column names and types only: a schema row holds no row values, and neither does this section.
 *
 *   driftOf(state, { changes: 1, incompatible: 0, runId: 'snapshot-…', at: 1764483600000 })
 *   // { recorded: true, previous: {...}, changes: [{ kind: 'removed', column: 'coupon', … }], unlisted: 0, incompatible: 0, … }
 */
import { isSchemaState, type SchemaState } from '../../core/schema-drift.js';
import type { DriftChange, TableDrift } from './types.js';

/** `job#snapshot` attributes that keep what the last report saw of the schema row. */
export const DRIFT_SEEN = { changes: 'schemaChanges', incompatible: 'schemaIncompatible' } as const;

/** What the previous report of a table saw: the schema row's counts, and the run. */
export interface DriftSeen {
  readonly changes: number;
  readonly incompatible: number;
  readonly runId: string | null;
  readonly at: number | null;
}

const count = (v: unknown): number | null => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
};

/** What a `job#snapshot` row says the previous report saw; null when there is none, or it predates drift. */
export function driftSeenOf(row: Readonly<Record<string, unknown>> | undefined): DriftSeen | null {
  if (!row) return null;
  const changes = count(row[DRIFT_SEEN.changes]);
  const incompatible = count(row[DRIFT_SEEN.incompatible]);
  if (changes === null || incompatible === null) return null;
  const at = count(row.lastRunAt);
  return { changes, incompatible, runId: typeof row.runId === 'string' ? row.runId : null, at };
}

/** The recorded schema of a `schema` row (its `schema` attribute, JSON text); undefined when it holds none readable. */
export function schemaOfRow(row: Readonly<Record<string, unknown>> | undefined): SchemaState | undefined {
  const text = row?.schema;
  if (typeof text !== 'string') return undefined;
  try {
    const state: unknown = JSON.parse(text);
    return isSchemaState(state) ? state : undefined;
  } catch {
    return undefined;
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A table's drift since the previous report (`seen`), from its recorded schema. */
export function driftOf(state: SchemaState | undefined, seen: DriftSeen | null): TableDrift {
  const previous = seen ? { runId: seen.runId, at: iso(seen.at) } : null;
  if (!state) return { recorded: false, previous, changes: [], unlisted: 0, incompatible: 0, hasIncompatible: false, total: 0 };
  // Counts that went down mean the row was recorded anew (a rebuilt status table): all of it is new.
  const fresh = seen === null || seen.changes > state.total || seen.incompatible > state.incompatible;
  const since = fresh ? state.total : state.total - seen.changes;
  const incompatible = fresh ? state.incompatible : state.incompatible - seen.incompatible;
  const listed = since === 0 ? [] : state.changes.slice(-since);
  const changes: DriftChange[] = listed.map((c) => ({
    kind: c.kind,
    column: c.column,
    ...(c.from !== undefined ? { from: c.from } : {}),
    ...(c.to !== undefined ? { to: c.to } : {}),
    position: c.position,
    commitTime: iso(c.commitTs),
    basis: c.basis,
    holds: c.holds,
  }));
  return { recorded: true, previous, changes, unlisted: since - changes.length, incompatible, hasIncompatible: incompatible > 0, total: state.total };
}
