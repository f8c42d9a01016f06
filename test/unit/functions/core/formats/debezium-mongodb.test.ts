import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debeziumMongo } from '../../../../../functions/core/formats/debezium-mongodb.js';
import { canonicalJson, isLosslessNumber, type JsonObject } from '../../../../../functions/core/json.js';
import { comparePositions, NO_POSITION } from '../../../../../functions/core/position.js';
import type { ChangeEvent, InboundMessage } from '../../../../../functions/core/types.js';
import { context, fixture, inbound, inboundFixture } from '../../../../helpers/inbound.js';

const DIR = 'debezium-mongodb';
const ctx = context({ 'inventory.customers': ['_id'], 'inventory.products': ['_id'] });

function decodeOne(message: InboundMessage): ChangeEvent {
  const events = debeziumMongo.decode(message, ctx);
  assert.equal(events.length, 1);
  const [event] = events;
  assert.equal(event!.kind, 'change');
  return event as ChangeEvent;
}

/** A change-streams message with the given overrides on top of the fixture's value. */
function variant(name: string, overrides: JsonObject, options: { key?: JsonObject; sequence?: string } = {}): InboundMessage {
  const f = fixture(DIR, name);
  return inbound({ ...(f.value as JsonObject), ...overrides }, { key: options.key ?? f.key, sequence: options.sequence ?? '1' });
}

/** A fixture with `source` fields replaced, delivered at `sequence`. */
function withSource(name: string, source: JsonObject, sequence = '1'): InboundMessage {
  const f = fixture(DIR, name);
  const value = f.value as JsonObject;
  return inbound({ ...value, source: { ...(value.source as JsonObject), ...source } }, { key: f.key, sequence });
}

const isDecodeError = (reason: string, pattern?: RegExp) => (e: unknown) =>
  e instanceof DecodeError && e.reason === reason && (pattern === undefined || pattern.test(e.message));

describe('debezium-mongodb decoder', () => {
  it('detects every MongoDB data message (2.x+ and 1.x oplog) and not the transaction END record', () => {
    for (const name of ['insert', 'update-full-default', 'delete-without-pre-image', 'oplog-1x-update-patch-filter', 'oplog-1x-delete-filter-only']) {
      assert.ok(debeziumMongo.detect(inboundFixture(DIR, name)), name);
    }
    assert.equal(debeziumMongo.detect(inboundFixture(DIR, 'transaction-end')), false);
    assert.equal(debeziumMongo.detect(inbound({ before: null, after: {}, source: { connector: 'postgresql' }, op: 'c' })), false);
  });

  it('decodes an insert: parses the after string, table db.collection, numeric _id key by value', () => {
    const e = decodeOne(inboundFixture(DIR, 'insert', { sequence: '42' }));
    assert.equal(e.format, 'debezium-mongodb');
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'inventory.customers');
    assert.deepEqual(e.key, { _id: 1004 });
    assert.deepEqual(e.after, { _id: 1004, first_name: 'Anne', last_name: 'Kretchmar', email: 'annek@noanswer.org' });
    assert.equal(e.before, null);
    assert.equal(e.patch, null);
    assert.equal(e.commitTs, 1735732800000);
    assert.equal(e.snapshot, false);
    assert.equal(e.txid, null);
  });

  it('orders events of Debezium 3.4 and later by transport offset (weak), after every clusterTime position', () => {
    // ts_ms is the wall time since 3.4 (DBZ-9683): it does not order events.
    const e = decodeOne(inboundFixture(DIR, 'insert', { sequence: '42' }));
    assert.deepEqual(e.position, { tuple: [1n << 32n, 42n], strength: 'transport' });
    assert.equal(debeziumMongo.ordering, 'transport');
    const older = decodeOne(withSource('insert', { version: '3.3.1.Final', ts_ms: 4294967295000, ord: 9 }));
    assert.ok(comparePositions(older.position, e.position) < 0, 'a 3.3 position sorts below every 3.4 position, so an upgrade keeps applying');
  });

  it('orders events of Debezium before 3.4 by the oplog clusterTime (ts_ms / 1000, ord), a source position', () => {
    // Source shape of the 2.7 docs' create event: ts_ms is clusterTime seconds × 1000, ord its increment.
    // https://debezium.io/documentation/reference/2.7/connectors/mongodb.html#mongodb-create-events
    const e = decodeOne(withSource('insert', { version: '2.7.0.Final', ts_ms: 1558965508000, ord: 31 }, '900'));
    assert.deepEqual(e.position, { tuple: [1558965508n, 31n], strength: 'source' });
    const oplog = decodeOne(inboundFixture(DIR, 'oplog-1x-update-patch-filter', { sequence: '5' }));
    assert.deepEqual(oplog.position, { tuple: [1558965508n, 6n], strength: 'source' });
  });

  it('gives incremental-snapshot reads no position, so they only fill keys the stream has not touched', () => {
    const e = decodeOne(withSource('snapshot-read', { version: '2.7.0.Final', snapshot: 'incremental', ts_ms: 1558965508000, ord: 3 }));
    assert.deepEqual(e.position, NO_POSITION);
    assert.equal(e.snapshot, true);
  });

  it('keeps a window redelivered after a 2.x connector restart from regressing rows: its positions are older', () => {
    const history = [
      { ts_ms: 1558965508000, ord: 1 },
      { ts_ms: 1558965508000, ord: 2 },
      { ts_ms: 1558965509000, ord: 1 },
    ];
    const first = history.map((s, i) => decodeOne(withSource('update-full-default', { version: '2.4.2.Final', ...s }, String(10 + i))));
    // The connector restarts from an older resume token and sends the first two events again, at later offsets.
    const again = history.slice(0, 2).map((s, i) => decodeOne(withSource('update-full-default', { version: '2.4.2.Final', ...s }, String(20 + i))));
    const latest = first[2];
    assert.ok(latest);
    for (const e of again) assert.ok(comparePositions(e.position, latest.position) < 0, 'a redelivered event is older than the latest one');
    assert.ok(comparePositions(first[0]!.position, first[1]!.position) < 0, 'ord breaks ties within one second');
  });

  it('keys an ObjectId _id as its hex string, equal to the _id of the after document', () => {
    const e = decodeOne(inboundFixture(DIR, 'insert-with-objectid-id'));
    assert.deepEqual(e.key, { _id: '596e275826f08b2730779e1f' });
    assert.equal(e.after?._id, '596e275826f08b2730779e1f');
    assert.equal(e.table, 'inventory.products');
  });

  it('compares _id by value: string "1004" stays a string, number 1004 a number, key whitespace ignored', () => {
    const str = decodeOne(variant('insert', { after: '{"_id": "1004", "x": 1}' }, { key: { id: '"1004"' } }));
    assert.deepEqual(str.key, { _id: '1004' });
    const num = decodeOne(variant('insert', {}, { key: { id: '{ "$numberLong" : "1004" }' } }));
    assert.deepEqual(num.key, { _id: 1004 });
    const oid = decodeOne(variant('insert-with-objectid-id', {}, { key: { id: '{"$oid":"596E275826F08B2730779E1F"}' } }));
    assert.deepEqual(oid.key, { _id: '596e275826f08b2730779e1f' });
  });

  it('keeps a $numberLong _id beyond 2^53 exact in key and after', () => {
    const e = decodeOne(variant('insert', { after: '{"_id": {"$numberLong": "9223372036854775807"}}' }, { key: { id: '{"$numberLong": "9223372036854775807"}' } }));
    assert.ok(isLosslessNumber(e.key._id));
    assert.equal(e.key._id.value, '9223372036854775807');
    assert.equal(canonicalJson(e.after?._id), '9223372036854775807');
  });

  it('takes the key from after._id when the message has no key', () => {
    const e = decodeOne(variant('insert', {}, { key: {} }));
    assert.deepEqual(e.key, { _id: 1004 });
  });

  it('decodes a snapshot read as op r with snapshot true', () => {
    const e = decodeOne(inboundFixture(DIR, 'snapshot-read'));
    assert.equal(e.op, 'r');
    assert.equal(e.snapshot, true);
    assert.deepEqual(e.after, { _id: 1001, first_name: 'Sally' });
  });

  it('marks incremental-snapshot events as snapshot', () => {
    const f = fixture(DIR, 'snapshot-read').value as JsonObject;
    const e = decodeOne(variant('snapshot-read', { source: { ...(f.source as JsonObject), snapshot: 'incremental' } }));
    assert.equal(e.snapshot, true);
  });

  it('applies update_full as a full row update and ignores updateDescription', () => {
    const e = decodeOne(inboundFixture(DIR, 'update-full-default'));
    assert.equal(e.op, 'u');
    assert.equal(e.patch, null);
    assert.equal(e.before, null);
    assert.deepEqual(e.after, { _id: 1004, first_name: 'Anne Marie', last_name: 'Kretchmar', email: 'annek@noanswer.org' });
    assert.deepEqual(e.placeholders, []);
  });

  it('keeps both images of an update with pre-image', () => {
    const e = decodeOne(inboundFixture(DIR, 'update-with-pre-image'));
    assert.equal(e.before?.first_name, 'Anne');
    assert.equal(e.after?.first_name, 'Anne Marie');
    assert.equal(e.patch, null);
  });

  it('turns a delta-only update into a patch: updatedFields set, removedFields unset, truncated array a placeholder', () => {
    const e = decodeOne(inboundFixture(DIR, 'update-change-streams-delta-only'));
    assert.equal(e.op, 'u');
    assert.equal(e.after, null);
    assert.deepEqual(e.patch, { set: { first_name: 'Anne Marie' }, unset: ['email'] });
    assert.deepEqual(e.placeholders, ['tags']);
    assert.deepEqual(e.key, { _id: 1004 });
  });

  it('marks the top-level column of a dotted path as a placeholder instead of setting a literal "a.b" column', () => {
    const e = decodeOne(
      variant('update-change-streams-delta-only', {
        updateDescription: { updatedFields: '{"addr.city": "Oslo", "tags.2": "x", "name": "A"}', removedFields: ['meta.old'], truncatedArrays: null },
      }),
    );
    assert.deepEqual(e.patch, { set: { name: 'A' }, unset: [] });
    assert.deepEqual([...e.placeholders].sort(), ['addr', 'meta', 'tags']);
  });

  it('converts Extended JSON values inside updatedFields', () => {
    const e = decodeOne(variant('update-change-streams-delta-only', { updateDescription: { updatedFields: '{"n": {"$numberLong": "9007199254740993"}, "at": {"$date": 0}}' } }));
    const n = e.patch?.set.n;
    assert.ok(isLosslessNumber(n));
    assert.equal(n.value, '9007199254740993');
    assert.equal(e.patch?.set.at, '1970-01-01T00:00:00.000Z');
  });

  it('composes the full after image from a pre-image and a delta, nested paths included', () => {
    const e = decodeOne(
      variant('update-change-streams-delta-only', {
        before: '{"_id": 1004, "name": "A", "addr": {"city": "Bergen", "zip": "5003"}, "tags": ["a", "b", "c"], "email": "x@y"}',
        updateDescription: { updatedFields: '{"addr.city": "Oslo", "name": "B"}', removedFields: ['email'], truncatedArrays: [{ field: 'tags', size: 2 }] },
      }),
    );
    assert.equal(e.patch, null);
    assert.deepEqual(e.placeholders, []);
    assert.deepEqual(e.after, { _id: 1004, name: 'B', addr: { city: 'Oslo', zip: '5003' }, tags: ['a', 'b'] });
    assert.equal(e.before?.name, 'A');
  });

  it('decodes a transactional update with txid lsid:txnNumber', () => {
    const e = decodeOne(inboundFixture(DIR, 'update-in-transaction'));
    const source = (fixture(DIR, 'update-in-transaction').value as JsonObject).source as JsonObject;
    assert.equal(e.txid, `${source.lsid as string}:1`);
  });

  it('decodes a delete without pre-image from the message key alone', () => {
    const e = decodeOne(inboundFixture(DIR, 'delete-without-pre-image'));
    assert.equal(e.op, 'd');
    assert.deepEqual(e.key, { _id: 1004 });
    assert.equal(e.before, null);
    assert.equal(e.after, null);
  });

  it('decodes a delete with pre-image as before', () => {
    const e = decodeOne(inboundFixture(DIR, 'delete-with-pre-image'));
    assert.equal(e.op, 'd');
    assert.equal(e.before?.first_name, 'Anne Marie');
    assert.equal(e.after, null);
  });

  it('decodes a 1.x oplog $set patch into a patch keyed from filter', () => {
    const e = decodeOne(inboundFixture(DIR, 'oplog-1x-update-patch-filter', { key: null }));
    assert.equal(e.op, 'u');
    assert.deepEqual(e.key, { _id: 1004 });
    assert.deepEqual(e.patch, { set: { first_name: 'Anne Marie' }, unset: [] });
    assert.equal(e.after, null);
    assert.equal(e.commitTs, 1558965508000);
  });

  it('decodes 1.x $unset, the 5.0 diff form, and a replacement document', () => {
    const unset = decodeOne(variant('oplog-1x-update-patch-filter', { patch: '{"$v": 1, "$set": {"a.b": 1}, "$unset": {"email": true}}' }));
    assert.deepEqual(unset.patch, { set: {}, unset: ['email'] });
    assert.deepEqual(unset.placeholders, ['a']);
    const diff = decodeOne(variant('oplog-1x-update-patch-filter', { patch: '{"$v": 2, "diff": {"u": {"x": 1}, "i": {"y": 2}, "d": {"z": false}, "saddr": {"u": {"city": "Oslo"}}}}' }));
    assert.deepEqual(diff.patch, { set: { x: 1, y: 2 }, unset: ['z'] });
    assert.deepEqual(diff.placeholders, ['addr']);
    const replace = decodeOne(variant('oplog-1x-update-patch-filter', { patch: '{"_id": {"$numberLong": "1004"}, "first_name": "Anne"}' }));
    assert.equal(replace.patch, null);
    assert.deepEqual(replace.after, { _id: 1004, first_name: 'Anne' });
  });

  it('decodes a 1.x oplog delete keyed from filter', () => {
    const e = decodeOne(inboundFixture(DIR, 'oplog-1x-delete-filter-only', { key: null }));
    assert.equal(e.op, 'd');
    assert.deepEqual(e.key, { _id: 1004 });
  });

  it('reads a 1.x source.h beyond 2^53 without rounding (lossless fixture)', () => {
    const source = (fixture(DIR, 'oplog-1x-update-patch-filter').value as JsonObject).source as JsonObject;
    assert.ok(isLosslessNumber(source.h));
    assert.equal(source.h.value, '1546547425148721999');
  });

  it('rejects malformed messages with specific DecodeErrors', () => {
    assert.throws(() => debeziumMongo.decode(variant('insert', { op: 'x' }), ctx), isDecodeError('bad-op', /c, u, d, r/));
    assert.throws(() => debeziumMongo.decode(variant('insert', { after: '{"_id": ' }), ctx), isDecodeError('invalid-json', /after/));
    assert.throws(() => debeziumMongo.decode(variant('insert', { after: 42 }), ctx), isDecodeError('bad-field', /after/));
    assert.throws(() => debeziumMongo.decode(variant('insert', { after: null }), ctx), isDecodeError('missing-field', /after/));
    assert.throws(
      () => debeziumMongo.decode(variant('update-change-streams-delta-only', { updateDescription: null }), ctx),
      isDecodeError('missing-field', /updateDescription/),
    );
    assert.throws(() => debeziumMongo.decode(variant('delete-without-pre-image', {}, { key: {} }), ctx), isDecodeError('missing-key', /_id/));
    const f = fixture(DIR, 'insert').value as JsonObject;
    assert.throws(
      () => debeziumMongo.decode(variant('insert', { source: { ...(f.source as JsonObject), collection: null } }), ctx),
      isDecodeError('missing-field', /collection/),
    );
    assert.throws(() => debeziumMongo.decode(inboundFixture(DIR, 'insert', { sequence: 'abc' }), ctx), isDecodeError('bad-position'));
  });
});
