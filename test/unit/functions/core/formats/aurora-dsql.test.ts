/**
 * Aurora DSQL CDC records, from the examples of the Aurora DSQL user guide ("Understanding CDC
 * records", https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html;
 * fixtures in test/fixtures/aurora-dsql/): the row records decode ordered by the commit time
 * `source.ts_ns` with the txId as tiebreak, the preview's op codes converge like GA's, and the two
 * halves of a split record are control events.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { auroraDsql, txIdRank } from '../../../../../functions/core/formats/aurora-dsql.js';
import { cloneJson, type JsonObject, type JsonValue } from '../../../../../functions/core/json.js';
import { comparePositions } from '../../../../../functions/core/position.js';
import type { ControlEvent } from '../../../../../functions/core/types.js';
import { readFixture } from '../../../../helpers/messages.js';
import { storeView } from './delivery-kit.js';
import { applyBatches, changesOf, kinesisRecord, normalizerFor } from './normalizer-kit.js';

const TABLE = { source: 'public.order_items', key: ['order_id', 'item_id'], keyTypes: { order_id: 'number', item_id: 'number' } } as const;
const n = normalizerFor([TABLE]);
const value = (name: string) => cloneJson(readFixture('aurora-dsql', name).message_value) as JsonObject;

const only = (v: JsonValue) => {
  const [e, ...rest] = changesOf(n.normalize(kinesisRecord(v)));
  assert.equal(rest.length, 0);
  assert.ok(e);
  return e;
};

describe('Aurora DSQL row records (docs "Record payload" examples)', () => {
  it('decodes the INSERT example: table, composite key from after, position [ts_ns, txId], commit time from source.ts_ms', () => {
    const e = only(value('insert'));
    assert.equal(e.format, 'aurora-dsql');
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'public.order_items');
    assert.deepEqual(e.key, { order_id: 1001, item_id: 42 });
    assert.deepEqual(e.after, { order_id: 1001, item_id: 42, quantity: 5, price: '29.99' });
    assert.deepEqual(e.position, { tuple: [1705318200000000000n, txIdRank('ffthunp5stx6ffs2vyfqoatmfu')], strength: 'source' });
    assert.equal(e.txid, 'ffthunp5stx6ffs2vyfqoatmfu');
    assert.equal(e.commitTs, 1705318200000, 'source.ts_ms, never the top-level processing time 1705318200125');
    assert.equal(e.snapshot, false);
  });

  it('decodes the DELETE example with the key from before (primary key only)', () => {
    const e = only(value('delete'));
    assert.equal(e.op, 'd');
    assert.deepEqual(e.key, { order_id: 1001, item_id: 42 });
    assert.equal(e.after, null);
  });

  it('orders INSERT < UPDATE < DELETE by commit time, and reads ts_ns above 2^53 exactly', () => {
    const [c, u, d] = ['insert', 'update', 'delete'].map((f) => only(value(f)).position);
    assert.ok(c && u && d && comparePositions(c, u) < 0 && comparePositions(u, d) < 0);
    const v = value('insert');
    (v.source as JsonObject).ts_ns = v.ts_ns as JsonValue; // the docs' top-level 1705318200125483291: 19 digits
    assert.equal(only(v).position.tuple[0], 1705318200125483291n, 'a 19-digit ts_ns is not rounded');
  });

  it('converges the same way whether an update arrives as GA "u" or preview "c", and applies an unknown op as an upsert of after', () => {
    const ga = storeView(applyBatches(n, [[kinesisRecord(value('insert'))], [kinesisRecord(value('update'))]]));
    const preview = { ...value('update'), op: 'c' };
    const previewState = storeView(applyBatches(n, [[kinesisRecord(value('insert'))], [kinesisRecord(preview)]]));
    const rows = (view: Record<string, unknown>) => Object.values(view).map((v) => (v as { row: unknown }).row);
    assert.deepEqual(rows(previewState), rows(ga));
    assert.equal(only({ ...value('update'), op: 'x' }).op, 'u');
    const noAfter = n.normalize(kinesisRecord({ ...value('delete'), op: 'x' }));
    assert.ok(!noAfter.ok);
    assert.equal(noAfter.reason, 'bad-op');
  });

  it('refuses a record without ts_ns, with an overlong txId, or an insert without after, each with its reason', () => {
    const noTs = value('insert');
    delete (noTs.source as JsonObject).ts_ns;
    const longTx = value('insert');
    (longTx.source as JsonObject).txId = 'x'.repeat(65);
    for (const [v, reason] of [
      [noTs, 'missing-field'],
      [longTx, 'bad-position'],
      [{ ...value('insert'), after: null }, 'missing-field'],
      [{ ...value('insert'), type: 'partial' }, 'unknown-format'],
    ] as const) {
      const r = n.normalize(kinesisRecord(v));
      assert.ok(!r.ok);
      assert.equal(r.reason, reason);
    }
  });
});

describe('txIdRank: txIds as integers without collisions', () => {
  it('is one-to-one and orders ids by length, then byte by byte', () => {
    const id = fc.string({ minLength: 1, maxLength: 30, unit: fc.constantFrom('a', 'b', 'z', '2', '7', '\0', 'é') });
    fc.assert(
      fc.property(id, id, (a, b) => {
        const [x, y] = [txIdRank(a), txIdRank(b)];
        assert.equal(x === y, a === b);
        const [ba, bb] = [Buffer.from(a), Buffer.from(b)];
        const shortlex = ba.length !== bb.length ? ba.length < bb.length : Buffer.compare(ba, bb) < 0;
        assert.equal(x < y, shortlex);
      }),
    );
    assert.equal(txIdRank('ab'), 0x016162n);
    assert.throws(() => txIdRank(''), DecodeError);
  });
});

describe('split records (docs "Handling oversized records" examples) are control events', () => {
  it('decodes the main record as a chunked control event at its position, naming its chunks', () => {
    const r = n.normalize(kinesisRecord(value('chunked-main')));
    assert.ok(r.ok, r.ok ? '' : r.detail);
    const [c] = r.events as ControlEvent[];
    assert.equal(c?.control, 'chunked');
    assert.equal(c?.table, 'public.order_items');
    assert.deepEqual(c?.position?.tuple[0], 1705318200000000000n);
    assert.deepEqual(c?.detail, { op: 'c', chunks: [{ image: 'after', chunkId: '{{chunk-id}}', totalFragments: 3, crc32c: '2073618257' }] });
  });

  it('decodes a fragment as a fragment control event carrying its chunk id, index and text', () => {
    const r = n.normalize(kinesisRecord(value('fragment')));
    assert.ok(r.ok, r.ok ? '' : r.detail);
    assert.deepEqual((r.events[0] as ControlEvent).detail, { chunkId: '{{chunk-id}}', index: 0, data: '{{partial-JSON-text}}' });
  });

  it('refuses a malformed fragment or main record as fragment-invalid', () => {
    for (const v of [{ ...value('fragment'), index: -1 }, { ...value('fragment'), data: 7 }, { ...value('chunked-main'), chunked: { after: { chunk_id: 'k', total_fragments: 0, crc32c: '1' } } }]) {
      const r = n.normalize(kinesisRecord(v));
      assert.ok(!r.ok);
      assert.equal(r.reason, 'fragment-invalid');
    }
  });
});

describe('detection', () => {
  it('claims every documented DSQL record under auto, and leaves Debezium and the generic envelope alone', () => {
    for (const name of ['insert', 'update', 'delete', 'chunked-main', 'fragment']) {
      const r = n.normalize(kinesisRecord(value(name)));
      assert.ok(r.ok && r.format === 'aurora-dsql', name);
    }
    const dbz = readFixture('debezium', 'pg-insert-bare').message_value;
    assert.equal(auroraDsql.detect({ ...kinesisRecordMessage(dbz) }), false);
    const generic = readFixture('generic', 'teaching-insert').message_value;
    assert.equal(auroraDsql.detect(kinesisRecordMessage(generic)), false);
  });
});

function kinesisRecordMessage(v: JsonValue | null) {
  return { key: null, keySchema: null, value: v, valueSchema: null, topic: null, headers: {}, transport: kinesisRecord(null).transport };
}
