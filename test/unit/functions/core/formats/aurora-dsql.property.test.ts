/**
 * Aurora DSQL delivers at least once and UNORDERED, on a randomized partition key, so one key's
 * changes spread over every shard ("Change data capture streams", "Ordering and delivery
 * semantics", https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-streams.html). The
 * property: any history of transactions (one record per row each, as write-set compaction
 * guarantees; updates as GA "u" or preview "c"), delivered over several shards in any order, with
 * duplicates, in batches drawn from the shards in any interleaving, converges through the
 * Normalizer, planBatch and the guarded store to the last version of each key in commit order.
 * Records have the shape of the docs' "Record payload" examples (test/fixtures/aurora-dsql/).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { txIdRank } from '../../../../../functions/core/formats/aurora-dsql.js';
import { type JsonObject, LosslessNumber } from '../../../../../functions/core/json.js';
import type { RawRecord } from '../../../../../functions/core/normalize.js';
import { encodePosition } from '../../../../../functions/core/position.js';
import { applyBatches, kinesisRecord, normalizerFor } from './normalizer-kit.js';

const n = normalizerFor([{ source: 'public.order_items', key: ['order_id', 'item_id'], keyTypes: { order_id: 'number', item_id: 'number' } }]);
const BASE_NS = 1_705_318_200_000_000_000n;
const SHARDS = 4;

interface Txn {
  readonly gap: number;
  readonly txId: string;
  readonly writes: readonly { readonly key: number; readonly del: boolean; readonly quantity: number }[];
}

const base32 = fc.string({ minLength: 26, maxLength: 26, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz234567') });
const txn: fc.Arbitrary<Txn> = fc.record({
  gap: fc.integer({ min: 0, max: 3 }),
  txId: base32,
  writes: fc.uniqueArray(fc.record({ key: fc.integer({ min: 0, max: 4 }), del: fc.boolean(), quantity: fc.integer({ min: 0, max: 99 }) }), { selector: (w) => w.key, minLength: 1, maxLength: 3 }),
});

interface Expected {
  readonly row: JsonObject | null;
  readonly position: string;
}

/** The records of a history in commit order, and the last version of each key. */
function recordsOf(txns: readonly Txn[], preview: boolean): { records: JsonObject[]; expected: Map<string, Expected> } {
  const records: JsonObject[] = [];
  const live = new Set<number>();
  const expected = new Map<string, Expected>();
  const lastTs = new Map<number, bigint>();
  let ts = BASE_NS;
  for (const t of txns) {
    // Two transactions may commit in one nanosecond only if they write different rows: the docs'
    // total order of transactions by ts_ns holds for the transactions of one key.
    ts += BigInt(t.gap);
    for (const w of t.writes) if ((lastTs.get(w.key) ?? -1n) >= ts) ts = (lastTs.get(w.key) ?? ts) + 1n;
    for (const w of t.writes) lastTs.set(w.key, ts);
    for (const w of t.writes) {
      const key = { order_id: 1000 + w.key, item_id: 40 + w.key };
      // Write-set compaction: deleting a row that does not exist is no net change, and no record.
      if (w.del && !live.has(w.key)) continue;
      const op = w.del ? 'd' : live.has(w.key) ? (preview ? 'c' : 'u') : 'c';
      const after = w.del ? null : { ...key, quantity: w.quantity, price: '29.99' };
      if (w.del) live.delete(w.key);
      else live.add(w.key);
      const source = { version: '1.0', ts_ms: Number(ts / 1_000_000n), ts_ns: new LosslessNumber(String(ts)), txId: t.txId, schema: 'public', table: 'order_items', db: 'postgres', cluster: 'kmabugltfmjdaj2siqr2qbxgju' };
      records.push({ type: 'full', op, before: w.del ? key : null, after, source, ts_ms: Number(ts / 1_000_000n) + 125, ts_ns: new LosslessNumber(String(ts + 125_483_291n)) });
      expected.set(JSON.stringify([String(key.order_id), String(key.item_id)]), { row: after, position: encodePosition([ts, txIdRank(t.txId)]) });
    }
  }
  return { records, expected };
}

/** How the records are delivered: extra copies, the shard of each copy, its place in the shard, and the batches drawn. */
interface Delivery {
  readonly copies: readonly number[];
  readonly shardOf: readonly number[];
  readonly shuffle: readonly number[];
  readonly draws: readonly { readonly shard: number; readonly size: number }[];
}

/** Every record at least once (some twice), each copy on a random shard, each shard in random order, batches drawn from random shards. */
const delivery = (count: number): fc.Arbitrary<Delivery> =>
  fc.record({
    copies: fc.array(fc.nat({ max: Math.max(count - 1, 0) }), { maxLength: count }),
    shardOf: fc.array(fc.nat({ max: SHARDS - 1 }), { minLength: 2 * count + 1, maxLength: 2 * count + 1 }),
    shuffle: fc.array(fc.nat(), { minLength: 2 * count + 1, maxLength: 2 * count + 1 }),
    draws: fc.array(fc.record({ shard: fc.nat({ max: SHARDS - 1 }), size: fc.integer({ min: 1, max: 5 }) }), { minLength: 1, maxLength: 20 }),
  });

function deliver(records: readonly JsonObject[], d: Delivery): RawRecord[][] {
  const copies = [...records.map((_, i) => i), ...d.copies.filter((i) => i < records.length)];
  const shards: number[][] = Array.from({ length: SHARDS }, () => []);
  copies.forEach((index, c) => {
    const queue = shards[d.shardOf[c] ?? 0] ?? [];
    queue.splice((d.shuffle[c] ?? 0) % (queue.length + 1), 0, index);
  });
  const sequences = new Array<number>(SHARDS).fill(0);
  const take = (shard: number, size: number): RawRecord[] =>
    (shards[shard] ?? []).splice(0, size).map((i) => kinesisRecord(records[i] ?? {}, `shardId-00000000000${shard}`, String(4959033827149025660855969253n + BigInt(++(sequences[shard] as number)))));
  const batches: RawRecord[][] = [];
  for (let i = 0; shards.some((q) => q.length > 0); i++) {
    const draw = d.draws[i % d.draws.length] ?? { shard: 0, size: 1 };
    const shard = shards[draw.shard]?.length ? draw.shard : shards.findIndex((q) => q.length > 0);
    batches.push(take(shard, draw.size));
  }
  return batches;
}

describe('Aurora DSQL: a history over several shards, unordered and duplicated, converges', () => {
  it('ends at the last version of each key in commit order, in GA and preview op codes', () => {
    const history = fc.record({ txns: fc.array(txn, { minLength: 1, maxLength: 12 }), preview: fc.boolean() }).chain(({ txns, preview }) => {
      const { records, expected } = recordsOf(txns, preview);
      return fc.record({ records: fc.constant(records), expected: fc.constant(expected), d: delivery(records.length) });
    });
    fc.assert(
      fc.property(history, ({ records, expected, d }) => {
        const store = applyBatches(n, deliver(records, d));
        const stored = new Map(store.entries('public.order_items'));
        assert.deepEqual([...stored.keys()].sort(), [...expected.keys()].sort());
        for (const [keyId, want] of expected) {
          const item = stored.get(keyId);
          assert.ok(item, keyId);
          assert.equal(item.position, want.position, keyId);
          assert.equal(item.deleted, want.row === null, keyId);
          if (want.row !== null) assert.deepEqual(item.row, want.row, keyId);
        }
      }),
      { numRuns: 200 },
    );
  });
});
