/**
 * A small shop database and the Debezium PostgreSQL change stream it produces: an initial snapshot,
 * then inserts, updates (some with unchanged-TOAST placeholders), deletes, and finally an
 * at-least-once redelivery of an earlier window. The model's final rows are the expected state.
 */
import { TidemarkError } from '../../functions/core/errors.js';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';

export interface DemoMessage {
  readonly partitionKey: string;
  readonly value: string;
}

const PLACEHOLDER = '__debezium_unavailable_value';
const STATUSES = ['placed', 'paid', 'packed', 'shipped', 'delivered', 'refunded'];

/** A column the workload itself put in `row`; a missing one is a bug in this model, not bad input. */
function field(row: JsonObject, column: string): JsonValue {
  const value = row[column];
  if (value === undefined) throw new TidemarkError(`demo workload row has no "${column}" column`);
  return value;
}

/** Deterministic PRNG (mulberry32, floats in [0, 1)), so every demo and bench run streams the same history. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function demoWorkload(opts: { customers: number; orders: number; changes: number; seed?: number }) {
  const rand = prng(opts.seed ?? 42);
  const pick = <T>(xs: readonly T[]): T => {
    const x = xs[Math.floor(rand() * xs.length)];
    if (x === undefined) throw new TidemarkError('demo workload picked from an empty list');
    return x;
  };
  const customers = new Map<number, JsonObject>();
  const orders = new Map<number, JsonObject>();
  const messages: DemoMessage[] = [];
  let lsn = 33_228_000;
  let lastCommit = 33_227_000;
  let txId = 700;
  let clock = Date.now() - 90_000;

  const emit = (table: 'customers' | 'orders', op: string, key: JsonObject, before: JsonObject | null, after: JsonObject | null, snapshot: string) => {
    // Debezium reads a whole snapshot at one consistent point: every read carries that LSN.
    if (snapshot === 'false' || snapshot === 'first') lsn += 8 + Math.floor(rand() * 64);
    const source = {
      version: '3.4.0.Final',
      connector: 'postgresql',
      name: 'shop',
      ts_ms: clock,
      snapshot,
      db: 'shop',
      sequence: JSON.stringify([snapshot === 'false' ? String(lastCommit) : null, String(lsn)]),
      schema: 'public',
      table,
      txId,
      lsn,
      xmin: null,
    };
    messages.push({ partitionKey: JSON.stringify(key), value: JSON.stringify({ before, after, source, op, ts_ms: clock + 40, transaction: null }) });
  };
  const commit = () => {
    lastCommit = lsn;
    txId++;
    clock += 5 + Math.floor(rand() * 40);
  };
  const bio = () => `Regular customer since ${2010 + Math.floor(rand() * 15)}. ${'Long profile text. '.repeat(20 + Math.floor(rand() * 20))}`;

  for (let id = 1; id <= opts.customers; id++) customers.set(id, { id, name: `Customer ${id}`, email: `c${id}@example.com`, bio: bio() });
  for (let order_id = 1; order_id <= opts.orders; order_id++) {
    orders.set(order_id, { order_id, customer_id: 1 + Math.floor(rand() * opts.customers), status: pick(STATUSES), amount_minor: 500 + Math.floor(rand() * 50_000), currency: 'EUR' });
  }
  // Snapshot phase: every existing row as op r, one snapshot transaction.
  const all = [...[...customers.values()].map((r) => ['customers', r] as const), ...[...orders.values()].map((r) => ['orders', r] as const)];
  all.forEach(([table, row], i) => {
    const key: JsonObject = table === 'customers' ? { id: field(row, 'id') } : { order_id: field(row, 'order_id') };
    emit(table, 'r', key, null, row, i === 0 ? 'first' : i === all.length - 1 ? 'last' : 'true');
  });
  commit();

  let nextOrder = opts.orders + 1;
  for (let i = 0; i < opts.changes; i++) {
    const roll = rand();
    if (roll < 0.45 && orders.size > 0) {
      const row = pick([...orders.values()]);
      const after = { ...row, status: pick(STATUSES) };
      orders.set(row.order_id as number, after);
      emit('orders', 'u', { order_id: field(row, 'order_id') }, null, after, 'false');
    } else if (roll < 0.65) {
      const row = { order_id: nextOrder, customer_id: 1 + Math.floor(rand() * opts.customers), status: 'placed', amount_minor: 500 + Math.floor(rand() * 50_000), currency: 'EUR' };
      orders.set(nextOrder++, row);
      emit('orders', 'c', { order_id: row.order_id }, null, row, 'false');
    } else if (roll < 0.75 && orders.size > 0) {
      const row = pick([...orders.values()]);
      orders.delete(row.order_id as number);
      emit('orders', 'd', { order_id: field(row, 'order_id') }, { order_id: field(row, 'order_id'), customer_id: 0, status: '', amount_minor: 0, currency: '' }, null, 'false');
    } else {
      // A customer update that leaves the TOASTed bio unchanged: Debezium sends the placeholder.
      const row = pick([...customers.values()]);
      const changed = { ...row, email: `c${row.id}+${i}@example.com` };
      customers.set(row.id as number, changed);
      emit('customers', 'u', { id: field(row, 'id') }, null, { ...changed, bio: PLACEHOLDER }, 'false');
    }
    if (rand() < 0.4) commit();
  }
  commit();
  // At-least-once: a window of earlier messages is delivered again.
  const start = Math.floor(messages.length * 0.4);
  const redelivered = messages.slice(start, start + Math.max(1, Math.floor(messages.length * 0.1)));
  messages.push(...redelivered);
  return { messages, expected: { 'public.customers': customers, 'public.orders': orders }, redelivered: redelivered.length };
}
