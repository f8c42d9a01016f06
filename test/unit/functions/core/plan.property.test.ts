/**
 * The invariant everything else rests on: any delivery of a history — any duplication (redelivered
 * windows), any interleaving across keys, any split into batches, any retried batch — planned with
 * planBatch and applied through the position guard converges to the state a plain sequential fold
 * of each key's history by position gives.
 *
 * It is proven twice: on the in-memory store, and on the production DynamoDB writer itself
 * (DynamoWriter, with and without its pre-read) through a fake DynamoDB client that evaluates the
 * guard and returns ALL_OLD on a failed condition as DynamoDB does. Both decide with
 * resolveAgainstStored (core/stored.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { cloneJson, type JsonValue } from '../../../../functions/core/json.js';
import { parseConfig } from '../../../../lib/config/config.js';
import { MemoryStore } from '../../../../functions/core/memory-store.js';
import { type PlannedWrite, planBatch } from '../../../../functions/core/plan.js';
import { encodePosition, sourcePosition } from '../../../../functions/core/position.js';
import type { ChangeEvent, Row } from '../../../../functions/core/types.js';
import { DynamoWriter, type PreReadPolicy } from '../../../../functions/adapters/dynamo-writer.js';
import { decodeItem } from '../../../../functions/adapters/item-codec.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';
import { sequentialFold } from '../../../helpers/fold.js';

const COLUMNS = ['a', 'b', 'c'] as const;
const TABLES = ['public.x', 'public.y'] as const;

type Step =
  | { kind: 'full'; op: 'c' | 'u' | 'r'; row: Row }
  | { kind: 'delete' }
  | { kind: 'placeholders'; row: Row; placeholders: string[] }
  | { kind: 'patch'; set: Row; unset: string[] };

const value = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('p', 'q'), fc.constant(null));
const fullRow = fc.record({ a: value, b: value, c: value }, { requiredKeys: [] });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('full' as const), op: fc.constantFrom('c' as const, 'u' as const, 'r' as const), row: fullRow }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'delete' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({ row: fullRow, placeholders: fc.subarray([...COLUMNS], { minLength: 1 }) }).map(({ row, placeholders }) => ({
      kind: 'placeholders' as const,
      row,
      placeholders,
    })),
  },
  {
    weight: 2,
    arbitrary: fc.record({ set: fullRow, unset: fc.subarray([...COLUMNS]) }).map(({ set, unset }) => ({
      kind: 'patch' as const,
      set,
      unset: unset.filter((c) => !(c in set)),
    })),
  },
);

interface KeyHistory {
  table: string;
  id: number;
  steps: Step[];
}

/** Turns a key's steps into events with strictly increasing positions. */
function toEvents(h: KeyHistory, gaps: number[]): ChangeEvent[] {
  let p = 0n;
  return h.steps.map((s, i) => {
    p += BigInt(gaps[i % gaps.length]! + 1);
    const key = { id: h.id };
    const base = {
      kind: 'change' as const,
      format: 'test',
      table: h.table,
      key,
      before: null,
      patch: null,
      placeholders: [] as string[],
      position: sourcePosition(p / 7n, p),
      txid: null,
      commitTs: Number(p),
      snapshot: false,
    };
    switch (s.kind) {
      case 'full':
        return { ...base, op: s.op, after: { id: h.id, ...s.row }, snapshot: s.op === 'r' };
      case 'delete':
        return { ...base, op: 'd', after: null, before: key };
      case 'placeholders': {
        const after: Row = { id: h.id, ...s.row };
        for (const c of s.placeholders) after[c] = '__debezium_unavailable_value';
        return { ...base, op: 'u', after, placeholders: s.placeholders };
      }
      default:
        return { ...base, op: 'u', after: null, patch: { set: s.set, unset: s.unset } };
    }
  });
}

const keyIdOf = (e: ChangeEvent) => JSON.stringify(e.key.id);

const histories = fc
  .uniqueArray(fc.record({ table: fc.constantFrom(...TABLES), id: fc.integer({ min: 1, max: 6 }) }), {
    selector: (k) => `${k.table}/${k.id}`,
    minLength: 1,
    maxLength: 6,
  })
  .chain((keys) =>
    fc.tuple(
      ...keys.map((k) => fc.array(step, { minLength: 1, maxLength: 8 }).map((steps): KeyHistory => ({ ...k, steps }))),
    ),
  );

/** A delivery: per-key order kept, keys interleaved, earlier windows redelivered, batches split, some retried. */
const delivery = (histories: KeyHistory[]) =>
  fc
    .record({
      gaps: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 5 }),
      picks: fc.array(fc.nat(), { minLength: 200, maxLength: 200 }),
      redeliveries: fc.array(fc.record({ start: fc.nat(), length: fc.integer({ min: 1, max: 6 }), at: fc.nat() }), { maxLength: 4 }),
      cuts: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 10 }),
      retries: fc.array(fc.boolean(), { minLength: 1, maxLength: 10 }),
    })
    .map(({ gaps, picks, redeliveries, cuts, retries }) => {
      const perKey = histories.map((h) => toEvents(h, gaps));
      const queues = perKey.map((evs) => [...evs]);
      const stream: ChangeEvent[] = [];
      let pi = 0;
      while (queues.some((q) => q.length > 0)) {
        const live = queues.filter((q) => q.length > 0);
        stream.push(live[picks[pi++ % picks.length]! % live.length]!.shift()!);
      }
      for (const r of redeliveries) {
        const start = r.start % stream.length;
        const window = stream.slice(start, start + r.length);
        const at = start + window.length + (r.at % (stream.length - start - window.length + 1));
        stream.splice(at, 0, ...window);
      }
      const batches: ChangeEvent[][] = [];
      for (let i = 0, c = 0; i < stream.length; c++) {
        const size = cuts[c % cuts.length]!;
        batches.push(stream.slice(i, i + size));
        i += size;
      }
      return { perKey, batches, retries };
    });

/** What the convergence check needs of a store: apply one batch's writes, read a key back. */
interface Target {
  /** Applies the writes; returns their outcomes and the write units they cost. */
  apply(writes: readonly PlannedWrite[], policy: PreReadPolicy): Promise<{ outcomes: string[]; writeUnits: number }>;
  get(table: string, id: number): { row: Row; deleted: boolean; missing: readonly string[]; position: string } | undefined;
}

function memoryTarget(): Target {
  const store = new MemoryStore();
  return {
    apply: async (writes) => ({ outcomes: writes.map((w) => store.apply(w)), writeUnits: 0 }),
    get: (table, id) => store.get(table, JSON.stringify(id)),
  };
}

const tableConfigs = parseConfig({
  name: 'prop',
  tables: TABLES.map((source) => ({ source, target: source.replace('.', '-'), key: ['id'], keyTypes: { id: 'number' as const } })),
  raw: { bucket: 'prop-raw' },
}).tables;

/**
 * The DynamoDB writer on the fake. With `spillAbove`, rows whose item exceeds that many bytes are
 * spilled to an in-memory store (and read back from it), so patches on spilled rows go through the
 * read-merge-put; a stored stub is compared by its spilled copy.
 */
function dynamoTarget(spillAbove?: number): Target {
  const fake = new FakeDynamoDB(tableConfigs);
  const spilled = new Map<string, Row>();
  const spill = async (w: PlannedWrite) => {
    const pointer = `s3://spill/${spilled.size}`;
    spilled.set(pointer, w.effect.kind === 'put' ? { ...w.effect.row } : {});
    return pointer;
  };
  const readSpill = async (pointer: string) => {
    const row = spilled.get(pointer);
    if (!row) throw new Error(`no spilled row at ${pointer}`);
    return row;
  };
  const writer = new DynamoWriter({
    client: fake.client,
    tables: tableConfigs,
    maxItemBytes: spillAbove ?? 350_000,
    now: () => 1_700_000_000_000,
    ...(spillAbove === undefined ? {} : { spill, readSpill }),
  });
  return {
    apply: async (writes, policy) => {
      const { results, totals } = await writer.writeAll(writes, { preRead: policy, concurrency: 4 });
      for (const r of results) assert.ok(r.outcome !== 'failed', `write failed: ${r.error?.message}`);
      return { outcomes: results.map((r) => r.outcome), writeUnits: totals.writeUnits };
    },
    get: (table, id) => {
      const config = tableConfigs.find((t) => t.source === table);
      const item = config ? fake.get(config.target, { id: { N: String(id) } }) : undefined;
      if (!config || !item) return undefined;
      const d = decodeItem(config, item);
      const full = d.spill === null ? d.row : { ...spilled.get(d.spill), ...d.row };
      // The key column is the item's key attribute: present even on rows started by a patch.
      const { id: _id, ...row } = full;
      return { row, deleted: d.deleted, missing: d.missing, position: d.position };
    },
  };
}

const withoutId = ({ id: _id, ...row }: Row): Row => row;

const FC_OPTIONS = process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {};

async function checkConvergence(
  target: Target,
  { perKey, batches, retries }: { perKey: ChangeEvent[][]; batches: ChangeEvent[][]; retries: boolean[] },
  policies: readonly PreReadPolicy[],
  dropKeyColumn: boolean,
): Promise<void> {
  for (const [i, batch] of batches.entries()) {
    const policy = policies[i % policies.length] ?? 'never';
    await target.apply(planBatch(batch, keyIdOf).writes, policy);
    // A retried batch (the runtime failed after applying) must be a no-op.
    if (retries[i % retries.length]) {
      const again = await target.apply(planBatch(batch, keyIdOf).writes, policy);
      for (const outcome of again.outcomes) assert.notEqual(outcome, 'applied');
      if (policy === 'always') assert.equal(again.writeUnits, 0, 'a retried batch read first costs no write');
    }
  }
  for (const events of perKey) {
    const first = events[0];
    assert.ok(first);
    const expected = sequentialFold(events);
    const stored = target.get(first.table, Number(first.key.id));
    assert.ok(expected && stored, 'every key that had events has a stored item');
    assert.equal(stored.deleted, expected.deleted, 'deleted flag');
    if (!expected.deleted) assert.deepEqual(stored.row, dropKeyColumn ? withoutId(expected.row) : expected.row, 'row');
    assert.deepEqual([...stored.missing], expected.missing, 'missing columns');
    assert.equal(stored.position, encodePosition(expected.position), 'stored position is the highest');
  }
}

const policy = fc.constantFrom<PreReadPolicy>('never', 'always', 'auto');

describe('planBatch + guarded apply', () => {
  it('converges to the sequential fold of each key for any duplication, interleaving, batch split and retry', async () => {
    await fc.assert(
      fc.asyncProperty(
        histories.chain((hs) => delivery(hs)),
        (d) => checkConvergence(memoryTarget(), d, ['never'], false),
      ),
      { numRuns: 400, includeErrorInReport: true, ...FC_OPTIONS },
    );
  });

  it('converges the same way through the DynamoDB writer (fake client evaluating the guard), with any pre-read policy', async () => {
    await fc.assert(
      fc.asyncProperty(
        histories.chain((hs) => delivery(hs)),
        fc.array(policy, { minLength: 1, maxLength: 4 }),
        (d, policies) => checkConvergence(dynamoTarget(), d, policies, true),
      ),
      { numRuns: 250, includeErrorInReport: true, ...FC_OPTIONS },
    );
  });

  it('converges through the DynamoDB writer when rows are spilled and patches merge with the spilled copy', async () => {
    await fc.assert(
      fc.asyncProperty(
        histories.chain((hs) => delivery(hs)),
        fc.array(policy, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 180, max: 300 }),
        (d, policies, spillAbove) => checkConvergence(dynamoTarget(spillAbove), d, policies, true),
      ),
      { numRuns: 150, includeErrorInReport: true, ...FC_OPTIONS },
    );
  });

  it('never mutates its input events', () => {
    fc.assert(
      fc.property(
        histories.chain((hs) => delivery(hs)),
        ({ batches }) => {
          for (const batch of batches) {
            const snapshot = batch.map((e) => JSON.stringify(cloneJson(e as unknown as JsonValue), (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)));
            const plan = planBatch(batch, keyIdOf);
            const first = plan.writes[0];
            if (first) new MemoryStore().apply(first);
            batch.forEach((e, i) => {
              assert.equal(JSON.stringify(e, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)), snapshot[i]);
            });
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
