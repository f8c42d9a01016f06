import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debezium, debeziumFlattened } from '../../../../../functions/core/formats/debezium.js';
import { decodeContext, inboundFrom, inboundFromFixture, onlyChange } from '../../../../helpers/messages.js';

const ctx = decodeContext({ 'public.customers': ['id'], 'inventory.customers': ['id'] });
const decodeFixture = (name: string, sequence?: string) =>
  onlyChange(debeziumFlattened.decode(inboundFromFixture('debezium', name, sequence ? { sequence } : {}), ctx));

describe('debezium flattened records', () => {
  it('detects rows with __deleted or __op and no Debezium envelope fields', () => {
    for (const name of ['flattened-insert-lsn', 'flattened-update-no-lsn', 'flattened-delete', 'flattened-delete-boolean']) {
      const msg = inboundFromFixture('debezium', name);
      assert.equal(debeziumFlattened.detect(msg), true, name);
      assert.equal(debezium.detect(msg), false, name);
    }
    assert.equal(debeziumFlattened.detect(inboundFrom({ id: 1, name: 'x' })), false);
  });

  it('decodes an insert with __lsn as source order and strips the __ metadata columns', () => {
    const e = decodeFixture('flattened-insert-lsn');
    assert.equal(e.format, 'debezium-flattened');
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'public.customers');
    assert.deepEqual(e.after, { id: 1001, first_name: 'Anne', email: 'annek@noanswer.org' });
    assert.equal(e.before, null);
    assert.deepEqual(e.key, { id: 1001 });
    assert.deepEqual(e.position, { tuple: [33228232n], strength: 'source' });
    assert.equal(e.commitTs, 1735732800000);
    assert.equal(e.snapshot, false);
  });

  it('takes the table from the topic and falls back to transport order without metadata', () => {
    const e = decodeFixture('flattened-update-no-lsn', '4711');
    assert.equal(e.op, 'u');
    assert.equal(e.table, 'public.customers');
    assert.deepEqual(e.position, { tuple: [4711n], strength: 'transport' });
    assert.equal(e.commitTs, null);
    assert.deepEqual(e.after, { id: 1001, first_name: 'Anne Marie', email: 'annek@noanswer.org' });
  });

  it('decodes __deleted "true" as a delete whose before image is the row', () => {
    const e = decodeFixture('flattened-delete');
    assert.equal(e.op, 'd');
    assert.equal(e.table, 'inventory.customers');
    assert.deepEqual(e.before, { id: 1001, first_name: '', email: '' });
    assert.equal(e.after, null);
  });

  it('decodes a boolean __deleted and orders by __source_sequence when present', () => {
    const e = decodeFixture('flattened-delete-boolean');
    assert.equal(e.op, 'd');
    assert.deepEqual(e.position, { tuple: [33228900n, 33229000n], strength: 'source' });
  });

  it('lists TOAST placeholders of a flattened row', () => {
    const msg = inboundFrom({ id: 7, body: '__debezium_unavailable_value', __deleted: 'false' }, { topic: 'srv.public.documents' });
    const e = onlyChange(debeziumFlattened.decode(msg, ctx));
    assert.deepEqual(e.placeholders, ['body']);
    assert.equal(e.table, 'public.documents');
  });

  it('orders MySQL flattened rows by __file, __pos and __row', () => {
    const msg = inboundFrom({ id: 1, __deleted: 'false', __db: 'inventory', __table: 'customers', __file: 'mysql-bin.000010', __pos: 4, __row: 1 });
    assert.deepEqual(onlyChange(debeziumFlattened.decode(msg, ctx)).position.tuple, [10n, 4n, 1n]);
  });

  it('rejects a bad __deleted, a bad __op and a row with no way to name its table', () => {
    assert.throws(() => debeziumFlattened.decode(inboundFrom({ id: 1, __deleted: 'maybe' }, { topic: 'a.b.c' }), ctx), (e: unknown) => {
      return e instanceof DecodeError && e.reason === 'bad-field' && /"true", "false" or a boolean/.test(e.message);
    });
    assert.throws(() => debeziumFlattened.decode(inboundFrom({ id: 1, __op: 'x' }, { topic: 'a.b.c' }), ctx), (e: unknown) => {
      return e instanceof DecodeError && e.reason === 'bad-op';
    });
    assert.throws(() => debeziumFlattened.decode(inboundFrom({ id: 1, __deleted: 'false' }), ctx), (e: unknown) => {
      return e instanceof DecodeError && e.reason === 'missing-field' && /__table/.test(e.message);
    });
  });
});
