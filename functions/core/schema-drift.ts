/**
 * Schema drift, per table: the column set and types as the change events carry them, and every
 * change to it with the position where it first appeared. Pure: the ingest keeps the state in the
 * status table (adapters/schema-store.ts) and calls this with each batch's events.
 *
 * What a change event says about its table's schema:
 * - Debezium with the JsonConverter schema (`{schema, payload}`): the `after` struct declares every
 *   column and its type (`int32`, `Decimal`, `MicroTimestamp`, …), null-valued ones included;
 * - otherwise the row image's shape: the columns it carries, and each non-null value's JSON type.
 * Each column also has the DynamoDB attribute type its values are stored as (`N`, `S`, `BOOL`, `M`,
 * `L`; key columns as their `keyTypes`). A full image (not a patch, no placeholders) that lacks a
 * known column says the column was removed, except from formats that leave null columns out (DMS
 * without `IncludeNullAndEmpty`, MongoDB documents): for those only a declared schema says so.
 *
 * The first shape seen is the baseline, not a change. After it, in position order:
 *   added        a column not known, or known removed, appears
 *   removed      a known column is missing from a full image
 *   type-changed a column's type changes (`holds: false` when its stored attribute type changes
 *                too, e.g. a number column carrying text: DynamoDB then holds the values under two
 *                types in one attribute, which typed readers cannot; tidemark writes each value as
 *                delivered and never coerces it, so the report names it), or a decimal of more
 *                than 38 digits arrives as text (`holds: false`, once per column)
 * An observation older than a column's last change (a redelivered window, a shard behind) changes
 * nothing for that column, and how the batches were cut changes nothing at all. Across shards, a
 * change is named at the first position that showed it to the pipeline: a shard far behind can show
 * a column that a newer event already lacked, and it is reported added (at its older position)
 * until the next full image shows it gone. A DDL statement of a schema-change record is kept as it
 * came (its text, position when the record has one, and commit time).
 *
 * Example: baseline {id, name} at p1; {id, name, email} at p2 → added email @p2; {id, name} at p3 →
 * removed email @p3; {id, name: 42} at p4 → type-changed name string → number @p4, holds: false.
 */
import { declaredTypeOfField, type StoredKind, storedKindOfField } from './formats/debezium-types.js';
import { isJsonObject, isLosslessNumber, type JsonValue } from './json.js';
import { compareTuples, encodePosition } from './position.js';
import type { ChangeEvent } from './types.js';

export type { StoredKind } from './formats/debezium-types.js';

/** Changes kept in a table's history (older ones are counted, not listed). */
export const MAX_CHANGES = 100;
/** DDL statements kept per table, and the characters kept of each. */
export const MAX_DDL = 20;
export const MAX_DDL_CHARS = 1000;

export const SCHEMA_CHANGE_KINDS = ['added', 'removed', 'type-changed'] as const;
export type SchemaChangeKind = (typeof SCHEMA_CHANGE_KINDS)[number];

/** `schema`: from the message's declared schema; `rows`: from row images. */
export type SchemaBasis = 'schema' | 'rows';

/** What one event says about one column. */
export interface ColumnSeen {
  /** Declared (`int32`, `Decimal`) or observed (`number`, `string`, …) type; `unknown` for a null value or placeholder. */
  readonly type: string;
  /** How its value is stored; null when the event does not tell (a null value, a placeholder). */
  readonly kind: StoredKind | null;
  /** A decimal over 38 significant digits, stored as its exact text. */
  readonly text: boolean;
}

/** One table's shape at one position (consecutive events of the same shape are one observation). */
export interface ShapeObservation {
  readonly position: string;
  readonly commitTs: number | null;
  readonly basis: SchemaBasis;
  readonly columns: ReadonlyMap<string, ColumnSeen>;
  /** Columns it lacks are removed (a full image, or a declared schema). */
  readonly full: boolean;
}

export interface DdlEntry {
  readonly ddl: string;
  readonly position: string | null;
  readonly commitTs: number | null;
  /** The change type when the record says (`ALTER`, `CREATE`, `DROP`, DMS's operation). */
  readonly type?: string;
}

export interface SchemaChange {
  readonly kind: SchemaChangeKind;
  readonly column: string;
  readonly from?: string;
  readonly to?: string;
  /** Encoded position of the first event that showed it. */
  readonly position: string;
  readonly commitTs: number | null;
  readonly basis: SchemaBasis;
  /** False when the target cannot hold the values as before: named, never coerced. */
  readonly holds: boolean;
}

export interface ColumnState {
  readonly name: string;
  readonly type: string;
  readonly kind: StoredKind | null;
  readonly basis: SchemaBasis;
  readonly present: boolean;
  /** Position of the column's last change (or of the baseline). */
  readonly since: string;
  /** Has carried decimals over 38 digits as text. */
  readonly text?: boolean;
}

/** A table's schema as recorded: its columns, its latest changes and DDL, and running counts. */
export interface SchemaState {
  /** Position of the baseline shape. */
  readonly since: string;
  readonly columns: readonly ColumnState[];
  readonly changes: readonly SchemaChange[];
  readonly ddl: readonly DdlEntry[];
  /** Every change recorded, and of those the ones the target cannot hold (the history is capped; these are not). */
  readonly total: number;
  readonly incompatible: number;
}

/** What a table's events are read with. */
export interface ObserveOptions {
  /** The table's key columns and their declared types: stored as `N` or `S` whatever the image says. */
  readonly keyTypes: ReadonlyMap<string, 'string' | 'number'>;
  /** The format leaves null columns out of row images: a missing column is not a removal. */
  readonly sparse: (format: string) => boolean;
}

/** Formats whose row images leave null columns out (DMS `IncludeNullAndEmpty: false`, MongoDB documents). */
export const SPARSE_FORMATS: ReadonlySet<string> = new Set(['dms', 'debezium-mongodb']);

function valueKind(v: JsonValue | undefined): { type: string; kind: StoredKind | null } {
  if (v === null || v === undefined) return { type: 'unknown', kind: null };
  if (typeof v === 'number' || isLosslessNumber(v)) return { type: 'number', kind: 'N' };
  if (typeof v === 'string') return { type: 'string', kind: 'S' };
  if (typeof v === 'boolean') return { type: 'boolean', kind: 'BOOL' };
  if (Array.isArray(v)) return { type: 'array', kind: 'L' };
  return { type: 'object', kind: isJsonObject(v) ? 'M' : null };
}

const UNKNOWN: ColumnSeen = { type: 'unknown', kind: null, text: false };

type KeyKind = (column: string) => StoredKind | undefined;

/** The columns a declared schema (the `after` struct's `fields`) names, null-valued ones included. */
function declaredColumns(fields: readonly JsonValue[], keyKind: KeyKind, text: ReadonlySet<string>): Map<string, ColumnSeen> {
  const columns = new Map<string, ColumnSeen>();
  for (const f of fields) {
    if (!isJsonObject(f) || typeof f.field !== 'string') continue;
    columns.set(f.field, { type: declaredTypeOfField(f), kind: keyKind(f.field) ?? storedKindOfField(f), text: text.has(f.field) });
  }
  return columns;
}

/** The columns a row image carries, each typed by its value (a placeholder or null says nothing of its type). */
function imageColumns(image: Readonly<Record<string, JsonValue>>, placeholders: ReadonlySet<string>, keyKind: KeyKind, text: ReadonlySet<string>): Map<string, ColumnSeen> {
  const columns = new Map<string, ColumnSeen>();
  for (const col of Object.keys(image)) {
    if (placeholders.has(col)) {
      columns.set(col, UNKNOWN);
      continue;
    }
    // A decimal over 38 digits arrives as its exact text: still a number column, now carried as text.
    if (text.has(col)) {
      columns.set(col, { type: 'number', kind: 'N', text: true });
      continue;
    }
    const seen = valueKind(image[col]);
    columns.set(col, { type: seen.type, kind: seen.kind === null ? null : (keyKind(col) ?? seen.kind), text: false });
  }
  return columns;
}

/** What one change event says about its table's columns; null for an event that says nothing (a delete, a truncate). */
export function observeEvent(e: ChangeEvent, options: ObserveOptions): ShapeObservation | null {
  if (e.op === 'd' || e.op === 't') return null;
  const image = e.patch ? e.patch.set : e.after;
  if (image === null) return null;
  const placeholders = new Set(e.placeholders);
  const text = new Set(e.decimalText ?? []);
  const keyKind: KeyKind = (col) => {
    const t = options.keyTypes.get(col);
    return t === undefined ? undefined : t === 'number' ? 'N' : 'S';
  };
  const fields = e.rowSchema && !e.patch && Array.isArray(e.rowSchema.fields) ? e.rowSchema.fields : null;
  const columns = fields ? declaredColumns(fields, keyKind, text) : imageColumns(image, placeholders, keyKind, text);
  const full = fields !== null || (!e.patch && placeholders.size === 0 && !options.sparse(e.format));
  return { position: encodePosition(e.position.tuple), commitTs: e.commitTs, basis: fields ? 'schema' : 'rows', columns, full };
}

const sameSeen = (a: ColumnSeen, b: ColumnSeen) => a.type === b.type && a.kind === b.kind && a.text === b.text;

function sameShape(a: ShapeObservation, b: ShapeObservation): boolean {
  if (a.basis !== b.basis || a.full !== b.full || a.columns.size !== b.columns.size) return false;
  for (const [col, seen] of a.columns) {
    const other = b.columns.get(col);
    if (!other || !sameSeen(seen, other)) return false;
  }
  return true;
}

/**
 * One table's events as shape observations in position order, consecutive events of one shape
 * collapsed into the first: a batch of 3,000 rows of one shape is one observation.
 */
export function shapeRuns(events: readonly ChangeEvent[], options: ObserveOptions): ShapeObservation[] {
  const ordered = [...events].sort((a, b) => compareTuples(a.position.tuple, b.position.tuple));
  const runs: ShapeObservation[] = [];
  for (const e of ordered) {
    const obs = observeEvent(e, options);
    if (obs === null) continue;
    const last = runs[runs.length - 1];
    if (last === undefined || !sameShape(last, obs)) runs.push(obs);
  }
  return runs;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** A mutable working copy of the recorded state. */
class Working {
  readonly columns = new Map<string, ColumnState>();
  readonly changes: SchemaChange[] = [];
  readonly ddl: DdlEntry[];
  total: number;
  incompatible: number;
  since: string;
  changed = false;

  constructor(state: SchemaState | undefined, first: ShapeObservation | undefined) {
    for (const c of state?.columns ?? []) this.columns.set(c.name, c);
    this.ddl = [...(state?.ddl ?? [])];
    this.total = state?.total ?? 0;
    this.incompatible = state?.incompatible ?? 0;
    this.since = state?.since ?? first?.position ?? '';
  }

  record(change: SchemaChange): void {
    this.changes.push(change);
    this.total++;
    if (!change.holds) this.incompatible++;
    this.changed = true;
  }

  set(column: ColumnState): void {
    this.columns.set(column.name, column);
    this.changed = true;
  }
}

/** The baseline: the first shape seen, every column present since its position. */
function baseline(w: Working, obs: ShapeObservation): void {
  for (const [name, seen] of obs.columns) w.set({ name, type: seen.type, kind: seen.kind, basis: obs.basis, present: true, since: obs.position, ...(seen.text ? { text: true } : {}) });
}

/** Applies one observation to the working state, recording what changed. */
function apply(w: Working, obs: ShapeObservation): void {
  const at = { position: obs.position, commitTs: obs.commitTs, basis: obs.basis };
  for (const [name, seen] of obs.columns) {
    const cur = w.columns.get(name);
    if (cur === undefined || (!cur.present && obs.position > cur.since)) {
      w.record({ kind: 'added', column: name, to: seen.type, ...at, holds: cur?.kind == null || seen.kind === null || cur.kind === seen.kind });
      w.set({ name, type: seen.type, kind: seen.kind ?? cur?.kind ?? null, basis: obs.basis, present: true, since: obs.position, ...(seen.text ? { text: true } : {}) });
      continue;
    }
    if (!cur.present) continue;
    typeChange(w, cur, seen, obs);
  }
  if (!obs.full) return;
  // By name, so the changes of one position come in the same order however the batches were cut.
  for (const cur of [...w.columns.values()].sort(byName)) {
    if (cur.present && !obs.columns.has(cur.name) && obs.position > cur.since) {
      w.record({ kind: 'removed', column: cur.name, from: cur.type, ...at, holds: true });
      w.set({ ...cur, present: false, since: obs.position });
    }
  }
}

/** A present column seen again: a type change, the first long decimal as text, or a type learned. */
function typeChange(w: Working, cur: ColumnState, seen: ColumnSeen, obs: ShapeObservation): void {
  const at = { position: obs.position, commitTs: obs.commitTs, basis: obs.basis };
  const newer = obs.position > cur.since;
  if (seen.kind !== null && cur.kind !== null && newer) {
    // Declared types compare as written; across bases (declared vs observed) only stored kinds compare.
    const differs = cur.basis === obs.basis ? cur.type !== seen.type || cur.kind !== seen.kind : cur.kind !== seen.kind;
    if (differs) {
      w.record({ kind: 'type-changed', column: cur.name, from: cur.type, to: seen.type, ...at, holds: cur.kind === seen.kind });
      w.set({ ...cur, type: seen.type, kind: seen.kind, basis: obs.basis, since: obs.position });
      return;
    }
    if (cur.basis !== obs.basis && obs.basis === 'schema') w.set({ ...cur, type: seen.type, basis: 'schema' });
  } else if (cur.kind === null && seen.kind !== null) {
    w.set({ ...cur, type: seen.type, kind: seen.kind, basis: obs.basis });
  }
  const now = w.columns.get(cur.name) ?? cur;
  if (seen.text && now.text !== true && newer) {
    w.record({ kind: 'type-changed', column: cur.name, from: now.type, to: `${now.type} as text (over 38 digits)`, ...at, holds: false });
    w.set({ ...now, text: true, since: obs.position });
  }
}

/**
 * Merges a batch's observations (in position order) and DDL into a table's recorded state.
 * `changed` is false when nothing new was learned: then nothing needs writing.
 */
export function mergeSchema(state: SchemaState | undefined, runs: readonly ShapeObservation[], ddl: readonly DdlEntry[] = []): { state: SchemaState; changes: SchemaChange[]; changed: boolean } {
  const ordered = [...runs].sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));
  const w = new Working(state, ordered[0]);
  for (const [i, obs] of ordered.entries()) {
    if (state === undefined && i === 0) baseline(w, obs);
    else apply(w, obs);
  }
  for (const entry of ddl) {
    const d = { ...entry, ddl: entry.ddl.slice(0, MAX_DDL_CHARS) };
    if (w.ddl.some((x) => x.ddl === d.ddl && x.position === d.position && x.commitTs === d.commitTs)) continue;
    w.ddl.push(d);
    w.changed = true;
  }
  const next: SchemaState = {
    since: w.since,
    columns: [...w.columns.values()].sort(byName),
    changes: [...(state?.changes ?? []), ...w.changes].slice(-MAX_CHANGES),
    ddl: w.ddl.slice(-MAX_DDL),
    total: w.total,
    incompatible: w.incompatible,
  };
  return { state: next, changes: w.changes, changed: w.changed };
}

/** Whether a stored JSON value is a SchemaState (as written by {@link mergeSchema}). */
export function isSchemaState(v: unknown): v is SchemaState {
  if (v === null || typeof v !== 'object') return false;
  const s = v as Partial<SchemaState>;
  return typeof s.since === 'string' && Array.isArray(s.columns) && Array.isArray(s.changes) && Array.isArray(s.ddl) && typeof s.total === 'number' && typeof s.incompatible === 'number';
}
