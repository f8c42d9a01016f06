/**
 * Transactions applied whole, proven on the production path (core/transactions.ts planning,
 * planBatch cutting, ingest/transactions.ts scheduling, the TransactWriter and the DynamoWriter)
 * over a fake DynamoDB that evaluates every guard and takes TransactWriteItems all or nothing:
 *
 * 1. Atomic visibility: for random source transactions delivered in random batches, with
 *    redelivered windows and writes failing at random (each failed batch retried, as the event
 *    source does), every state the target passes through — after every single request, which
 *    includes every snapshot between batches — shows each fitting transaction (complete in every
 *    batch that carries it, at most `maxItems` rows) whole or not at all: either every row it wrote
 *    shows it (or something newer), or none does.
 * 2. Convergence: the same deliveries end in the sequential fold of each key's history, as with
 *    per-key apply (plan.property.test.ts), and every planned event ends as one outcome.
 *
 * The transaction metadata is Debezium's: each data event carries `transaction: {id, total_order,
 * data_collection_order}`, and an END marker `{status: "END", id, event_count, data_collections:
 * [{data_collection, event_count}]}` on the `<prefix>.transaction` topic closes the transaction
 * (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-transaction-metadata;
 * the field names are Debezium's TransactionStructMaker constants, debezium/debezium
 * debezium-core/src/main/java/io/debezium/pipeline/txmetadata/TransactionStructMaker.java).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { planBatch } from '../../../../functions/core/plan.js';
import { encodePosition, sourcePosition } from '../../../../functions/core/position.js';
import { planTransactions } from '../../../../functions/core/transactions.js';
import type { ChangeEvent, ControlEvent, Row } from '../../../../functions/core/types.js';
import { DynamoWriter, type WriteResult } from '../../../../functions/adapters/dynamo-writer.js';
import { decodeItem } from '../../../../functions/adapters/item-codec.js';
import { TransactWriter } from '../../../../functions/adapters/transact-writer.js';
import { applyTransactionUnits } from '../../../../functions/ingest/transactions.js';
import { BatchTally } from '../../../../functions/ingest/tally.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';
import { sequentialFold } from '../../../helpers/fold.js';

const TABLES = ['public.x', 'public.y'] as const;
const MAX_ITEMS = 3;
const config = parseConfig({
  name: 'txprop',
  tables: TABLES.map((source) => ({ source, target: source.replace('.', '-'), key: ['id'], keyTypes: { id: 'number' as const } })),
  raw: { bucket: 'txprop-raw' },
  transactions: { groups: [{ name: 'shop', tables: [...TABLES] }], maxItems: MAX_ITEMS },
});
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const FC_OPTIONS = process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {};

type Step = { kind: 'full'; row: Row } | { kind: 'delete' } | { kind: 'placeholders'; row: Row; placeholders: string[] };
const value = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('p', 'q'));
const row = fc.record({ a: value, b: value }, { requiredKeys: [] });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: row.map((r) => ({ kind: 'full' as const, row: r })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
  { weight: 2, arbitrary: fc.record({ row, placeholders: fc.subarray(['a', 'b'], { minLength: 1 }) }).map((p) => ({ kind: 'placeholders' as const, ...p })) },
);
const change = fc.record({ table: fc.constantFrom(...TABLES), id: fc.integer({ min: 1, max: 4 }), step });

/** A source transaction as generated: its changes, and how it is delivered. */
interface TxSpec {
  changes: { table: string; id: number; step: Step }[];
  /** Never split by a batch boundary, END always delivered. Otherwise batches may cut it and END may never come. */
  whole: boolean;
  endLost: boolean;
}
const txSpec: fc.Arbitrary<TxSpec> = fc.record({ changes: fc.array(change, { minLength: 1, maxLength: 5 }), whole: fc.boolean(), endLost: fc.boolean() });

interface Tx {
  id: string;
  events: ChangeEvent[];
  end: ControlEvent | null;
  whole: boolean;
  /** Per row it wrote: the encoded position of its last event there. */
  last: Map<string, string>;
}

const rowId = (table: string, id: number | string) => `${table}/${id}`;

/** Builds the transactions with PostgreSQL-like positions: [commit LSN before the transaction, LSN]. */
function buildLog(specs: readonly TxSpec[]): Tx[] {
  let lsn = 100n;
  let commit = 1n;
  return specs.map((spec, t) => {
    const id = `tx${t}`;
    const perTable = new Map<string, number>();
    const events = spec.changes.map((c, i): ChangeEvent => {
      lsn += 8n;
      const collectionOrder = (perTable.get(c.table) ?? 0) + 1;
      perTable.set(c.table, collectionOrder);
      const key = { id: c.id };
      const base = {
        kind: 'change' as const,
        format: 'debezium-postgresql',
        table: c.table,
        key,
        before: null,
        patch: null,
        placeholders: [] as string[],
        position: sourcePosition(commit, lsn),
        txid: id,
        commitTs: Number(lsn),
        snapshot: false,
        tx: { id, order: i + 1, collectionOrder },
      };
      if (c.step.kind === 'delete') return { ...base, op: 'd', after: null, before: key };
      const after: Row = { id: c.id, ...c.step.row };
      if (c.step.kind === 'placeholders') {
        for (const p of c.step.placeholders) after[p] = '__debezium_unavailable_value';
        return { ...base, op: 'u', after, placeholders: c.step.placeholders };
      }
      return { ...base, op: 'u', after };
    });
    commit = lsn;
    const end: ControlEvent = {
      kind: 'control',
      format: 'debezium',
      control: 'tx-end',
      table: null,
      position: null,
      txid: id,
      commitTs: null,
      detail: { status: 'END', id, eventCount: events.length, dataCollections: [...perTable].map(([t, n]) => ({ data_collection: t, event_count: n })) },
    };
    const last = new Map<string, string>();
    for (const e of events) last.set(rowId(e.table, String(e.key.id)), encodePosition(e.position.tuple));
    return { id, events, end: spec.whole || !spec.endLost ? end : null, whole: spec.whole, last };
  });
}

type Item = ChangeEvent | ControlEvent;

/**
 * Batches in log order: a whole transaction's events and END stay in one batch, others may be cut
 * anywhere; some windows of whole blocks are delivered again later (a connector restart).
 */
const delivery = (log: readonly Tx[]) =>
  fc
    .record({
      cuts: fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }),
      redeliveries: fc.array(fc.record({ start: fc.nat(), length: fc.integer({ min: 1, max: 3 }), at: fc.nat() }), { maxLength: 2 }),
    })
    .map(({ cuts, redeliveries }) => {
      const blocks: Item[][] = [];
      for (const tx of log) {
        const items: Item[] = [...tx.events, ...(tx.end ? [tx.end] : [])];
        if (tx.whole) blocks.push(items);
        else for (const item of items) blocks.push([item]);
      }
      for (const r of redeliveries) {
        const start = r.start % blocks.length;
        const window = blocks.slice(start, start + r.length).map((b) => [...b]);
        const at = start + window.length + (r.at % (blocks.length - start - window.length + 1));
        blocks.splice(at, 0, ...window);
      }
      const batches: Item[][] = [[]];
      blocks.forEach((block, i) => {
        (batches[batches.length - 1] as Item[]).push(...block);
        if (cuts[i % cuts.length]) batches.push([]);
      });
      return batches.filter((b) => b.length > 0);
    });

const keyIdOf = (e: ChangeEvent) => JSON.stringify(e.key.id);

interface Harness {
  fake: FakeDynamoDB;
  /** Applies a batch once; returns whether every write settled (false: the batch is retried). */
  apply(batch: readonly Item[]): Promise<boolean>;
  positionOf(rid: string): string | undefined;
}

interface Hooks {
  /**
   * Fails a write request. Reads are never failed, nor the per-key writer's `__missing` follow-up
   * of a patch (`#pos = :pos`): a failure there after its patch applied is not repaired by the
   * retry (the retry finds the same position and counts a duplicate), a per-key writer limit that
   * transactions do not change, reported apart.
   */
  fail?: (name: string) => boolean;
  afterWrite?: () => void;
}

/** Fails write requests as `rolls` say, while `on`. */
const rolled = (faults: { on: boolean; rolls: readonly boolean[] }): Hooks['fail'] => {
  let roll = 0;
  return () => faults.on && faults.rolls[roll++ % faults.rolls.length] === true;
};

/**
 * The ingest's apply path for one batch, over the fake: plan transactions, plan with cuts, units
 * first, then the per-key writes.
 */
function harness(transactional: boolean, hooks: Hooks): Harness {
  const fake = new FakeDynamoDB(config.tables, {
    fault: (name, input) => {
      if (name === 'GetItem' || name === 'BatchGetItem' || (input as { ConditionExpression?: string }).ConditionExpression === '#pos = :pos') return undefined;
      return hooks.fail?.(name) ? new Error(`injected ${name} failure`) : undefined;
    },
    afterWrite: () => hooks.afterWrite?.(),
  });
  const writer = new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000, now: () => 1_700_000_000_000 });
  const txWriter = new TransactWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000, maxBytes: config.transactions.maxBytes, perKey: writer, now: () => 1_700_000_000_000, sleep: async () => {} });
  return {
    fake,
    async apply(batch) {
      const changes = batch.filter((e): e is ChangeEvent => e.kind === 'change');
      const controls = batch.filter((e): e is ControlEvent => e.kind === 'control');
      const txPlan = planTransactions(changes, controls, (i) => keyIdOf(changes[i] as ChangeEvent), transactional ? config.transactions : { ...config.transactions, groups: [] });
      const plan = planBatch(changes, keyIdOf, undefined, txPlan.cuts);
      const tally = new BatchTally([]);
      const settled = await applyTransactionUnits(plan, txPlan, new Map(), { config, txWriter, concurrency: 4, log: silent }, tally);
      const rest = plan.writes.flatMap((w, i) => (settled.results.has(i) ? [] : [{ w, i }]));
      const out = await writer.writeAll(rest.map((r) => r.w), { preRead: 'auto', concurrency: 4 });
      const results: WriteResult[] = plan.writes.map((_, i) => settled.results.get(i) as WriteResult);
      rest.forEach((r, j) => {
        results[r.i] = out.results[j] as WriteResult;
      });
      // The accounting identity at this level: every planned event ends as exactly one outcome.
      let accounted = results.length;
      for (const c of plan.counts.values()) accounted += c.superseded + c.duplicates + c.conflicts;
      assert.equal(accounted, changes.length, 'every event is superseded, a duplicate, a conflict, or the one outcome of its write');
      return results.every((r) => r.outcome !== 'failed');
    },
    positionOf(rid) {
      const [table = '', id = ''] = rid.split('/');
      const t = config.tables.find((c) => c.source === table);
      const item = t ? fake.get(t.target, { id: { N: id } }) : undefined;
      return t && item ? decodeItem(t, item).position : undefined;
    },
  };
}

/** The fitting transactions of a log: delivered whole, at most MAX_ITEMS rows, two or more rows. */
const fitting = (log: readonly Tx[]) => log.filter((tx) => tx.whole && tx.last.size >= 2 && tx.last.size <= MAX_ITEMS);

/** Transactions shown partly by the target's current state: some rows show them, others do not. */
function torn(h: Harness, txs: readonly Tx[]): string[] {
  return txs.flatMap((tx) => {
    const seen = [...tx.last].map(([rid, pos]) => (h.positionOf(rid) ?? '') >= pos);
    return seen.some(Boolean) && !seen.every(Boolean) ? [tx.id] : [];
  });
}

async function deliver(h: Harness, batches: readonly Item[][], faults: { on: boolean }): Promise<void> {
  for (const batch of batches) {
    let attempts = 0;
    while (!(await h.apply(batch))) {
      // The event source retries a failed batch; faults stop after a few attempts so it ends.
      if (++attempts >= 2) faults.on = false;
    }
    faults.on = true;
  }
}

describe('transactions applied whole (property)', () => {
  it('every state between requests shows each fitting transaction whole or not at all, with redelivery and failing writes', async () => {
    const exercised = { transactions: 0, checked: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(txSpec, { minLength: 1, maxLength: 8 }).chain((specs) => {
          const log = buildLog(specs);
          return fc.tuple(fc.constant(log), delivery(log), fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }));
        }),
        async ([log, batches, rolls]) => {
          const faults = { on: true, rolls: rolls.map((r, i) => r && i % 3 === 0) };
          const checked = fitting(log);
          const tornSeen: string[] = [];
          const hooks: Hooks = { fail: rolled(faults) };
          const h = harness(true, hooks);
          hooks.afterWrite = () => tornSeen.push(...torn(h, checked));
          await deliver(h, batches, faults);
          assert.deepEqual(tornSeen, [], 'no state shows a fitting transaction in part');
          exercised.transactions += h.fake.count('TransactWriteItems');
          exercised.checked += checked.length;
        },
      ),
      { numRuns: 300, includeErrorInReport: true, ...FC_OPTIONS },
    );
    assert.ok(exercised.transactions > 100 && exercised.checked > 100, `the runs sent transactions and checked fitting ones: ${JSON.stringify(exercised)}`);
  });

  for (const transactional of [true, false]) {
  it(`converges to the sequential fold of each key, and every planned event ends as one outcome (${transactional ? 'transactional' : 'per-key'} apply)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(txSpec, { minLength: 1, maxLength: 8 }).chain((specs) => {
          const log = buildLog(specs);
          return fc.tuple(fc.constant(log), delivery(log), fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }));
        }),
        async ([log, batches, rolls]) => {
          const faults = { on: true, rolls: rolls.map((r, i) => r && i % 3 === 0) };
          const h = harness(transactional, { fail: rolled(faults) });
          await deliver(h, batches, faults);
          if (!transactional) assert.equal(h.fake.count('TransactWriteItems'), 0, 'per-key apply sends no transaction');
          const perKey = new Map<string, ChangeEvent[]>();
          for (const tx of log) for (const e of tx.events) perKey.set(rowId(e.table, String(e.key.id)), [...(perKey.get(rowId(e.table, String(e.key.id))) ?? []), e]);
          for (const [rid, events] of perKey) {
            const expected = sequentialFold(events);
            const [table = '', id = ''] = rid.split('/');
            const t = config.tables.find((c) => c.source === table);
            const item = t ? h.fake.get(t.target, { id: { N: id } }) : undefined;
            assert.ok(expected && t && item, `${rid} has a stored item`);
            const stored = decodeItem(t, item);
            assert.equal(stored.position, encodePosition(expected.position), `${rid}: the highest position is stored`);
            assert.equal(stored.deleted, expected.deleted, `${rid}: deleted`);
            if (!expected.deleted) {
              const { id: _id, ...rest } = stored.row;
              assert.deepEqual(rest, Object.fromEntries(Object.entries(expected.row).filter(([k]) => k !== 'id')), `${rid}: row`);
              assert.deepEqual(stored.missing, expected.missing, `${rid}: missing columns`);
            }
          }
        },
      ),
      { numRuns: 150, includeErrorInReport: true, ...FC_OPTIONS },
    );
  });
  }

  it('has teeth: per-key apply with a failing write shows a transaction in part, transactional apply does not', async () => {
    const [tx] = buildLog([{ changes: [{ table: 'public.x', id: 1, step: { kind: 'full', row: { a: 1 } } }, { table: 'public.y', id: 2, step: { kind: 'full', row: { a: 2 } } }], whole: true, endLost: false }]);
    assert.ok(tx?.end);
    const batch: Item[] = [...tx.events, tx.end];
    for (const transactional of [false, true]) {
      let writes = 0;
      const states: string[][] = [];
      // The second write request fails once; the batch is retried.
      const hooks: Hooks = { fail: () => ++writes === 2 };
      const h = harness(transactional, hooks);
      hooks.afterWrite = () => states.push(torn(h, [tx]));
      while (!(await h.apply(batch))) {}
      const partial = states.some((s) => s.length > 0);
      assert.equal(partial, !transactional, transactional ? 'transactional apply never shows half' : 'per-key apply shows half before the retry');
      assert.deepEqual(torn(h, [tx]), [], 'both end whole');
    }
  });
});
