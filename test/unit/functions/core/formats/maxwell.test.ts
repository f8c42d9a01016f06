import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { maxwell } from '../../../../../functions/core/formats/maxwell.js';
import type { JsonObject } from '../../../../../functions/core/json.js';
import { comparePositions } from '../../../../../functions/core/position.js';
import type { ChangeEvent, ControlEvent, InboundMessage, NormalizedEvent } from '../../../../../functions/core/types.js';
import { context, fixture, inbound, inboundFixture } from '../../../../helpers/inbound.js';

const DIR = 'maxwell';
const ctx = context({ 'test.e': ['id'] });

function one(events: NormalizedEvent[]): ChangeEvent {
  assert.equal(events.length, 1);
  assert.equal(events[0]!.kind, 'change');
  return events[0] as ChangeEvent;
}

const decode = (m: InboundMessage) => maxwell.decode(m, ctx);
const fx = (name: string, sequence = '1') => inboundFixture(DIR, name, { sequence });
function variant(name: string, patch: JsonObject, key?: JsonObject | null): InboundMessage {
  const f = fixture(DIR, name);
  return inbound({ ...(f.value as JsonObject), ...patch }, { key: key === undefined ? f.key : key });
}
const isDecodeError = (reason: string, pattern?: RegExp) => (e: unknown) =>
  e instanceof DecodeError && e.reason === reason && (pattern === undefined || pattern.test(e.message));

describe('maxwell decoder', () => {
  it('detects Maxwell rows, bootstrap markers and DDL, but not Canal flat messages', () => {
    for (const name of ['insert-with-binlog-position-and-xoffset', 'delete', 'bootstrap-start', 'bootstrap-insert']) assert.ok(maxwell.detect(fx(name)), name);
    assert.ok(maxwell.detect(inbound({ type: 'table-alter', database: 'test', table: 'e', ts: 1477053300, sql: 'ALTER TABLE e ADD c INT' })));
    assert.equal(maxwell.detect(inbound({ database: 'inventory', table: 'p', type: 'INSERT', isDdl: false, es: 1, ts: 1, data: [] })), false);
  });

  it('decodes an insert: table db.table, key from the Kafka key with pk. stripped, position (file#, offset, xoffset)', () => {
    const e = one(decode(fx('insert-with-binlog-position-and-xoffset')));
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'test.e');
    assert.deepEqual(e.key, { id: 1 });
    assert.equal(e.before, null);
    assert.equal(e.after?.comment, 'I am a creature of light.');
    assert.deepEqual(e.position, { tuple: [6n, 800911n, 0n], strength: 'source' });
    assert.equal(e.commitTs, 1477053217000);
    assert.equal(e.txid, '23396');
    assert.equal(e.snapshot, false);
  });

  it('decodes an update with before = {...data, ...old}', () => {
    const e = one(decode(fx('update-old-previous-values-of-changed-columns-only')));
    assert.equal(e.op, 'u');
    assert.deepEqual(e.before, { id: 1, m: 4.2341, c: '2016-10-21 05:33:37.523000', comment: 'I am a creature of light.' });
    assert.equal(e.after?.m, 5.444);
    assert.deepEqual(e.position.tuple, [6n, 801230n, 0n]);
  });

  it('decodes an update without old with before equal to data (no column changed)', () => {
    const e = one(decode(variant('update-old-previous-values-of-changed-columns-only', { old: null })));
    assert.deepEqual(e.before, e.after);
  });

  it('decodes a delete with before = data and after null', () => {
    const e = one(decode(fx('delete')));
    assert.equal(e.op, 'd');
    assert.equal(e.after, null);
    assert.equal(e.before?.m, 5.444);
    assert.deepEqual(e.key, { id: 1 });
  });

  it('reads the array key format and the GTID fixture', () => {
    const e = one(decode(fx('insert-with-gtid-and-array-key')));
    assert.deepEqual(e.key, { id: 2 });
    assert.deepEqual(e.position.tuple, [6n, 802000n, 0n]);
  });

  it('prefers primary_key + primary_key_columns from the value over the Kafka key', () => {
    const e = one(decode(variant('delete', { primary_key: [9], primary_key_columns: ['id'] }, null)));
    assert.deepEqual(e.key, { id: 9 });
  });

  it('orders rows of one transaction by xoffset, and across events by file number then offset', () => {
    const at = (position: string, xoffset?: number) =>
      one(decode(variant('insert-with-binlog-position-and-xoffset', { position, xoffset: xoffset ?? null }))).position;
    assert.ok(comparePositions(at('master.000006:800911', 0), at('master.000006:800911', 1)) < 0);
    assert.ok(comparePositions(at('master.000006:900000', 5), at('master.000007:4')) < 0);
    assert.ok(comparePositions(at('master.000009:999999'), at('master.000010:4')) < 0);
  });

  it('falls back to transport order (weak) when position is absent', () => {
    const e = one(decode(variant('insert-with-binlog-position-and-xoffset', { position: null, xoffset: null })));
    assert.equal(e.position.strength, 'transport');
  });

  it('decodes bootstrap-insert as a snapshot read with no position (fills untouched keys only), keyed by nothing when the table has no PK', () => {
    const e = one(decode(fx('bootstrap-insert', '77')));
    assert.equal(e.op, 'r');
    assert.equal(e.snapshot, true);
    assert.equal(e.table, 'fooDB.barTable');
    assert.deepEqual(e.key, {});
    assert.deepEqual(e.position, { tuple: [], strength: 'none' });
    assert.equal(e.commitTs, 1450557744000);
  });

  it('decodes bootstrap-start and bootstrap-complete as control events', () => {
    for (const name of ['bootstrap-start', 'bootstrap-complete']) {
      const [c] = decode(fx(name)) as ControlEvent[];
      assert.equal(c!.kind, 'control');
      assert.equal(c!.control, 'control');
      assert.equal(c!.table, 'fooDB.barTable');
      assert.deepEqual(c!.detail, { type: name });
    }
  });

  it('decodes DDL types as schema control events (database-level DDL has no table)', () => {
    const [alter] = decode(inbound({ type: 'table-alter', database: 'test', table: 'e', ts: 1477053300, sql: 'ALTER TABLE e ADD c INT' })) as ControlEvent[];
    assert.equal(alter!.control, 'schema');
    assert.equal(alter!.table, 'test.e');
    const [db] = decode(inbound({ type: 'database-create', database: 'shop', ts: 1477053300, sql: 'CREATE DATABASE shop' })) as ControlEvent[];
    assert.equal(db!.control, 'schema');
    assert.equal(db!.table, null);
  });

  it('rejects malformed messages with specific DecodeErrors', () => {
    assert.throws(() => decode(variant('delete', { type: 'upsert' })), isDecodeError('bad-op', /upsert/));
    assert.throws(() => decode(variant('delete', { position: 'master.000006' })), isDecodeError('bad-position', /file>:<offset/));
    assert.throws(() => decode(variant('delete', { position: 'master:12' })), isDecodeError('bad-position', /numeric suffix/));
    assert.throws(() => decode(variant('delete', { xoffset: -1 })), isDecodeError('bad-position', /xoffset/));
    assert.throws(() => decode(variant('delete', { data: null })), isDecodeError('missing-field', /"data"/));
    assert.throws(() => decode(variant('delete', { table: null })), isDecodeError('missing-field', /table/));
  });
});
