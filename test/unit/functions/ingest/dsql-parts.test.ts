/**
 * Split Aurora DSQL records through processBatch, across batches and shards (Aurora DSQL user
 * guide, "Understanding CDC records", "Handling oversized records",
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html#cdc-oversized-records:
 * a main record `type: "chunked"` with `chunked.after: {chunk_id, total_fragments, crc32c}` and
 * fragments `{type: "fragment", chunk_id, index, data}`, delivered on any shard, in any order, at
 * least once). The real ingest wiring over mocked S3 (raw, quarantine), an in-memory pending-parts
 * store with the DynamoDB store's semantics, and a MemoryStore target with the guard's semantics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { crc32c } from '../../../../functions/core/formats/crc32c.js';
import { cloneJson, type JsonObject, LosslessNumber, parseJson, stringifyJson } from '../../../../functions/core/json.js';
import type { RawRecord } from '../../../../functions/core/normalize.js';
import { processBatch } from '../../../../functions/ingest/process-batch.js';
import { identityGap } from '../../../../functions/telemetry/contract.js';
import { readFixture } from '../../../helpers/messages.js';
import { mockedDeps, NOW, putObjects } from '../../../helpers/mocked-deps.js';
import { MemorySplitParts, memoryWriter } from '../../../helpers/split-parts.js';
import { storeView } from '../core/formats/delivery-kit.js';
import { kinesisRecord } from '../core/formats/normalizer-kit.js';

const config = parseConfig({
  name: 'shop',
  format: 'aurora-dsql',
  tables: [{ source: 'public.order_items', target: 'shop-order-items', key: ['order_id', 'item_id'], keyTypes: { order_id: 'number', item_id: 'number' } }],
  raw: { bucket: 'shop-raw' },
  auroraDsql: { fragmentWaitSeconds: 600 },
});
const WAIT_MS = 600_000;
const utf8 = (s: string) => new TextEncoder().encode(s);
const fixture = (name: string) => cloneJson(readFixture('aurora-dsql', name).message_value) as JsonObject;

/** A full record (the docs' INSERT example, with this row and commit time). */
function full(after: JsonObject, tsNs: bigint, op = 'c', txId = 'ffthunp5stx6ffs2vyfqoatmfu'): JsonObject {
  const r = fixture('insert');
  r.op = op;
  r.after = after;
  const source = r.source as JsonObject;
  source.ts_ns = new LosslessNumber(tsNs.toString());
  source.ts_ms = Number(tsNs / 1_000_000n);
  source.txId = txId;
  return r;
}

/** A full record split as Aurora DSQL splits it: its `after` text in `count` pieces of one chunk. */
function split(record: JsonObject, count: number, chunkId: string): { main: JsonObject; fragments: JsonObject[] } {
  const text = stringifyJson(record.after);
  const chars = Array.from(text);
  const size = Math.ceil(chars.length / count);
  const fragments = Array.from({ length: count }, (_, index) => ({ type: 'fragment', chunk_id: chunkId, index, data: chars.slice(index * size, (index + 1) * size).join('') }));
  const main = { ...cloneJson(record), type: 'chunked', after: null, chunked: { after: { chunk_id: chunkId, total_fragments: count, crc32c: String(crc32c(utf8(text))) } } } as JsonObject;
  return { main, fragments };
}

let seq = 0;
const on = (shard: number, value: JsonObject): RawRecord => kinesisRecord(value, `shardId-00000000000${shard}`, String(49_590_000_000 + ++seq));

function harness() {
  const mocked = mockedDeps(config);
  const writer = memoryWriter();
  const parts = new MemorySplitParts();
  let now = NOW;
  const deps = { ...mocked.deps, writer, splitParts: parts, now: () => now };
  return {
    ...mocked,
    writer,
    parts,
    deps,
    at: (ms: number) => {
      now = ms;
    },
    run: (batch: readonly RawRecord[]) => processBatch(batch, deps),
    quarantined: () => putObjects(mocked.s3).filter((o) => o.key.startsWith(config.raw.quarantinePrefix)).flatMap((o) => o.lines),
  };
}

const ROW: JsonObject = { order_id: 1001, item_id: 42, quantity: 5, price: '29.99', note: 'a long text column that made the record too large for one Kinesis record' };

describe('a split Aurora DSQL record', () => {
  it('split in two, the halves in different batches on different shards, is applied once and whole', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-a');
    const [f0, f1] = fragments as [JsonObject, JsonObject];
    const first = await h.run([on(0, main), on(0, f1)]);
    assert.deepEqual(storeView(h.writer.store), {}, 'nothing applied while fragment 0 is missing');
    assert.equal(first.summary.applied, 0);
    assert.equal(first.summary.controls, 2);
    const second = await h.run([on(3, f0)]);
    assert.equal(second.summary.applied, 1);
    assert.equal(identityGap(second.summary), 0);
    const whole = harness();
    await whole.run([on(1, full(ROW, 1705318200000000000n))]);
    assert.deepEqual(storeView(h.writer.store), storeView(whole.writer.store), 'the same row as the unsplit record');
    assert.equal(h.writer.writes.length, 1, 'one write');

    // A redelivered fragment (and main record) assembles it again: a duplicate, harmless.
    const again = await h.run([on(2, f0), on(2, main)]);
    assert.equal(again.summary.applied, 0);
    assert.equal(again.summary.duplicates, 1, 'assembled once per batch, applied as a duplicate');
    assert.deepEqual(storeView(h.writer.store), storeView(whole.writer.store));
    assert.deepEqual(h.quarantined(), []);
  });

  it('lands every part in raw as received, before anything is applied', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 3, 'chunk-raw');
    await h.run([on(0, fragments[2] as JsonObject), on(0, main)]);
    await h.run([on(1, fragments[0] as JsonObject), on(1, fragments[1] as JsonObject)]);
    const raw = putObjects(h.s3)
      .filter((o) => o.key.startsWith(config.raw.prefix) && !o.key.startsWith(config.raw.quarantinePrefix))
      .flatMap((o) => o.lines);
    assert.deepEqual(
      raw.map((l) => [l.control, parseJson(l.message as string)]),
      [
        ['fragment', fragments[2]],
        ['chunked', main],
        ['fragment', fragments[0]],
        ['fragment', fragments[1]],
      ],
    );
    assert.equal(h.writer.writes.length, 1, 'applied after the last part, once');
  });

  it('one half never arrives: after the wait, the next batch quarantines it as fragment-incomplete, once', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-lost');
    await h.run([on(0, main), on(0, fragments[0] as JsonObject)]);
    h.at(NOW + WAIT_MS - 1);
    const other = full({ ...ROW, item_id: 7 }, 1705318300000000000n);
    const early = await h.run([on(1, other)]);
    assert.equal(early.summary.quarantined, 0, 'still within the wait');
    h.at(NOW + WAIT_MS + 61_000);
    const late = await h.run([on(1, full({ ...ROW, item_id: 8 }, 1705318400000000000n))]);
    assert.equal(late.summary.quarantined, 1);
    assert.equal(identityGap(late.summary), 0);
    const [line, ...rest] = h.quarantined();
    assert.equal(rest.length, 0);
    assert.equal(line?.reason, 'fragment-incomplete');
    assert.equal(line?.table, 'public.order_items');
    assert.match(String(line?.detail), /chunk chunk-lost misses fragment 1 /);
    assert.deepEqual(parseJson(Buffer.from(String(line?.valueBase64), 'base64').toString('utf8')), main, 'the main record it held');
    assert.equal(storeView(h.writer.store)['public.order_items/1001|42'], undefined, 'never applied half');
    h.at(NOW + WAIT_MS + 200_000);
    const after = await h.run([on(2, full({ ...ROW, item_id: 9 }, 1705318500000000000n))]);
    assert.equal(after.summary.quarantined, 0, 'quarantined once');
  });

  it('fragments whose main record never arrives are quarantined, naming where they sit in raw', async () => {
    const h = harness();
    const { fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-orphan');
    await h.run([on(4, fragments[1] as JsonObject)]);
    h.at(NOW + WAIT_MS + 60_000);
    await h.run([on(4, full({ ...ROW, item_id: 8 }, 1705318400000000000n))]);
    const [line] = h.quarantined();
    assert.equal(line?.reason, 'fragment-incomplete');
    assert.match(String(line?.detail), /main record never arrived \(chunk chunk-orphan, 1 fragment held: fragment 1 at shardId-000000000004\//);
  });

  it('a different text for a fragment already held, and a CRC32C mismatch, are fragment-invalid', async () => {
    const h = harness();
    const { fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-bad');
    const f0 = fragments[0] as JsonObject;
    await h.run([on(0, f0)]);
    await h.run([on(1, { ...f0, data: 'X' })]);
    assert.deepEqual(
      h.quarantined().map((l) => l.reason),
      ['fragment-invalid'],
    );
    assert.match(String(h.quarantined()[0]?.detail), /fragment 0 of chunk chunk-bad arrived twice with different data/);

    const crc = split(full(ROW, 1705318200000000000n), 2, 'chunk-crc');
    ((crc.main.chunked as JsonObject).after as JsonObject).crc32c = '12345';
    const r = await h.run([on(0, crc.main), ...crc.fragments.map((f) => on(0, f))]);
    assert.equal(r.summary.quarantined, 1);
    assert.equal(h.quarantined()[1]?.reason, 'fragment-invalid');
    assert.match(String(h.quarantined()[1]?.detail), /CRC32C/);
    assert.deepEqual(storeView(h.writer.store), {});
  });

  it('a main record naming more fragments than are held per chunk is fragment-too-large', async () => {
    const h = harness();
    const { main } = split(full(ROW, 1705318200000000000n), 2, 'chunk-huge');
    ((main.chunked as JsonObject).after as JsonObject).total_fragments = 5_000;
    const r = await h.run([on(0, main)]);
    assert.equal(r.summary.quarantined, 1);
    assert.equal(h.quarantined()[0]?.reason, 'fragment-too-large');
  });

  it('a store failure fails the batch from that part; the retry completes the record', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-retry');
    await h.run([on(0, main)]);
    h.parts.failNext = 'putFragment';
    const batch = [on(1, fragments[0] as JsonObject), on(1, fragments[1] as JsonObject)];
    const failed = await h.run(batch);
    assert.deepEqual(failed.batchItemFailures, [{ itemIdentifier: batch[0]?.transport.sequence }]);
    assert.equal(failed.summary.applied, 0);
    const retried = await h.run(batch);
    assert.deepEqual(retried.batchItemFailures, []);
    assert.equal(retried.summary.applied, 1);
  });

  it('a reassembled record of a table not configured is quarantined with the Normalizer reason', async () => {
    const h = harness();
    const record = full(ROW, 1705318200000000000n);
    (record.source as JsonObject).table = 'widgets';
    const { main, fragments } = split(record, 2, 'chunk-widgets');
    const r = await h.run([on(0, main), ...fragments.map((f) => on(0, f))]);
    assert.equal(r.summary.quarantined, 1);
    assert.equal(h.quarantined()[0]?.reason, 'unknown-table');
  });
});

describe('a split Aurora DSQL record, the harder cases', () => {
  it('a main record redelivered with other processing times is harmless: the first stays, the record is applied once', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-redelivered');
    await h.run([on(0, main), on(0, fragments[0] as JsonObject)]);
    const reserialized = { ...main, ts_ms: 1705318299999, ts_ns: new LosslessNumber('1705318299999000000') };
    const r = await h.run([on(1, reserialized), on(1, fragments[1] as JsonObject)]);
    assert.equal(r.summary.applied, 1);
    assert.deepEqual(h.quarantined(), []);
  });

  it('with both images split (two chunks), parts over three batches, is assembled once both chunks are complete', async () => {
    const h = harness();
    const record = full(ROW, 1705318200000000000n, 'u');
    record.before = { order_id: 1001, item_id: 42, quantity: 4, price: '29.99', note: 'the old text' };
    const a = split(record, 2, 'chunk-after');
    const beforeText = stringifyJson(record.before);
    const b = { type: 'fragment', chunk_id: 'chunk-before', index: 0, data: beforeText };
    const main = { ...a.main, before: null, chunked: { before: { chunk_id: 'chunk-before', total_fragments: 1, crc32c: String(crc32c(utf8(beforeText))) }, after: (a.main.chunked as JsonObject).after } } as JsonObject;
    await h.run([on(0, main), on(0, a.fragments[0] as JsonObject)]);
    await h.run([on(1, a.fragments[1] as JsonObject)]);
    assert.equal(h.writer.writes.length, 0, 'the before chunk is still missing');
    const last = await h.run([on(2, b)]);
    assert.equal(last.summary.applied, 1);
    const whole = harness();
    await whole.run([on(0, record)]);
    assert.deepEqual(storeView(h.writer.store), storeView(whole.writer.store));
  });

  it('a quarantine that cannot land fails the record and marks nothing done; the retry lands it', async () => {
    const h = harness();
    const { main } = split(full(ROW, 1705318200000000000n), 2, 'chunk-q');
    ((main.chunked as JsonObject).after as JsonObject).total_fragments = 5_000;
    let failQuarantine = true;
    h.s3.on(PutObjectCommand).callsFake((input: { Key?: string }) => {
      if (failQuarantine && input.Key?.startsWith(config.raw.quarantinePrefix)) throw new Error('S3 down');
      return {};
    });
    const batch = [on(0, main)];
    const failed = await h.run(batch);
    assert.deepEqual(failed.batchItemFailures, [{ itemIdentifier: batch[0]?.transport.sequence }]);
    assert.equal(failed.summary.quarantined, 0);
    failQuarantine = false;
    const retried = await h.run(batch);
    assert.equal(retried.summary.quarantined, 1);
    assert.equal(identityGap(retried.summary), 0);
  });

  it('a sweep that fails is tried again by the next batch', async () => {
    const h = harness();
    const { main } = split(full(ROW, 1705318200000000000n), 2, 'chunk-s');
    await h.run([on(0, main)]);
    h.at(NOW + WAIT_MS + 60_000);
    h.parts.failNext = 'expired';
    const first = await h.run([on(1, full({ ...ROW, item_id: 8 }, 1705318400000000000n))]);
    assert.equal(first.summary.quarantined, 0);
    assert.ok(h.log.lines.some((l) => l.message.startsWith('split record sweep failed')));
    const second = await h.run([on(1, full({ ...ROW, item_id: 9 }, 1705318500000000000n))]);
    assert.equal(second.summary.quarantined, 1);
  });

  it('a set completed but never assembled (its batch gave up) is assembled by the sweep, not quarantined', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 2, 'chunk-late');
    await h.run([on(0, main), on(0, fragments[0] as JsonObject)]);
    h.parts.failNext = 'read';
    const failed = await h.run([on(1, fragments[1] as JsonObject)]);
    assert.equal(failed.batchItemFailures.length, 1, 'assembly failed: the batch would be retried');
    h.at(NOW + WAIT_MS + 60_000);
    const swept = await h.run([on(2, full({ ...ROW, item_id: 8 }, 1705318400000000000n))]);
    assert.equal(swept.summary.quarantined, 0);
    assert.equal(swept.summary.applied, 2, 'the swept record and the batch own');
    const whole = harness();
    await whole.run([on(0, full(ROW, 1705318200000000000n)), on(0, full({ ...ROW, item_id: 8 }, 1705318400000000000n))]);
    assert.deepEqual(storeView(h.writer.store), storeView(whole.writer.store));
  });

  it('does nothing without a pending-parts store (a format that cannot be Aurora DSQL)', async () => {
    const h = harness();
    const { main, fragments } = split(full(ROW, 1705318200000000000n), 1, 'chunk-none');
    const r = await processBatch([on(0, main), on(0, fragments[0] as JsonObject)], { ...h.deps, splitParts: undefined });
    assert.equal(r.summary.controls, 2);
    assert.equal(r.summary.applied, 0);
    assert.deepEqual(h.parts.calls, []);
  });
});

describe('split records over several shards converge to the state of the unsplit history (property)', () => {
  it('random order, duplicates, parts split across batches and shards', async () => {
    const version = fc.record({ item: fc.integer({ min: 1, max: 3 }), op: fc.constantFrom('c', 'u', 'd'), quantity: fc.integer({ min: 0, max: 99 }), note: fc.string({ minLength: 0, maxLength: 40 }), pieces: fc.integer({ min: 0, max: 4 }) });
    await fc.assert(
      fc.asyncProperty(
        fc.array(version, { minLength: 1, maxLength: 8 }),
        fc.infiniteStream(fc.integer({ min: 0, max: 3 })),
        fc.infiniteStream(fc.integer({ min: 1, max: 4 })),
        fc.infiniteStream(fc.boolean()),
        async (versions, shards, sizes, dups) => {
          const history = versions.map((v, i) => {
            const tsNs = 1705318200000000000n + BigInt(i) * 1_000_000_000n;
            const key = { order_id: 1001, item_id: v.item };
            if (v.op === 'd') {
              const d = full(key, tsNs, 'd', `tx${i}`);
              d.before = key;
              d.after = null;
              return { record: d, pieces: 0 };
            }
            return { record: full({ ...key, quantity: v.quantity, price: '29.99', note: v.note }, tsNs, v.op, `tx${i}`), pieces: v.pieces };
          });
          const unsplit = harness();
          await unsplit.run(history.map((h) => on(0, h.record)));

          const parts = history.flatMap((h, i) => {
            if (h.pieces === 0) return [h.record];
            const s = split(h.record, h.pieces, `chunk-${i}`);
            return [s.main, ...s.fragments];
          });
          const dupIt = dups[Symbol.iterator]();
          const delivered = parts.flatMap((p) => (dupIt.next().value ? [p, p] : [p]));
          // Random order: a seeded shuffle from the shard stream.
          const shardIt = shards[Symbol.iterator]();
          const tagged = delivered.map((p) => ({ p, shard: shardIt.next().value as number, r: shardIt.next().value as number }));
          tagged.sort((a, b) => a.r - b.r);
          const splitRun = harness();
          const sizeIt = sizes[Symbol.iterator]();
          for (let i = 0; i < tagged.length; ) {
            const n = sizeIt.next().value as number;
            const group = tagged.slice(i, i + n);
            i += n;
            for (const shard of new Set(group.map((g) => g.shard))) {
              const result = await splitRun.run(group.filter((g) => g.shard === shard).map((g) => on(shard, g.p)));
              assert.deepEqual(result.batchItemFailures, []);
              assert.equal(identityGap(result.summary), 0);
            }
          }
          assert.deepEqual(storeView(splitRun.writer.store), storeView(unsplit.writer.store));
          assert.deepEqual(splitRun.quarantined(), []);
        },
      ),
      { numRuns: 60 },
    );
  });
});
