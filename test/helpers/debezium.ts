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

/** One change of a {@link pgTransaction}. */
export interface PgTxChange {
  readonly table: string;
  readonly op: PgOp;
  readonly key: JsonObject;
  readonly row?: JsonObject | null;
}

/**
 * A source transaction as Debezium PostgreSQL writes it with `provide.transaction.metadata=true`
 * (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-transaction-metadata):
 * a BEGIN marker `{status: "BEGIN", id: "<txId>:<lsn>", event_count: null, data_collections: null}`,
 * the data events, each with `transaction: {id, total_order, data_collection_order}`, and an END
 * marker with `event_count` and `data_collections: [{data_collection, event_count}]`. Positions are
 * `[lastCommitLsn, lsn]` with LSNs from `firstLsn` on, 8 apart; the END's LSN is the commit LSN.
 */
export function pgTransaction(txId: number, lastCommitLsn: number, firstLsn: number, changes: readonly PgTxChange[]): { begin: JsonObject; events: JsonObject[]; end: JsonObject; commitLsn: number; positions: string[] } {
  const perTable = new Map<string, number>();
  let lsn = firstLsn;
  const positions: string[] = [];
  const events = changes.map((c, i) => {
    const collection = `public.${c.table}`;
    const order = (perTable.get(collection) ?? 0) + 1;
    perTable.set(collection, order);
    const row = c.op === 'd' ? null : { ...c.key, ...(c.row ?? {}) };
    const message = pgMessage({ table: c.table, op: c.op, before: c.op === 'd' ? { ...c.key } : null, after: row, lsn, lastCommitLsn, txId });
    positions.push(pgPosition(lastCommitLsn, lsn));
    lsn += 8;
    return { ...message, transaction: { id: `${txId}:${lsn - 8}`, total_order: i + 1, data_collection_order: order } };
  });
  const marker = (status: 'BEGIN' | 'END') => ({
    status,
    id: `${txId}:${status === 'BEGIN' ? firstLsn : lsn}`,
    event_count: status === 'END' ? changes.length : null,
    data_collections: status === 'END' ? [...perTable].map(([data_collection, event_count]) => ({ data_collection, event_count })) : null,
    ts_ms: 1_735_732_800_000,
  });
  return { begin: marker('BEGIN'), events, end: marker('END'), commitLsn: lsn, positions };
}
