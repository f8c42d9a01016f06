/**
 * Builders for Debezium PostgreSQL bare-payload change messages (no `{schema, payload}` wrapping),
 * with a monotonic LSN history so tests know each event's position and can fold the expected state.
 */
import type { JsonObject } from '../../functions/core/json.js';
import { encodePosition } from '../../functions/core/position.js';

export const PLACEHOLDER = '__debezium_unavailable_value';

export type PgOp = 'c' | 'u' | 'd' | 'r';

export interface PgChangeInput {
  /** Table name without schema, e.g. `customers`. */
  readonly table: string;
  readonly op: PgOp;
  readonly before?: JsonObject | null;
  readonly after?: JsonObject | null;
  readonly lsn: number;
  /** Commit LSN of the previously committed transaction (`source.sequence[0]`). */
  readonly lastCommitLsn: number;
  readonly txId?: number;
  readonly tsMs?: number;
  readonly schema?: string;
}

/** The bare Debezium PostgreSQL envelope `{before, after, source, op}`. */
export function pgMessage(c: PgChangeInput): JsonObject {
  const tsMs = c.tsMs ?? 1_735_732_800_000;
  return {
    before: c.before ?? null,
    after: c.after ?? null,
    source: {
      version: '3.4.0.Final',
      connector: 'postgresql',
      name: 'shop',
      ts_ms: tsMs,
      snapshot: 'false',
      db: 'shop',
      sequence: JSON.stringify([String(c.lastCommitLsn), String(c.lsn)]),
      schema: c.schema ?? 'public',
      table: c.table,
      txId: c.txId ?? 700,
      lsn: c.lsn,
    },
    op: c.op,
  };
}

/** The encoded `__pos` tidemark stores for a PostgreSQL event with a `source.sequence`. */
export const pgPosition = (lastCommitLsn: number, lsn: number): string => encodePosition([BigInt(lastCommitLsn), BigInt(lsn)]);

/** One change as produced by {@link PgHistory}: the message, its text, partition key and position. */
export interface PgEvent {
  /** Index in commit order (0-based). */
  readonly index: number;
  readonly table: string;
  readonly op: PgOp;
  readonly key: JsonObject;
  readonly after: JsonObject | null;
  readonly message: JsonObject;
  /** The message as delivered (JSON text). */
  readonly value: string;
  /** Kinesis partition key: the JSON key. */
  readonly partitionKey: string;
  /** Encoded position, as stored in `__pos`. */
  readonly position: string;
}

/** A source history in commit order, each change its own transaction (LSNs strictly increasing). */
export class PgHistory {
  readonly events: PgEvent[] = [];
  private lsn: number;
  private lastCommit: number;
  private txId = 700;

  constructor(startLsn = 33_228_000) {
    this.lsn = startLsn;
    this.lastCommit = startLsn - 1000;
  }

  /** Emits one change; `key` is the primary key (also the partition key). */
  emit(table: string, op: PgOp, key: JsonObject, row: JsonObject | null): PgEvent {
    this.lsn += 8;
    const before = op === 'd' ? { ...key, ...(row ?? {}) } : null;
    const after = op === 'd' ? null : { ...key, ...(row ?? {}) };
    const message = pgMessage({ table, op, before, after, lsn: this.lsn, lastCommitLsn: this.lastCommit, txId: this.txId });
    const event: PgEvent = {
      index: this.events.length,
      table: `public.${table}`,
      op,
      key,
      after,
      message,
      value: JSON.stringify(message),
      partitionKey: JSON.stringify(key),
      position: pgPosition(this.lastCommit, this.lsn),
    };
    this.events.push(event);
    // Commit: the next change belongs to a new transaction.
    this.lastCommit = this.lsn;
    this.txId++;
    return event;
  }

  /**
   * The expected final rows per source table, folding every event by position (highest wins;
   * deletes remove the row). Keys are the partition-key JSON text.
   */
  fold(): Map<string, Map<string, { row: JsonObject | null; position: string }>> {
    const out = new Map<string, Map<string, { row: JsonObject | null; position: string }>>();
    for (const e of this.events) {
      const rows = out.get(e.table) ?? new Map<string, { row: JsonObject | null; position: string }>();
      out.set(e.table, rows);
      const prev = rows.get(e.partitionKey);
      if (prev && prev.position > e.position) continue;
      rows.set(e.partitionKey, { row: e.after, position: e.position });
    }
    return out;
  }
}
