/**
 * Issue 24: the Debezium connectors beyond PostgreSQL, MySQL, SQL Server and Oracle. Each fixture
 * is an example from the connector's own documentation (debezium.io/documentation/reference/stable/
 * connectors/<name>.html, at debezium/debezium@aad5519; the fixture's `source_url` and `notes` say
 * which): data events decode with the connector's documented position, transaction markers and
 * schema changes are control events, and a connector tidemark does not read is quarantined as
 * `unsupported-connector`, never `unknown-format`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cloneJson, type JsonObject, parseJson } from '../../../../../functions/core/json.js';
import type { ControlEvent } from '../../../../../functions/core/types.js';
import { readFixture } from '../../../../helpers/messages.js';
import { changesOf, fixtureRecord, kafkaRecord, normalizerFor, type TableSpec } from './normalizer-kit.js';

const TABLES: readonly TableSpec[] = [
  { source: 'inventory.customers', key: ['id'], keyTypes: { id: 'number' } },
  { source: 'MYSCHEMA.CUSTOMERS', key: ['ID'], keyTypes: { ID: 'number' } },
  { source: 'myschema.customers', key: ['id'], keyTypes: { id: 'number' } },
  { source: 'commerce.customers', key: ['id'], keyTypes: { id: 'number' } },
  { source: 'Users', key: ['id'], keyTypes: { id: 'number' } },
  { source: 'public.orders', key: ['id'] },
  { source: 'DEBEZIUM.CUSTOMERS', key: ['ID'], keyTypes: { ID: 'number' } },
];
const n = normalizerFor(TABLES);

const one = (name: string, sequence = '7') => {
  const events = changesOf(n.normalize(fixtureRecord('debezium', name, { sequence })));
  assert.equal(events.length, 1, name);
  const [e] = events;
  assert.ok(e);
  return e;
};

describe('Debezium data events of the connectors added in issue 24 decode with their documented position', () => {
  for (const [name, format, table, key, tuple, strength, txid, commitTs] of [
    // MariaDB docs "create events": binlog file mariadb-bin.000003, pos 154, row 0, as MySQL.
    ['mariadb-insert', 'debezium-mariadb', 'inventory.customers', { id: 1004 }, [3n, 154n, 0n], 'source', null, 0],
    ['mariadb-update', 'debezium-mariadb', 'inventory.customers', { id: 1004 }, [3n, 484n, 0n], 'source', null, 1465581029100],
    // Db2 docs: [commit_lsn, change_lsn], the hex digits as one integer.
    ['db2-insert', 'debezium-db2', 'MYSCHEMA.CUSTOMERS', { ID: 1005 }, [0x00000027000007580005n, 0x00000027000007580003n], 'source', '00000027:00000758:0005', 1559729468470],
    ['db2-delete', 'debezium-db2', 'MYSCHEMA.CUSTOMERS', { ID: 1005 }, [0x0000002700000db00007n, 0x0000002700000db00005n], 'source', '00000027:00000db0:0007', 1559730445243],
    // Informix docs: decimal LSNs; its source.ts_ms is the connector's clock, so no commit time.
    ['informix-update', 'debezium-informix', 'myschema.customers', { id: 1005 }, [627404540760620n, 627404540485812n, 0n], 'source', '157', null],
    // Vitess docs: without ordered transaction metadata the VGTID orders nothing across shards.
    ['vitess-insert', 'debezium-vitess', 'commerce.customers', { id: 1 }, [7n], 'transport', null, 1559033904000],
    // Spanner docs: [commit ns, record_sequence, mod_number].
    ['spanner-insert', 'debezium-spanner', 'Users', { id: 1 }, [1670955531785000000n, 1n, 0n], 'source', 'transaction_id', 1670955531785],
    // Debezium CockroachDB docs: ts_hlc null, ts_ms the resolved timestamp: transport order, no commit time.
    ['cockroachdb-update', 'debezium-cockroachdb', 'public.orders', { id: '5f8a1c2e-3b4d-4e6f-8a9b-1c2d3e4f5a6b' }, [7n], 'transport', null, null],
    // YashanDB docs: [position_scn, group_lsn, group_offset, batch_row_id].
    ['yashandb-delete', 'debezium-yashandb', 'DEBEZIUM.CUSTOMERS', { ID: 1001 }, [828249295637925888n, 3692924n, 220n, 0n], 'source', '131072047', 1780017300692],
  ] as const) {
    it(`${name}: ${format} ${table} at [${tuple.join(', ')}] (${strength})`, () => {
      const e = one(name);
      assert.equal(e.format, format);
      assert.equal(e.table, table);
      assert.deepEqual(e.key, key);
      assert.deepEqual(e.position, { tuple, strength });
      assert.equal(e.txid, txid);
      assert.equal(e.commitTs, commitTs);
    });
  }

  it('keeps the before image of an update and a delete, and the documented op', () => {
    const update = one('db2-update');
    assert.equal(update.op, 'u');
    assert.equal(update.before?.EMAIL, 'john.doe@example.org');
    assert.equal(update.after?.EMAIL, 'noreply@example.org');
    const del = one('spanner-delete');
    assert.equal(del.op, 'd');
    assert.equal(del.after, null);
    // The Debezium CockroachDB connector sends no before image without diff: the key names the row.
    const crdbDelete = one('cockroachdb-delete');
    assert.equal(crdbDelete.op, 'd');
    assert.equal(crdbDelete.before, null);
  });

  it('reads truncates of MariaDB and YashanDB as table truncates', () => {
    for (const name of ['mariadb-truncate', 'yashandb-truncate']) {
      const e = one(name);
      assert.equal(e.op, 't', name);
      assert.deepEqual(e.key, {});
    }
  });

  it('orders Vitess events by (epoch, rank, total_order) with ordered transaction metadata, rank as a number or base64 Decimal', () => {
    // Vitess docs, "Ordered Transaction Metadata": transaction_rank 68, epoch 0, total_order 1.
    const ordered = normalizerFor([{ source: 'commerce.customers', key: ['pk'] }]);
    const [e] = changesOf(ordered.normalize(fixtureRecord('debezium', 'vitess-insert-ordered-metadata')));
    assert.deepEqual(e?.position, { tuple: [0n, 68n, 1n], strength: 'source' });
    const value = cloneJson(fixtureRecordValue('vitess-insert-ordered-metadata'));
    (value.transaction as JsonObject).transaction_rank = 'RA=='; // 0x44 = 68, JsonConverter's default Decimal form
    const [b] = changesOf(ordered.normalize(kafkaRecord(value, { key: { pk: '2' } })));
    assert.deepEqual(b?.position.tuple, [0n, 68n, 1n]);
  });

  it('reads a snapshot read (op r) of each connector as a snapshot at the snapshot position', () => {
    // Db2 snapshot rows carry the max LSN as commit_lsn and no change_lsn (Db2SnapshotChangeEventSource).
    const value = cloneJson(fixtureRecordValue('db2-insert'));
    Object.assign(value, { op: 'r' });
    Object.assign(value.source as JsonObject, { snapshot: 'true', change_lsn: null });
    const [e] = changesOf(n.normalize(kafkaRecord(value, { key: { ID: 1005 } })));
    assert.equal(e?.op, 'r');
    assert.equal(e?.snapshot, true);
    assert.deepEqual(e?.position.tuple, [0x00000027000007580005n, 0n]);
  });
});

describe('transaction markers and schema changes of the new connectors are control events', () => {
  for (const [name, control, txid] of [
    ['mariadb-tx-begin', 'tx-begin', '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10'],
    ['db2-tx-end', 'tx-end', '00000025:00000d08:0025'],
    ['informix-tx-end', 'tx-end', '571'],
    ['vitess-tx-begin', 'tx-begin', '[{"keyspace":"test_unsharded_keyspace","shard":"0","gtid":"MySQL56/e03ece6c-4c04-11ec-8e20-0242ac110004:1-37"}]'],
    ['yashandb-tx-end', 'tx-end', '5.6.641'],
  ] as const) {
    it(`${name} is a ${control} control event of transaction ${txid.slice(0, 40)}`, () => {
      const result = n.normalize(fixtureRecord('debezium', name));
      assert.ok(result.ok, result.ok ? '' : result.detail);
      const [c, ...rest] = result.events as ControlEvent[];
      assert.equal(rest.length, 0);
      assert.equal(c?.control, control);
      assert.equal(c?.txid, txid);
    });
  }

  for (const [name, table, format] of [
    ['mariadb-schema-change', 'inventory.customers', 'debezium-mariadb'],
    ['db2-schema-change', 'DB2INST1.CUSTOMERS', 'debezium-db2'],
    ['informix-schema-change', 'informix.customers', 'debezium-informix'],
    ['yashandb-schema-change', 'DEBEZIUM.CUSTOMERS', 'debezium-yashandb'],
  ] as const) {
    it(`${name} is a schema control event for ${table}`, () => {
      const result = n.normalize(fixtureRecord('debezium', name));
      assert.ok(result.ok, result.ok ? '' : result.detail);
      const [c] = result.events as ControlEvent[];
      assert.equal(c?.control, 'schema');
      assert.equal(c?.table, table);
      assert.equal(c?.format, format);
    });
  }
});

describe('connectors tidemark does not decode are quarantined as unsupported-connector, naming them', () => {
  it('refuses a Debezium Cassandra envelope by name, listing the connectors it does read', () => {
    const cassandra = kafkaRecord({ op: 'c', after: { id: 1 }, source: { version: '3.6.0.Final', connector: 'cassandra', name: 'test_connector', cluster: 'Test Cluster', keyspace: 'ks', table: 't' } });
    const result = n.normalize(cassandra);
    assert.ok(!result.ok);
    assert.equal(result.reason, 'unsupported-connector');
    assert.match(result.detail, /"cassandra" connector is not supported/);
    assert.match(result.detail, /mariadb, sqlserver, oracle, db2, informix, vitess, spanner, cockroachdb, yashandb/);
  });

  it('no longer quarantines the new connectors as unknown-format', () => {
    for (const name of ['mariadb-insert', 'db2-insert', 'informix-insert', 'vitess-insert', 'spanner-insert', 'cockroachdb-insert', 'yashandb-insert']) {
      assert.ok(n.normalize(fixtureRecord('debezium', name)).ok, name);
    }
  });

  it('refuses a malformed position with bad-position naming the field', () => {
    const value = cloneJson(fixtureRecordValue('db2-insert'));
    Object.assign(value.source as JsonObject, { commit_lsn: '27:758' });
    const result = n.normalize(kafkaRecord(value, { key: { ID: 1005 } }));
    assert.ok(!result.ok);
    assert.equal(result.reason, 'bad-position');
    assert.match(result.detail, /source\.commit_lsn/);
    const big = cloneJson(fixtureRecordValue('spanner-insert'));
    Object.assign(big.source as JsonObject, { ts_ns: parseJson('99999999999999999999999') });
    const late = n.normalize(kafkaRecord(big, { key: { id: '1' } }));
    assert.ok(!late.ok);
    assert.equal(late.reason, 'bad-position');
  });
});

/** A fixture's message value, parsed losslessly. */
function fixtureRecordValue(name: string): JsonObject {
  return readFixture('debezium', name).message_value as JsonObject;
}
