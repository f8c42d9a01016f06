/**
 * Issue 20, item 20: replay applies each key's events in position order. A history with
 * unchanged-TOAST placeholder updates (the column's value carried only by an earlier event) is
 * selected into key buckets (bucketOf, as replay-select assigns them), each bucket's rows split into
 * files sorted as Athena's UNLOAD writes them, and the buckets applied in any order, concurrently,
 * in chunks of any size (bucket-merge.ts `mergeSorted` + `applyRows`, through the real engine and
 * DynamoWriter on a fake DynamoDB that evaluates the guards). Every split converges to the fold:
 * the table ingest builds by applying the history in order. Applying chunks out of order, as the
 * object batches of the old plan could, does not (the second case shows the check can fail).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { Normalizer, type RawRecord } from '../../../../functions/core/normalize.js';
import { DynamoWriter } from '../../../../functions/adapters/dynamo-writer.js';
import { noKeyRef } from '../../../../functions/telemetry/sinks.js';
import { ReplayEngine } from '../../../../functions/replay/engine.js';
import { applyRows, compareRows, mergeSorted, type ReplayRow } from '../../../../functions/replay/bucket-merge.js';
import { bucketOf } from '../../../../functions/sql/bucket.js';
import { PgHistory, PLACEHOLDER } from '../../../helpers/debezium.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';
import { replayRowOf } from '../../../helpers/replay-rows.js';

const config = parseConfig({
  name: 'order',
  tables: [{ source: 'public.customers', target: 'order-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'order-raw' },
});
const table = config.tables[0] as (typeof config.tables)[number];
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const KEYS = 4;

type Op = { key: number; kind: 'c' | 'u' | 'd' | 'p'; name: string; note: string };
const op: fc.Arbitrary<Op> = fc.record({
  key: fc.integer({ min: 1, max: KEYS }),
  // p: an update whose `note` is unchanged and not sent (the TOAST placeholder).
  kind: fc.constantFrom('c', 'u', 'd', 'p', 'p') as fc.Arbitrary<Op['kind']>,
  name: fc.string({ maxLength: 4 }),
  note: fc.string({ maxLength: 4 }),
});

function historyOf(ops: readonly Op[]): { rows: ReplayRow[]; records: RawRecord[] } {
  const history = new PgHistory();
  const rows: ReplayRow[] = [];
  const records: RawRecord[] = [];
  for (const [i, o] of ops.entries()) {
    const e = history.emit('customers', o.kind === 'p' ? 'u' : o.kind, { id: o.key }, o.kind === 'd' ? null : { name: o.name, note: o.kind === 'p' ? PLACEHOLDER : o.note });
    const transport = { kind: 'kinesis' as const, stream: 's', shard: 'shardId-0', sequence: String(1000 + i), partitionKey: e.partitionKey, arrivalTime: 1_000 + i };
    records.push({ value: Buffer.from(e.value), key: Buffer.from(e.partitionKey), topic: null, headers: {}, transport });
    rows.push(replayRowOf(e, { keyId: JSON.stringify([String(o.key)]), arrival: transport.arrivalTime, sequence: transport.sequence, stream: transport.stream, shard: transport.shard, rawObject: `s3://order-raw/raw/o${i % 3}.jsonl.gz` }));
  }
  return { rows, records };
}

function target() {
  const fake = new FakeDynamoDB(config.tables);
  const engine = new ReplayEngine({
    normalizer: new Normalizer(config),
    dynamodb: fake.client,
    writer: new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000, now: () => 1_700_000_000_000 }),
    tables: new Map([['public.customers', table]]),
    watermarks: null,
    ledger: null,
    log: quiet,
    keyRef: noKeyRef,
    concurrency: 4,
  });
  const items = () => Array.from({ length: KEYS }, (_, i) => fake.get('order-customers', { id: { N: String(i + 1) } }) ?? null);
  return { engine, items };
}

/** The fold: what ingest builds, one record at a time in delivery order. */
async function fold(records: readonly RawRecord[]) {
  const t = target();
  for (const r of records) assert.deepEqual((await t.engine.replay([r], { tables: ['public.customers'] })).failures, []);
  return t.items();
}

async function* each<T>(values: readonly T[]): AsyncGenerator<T> {
  for (const v of values) yield v;
}

describe('replay key order (property, issue 20 item 20)', () => {
  it('any split into key buckets and sorted files, applied in any order and chunking, converges to the fold', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.nat({ max: 3 }), { minLength: 20, maxLength: 20 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
        async (ops, buckets, fileOf, chunkRows, order) => {
          const { rows, records } = historyOf(ops);
          const expected = await fold(records);
          // Each bucket's rows in the files UNLOAD could write: any split, each file sorted.
          const files = new Map<number, ReplayRow[][]>();
          rows.forEach((row, i) => {
            const b = bucketOf(row.key_id ?? '', buckets);
            const list = files.get(b) ?? [[], [], [], []];
            files.set(b, list);
            list[fileOf[i % fileOf.length] ?? 0]?.push(row);
          });
          for (const list of files.values()) for (const f of list) f.sort(compareRows);
          // Buckets started in any order, running concurrently.
          const started = [...files.keys()].sort((a, b) => (order[a] ?? 0) - (order[b] ?? 0) || a - b);
          const t = target();
          const results = await Promise.all(
            started.map((b) => applyRows(t.engine, mergeSorted((files.get(b) ?? []).map(each), compareRows), { tables: ['public.customers'] }, { chunkRows })),
          );
          for (const r of results) assert.deepEqual(r.failures, []);
          assert.equal(results.reduce((n, r) => n + r.rows, 0), rows.length);
          assert.deepEqual(t.items(), expected);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('applying a key\'s events out of order leaves the placeholder column missing (what the old object batches could do)', async () => {
    const { rows, records } = historyOf([
      { key: 1, kind: 'c', name: 'a', note: 'kept' },
      { key: 1, kind: 'p', name: 'b', note: '' },
    ]);
    const expected = await fold(records);
    assert.equal(expected[0]?.note?.S, 'kept');
    const t = target();
    // The later placeholder update first, then the full image it depends on.
    for (const row of [...rows].reverse()) await applyRows(t.engine, each([row]), { tables: ['public.customers'] }, { chunkRows: 1 });
    assert.notDeepEqual(t.items(), expected);
    const merged = target();
    await applyRows(merged.engine, mergeSorted([each([rows[1] as ReplayRow]), each([rows[0] as ReplayRow])], compareRows), { tables: ['public.customers'] }, { chunkRows: 1 });
    assert.deepEqual(merged.items(), expected);
  });
});
