/**
 * The raw reader rebuilds delivered records from raw so they normalize exactly as at ingest, in both
 * line layouts (first: text messages repeated per row; compact: base64 bytes, message once per
 * record with `messageRef` rows, digest-suffixed names, percent-encoded table segments).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import {
  hourOverlaps,
  listRawObjects,
  parseRawObject,
  parseRawObjectKey,
  RawRecordSet,
  readRawObject,
} from '../../../../functions/adapters/raw-reader.js';
import { CONTROL_TABLE, RawStore, type RawLine } from '../../../../functions/adapters/raw-store.js';
import { parseConfig } from '../../../../lib/config/config.js';
import { Normalizer, type RawRecord, recordTexts } from '../../../../functions/core/normalize.js';
import { exactBytes, rawLineFor, recordPart } from '../../../../functions/ingest/raw-lines.js';
import { readFixture } from '../../../helpers/messages.js';
import { pgMessage } from '../../../helpers/debezium.js';
import { fakeS3 } from '../../../helpers/fake-s3.js';

const rawConfigInput = {
  name: 'rr',
  tables: [
    { source: 'public.customers', target: 'rr-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'inventory.products', target: 'rr-products', key: ['id'] },
    { source: 'public.café', target: 'rr-cafe', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.caf_', target: 'rr-caf', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'rr-raw' },
};
const config = parseConfig(rawConfigInput);
const normalizer = new Normalizer(config);
const T0 = Date.parse('2026-11-30T06:10:00Z');

function record(value: string | Uint8Array | null, sequence: number, opts: Partial<RawRecord> = {}): RawRecord {
  return {
    value: value === null ? null : typeof value === 'string' ? Buffer.from(value) : value,
    key: opts.key ?? Buffer.from('{"id":1}'),
    topic: opts.topic ?? 'shop.public.customers',
    headers: opts.headers ?? { 'x-trace': 'abc' },
    transport: { kind: 'kafka', stream: 'shop.public.customers', shard: '0', sequence: String(sequence), partitionKey: null, arrivalTime: T0 + sequence, ...opts.transport },
  };
}

const customer = (id: number, lsn: number, name: string) =>
  JSON.stringify(pgMessage({ table: 'customers', op: 'u', after: { id, name }, lsn, lastCommitLsn: lsn - 1 }));

/** Lines exactly as ingest builds them today. */
function linesOf(records: readonly RawRecord[]): Map<string, RawLine[]> {
  const out = new Map<string, RawLine[]>();
  for (const r of records) {
    const n = normalizer.normalize(r);
    assert.ok(n.ok, 'fixture record must normalize');
    // As ingest lands them: the record's first line in each table's object carries the message.
    const seen = new Set<string>();
    for (const e of n.events) {
      const table = e.kind === 'change' ? e.table : CONTROL_TABLE;
      out.set(table, [...(out.get(table) ?? []), rawLineFor(recordPart(r, n.texts), e, !seen.has(table))]);
      seen.add(table);
    }
  }
  return out;
}

/** The lines of one batch object, as ingest lands them now: a record's first line carries the message. */
function batchLinesOf(records: readonly RawRecord[]): RawLine[] {
  return records.flatMap((r) => {
    const n = normalizer.normalize(r);
    assert.ok(n.ok, 'fixture record must normalize');
    return n.events.map((e, i) => rawLineFor(recordPart(r, n.texts), e, i === 0));
  });
}

const text = (lines: readonly unknown[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
const gz = (lines: readonly unknown[]) => gzipSync(Buffer.from(text(lines)));
const s3 = fakeS3();
after(() => s3.restore());

describe('raw reader', () => {
  it('gives a tombstone read back the decision it got when it landed: a change line deletes, a control line was ignored', () => {
    const deleting = new Normalizer(parseConfig({ ...rawConfigInput, kafkaTombstones: 'delete' }));
    const landed = deleting.normalize(record(null, 3));
    assert.ok(landed.ok);
    const deleteLine = rawLineFor(recordPart(record(null, 3), landed.texts), landed.events[0] as never, true);
    const ignoringLine = rawLineFor(recordPart(record(null, 4), landed.texts), { kind: 'control', format: 'kafka-tombstone', control: 'kafka-tombstone', table: 'public.customers', position: null, txid: null, commitTs: null, detail: {} }, true);
    const parsed = parseRawObject(text([deleteLine, ignoringLine]), 'k');
    assert.deepEqual(
      parsed.records.map((r) => r.record.tombstone),
      ['delete', 'ignore'],
    );
    // A Normalizer that would ignore tombstones still repeats the landed delete (a replay), and vice versa.
    const ignoring = new Normalizer(config);
    const [first, second] = parsed.records.map((r) => ignoring.normalize(r.record));
    assert.ok(first?.ok && first.events[0]?.kind === 'change' && first.events[0].op === 'd');
    assert.ok(second?.ok && second.events[0]?.kind === 'control');
  });

  it('rebuilds what RawStore.land wrote into records that normalize to the same events', async () => {
    const records = [record(customer(1, 10, 'Ann'), 1), record(customer(2, 12, 'Bob'), 2), record(customer(1, 14, 'Cy'), 3)];
    const store = new RawStore(s3.client, 'rr-raw', 'landed/', 'quarantine/');
    await store.land({ shard: '0', firstSequence: '1', lastSequence: '3', firstArrival: T0 }, batchLinesOf(records), []);
    const objects = await listRawObjects(s3.client, { bucket: 'rr-raw', prefix: 'landed/', table: 'public.customers' });
    assert.equal(objects.length, 1);
    assert.equal(objects[0]?.hourStart, Date.parse('2026-11-30T06:00:00Z'));
    const parsed = parseRawObject(await readRawObject(s3.client, 'rr-raw', objects[0]?.key ?? ''), objects[0]?.key ?? '');
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.records.length, 3);
    parsed.records.forEach((r, i) => {
      const original = records[i] as RawRecord;
      assert.deepEqual(Buffer.from(r.record.value ?? []), Buffer.from(original.value ?? []));
      assert.deepEqual(Buffer.from(r.record.key ?? []), Buffer.from(original.key ?? []));
      assert.equal(r.record.topic, original.topic);
      assert.deepEqual({ ...r.record.headers }, original.headers);
      assert.deepEqual(r.record.transport, original.transport);
      const again = normalizer.normalize(r.record);
      const first = normalizer.normalize(original);
      assert.ok(again.ok && first.ok);
      assert.deepEqual(again.events, first.events);
    });
  });

  it('keeps a leading byte-order mark of a value and a key: raw gives the exact bytes back, and the message decodes as without it', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const plain = record(customer(5, 20, 'Bo'), 7, { key: Buffer.from('{"id":5}') });
    const marked = record(Buffer.concat([bom, Buffer.from(customer(5, 20, 'Bo'))]), 7, { key: Buffer.concat([bom, Buffer.from('{"id":5}')]) });
    const [n, m] = [normalizer.normalize(plain), normalizer.normalize(marked)];
    assert.ok(n.ok && m.ok);
    assert.deepEqual(m.events, n.events);
    assert.ok(m.texts.value?.startsWith('\uFEFF'), 'the text keeps the mark');
    const store = new RawStore(s3.client, 'rr-raw', 'bom/', 'quarantine/');
    await store.land({ shard: '0', firstSequence: '7', lastSequence: '7', firstArrival: T0 }, batchLinesOf([marked]), []);
    const [object] = await listRawObjects(s3.client, { bucket: 'rr-raw', prefix: 'bom/', table: 'public.customers' });
    const parsed = parseRawObject(await readRawObject(s3.client, 'rr-raw', object?.key ?? ''), object?.key ?? '');
    assert.deepEqual(Buffer.from(parsed.records[0]?.record.value ?? []), marked.value);
    assert.deepEqual(Buffer.from(parsed.records[0]?.record.key ?? []), marked.key);
  });

  it("builds the same raw line part from the normalizer's texts as from the bytes, for any bytes", () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.string({ unit: 'grapheme' }).map((t) => Buffer.from(t)),
      fc.string().map((t) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(t)])),
    );
    fc.assert(
      fc.property(bytes, fc.option(bytes), (value, key) => {
        const r = record(value, 1, { key: key ?? null });
        let texts: ReturnType<typeof recordTexts>;
        try {
          texts = recordTexts(r);
        } catch {
          return; // not UTF-8: refused before any raw line (invalid-utf8)
        }
        assert.deepEqual(recordPart(r, texts), recordPart(r));
        const exact = exactBytes(r.value);
        if (exact.text !== null) assert.deepEqual(Buffer.from(exact.text, 'utf8'), Buffer.from(r.value ?? []));
      }),
      { numRuns: 500 },
    );
  });

  it('reads the compact layout: base64 bytes, digest names, percent-encoded tables, messageRef rows', () => {
    // A Canal message with two rows, as Flink's canal-data.txt test data captures it.
    const canal = JSON.stringify(readFixture('canal', 'insert-two-rows-in-one-message').message_value);
    const binaryKey = Uint8Array.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
    const t = { kind: 'kafka', stream: 'inv', shard: '3', sequence: '77', partitionKey: null, arrivalTime: T0 };
    const base = { kind: 'change', format: 'canal', op: 'c', table: 'inventory.products', position: '01', topic: 'inv', headers: {}, transport: t };
    const key = 'raw/table=inventory.products/dt=2026-11-30/hr=06/3-77-77-9f8e7d.jsonl.gz';
    const parsed = parseRawObject(
      text([
        { ...base, key: '{"id":"112"}', messageKeyBase64: Buffer.from(binaryKey).toString('base64'), messageBase64: Buffer.from(canal).toString('base64') },
        { ...base, key: '{"id":"113"}', message: null, messageKey: null, messageRef: true },
      ]),
      key,
    );
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.records.length, 1);
    const r = parsed.records[0];
    assert.ok(r);
    assert.deepEqual([...(r.record.key ?? [])], [...binaryKey]);
    assert.deepEqual(r.lines.map((l) => l.key), ['{"id":"112"}', '{"id":"113"}']);
    const n = normalizer.normalize(r.record);
    assert.ok(n.ok);
    assert.deepEqual(
      n.events.map((e) => (e.kind === 'change' ? e.key : null)),
      [{ id: '112' }, { id: '113' }],
    );
    assert.deepEqual(parseRawObjectKey('raw/', key), { layout: 'table', tableSegment: 'inventory.products', hourStart: Date.parse('2026-11-30T06:00:00Z'), name: '3-77-77-9f8e7d' });
  });

  it('keeps a multi-row record once when the first layout repeats its message on every row line', () => {
    const canal = JSON.stringify(readFixture('canal', 'insert-two-rows-in-one-message').message_value);
    const r = record(canal, 5, { topic: 'inv' });
    const lines = linesOf([r]).get('inventory.products') ?? [];
    assert.equal(lines.length, 2);
    const parsed = parseRawObject(text(lines), 'k');
    assert.equal(parsed.records.length, 1);
    assert.equal(parsed.records[0]?.lines.length, 2);
  });

  it('finds a table under its lossy and its percent-encoded segment, and splits a shared lossy segment by line table', async () => {
    const mk = (table: string, id: number) => ({
      kind: 'change', format: 'generic', op: 'c', table, key: `{"id":${id}}`, position: '01', topic: null, headers: {},
      transport: { kind: 'file', stream: 'f', shard: 'file', sequence: String(id), partitionKey: null, arrivalTime: T0 },
      messageKey: null,
      message: JSON.stringify({ operation: 'insert', after: { id }, source: { table, lsn: id } }),
    });
    s3.put('raw/table=public.caf_/dt=2026-11-30/hr=06/file-1-2.jsonl.gz', gz([mk('public.café', 1), mk('public.caf_', 2)]));
    s3.put('raw/table=public.caf%C3%A9/dt=2026-11-30/hr=07/file-3-3-abc.jsonl.gz', gz([mk('public.café', 3)]));
    const cafe = await listRawObjects(s3.client, { bucket: 'rr-raw', prefix: 'raw/', table: 'public.café' });
    const caf = await listRawObjects(s3.client, { bucket: 'rr-raw', prefix: 'raw/', table: 'public.caf_' });
    assert.equal(cafe.length, 2);
    assert.equal(caf.length, 1);
    const ids = async (table: string, objects: typeof cafe) => {
      const set = new RawRecordSet();
      for (const o of objects) set.add(parseRawObject(await readRawObject(s3.client, 'rr-raw', o.key), o.key), table);
      return set.records().map((r) => r.record.transport.sequence);
    };
    assert.deepEqual(await ids('public.café', cafe), ['1', '3']);
    assert.deepEqual(await ids('public.caf_', caf), ['2']);
  });

  it('finds table segments when the store answers delimited listings with nothing (s3rver)', async () => {
    const broken = fakeS3({ brokenDelimiter: true });
    try {
      broken.put('raw/table=public.caf%C3%A9/dt=2026-11-30/hr=07/a-1-1.jsonl.gz', gz([]));
      broken.put('raw/table=public.customers/dt=2026-11-30/hr=07/a-1-1.jsonl.gz', gz([]));
      const objects = await listRawObjects(broken.client, { bucket: 'b', prefix: 'raw/', table: 'public.café' });
      assert.deepEqual(objects.map((o) => o.key), ['raw/table=public.caf%C3%A9/dt=2026-11-30/hr=07/a-1-1.jsonl.gz']);
    } finally {
      broken.restore();
    }
  });

  it('lists only the partitions that can hold the landing-time range', async () => {
    s3.put('raw/table=public.customers/dt=2026-11-29/hr=01/0-1-1.jsonl.gz', gz([]));
    s3.put('raw/table=public.customers/dt=2026-12-01/hr=01/0-9-9.jsonl.gz', gz([]));
    s3.put('raw/table=public.customers/dt=2026-11-30/hr=06/0-2-2.jsonl.gz', gz([]));
    // Batch objects (every table) in and out of the range.
    s3.put('raw/dt=2026-11-28/hr=23/1-1-1.jsonl.gz', gz([]));
    s3.put('raw/dt=2026-11-30/hr=07/1-5-5.jsonl.gz', gz([]));
    s3.put('raw/dt=2026-12-01/hr=03/1-6-6.jsonl.gz', gz([]));
    const objects = await listRawObjects(s3.client, {
      bucket: 'rr-raw', prefix: 'raw/', table: 'public.customers', since: Date.parse('2026-11-30T00:00:00Z'), until: Date.parse('2026-12-01T00:00:00Z'),
    });
    assert.deepEqual(
      objects.map((o) => o.key),
      ['raw/table=public.customers/dt=2026-11-30/hr=06/0-2-2.jsonl.gz', 'raw/dt=2026-11-30/hr=07/1-5-5.jsonl.gz'],
    );
    assert.equal(hourOverlaps(Date.parse('2026-11-29T23:00:00Z'), { since: Date.parse('2026-11-30T00:30:00Z') }), true, 'one hour of slack');
    assert.equal(hourOverlaps(Date.parse('2026-11-29T22:00:00Z'), { since: Date.parse('2026-11-30T00:30:00Z') }), false);
  });

  it('reports unreadable lines with a reason instead of dropping them', () => {
    const t = { kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: '9', partitionKey: 'p', arrivalTime: T0 };
    const parsed = parseRawObject(
      ['{not json', '[1]', JSON.stringify({ transport: { kind: 'x' } }), JSON.stringify({ transport: t, message: null, messageRef: true }), JSON.stringify({ transport: t, messageBase64: '***' })].join('\n'),
      'obj',
    );
    assert.deepEqual(parsed.problems.map((p) => [p.line, p.reason]), [
      [1, 'invalid-line'],
      [2, 'invalid-line'],
      [3, 'bad-transport'],
      [4, 'orphan-message-ref'],
      [5, 'bad-base64'],
    ]);
    assert.equal(parsed.records.length, 0);
  });

  it('keeps each record once, whatever objects repeat it (partial-batch retries), and keeps same-coordinate records with different bytes', () => {
    const pool = Array.from({ length: 12 }, (_, i) => record(customer(i % 4, 100 + i, `n${i}`), i));
    // Two different files applied with the same line numbers: same coordinates, different bytes.
    const clash = record(customer(9, 999, 'other file'), 3);
    fc.assert(
      fc.property(fc.array(fc.subarray(pool, { minLength: 1 }), { minLength: 1, maxLength: 6 }), fc.boolean(), (objects, withClash) => {
        const set = new RawRecordSet();
        for (const [i, recs] of objects.entries()) set.add(parseRawObject(text(linesOf(recs).get('public.customers') ?? []), `o${i}`));
        if (withClash) set.add(parseRawObject(text(linesOf([clash]).get('public.customers') ?? []), 'clash'));
        const expected = new Set(objects.flat().map((r) => r.transport.sequence));
        const got = set.records().map((r) => r.record.transport.sequence);
        const want = [...expected].map(Number).sort((a, b) => a - b).map(String);
        if (withClash) want.push('3');
        assert.deepEqual([...got].sort((a, b) => Number(a) - Number(b)), want.sort((a, b) => Number(a) - Number(b)));
        assert.equal(set.duplicates, objects.flat().length - expected.size);
      }),
      { numRuns: 60 },
    );
  });
});
