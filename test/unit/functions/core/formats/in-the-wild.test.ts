/**
 * Issue 9 items 6 and 7: shapes seen in the wild that were quarantined as `unknown-format`. Each
 * is accepted, or refused with a precise reason (docs/formats.md lists both). The fixtures name
 * the documentation or test data each message comes from.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NO_POSITION } from '../../../../../functions/core/position.js';
import type { ControlEvent } from '../../../../../functions/core/types.js';
import { changesOf, fixtureRecord, kafkaRecord, normalizerFor } from './normalizer-kit.js';

describe('Debezium schema-change records are control messages, one per changed table', () => {
  // Debezium MySQL docs, "schema change topic" example: test/fixtures/debezium/mysql-schema-change.json
  const n = normalizerFor([{ source: 'inventory.customers', key: ['id'] }]);

  it('decodes {source, databaseName, schemaName, ddl, tableChanges} as a schema control event with the DDL', () => {
    const result = n.normalize(fixtureRecord('debezium', 'mysql-schema-change'));
    assert.ok(result.ok, result.ok ? '' : result.detail);
    assert.equal(result.format, 'debezium');
    assert.equal(result.events.length, 1);
    const c = result.events[0] as ControlEvent;
    assert.equal(c.kind, 'control');
    assert.equal(c.control, 'schema');
    assert.equal(c.table, 'inventory.customers');
    assert.equal(c.format, 'debezium-mysql');
    assert.equal(c.commitTs, 1651535750218);
    assert.deepEqual(c.detail, { ddl: 'ALTER TABLE customers ADD middle_name varchar(255) AFTER first_name', databaseName: 'inventory', type: 'ALTER' });
  });

  it('names SQL Server tables by the last two parts of "catalog"."schema"."table", and keeps a DDL with no table change', () => {
    const sqlServer = kafkaRecord({
      source: { version: '2.7.0.Final', connector: 'sqlserver', name: 'server1', ts_ms: 1, db: 'testDB', schema: 'dbo', table: 'customers' },
      ts_ms: 1,
      databaseName: 'testDB',
      schemaName: 'dbo',
      ddl: null,
      tableChanges: [{ type: 'ALTER', id: '"testDB"."dbo"."customers"', table: {} }],
    });
    // Debezium SQL Server docs, "schema change topic": SQL Server has no DDL text and writes ddl null.
    const result = normalizerFor([{ source: 'dbo.customers', key: ['id'] }]).normalize(sqlServer);
    assert.ok(result.ok, result.ok ? '' : result.detail);
    assert.deepEqual(
      result.events.map((e) => (e.kind === 'control' ? [e.control, e.table, e.detail.type] : [])),
      [['schema', 'dbo.customers', 'ALTER']],
    );
    const createDb = n.normalize(
      kafkaRecord({ source: { connector: 'mysql', name: 'mysql', ts_ms: 5, db: 'shop', table: null }, databaseName: 'shop', ddl: 'CREATE DATABASE shop', tableChanges: [] }),
    );
    assert.ok(createDb.ok);
    assert.deepEqual(
      createDb.events.map((e) => (e.kind === 'control' ? [e.control, e.table] : [])),
      [['schema', null]],
    );
  });
});

describe('formats seen in the wild', () => {
  it('reads old-style Debezium records without source.connector (0.x MySQL tutorial)', () => {
    const n = normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }]);
    const [e, ...rest] = changesOf(n.normalize(fixtureRecord('debezium', 'legacy-mysql-0x-insert')));
    assert.equal(rest.length, 0);
    assert.equal(e?.format, 'debezium-mysql');
    assert.equal(e?.op, 'c');
    assert.deepEqual(e?.key, { id: 1004 });
    assert.deepEqual(e?.position, { tuple: [3n, 154n, 0n], strength: 'source' });
    assert.equal(e?.snapshot, true);
  });

  it('upserts the default ExtractNewRecordState output (no __op, no __deleted) by key, table from the topic', () => {
    for (const format of ['auto', 'debezium-flattened']) {
      const n = normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }], { format });
      const [e] = changesOf(n.normalize(fixtureRecord('debezium', 'flattened-default-no-metadata', { sequence: '77' })));
      assert.equal(e?.format, 'debezium-flattened', format);
      assert.equal(e?.op, 'u');
      assert.equal(e?.table, 'inventory.customers');
      assert.deepEqual(e?.key, { id: 1004 });
      assert.deepEqual(e?.after, { id: 1004, first_name: 'Anne', last_name: 'Kretchmar', email: 'annek@noanswer.org' });
      assert.deepEqual(e?.position, { tuple: [77n], strength: 'transport' });
    }
  });

  it('claims a plain row under auto only for a configured table its topic names; else it is unknown-format', () => {
    const auto = normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }]);
    const noTopic = auto.normalize(fixtureRecord('debezium', 'flattened-default-no-metadata', { topic: null }));
    assert.ok(!noTopic.ok);
    assert.equal(noTopic.reason, 'unknown-format');
    const otherTable = auto.normalize(fixtureRecord('debezium', 'flattened-default-no-metadata', { topic: 'dbserver1.inventory.orders' }));
    assert.ok(!otherTable.ok);
    assert.equal(otherTable.reason, 'unknown-format');
    const explicit = normalizerFor([{ source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } }], { format: 'debezium-flattened' });
    const [e] = changesOf(explicit.normalize(fixtureRecord('debezium', 'flattened-default-no-metadata', { topic: null })));
    assert.equal(e?.table, 'inventory.customers', 'an explicit format on a single-table stream names the table');
  });

  it('reads CockroachDB envelope=row: the row keyed by its primary-key array, table from the topic', () => {
    const n = normalizerFor([{ source: 'users', key: ['city', 'id'] }]);
    const result = n.normalize(fixtureRecord('cockroachdb', 'row-envelope', { sequence: '3' }));
    assert.ok(result.ok, result.ok ? '' : result.detail);
    assert.equal(result.format, 'cockroachdb');
    const [e] = changesOf(result);
    assert.equal(e?.op, 'u');
    assert.deepEqual(e?.key, { city: 'seattle', id: '09265ab7-5f3a-40cb-a543-d37c8c893793' });
    assert.equal(e?.after?.name, 'Jacqueline Rojas');
  });

  it('reads the CockroachDB Pub/Sub {Key, Value, Topic} wrapper', () => {
    const n = normalizerFor([{ source: 'users', key: ['city', 'id'] }]);
    const [e] = changesOf(n.normalize(fixtureRecord('cockroachdb', 'pubsub-wrapper')));
    assert.equal(e?.table, 'users');
    assert.deepEqual(e?.key, { city: 'seattle', id: '09265ab7-5f3a-40cb-a543-d37c8c893793' });
    assert.equal(e?.after?.credit_card, '8696486286');
  });

  it('refuses CockroachDB envelope=key_only as unsupported-envelope: no row, no way to tell a delete', () => {
    const n = normalizerFor([{ source: 'users', key: ['city', 'id'] }]);
    const pubsub = n.normalize(fixtureRecord('cockroachdb', 'pubsub-key-only'));
    assert.ok(!pubsub.ok);
    assert.equal(pubsub.reason, 'unsupported-envelope');
    assert.match(pubsub.detail, /key_only/);
    const webhook = n.normalize(kafkaRecord({ payload: [{ key: ['seattle', 'x'], topic: 'users' }], length: 1 }));
    assert.ok(!webhook.ok);
    assert.equal(webhook.reason, 'unsupported-envelope');
  });

  it('refuses the sinkless key_only form {key, table, value: ""} as unsupported-envelope, under auto and under cockroachdb (issue 20, item 14)', () => {
    // CockroachDB docs, "key_only", sinkless changefeeds: test/fixtures/cockroachdb/sinkless-key-only.json
    for (const extra of [{}, { format: 'cockroachdb' }]) {
      const n = normalizerFor([{ source: 'users', key: ['city', 'id'] }, { source: 'orders', key: ['id'] }], extra);
      const result = n.normalize(fixtureRecord('cockroachdb', 'sinkless-key-only'));
      assert.ok(!result.ok);
      assert.equal(result.reason, 'unsupported-envelope');
      assert.match(result.detail, /sinkless row has an empty value \(envelope=key_only\)/);
    }
  });

  it('reads a sinkless row of the wrapped envelope: key and value as JSON text, the table column as the topic', () => {
    // CockroachDB docs, "Responses" (table, key, value columns): test/fixtures/cockroachdb/sinkless-wrapped.json
    const n = normalizerFor([{ source: 'users', key: ['city', 'id'] }, { source: 'orders', key: ['id'] }]);
    const [e, ...rest] = changesOf(n.normalize(fixtureRecord('cockroachdb', 'sinkless-wrapped')));
    assert.equal(rest.length, 0);
    assert.equal(e?.table, 'users');
    assert.deepEqual(e?.key, { city: 'seattle', id: 'fff726cc-13b3-475f-ad92-a21cafee5d3f' });
    assert.equal(e?.after?.name, 'Amanda Lee');
    assert.deepEqual(e?.position, { tuple: [1735732800123456789n, 0n], strength: 'source' });
  });

  it('reads Canal INIT rows (initial load, Flink canal-data-with-init.txt) as snapshot reads with no position', () => {
    const n = normalizerFor([{ source: 'inventory.products2', key: ['id'], keyTypes: { id: 'number' } }]);
    const events = changesOf(n.normalize(fixtureRecord('canal', 'init-first-load')));
    assert.deepEqual(
      events.map((e) => [e.op, e.key, e.snapshot]),
      [
        ['r', { id: 101 }, true],
        ['r', { id: 102 }, true],
      ],
    );
    for (const e of events) assert.deepEqual(e.position, NO_POSITION);
  });
});
