/**
 * Issue 9 item 3: Kafka tombstones (null values) are explicit per `kafkaTombstones`. Since Debezium
 * 2.5, ExtractNewRecordState's default `delete.tombstone.handling.mode=tombstone` makes a DELETE
 * reach the topic only as a tombstone (docs: transformations/event-flattening.html); Debezium's JDBC
 * sink applies such records as deletes with `delete.enabled=true`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyId } from '../../../../../functions/core/keys.js';
import { applyBatches, changesOf, fixtureRecord, kafkaRecord, normalizerFor } from './normalizer-kit.js';

const customers = { source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' as const } };
const TOPIC = 'dbserver1.inventory.customers';
const row = (sequence: string) => fixtureRecord('debezium', 'flattened-default-no-metadata', { sequence });
const tombstone = (sequence: string, options: { topic?: string | null } = {}) => fixtureRecord('debezium', 'flattened-default-tombstone', { sequence, ...options });

describe('kafkaTombstones: "delete" (the default for debezium-flattened)', () => {
  const n = normalizerFor([customers, { source: 'inventory.orders', key: ['id'] }], { format: 'debezium-flattened' });

  it('deletes the record key of the table the topic <prefix>.<schema>.<table> names, at the transport position', () => {
    const [e, ...rest] = changesOf(n.normalize(tombstone('41')));
    assert.equal(rest.length, 0);
    assert.equal(e?.op, 'd');
    assert.equal(e?.table, 'inventory.customers');
    assert.deepEqual(e?.key, { id: 1004 });
    assert.deepEqual(e?.position, { tuple: [41n], strength: 'transport' });
  });

  it('applies: insert, delete via tombstone, and a later re-insert wins again (also across batches)', () => {
    const k = keyId(customers, { id: 1004 });
    const deleted = applyBatches(n, [[row('40')], [tombstone('41')]]);
    assert.equal(deleted.get('inventory.customers', k)?.deleted, true, 'the tombstone deleted the row');
    const reinserted = applyBatches(n, [[row('42')]], deleted);
    assert.equal(reinserted.get('inventory.customers', k)?.deleted, false, 'a later re-insert wins');
    const oneBatch = applyBatches(n, [[row('40'), tombstone('41'), row('42')]]);
    assert.equal(oneBatch.get('inventory.customers', k)?.deleted, false);
    const redelivered = applyBatches(n, [[row('40')]], applyBatches(n, [[row('40'), tombstone('41')]]));
    assert.equal(redelivered.get('inventory.customers', k)?.deleted, true, 'a redelivered older row does not resurrect it');
  });

  it('uses the only configured table when the topic names none', () => {
    const single = normalizerFor([customers], { format: 'debezium-flattened' });
    const [e] = changesOf(single.normalize(tombstone('5', { topic: 'customers-topic' })));
    assert.equal(e?.table, 'inventory.customers');
  });

  it('quarantines, never drops, a tombstone whose table cannot be told, naming what was tried', () => {
    const result = n.normalize(tombstone('5', { topic: 'cdc-all' }));
    assert.equal(result.ok, false);
    assert.ok(!result.ok);
    assert.equal(result.reason, 'tombstone-table-unknown');
    assert.match(result.detail, /cdc-all/);
    assert.match(result.detail, /inventory\.customers, inventory\.orders/);
  });

  it('quarantines a tombstone with no object key as tombstone-key-missing', () => {
    const result = n.normalize(kafkaRecord(null, { topic: TOPIC, key: null }));
    assert.ok(!result.ok);
    assert.equal(result.reason, 'tombstone-key-missing');
  });

  it('maps a CockroachDB array key onto the key columns (envelope=row deletes are null values)', () => {
    const crdb = normalizerFor([{ source: 'users', key: ['city', 'id'], kafkaTombstones: 'delete' }]);
    const [e] = changesOf(crdb.normalize(kafkaRecord(null, { topic: 'users', key: ['seattle', '09265ab7-5f3a-40cb-a543-d37c8c893793'], sequence: '8' })));
    assert.deepEqual(e?.key, { city: 'seattle', id: '09265ab7-5f3a-40cb-a543-d37c8c893793' });
    const short = crdb.normalize(kafkaRecord(null, { topic: 'users', key: ['seattle'] }));
    assert.ok(!short.ok);
    assert.equal(short.reason, 'tombstone-key-missing');
  });

  it('orders a tombstone by the position headers the transform adds (add.headers=source.sequence)', () => {
    const [e] = changesOf(n.normalize(kafkaRecord(null, { topic: TOPIC, key: { id: 1004 }, headers: { __source_sequence: '["33228056","33228232"]' } })));
    assert.deepEqual(e?.position, { tuple: [33228056n, 33228232n], strength: 'source' });
  });
});

describe('kafkaTombstones: "ignore" (the default for the full Debezium envelope and every other format)', () => {
  it('keeps a tombstone as a kafka-tombstone control event with its table, never a delete', () => {
    const n = normalizerFor([customers]);
    const result = n.normalize(tombstone('9'));
    assert.ok(result.ok);
    assert.equal(result.events.length, 1);
    const [c] = result.events;
    assert.equal(c?.kind, 'control');
    assert.ok(c?.kind === 'control');
    assert.equal(c.control, 'kafka-tombstone');
    assert.equal(c.table, 'inventory.customers');
  });

  it('is overridden per table and per pipeline', () => {
    const perTable = normalizerFor([{ ...customers, kafkaTombstones: 'delete' }, { source: 'inventory.orders', key: ['id'] }]);
    assert.equal(changesOf(perTable.normalize(tombstone('9')))[0]?.op, 'd');
    const orders = perTable.normalize(kafkaRecord(null, { topic: 'dbserver1.inventory.orders', key: { id: 1 } }));
    assert.ok(orders.ok && orders.events[0]?.kind === 'control', 'orders keeps the pipeline default');
    const pipeline = normalizerFor([customers], { format: 'debezium-flattened', kafkaTombstones: 'ignore' });
    const ignored = pipeline.normalize(tombstone('9'));
    assert.ok(ignored.ok && ignored.events[0]?.kind === 'control');
  });
});

describe('kafkaTombstones: "auto" (the default under format "auto"; issue 20, item 13)', () => {
  it('deletes with a tombstone once a Debezium flattened record of the table was seen, and says why it ignored one before', () => {
    const n = normalizerFor([customers, { source: 'inventory.orders', key: ['id'] }]);
    const before = n.normalize(tombstone('39'));
    assert.ok(before.ok && before.events[0]?.kind === 'control');
    assert.match(String(before.events[0]?.kind === 'control' ? before.events[0].detail.ignored : ''), /auto and no Debezium flattened record of this table/);
    assert.equal(n.openTombstoneTable(tombstone('39')), 'inventory.customers');
    changesOf(n.normalize(row('40')));
    assert.equal(n.openTombstoneTable(tombstone('41')), null, 'settled once the table is known');
    const [e] = changesOf(n.normalize(tombstone('41')));
    assert.equal(e?.op, 'd');
    assert.deepEqual(e?.key, { id: 1004 });
    const orders = n.normalize(kafkaRecord(null, { topic: 'dbserver1.inventory.orders', key: { id: 1 } }));
    assert.ok(orders.ok && orders.events[0]?.kind === 'control', 'another table is not known to be flattened');
  });

  it('deletes, in one batch, a row whose flattened insert and tombstone arrive together (the default feed of Debezium >= 2.5)', () => {
    const n = normalizerFor([customers]);
    const k = keyId(customers, { id: 1004 });
    const state = applyBatches(n, [[row('40'), tombstone('41')]]);
    assert.equal(state.get('inventory.customers', k)?.deleted, true);
  });

  it('learns a table from what its status row recorded (noteFlattened), and repeats a landed decision (record.tombstone)', () => {
    const n = normalizerFor([customers]);
    n.noteFlattened('inventory.customers');
    assert.equal(changesOf(n.normalize(tombstone('41')))[0]?.op, 'd');
    const fresh = normalizerFor([customers]);
    assert.equal(changesOf(fresh.normalize({ ...tombstone('41'), tombstone: 'delete' }))[0]?.op, 'd', 'replay repeats the delete it applied');
    const ignored = normalizerFor([customers], { kafkaTombstones: 'delete' }).normalize({ ...tombstone('41'), tombstone: 'ignore' });
    assert.ok(ignored.ok && ignored.events[0]?.kind === 'control', 'and the ignore it applied');
  });
});
