/**
 * Issue 9 item 2: an update that changes the primary key must not leave the old key live. Each
 * message is in the shape the connector really emits; the fixture names its source.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyId } from '../../../../../functions/core/keys.js';
import { applyBatches, changesOf, fixtureRecord, kafkaRecord, normalizerFor } from './normalizer-kit.js';

const summary = (events: ReturnType<typeof changesOf>) => events.map((e) => [e.op, e.key, e.position.tuple]);

describe('key-changing updates tombstone the old key at the same position, then write the new key', () => {
  it('DMS: the old key only in the before image (PostgreSQL source, pk-only filter)', () => {
    // test/fixtures/dms/update-with-before-image-pk-only-pk-changed.json, from crate/commons-codec's DMS test data.
    const n = normalizerFor([{ source: 'public.foo', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('dms', 'update-with-before-image-pk-only-pk-changed', { sequence: '7' })));
    assert.deepEqual(summary(events), [
      ['d', { id: 46 }, [7n]],
      ['u', { id: 45 }, [7n]],
    ]);
    assert.equal(events[1]?.after?.name, 'Jane');
    assert.equal(events[0]?.after, null);
  });

  it('DMS: a MySQL source with the whole row in the before image', () => {
    // AWS DMS Kinesis target docs, BeforeImageSettings with ColumnFilter "all".
    const n = normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('dms', 'update-with-before-image-pk-only-pk-changed-mysql')));
    assert.deepEqual(
      events.map((e) => [e.op, e.key]),
      [
        ['d', { id: 1001 }],
        ['u', { id: 1005 }],
      ],
    );
  });

  it('Maxwell: the previous key in old', () => {
    // maxwells-daemon.io/dataformat update example, with the key column changed.
    const n = normalizerFor([{ source: 'test.e', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('maxwell', 'update-pk-change')));
    assert.deepEqual(summary(events), [
      ['d', { id: 1 }, [6n, 801230n, 0n]],
      ['u', { id: 2 }, [6n, 801230n, 0n]],
    ]);
  });

  it('Canal: the previous key in old[i] (text values, coerced to the declared key type)', () => {
    // Flink's canal-data.txt UPDATE line, with the key column changed.
    const n = normalizerFor([{ source: 'inventory.products', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('canal', 'update-pk-change', { sequence: '12' })));
    assert.deepEqual(summary(events), [
      ['d', { id: 111 }, [12n, 0n]],
      ['u', { id: 112 }, [12n, 0n]],
    ]);
  });

  it('CockroachDB with diff: the previous key in before', () => {
    // CockroachDB changefeed-message-envelopes, "audit changes in data" (diff) update shape.
    const n = normalizerFor([{ source: 'employees', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('cockroachdb', 'wrapped-diff-update-pk-change')));
    assert.deepEqual(
      events.map((e) => [e.op, e.key]),
      [
        ['d', { id: 1 }],
        ['u', { id: 2 }],
      ],
    );
    assert.deepEqual(events[0]?.position, events[1]?.position);
  });

  it('takes key columns the before image does not carry from the new key (Oracle changed-columns-only before images)', () => {
    // DMS with an Oracle source puts only the changed columns in the before image.
    const n = normalizerFor([{ source: 'HR.JOBS', key: ['REGION', 'ID'], keyTypes: { ID: 'number' } }]);
    const record = kafkaRecord({
      data: { REGION: 'EU', ID: 8, TITLE: 'clerk' },
      'before-image': { ID: 7 },
      metadata: { timestamp: '2024-07-29T00:59:07.686557Z', 'record-type': 'data', operation: 'update', 'partition-key-type': 'schema-table', 'schema-name': 'HR', 'table-name': 'JOBS' },
    });
    assert.deepEqual(
      changesOf(n.normalize(record)).map((e) => [e.op, e.key]),
      [
        ['d', { REGION: 'EU', ID: 7 }],
        ['u', { REGION: 'EU', ID: 8 }],
      ],
    );
    const unchanged = kafkaRecord({
      data: { REGION: 'EU', ID: 8, TITLE: 'clerk' },
      'before-image': { TITLE: 'typist' },
      metadata: { timestamp: '2024-07-29T00:59:07.686557Z', 'record-type': 'data', operation: 'update', 'partition-key-type': 'schema-table', 'schema-name': 'HR', 'table-name': 'JOBS' },
    });
    assert.equal(changesOf(n.normalize(unchanged)).length, 1);
  });

  it('leaves an update whose before image holds the same key (or no key column) as one event', () => {
    const maxwell = normalizerFor([{ source: 'test.e', key: ['id'], keyTypes: { id: 'number' } }]);
    assert.equal(changesOf(maxwell.normalize(fixtureRecord('maxwell', 'update-old-previous-values-of-changed-columns-only'))).length, 1);
    const dms = normalizerFor([{ source: 'public.foo', key: ['id'], keyTypes: { id: 'number' } }]);
    assert.equal(changesOf(dms.normalize(fixtureRecord('dms', 'update-with-before-image-all-columns'))).length, 1);
    assert.equal(changesOf(dms.normalize(fixtureRecord('dms', 'update-without-before-image'))).length, 1);
  });

  it('converges: the old key stays deleted, even when an older update of it arrives in a later batch', () => {
    const n = normalizerFor([{ source: 'test.e', key: ['id'], keyTypes: { id: 'number' } }]);
    const move = fixtureRecord('maxwell', 'update-pk-change');
    // An earlier update of id 1 (lower binlog offset), redelivered after the move.
    const older = fixtureRecord('maxwell', 'update-old-previous-values-of-changed-columns-only');
    const store = applyBatches(n, [[move], [older]]);
    const table = { key: ['id'] };
    assert.equal(store.get('test.e', keyId(table, { id: 1 }))?.deleted, true, 'the old key is a tombstone');
    assert.equal(store.get('test.e', keyId(table, { id: 2 }))?.row.comment, 'I am a creature of light.');
  });
});

describe('Debezium sends a key change as delete + tombstone + create; it converges', () => {
  // test/fixtures/debezium/pg-pk-change-{delete,create}.json follow the PostgreSQL connector docs
  // ("primary key updates"): the delete carries header __debezium.newkey, the create __debezium.oldkey.
  const n = normalizerFor([{ source: 'public.customers', key: ['id'], keyTypes: { id: 'number' } }]);
  const del = () => fixtureRecord('debezium', 'pg-pk-change-delete', { sequence: '10' });
  const tomb = () => fixtureRecord('debezium', 'pg-tombstone', { sequence: '11', topic: 'PostgreSQL_server.public.customers' });
  const create = () => fixtureRecord('debezium', 'pg-pk-change-create', { sequence: '12' });
  const table = { key: ['id'] };

  for (const [name, batches] of [
    ['in one batch', [[del(), tomb(), create()]]],
    ['across batches', [[del()], [tomb()], [create()]]],
    ['with the create first and the delete redelivered', [[create()], [del(), tomb()], [del()]]],
  ] as const) {
    it(name, () => {
      const store = applyBatches(n, batches);
      assert.equal(store.get('public.customers', keyId(table, { id: 1001 }))?.deleted, true);
      const moved = store.get('public.customers', keyId(table, { id: 2001 }));
      assert.equal(moved?.deleted, false);
      assert.equal(moved?.row.id, 2001);
    });
  }

  it('treats the tombstone between them as a control message (kafkaTombstones defaults to ignore for the envelope)', () => {
    const result = n.normalize(tomb());
    assert.ok(result.ok);
    assert.deepEqual(
      result.events.map((e) => (e.kind === 'control' ? [e.control, e.table] : [e.op])),
      [['kafka-tombstone', 'public.customers']],
    );
  });
});
