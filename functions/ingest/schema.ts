/**
 * The batch step of schema drift (core/schema-drift.ts decides, adapters/schema-store.ts keeps):
 * after the writes, before the report. Per table the batch touched, its events become shape
 * observations (consecutive events of one shape collapse, so the cost is a few map lookups per
 * column per event) and its schema-change records DDL entries; they are merged into the schema the
 * container knows, and written only when something changed.
 *
 * Bounded cost: the known schema of each table is cached for the container's life, read once (one
 * BatchGetItem of up to 100 tables) the first time the container sees the table; at most one
 * status-table write per table per batch, and none when the schema did not change. A write that
 * loses to another container (the version moved) keeps its observations for the next batch, which
 * reloads that table and merges them again. Failures here are logged and never fail the batch:
 * drift is reported, rows are not held back for it.
 *
 * Counted per table when written: `schemaChanges` (every change) and `schemaIncompatible`
 * (type changes the target cannot hold); each change is logged with its column and position.
 */
import type { TidemarkConfig } from '../config/types.js';
import { errorMessage } from '../core/errors.js';
import { type DdlEntry, mergeSchema, type ObserveOptions, type SchemaState, type ShapeObservation, SPARSE_FORMATS, shapeRuns } from '../core/schema-drift.js';
import { encodePosition } from '../core/position.js';
import type { ChangeEvent, ControlEvent } from '../core/types.js';
import type { RecordedSchema, SchemaStore } from '../adapters/schema-store.js';
import type { Log } from '../telemetry/sinks.js';
import type { Decoded } from './decode.js';
import type { BatchTally } from './tally.js';

/** Observations kept per table while a write is pending (the first of them are the ones that matter). */
const MAX_PENDING = 64;

interface Known {
  state: SchemaState | undefined;
  version: number;
  /** Read from the store (or written) by this container: the cache is current. */
  loaded: boolean;
}

interface Pending {
  runs: ShapeObservation[];
  ddl: DdlEntry[];
}

/** The DDL entry of one schema-change record (its statement, or the change type a record without one names), or null. */
function ddlEntry(c: ControlEvent): DdlEntry | null {
  const ddl = typeof c.detail.ddl === 'string' ? c.detail.ddl : '';
  const type = typeof c.detail.type === 'string' ? c.detail.type : typeof c.detail.operation === 'string' ? c.detail.operation : undefined;
  if (ddl === '' && type === undefined) return null;
  return { ddl, position: c.position ? encodePosition(c.position.tuple) : null, commitTs: c.commitTs, ...(type !== undefined ? { type } : {}) };
}

/** The DDL entries of a batch's schema-change records, per table. */
function ddlOf(decoded: Pick<Decoded, 'controls'>): Map<string, DdlEntry[]> {
  const out = new Map<string, DdlEntry[]>();
  for (const c of decoded.controls) {
    const entry = c.control === 'schema' && c.table !== null ? ddlEntry(c) : null;
    if (entry === null || c.table === null) continue;
    const list = out.get(c.table);
    if (list) list.push(entry);
    else out.set(c.table, [entry]);
  }
  return out;
}

export class SchemaTracker {
  private readonly known = new Map<string, Known>();
  private readonly pending = new Map<string, Pending>();
  private readonly options: Map<string, ObserveOptions>;

  constructor(
    private readonly store: Pick<SchemaStore, 'load' | 'save'>,
    config: Pick<TidemarkConfig, 'tables'>,
    private readonly log: Log,
    private readonly now: () => number = Date.now,
  ) {
    const sparse = (format: string) => SPARSE_FORMATS.has(format);
    this.options = new Map(config.tables.map((t) => [t.source, { keyTypes: new Map(t.key.map((c) => [c, t.keyTypes[c] ?? 'string'])), sparse }]));
  }

  /** What the container knows of a table's schema (tests, the CLI's local runs). */
  schemaOf(table: string): SchemaState | undefined {
    return this.known.get(table)?.state;
  }

  /** Observes one batch and records what changed. Never throws. */
  async track(decoded: Pick<Decoded, 'changes' | 'controls'>, tally: BatchTally): Promise<void> {
    try {
      const byTable = new Map<string, ChangeEvent[]>();
      for (const e of decoded.changes) {
        if (!this.options.has(e.table)) continue;
        const list = byTable.get(e.table);
        if (list) list.push(e);
        else byTable.set(e.table, [e]);
      }
      const ddl = ddlOf(decoded);
      for (const table of ddl.keys()) if (this.options.has(table) && !byTable.has(table)) byTable.set(table, []);
      for (const [table, events] of byTable) {
        const p = this.pending.get(table) ?? { runs: [], ddl: [] };
        p.runs.push(...shapeRuns(events, this.options.get(table) as ObserveOptions));
        p.ddl.push(...(ddl.get(table) ?? []));
        if (p.runs.length > MAX_PENDING) p.runs.splice(MAX_PENDING / 2, p.runs.length - MAX_PENDING);
        this.pending.set(table, p);
      }
      await this.loadUnknown([...this.pending.keys()]);
      for (const table of [...this.pending.keys()]) await this.record(table, tally);
    } catch (err) {
      this.log.error('schema drift not recorded; it is retried with the next batch', { error: errorMessage(err) });
    }
  }

  private async loadUnknown(tables: readonly string[]): Promise<void> {
    const unknown = tables.filter((t) => this.known.get(t)?.loaded !== true);
    if (unknown.length === 0) return;
    const recorded: Map<string, RecordedSchema> = await this.store.load(unknown);
    for (const t of unknown) {
      const r = recorded.get(t);
      this.known.set(t, { state: r?.state, version: r?.version ?? 0, loaded: true });
    }
  }

  private async record(table: string, tally: BatchTally): Promise<void> {
    const p = this.pending.get(table);
    const k = this.known.get(table);
    if (!p || !k?.loaded) return;
    const merged = mergeSchema(k.state, p.runs, p.ddl);
    if (!merged.changed) {
      this.pending.delete(table);
      return;
    }
    const saved = await this.store.save(table, merged.state, k.version, this.now()).catch((err: unknown) => {
      this.log.error('schema drift not recorded; it is retried with the next batch', { table, error: errorMessage(err) });
      return null;
    });
    if (saved === null) return;
    if (!saved) {
      // Another container recorded a change first: reload on the next batch and merge again.
      k.loaded = false;
      return;
    }
    this.known.set(table, { state: merged.state, version: k.version + 1, loaded: true });
    this.pending.delete(table);
    tally.count(table, 'schemaChanges', merged.changes.length);
    tally.count(table, 'schemaIncompatible', merged.changes.filter((c) => !c.holds).length);
    for (const c of merged.changes) {
      const extra = { table, column: c.column, change: c.kind, from: c.from, to: c.to, position: c.position, basis: c.basis };
      if (c.holds) this.log.info('schema changed', extra);
      else this.log.warn('schema changed to a type the target cannot hold as before; values are written as delivered', extra);
    }
  }
}
