/**
 * Transactions applied whole (docs/writes.md, "Transactions applied whole"): which source
 * transactions of a batch can become one DynamoDB `TransactWriteItems`, and where each key's fold
 * chain must be cut so that such a transaction gets exactly one write per row it touched. Pure.
 *
 * A transaction of a table group (`transactions.groups` in the config) is **complete** in a batch
 * when the batch holds what its end says it holds:
 * - Debezium: its END marker (`{status: "END", id, event_count, data_collections}`) is in the batch,
 *   and for every collection END lists that is a table of the group, the batch holds that many
 *   distinct events of the transaction (`data_collection_order` 1..n; without `data_collections`,
 *   `event_count` distinct `total_order`s, all in the group's tables);
 * - DMS (`IncludeTransactionDetails`): a later record names it as `prev-transaction-id` with
 *   `prev-transaction-record-id` n, and the batch holds its records 1..n, all in the group's tables.
 * A complete transaction that touches at most `maxItems` rows **fits**; one row is atomic as one
 * write and needs nothing more. For the others (2 to `maxItems` rows), each key's chain is cut at the
 * transaction's last event on it, so the batch plans one write per (transaction, row): events before
 * it on the row (other transactions' or loose ones) fold into it, events after it into the next
 * write. The ingest sends those writes as one TransactWriteItems, in commit order.
 *
 * Every other transaction falls back to per-key apply, with a reason: `incomplete` (END not in the
 * batch, or never seen, or events missing), `too-large` (more rows than `maxItems`), `unordered`
 * (its events on a row interleave with another transaction's, so no commit order holds). Bytes
 * (`maxBytes`) are checked when the writes are built (adapters/transact-writer.ts).
 *
 * Example: a batch [BEGIN 769, c orders/1, c lines/7, END 769 {public.orders: 1, public.lines: 1}]
 * with group `{tables: [public.orders, public.lines]}` gives one unit: cuts at the two events'
 * positions, and the writes of orders/1 and lines/7 in one TransactWriteItems.
 */
import { compareTuples, encodePosition } from './position.js';
import type { ChangeEvent, ControlEvent } from './types.js';

/** Why a transaction was applied per key. `refused`: DynamoDB refused the TransactWriteItems. */
export const TX_FALLBACK_REASONS = ['incomplete', 'too-large', 'unordered', 'refused'] as const;
export type TxFallbackReason = (typeof TX_FALLBACK_REASONS)[number];

/** The part of the pipeline config this module reads (`transactions`). */
export interface TransactionGroups {
  readonly groups: readonly { readonly name: string; readonly tables: readonly string[] }[];
  /** Rows one TransactWriteItems may hold (DynamoDB: 100). */
  readonly maxItems: number;
  /** Bytes one TransactWriteItems may hold (DynamoDB: 4 MB). */
  readonly maxBytes: number;
}

/** Where a transaction's events cut the chain of one key: after the event at `position`. */
export interface TxCut {
  readonly table: string;
  readonly keyId: string;
  /** Encoded position of the transaction's last event on the key. */
  readonly position: string;
}

/** A transaction of 2 to `maxItems` rows, applied as one TransactWriteItems. */
export interface TxUnit {
  readonly group: string;
  readonly txid: string;
  /** One cut per row: the planned write ending there is the unit's write of that row. */
  readonly cuts: readonly TxCut[];
  /** The table its first event in the batch belongs to: its counters are kept there. */
  readonly table: string;
}

export interface TxRef {
  readonly group: string;
  readonly txid: string;
  readonly table: string;
  /** Change events (indexes into the batch's changes) of the transaction. */
  readonly events: number;
}

export interface TxFallback extends TxRef {
  readonly reason: TxFallbackReason;
}

/** The encoded positions after which a key's chain is cut, per table and key id. */
export type CutPoints = (table: string, keyId: string) => ReadonlySet<string> | undefined;

export interface TxPlan {
  /** Transactions of two or more rows, in commit order: one TransactWriteItems each. */
  readonly units: readonly TxUnit[];
  /** Complete one-row transactions: atomic as the row's one write. */
  readonly single: readonly TxRef[];
  readonly fallbacks: readonly TxFallback[];
  readonly cuts: CutPoints;
}

export const EMPTY_TX_PLAN: TxPlan = { units: [], single: [], fallbacks: [], cuts: () => undefined };

/** What one transaction's end says it holds. */
interface TxEnd {
  /** Debezium `event_count`. */
  readonly eventCount: number | null;
  /** Debezium `data_collections`: events per collection. */
  readonly collections: ReadonlyMap<string, number> | null;
  /** DMS: the record id of the transaction's last record. */
  readonly lastOrder: number | null;
}

const count = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : typeof v === 'string' && /^\d{1,15}$/.test(v) ? Number(v) : null);

/** A Debezium END marker's `data_collections` as counts per collection, or null when it lists none. */
function collectionCounts(list: unknown): Map<string, number> | null {
  if (!Array.isArray(list)) return null;
  const out = new Map<string, number>();
  for (const entry of list) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) continue;
    const { data_collection: name, event_count: n } = entry as Record<string, unknown>;
    const c = count(n);
    if (typeof name === 'string' && c !== null) out.set(name, c);
  }
  return out;
}

/** The ends of the transactions the batch shows: Debezium END markers, and DMS previous-transaction references. */
export function transactionEnds(controls: readonly ControlEvent[], changes: readonly ChangeEvent[]): Map<string, TxEnd> {
  const ends = new Map<string, TxEnd>();
  for (const c of controls) {
    if (c.control === 'tx-end' && c.txid !== null) ends.set(c.txid, { eventCount: count(c.detail.eventCount), collections: collectionCounts(c.detail.dataCollections), lastOrder: null });
  }
  for (const e of changes) {
    const previous = e.tx?.previous;
    if (previous && !ends.has(previous.id)) ends.set(previous.id, { eventCount: null, collections: null, lastOrder: previous.lastOrder });
  }
  return ends;
}

/** The configured table a Debezium collection name stands for: `testDB.dbo.orders` → `dbo.orders`. */
function collectionTable(collection: string, tables: readonly string[]): string | undefined {
  return tables.find((t) => collection === t || collection.endsWith(`.${t}`));
}

/** True when `orders` (1-based, possibly repeated by redelivery) are exactly 1..n. */
function coversOneTo(orders: readonly (number | null)[], n: number): boolean {
  if (orders.some((o) => o === null || o < 1 || o > n)) return false;
  return new Set(orders).size === n;
}

interface Member {
  readonly index: number;
  readonly event: ChangeEvent;
  readonly keyId: string;
}

/**
 * Whether `members` are exactly `n` distinct events (redeliveries counted once): by their orders
 * (1..n) when every member has one, else by (table, key, position).
 */
function holdsExactly(members: readonly Member[], orderOf: (e: ChangeEvent) => number | null, n: number): boolean {
  const orders = members.map((m) => orderOf(m.event));
  if (orders.every((o) => o !== null)) return coversOneTo(orders, n);
  return new Set(members.map((m) => `${m.event.table}\u0000${m.keyId}\u0000${encodePosition(m.event.position.tuple)}`)).size === n;
}

/** Whether the batch holds every event of the transaction in the group's tables. */
function isComplete(end: TxEnd | undefined, members: readonly Member[], groupTables: readonly string[]): boolean {
  if (end === undefined) return false;
  if (end.lastOrder !== null) return coversOneTo(members.map((m) => m.event.tx?.order ?? null), end.lastOrder);
  if (end.collections !== null) {
    const byTable = new Map<string, Member[]>();
    for (const m of members) {
      const list = byTable.get(m.event.table);
      if (list) list.push(m);
      else byTable.set(m.event.table, [m]);
    }
    const listed = new Set<string>();
    for (const [collection, n] of end.collections) {
      const table = collectionTable(collection, groupTables);
      if (table === undefined) continue;
      listed.add(table);
      if (!holdsExactly(byTable.get(table) ?? [], (e) => e.tx?.collectionOrder ?? null, n)) return false;
    }
    // An event of a table END does not list: the marker and the events disagree.
    return [...byTable.keys()].every((t) => listed.has(t));
  }
  return end.eventCount !== null && holdsExactly(members, (e) => e.tx?.order ?? null, end.eventCount);
}

const keyOf = (m: Member) => `${m.event.table}\u0000${m.keyId}`;

interface Candidate {
  readonly group: string;
  readonly txid: string;
  readonly members: Member[];
}

/**
 * Plans the transactions of one batch.
 *
 * @param changes the batch's change events, in delivery order
 * @param controls the batch's control events (the Debezium END markers among them)
 * @param keyIdOf the canonical key id of `changes[index]`
 */
export function planTransactions(changes: readonly ChangeEvent[], controls: readonly ControlEvent[], keyIdOf: (index: number) => string, config: TransactionGroups): TxPlan {
  if (config.groups.length === 0) return EMPTY_TX_PLAN;
  const groupOf = new Map<string, { name: string; tables: readonly string[] }>();
  for (const g of config.groups) for (const t of g.tables) groupOf.set(t, g);
  const candidates = new Map<string, Candidate>();
  changes.forEach((event, index) => {
    const group = groupOf.get(event.table);
    if (group === undefined || event.tx === undefined || event.op === 't') return;
    const id = `${group.name}\u0000${event.tx.id}`;
    let c = candidates.get(id);
    if (!c) {
      c = { group: group.name, txid: event.tx.id, members: [] };
      candidates.set(id, c);
    }
    c.members.push({ index, event, keyId: keyIdOf(index) });
  });
  if (candidates.size === 0) return EMPTY_TX_PLAN;

  const ends = transactionEnds(controls, changes);
  const ref = (c: Candidate): TxRef => ({ group: c.group, txid: c.txid, table: (c.members[0] as Member).event.table, events: c.members.length });
  const single: TxRef[] = [];
  const fallbacks: TxFallback[] = [];
  const multi: Candidate[] = [];
  for (const c of candidates.values()) {
    const tables = groupOf.get((c.members[0] as Member).event.table)?.tables ?? [];
    const rows = new Set(c.members.map(keyOf)).size;
    if (!isComplete(ends.get(c.txid), c.members, tables)) fallbacks.push({ ...ref(c), reason: 'incomplete' });
    else if (rows > config.maxItems) fallbacks.push({ ...ref(c), reason: 'too-large' });
    else if (rows === 1) single.push(ref(c));
    else multi.push(c);
  }

  const ordered = orderUnits(multi);
  for (const c of ordered.unordered) fallbacks.push({ ...ref(c), reason: 'unordered' });
  const cutsByKey = new Map<string, Set<string>>();
  const units: TxUnit[] = ordered.units.map((c) => {
    const last = new Map<string, Member>();
    for (const m of c.members) {
      const prev = last.get(keyOf(m));
      if (!prev || compareTuples(m.event.position.tuple, prev.event.position.tuple) > 0) last.set(keyOf(m), m);
    }
    const cuts = [...last.values()].map((m) => ({ table: m.event.table, keyId: m.keyId, position: encodePosition(m.event.position.tuple) }));
    for (const cut of cuts) {
      const k = `${cut.table}\u0000${cut.keyId}`;
      const set = cutsByKey.get(k) ?? new Set<string>();
      set.add(cut.position);
      cutsByKey.set(k, set);
    }
    return { group: c.group, txid: c.txid, cuts, table: (c.members[0] as Member).event.table };
  });
  return { units, single, fallbacks, cuts: (table, keyId) => cutsByKey.get(`${table}\u0000${keyId}`) };
}

/**
 * Puts transactions in commit order (by their lowest position) and sets apart those whose events
 * interleave on a row with another transaction's: on every row, the transactions' events must come
 * one transaction after the other, in that same order. Removing a transaction never makes another
 * row interleave, so one pass suffices.
 */
function orderUnits(candidates: readonly Candidate[]): { units: Candidate[]; unordered: Candidate[] } {
  const lowest = (c: Candidate) => c.members.reduce((lo, m) => (compareTuples(m.event.position.tuple, lo) < 0 ? m.event.position.tuple : lo), (c.members[0] as Member).event.position.tuple);
  const sorted = candidates.map((c) => ({ c, lo: lowest(c), first: (c.members[0] as Member).index })).sort((a, b) => compareTuples(a.lo, b.lo) || a.first - b.first);
  const onRow = new Map<string, { m: Member; rank: number }[]>();
  sorted.forEach((s, rank) => {
    for (const m of s.c.members) {
      const list = onRow.get(keyOf(m));
      if (list) list.push({ m, rank });
      else onRow.set(keyOf(m), [{ m, rank }]);
    }
  });
  const bad = new Set<number>();
  for (const list of onRow.values()) {
    if (!inCommitOrder(list)) for (const x of list) bad.add(x.rank);
  }
  return { units: sorted.filter((_, i) => !bad.has(i)).map((s) => s.c), unordered: sorted.filter((_, i) => bad.has(i)).map((s) => s.c) };
}

/** Whether one row's events, in position order, come one transaction after the other in commit (rank) order. */
function inCommitOrder(list: { m: Member; rank: number }[]): boolean {
  if (new Set(list.map((x) => x.rank)).size < 2) return true;
  list.sort((a, b) => compareTuples(a.m.event.position.tuple, b.m.event.position.tuple));
  let current = -1;
  for (const { rank } of list) {
    if (rank < current) return false;
    current = rank;
  }
  return true;
}
