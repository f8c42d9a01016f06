import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { cloneJson, type JsonObject } from '../../../../../functions/core/json.js';
import { NO_POSITION } from '../../../../../functions/core/position.js';
import { debezium, debeziumFlattened } from '../../../../../functions/core/formats/debezium.js';
import { generic } from '../../../../../functions/core/formats/generic.js';
import { decodeContext, inboundFrom, inboundFromFixture, onlyChange, readFixture } from '../../../../helpers/messages.js';

const DIR = 'debezium';
const ctx = decodeContext({ 'public.customers': ['id'], 'inventory.customers': ['id'], 'DEBEZIUM.CUSTOMERS': ['ID'] });

const decodeFixture = (name: string) => onlyChange(debezium.decode(inboundFromFixture(DIR, name), ctx));

/** A fixture's value with `source` fields (and top-level fields) replaced. */
function variant(name: string, source: JsonObject, top: JsonObject = {}) {
  const f = readFixture(DIR, name);
  const value = cloneJson(f.message_value) as JsonObject;
  Object.assign(value.source as JsonObject, source);
  Object.assign(value, top);
  return inboundFrom(value, { key: f.message_key });
}

function assertDecodeError(fn: () => unknown, reason: string, mentions: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof DecodeError, `expected a DecodeError, got ${String(e)}`);
    assert.equal(e.reason, reason);
    assert.match(e.message, mentions);
    return true;
  });
}

describe('debezium detect', () => {
  it('claims envelopes of the postgresql, mysql, sqlserver and oracle connectors', () => {
    for (const name of ['pg-insert-bare', 'pg-insert-schema-wrapped', 'mysql-insert', 'sqlserver-insert', 'oracle-insert', 'pg-truncate', 'pg-message']) {
      assert.equal(debezium.detect(inboundFromFixture(DIR, name)), true, name);
    }
  });

  it('claims transaction metadata and heartbeats', () => {
    for (const name of ['pg-tx-begin', 'pg-tx-end', 'mysql-tx-begin-no-gtid', 'sqlserver-tx-end', 'oracle-tx-begin', 'pg-heartbeat', 'mysql-heartbeat']) {
      assert.equal(debezium.detect(inboundFromFixture(DIR, name)), true, name);
    }
  });

  it('leaves MongoDB envelopes, flattened rows, the generic envelope and tombstones to others', () => {
    const mongo = inboundFrom({ op: 'c', after: '{"_id": 1}', source: { connector: 'mongodb', collection: 'c' } });
    assert.equal(debezium.detect(mongo), false);
    assert.equal(debezium.detect(inboundFromFixture(DIR, 'flattened-insert-lsn')), false);
    assert.equal(debezium.detect(inboundFromFixture('generic', 'teaching-insert')), false);
    assert.equal(debezium.detect(inboundFromFixture(DIR, 'pg-tombstone')), false);
    assert.equal(generic.detect(inboundFromFixture(DIR, 'pg-insert-bare')), false);
    assert.equal(debeziumFlattened.detect(inboundFromFixture(DIR, 'pg-insert-bare')), false);
  });
});

describe('debezium postgresql row events', () => {
  it('decodes an insert with commit time from source.ts_ms, never the top-level ts_ms', () => {
    const e = decodeFixture('pg-insert-bare');
    assert.equal(e.format, 'debezium-postgresql');
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'public.customers');
    assert.deepEqual(e.key, { id: 1001 });
    assert.equal(e.before, null);
    assert.deepEqual(e.after, { id: 1001, first_name: 'Anne', last_name: 'Kretchmar', email: 'annek@noanswer.org', bio: null });
    assert.equal(e.txid, '767');
    assert.equal(e.commitTs, 1735732800000);
    assert.equal(e.snapshot, false);
    assert.deepEqual(e.placeholders, []);
    assert.deepEqual(e.position, { tuple: [33228056n, 33228232n], strength: 'source' });
  });

  it('decodes a schema-wrapped message exactly like its bare payload, and keeps the after schema for drift reporting', () => {
    const wrapped = inboundFromFixture(DIR, 'pg-insert-schema-wrapped');
    assert.ok(wrapped.valueSchema && wrapped.keySchema, 'the helper split schema from payload');
    const { rowSchema, ...event } = onlyChange(debezium.decode(wrapped, ctx));
    assert.deepEqual(event, decodeFixture('pg-insert-bare'));
    assert.deepEqual(
      (rowSchema?.fields as { field: string }[] | undefined)?.map((f) => f.field),
      ['id', 'first_name', 'last_name', 'email', 'bio'],
    );
  });

  it('keeps the transaction block as the event’s membership, grouped by the id its markers carry', () => {
    const e = decodeFixture('pg-insert-with-tx-block');
    assert.deepEqual(e.tx, { id: '769', order: 1, collectionOrder: 1 });
  });

  it('keeps a null before image on an update under REPLICA IDENTITY DEFAULT', () => {
    const e = decodeFixture('pg-update-no-before');
    assert.equal(e.op, 'u');
    assert.equal(e.before, null);
    assert.equal(e.after?.first_name, 'Anne Marie');
    assert.deepEqual(e.position.tuple, [33228300n, 33228416n]);
  });

  it('keeps the full before image on an update under REPLICA IDENTITY FULL', () => {
    const e = decodeFixture('pg-update-full-before');
    assert.equal(e.before?.first_name, 'Anne');
    assert.equal(e.after?.first_name, 'Anne Marie');
  });

  it('decodes a PK-only delete with the before image exactly as delivered and no after', () => {
    const e = decodeFixture('pg-delete-pk-only');
    assert.equal(e.op, 'd');
    assert.deepEqual(e.key, { id: 1001 });
    assert.deepEqual(e.before, { id: 1001, first_name: '', last_name: '', email: '', bio: null });
    assert.equal(e.after, null);
  });

  it('decodes a delete with a full before image', () => {
    const e = decodeFixture('pg-delete-full');
    assert.equal(e.op, 'd');
    assert.equal(e.before?.first_name, 'Anne Marie');
  });

  it('finds the key in the row images when the message has no key', () => {
    const f = readFixture(DIR, 'pg-delete-full');
    const e = onlyChange(debezium.decode(inboundFrom(f.message_value), ctx));
    assert.deepEqual(e.key, { id: 1001 });
  });

  it('marks initial-snapshot reads first/middle/last as snapshot, with the snapshot LSN and null commit LSN as 0', () => {
    for (const name of ['pg-snapshot-first', 'pg-snapshot-middle', 'pg-snapshot-last']) {
      const e = decodeFixture(name);
      assert.equal(e.op, 'r', name);
      assert.equal(e.snapshot, true, name);
      assert.deepEqual(e.position, { tuple: [0n, 33227000n], strength: 'source' }, name);
    }
  });

  it('accepts source.snapshot as the boolean the docs show and as every string of the enum', () => {
    for (const snapshot of [true, 'true', 'first', 'last', 'first_in_data_collection', 'last_in_data_collection']) {
      assert.equal(onlyChange(debezium.decode(variant('pg-insert-bare', { snapshot }), ctx)).snapshot, true, String(snapshot));
    }
    for (const snapshot of [false, 'false', null]) {
      assert.equal(onlyChange(debezium.decode(variant('pg-insert-bare', { snapshot }), ctx)).snapshot, false, String(snapshot));
    }
  });

  it('gives incremental-snapshot reads no position, so they sort below every streamed event', () => {
    const e = decodeFixture('pg-snapshot-incremental');
    assert.equal(e.snapshot, true);
    assert.equal(e.txid, null);
    assert.deepEqual(e.position, NO_POSITION);
  });

  it('gives incremental-snapshot reads of other connectors no position either', () => {
    const e = onlyChange(debezium.decode(variant('mysql-snapshot-first', { snapshot: 'incremental' }), ctx));
    assert.deepEqual(e.position, NO_POSITION);
  });

  it('lists a text TOAST placeholder column and leaves its value as delivered', () => {
    const e = decodeFixture('pg-toast-text');
    assert.deepEqual(e.placeholders, ['body']);
    assert.equal(e.after?.body, '__debezium_unavailable_value');
  });

  it('recognizes the placeholder as bytea base64, text[], int[] bytes, hstore and uuid[]', () => {
    const e = decodeFixture('pg-toast-all-forms');
    assert.deepEqual(e.placeholders, ['attachment', 'tags', 'scores', 'attrs', 'refs']);
    assert.deepEqual(e.after?.refs, ['b68a35a7-17ad-35b3-af2a-ae46edb4545a']);
  });

  it('uses the configured placeholder instead of the default one', () => {
    const custom = decodeContext({}, 'UNCHANGED');
    const msg = variant('pg-toast-text', {}, { after: { id: 7, title: 'x', body: 'UNCHANGED', other: '__debezium_unavailable_value', bin: 'VU5DSEFOR0VE' } });
    assert.deepEqual(onlyChange(debezium.decode(msg, custom)).placeholders, ['body', 'bin']);
  });

  it('decodes a truncate with an empty key and no row images', () => {
    const e = decodeFixture('pg-truncate');
    assert.equal(e.op, 't');
    assert.equal(e.table, 'public.customers');
    assert.deepEqual(e.key, {});
    assert.equal(e.before, null);
    assert.equal(e.after, null);
    assert.deepEqual(e.position.tuple, [33249900n, 33250000n]);
  });

  it('keeps decimals as delivered when no schema came with the message', () => {
    assert.deepEqual(decodeFixture('pg-decimal-precise').after, { id: 5, price: 'BOI=', ratio: { scale: 4, value: 'AeJA' } });
    assert.equal(decodeFixture('pg-decimal-string').after?.price, '12.50');
    assert.equal(decodeFixture('pg-decimal-double').after?.price, 12.5);
  });

  it('decodes both halves of a primary-key change: delete of the old key, create of the new one', () => {
    const del = decodeFixture('pg-pk-change-delete');
    const create = decodeFixture('pg-pk-change-create');
    assert.equal(del.op, 'd');
    assert.deepEqual(del.key, { id: 1001 });
    assert.equal(create.op, 'c');
    assert.deepEqual(create.key, { id: 2001 });
    assert.ok(create.position.tuple[1]! > del.position.tuple[1]!);
    assert.equal(inboundFromFixture(DIR, 'pg-pk-change-create').headers['__debezium.oldkey'], '{"id":1001}');
  });
});

describe('debezium mysql, sqlserver and oracle row events', () => {
  it('names MySQL tables <db>.<table> and orders by (file number, pos, row)', () => {
    const e = decodeFixture('mysql-insert');
    assert.equal(e.format, 'debezium-mysql');
    assert.equal(e.table, 'inventory.customers');
    assert.equal(e.txid, null);
    assert.deepEqual(e.position, { tuple: [3n, 154n, 0n], strength: 'source' });
    assert.equal(decodeFixture('mysql-update').before?.first_name, 'Anne');
    assert.equal(decodeFixture('mysql-delete').op, 'd');
    assert.equal(decodeFixture('mysql-decimal-datetime').after?.amount, 'E4c=');
  });

  it('uses the GTID as the MySQL transaction id when there is one', () => {
    const e = decodeFixture('mysql-insert-gtid-tx-block');
    assert.equal(e.txid, '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10');
    assert.deepEqual(e.position.tuple, [4n, 3214n, 0n]);
  });

  it('marks MySQL snapshot reads and truncates', () => {
    assert.equal(decodeFixture('mysql-snapshot-first').snapshot, true);
    assert.equal(decodeFixture('mysql-snapshot-last').snapshot, true);
    const t = decodeFixture('mysql-truncate');
    assert.equal(t.op, 't');
    assert.deepEqual(t.key, {});
  });

  it('names SQL Server tables <schema>.<table> and uses commit_lsn as the transaction id', () => {
    const e = decodeFixture('sqlserver-insert');
    assert.equal(e.format, 'debezium-sqlserver');
    assert.equal(e.table, 'dbo.customers');
    assert.equal(e.txid, '00000027:00000758:0005');
    assert.equal(e.position.tuple.length, 3);
    assert.equal(e.position.tuple[2], 1n);
    assert.equal(decodeFixture('sqlserver-update').before?.email, 'john.doe@example.org');
    assert.equal(decodeFixture('sqlserver-delete').after, null);
  });

  it('reads a SQL Server snapshot row with null change_lsn and serial as 0', () => {
    const e = decodeFixture('sqlserver-snapshot');
    assert.equal(e.snapshot, true);
    assert.deepEqual(e.position.tuple.slice(1), [0n, 0n]);
  });

  it('names Oracle tables <schema>.<table> and orders by (commit_scn, scn, txSeq)', () => {
    const e = decodeFixture('oracle-insert');
    assert.equal(e.format, 'debezium-oracle');
    assert.equal(e.table, 'DEBEZIUM.CUSTOMERS');
    assert.deepEqual(e.key, { ID: 1004 });
    assert.equal(e.txid, '0a001b00f3120000');
    assert.deepEqual(e.position, { tuple: [2122187n, 2122185n, 0n], strength: 'source' });
    assert.equal(decodeFixture('oracle-update').before?.EMAIL, 'annek@noanswer.org');
    assert.equal(decodeFixture('oracle-delete').op, 'd');
    assert.equal(decodeFixture('oracle-decimal').after?.AMOUNT, '/gw=');
  });

  it('positions an Oracle snapshot row without commit_scn at [scn, scn, 0]', () => {
    const e = decodeFixture('oracle-snapshot');
    assert.equal(e.snapshot, true);
    assert.equal(e.txid, null);
    assert.deepEqual(e.position.tuple, [2120000n, 2120000n, 0n]);
    assert.equal(decodeFixture('oracle-truncate').op, 't');
  });
});

describe('debezium decode errors', () => {
  it('rejects an unknown op with bad-op naming the expected ops', () => {
    assertDecodeError(() => debezium.decode(variant('pg-insert-bare', {}, { op: 'x' }), ctx), 'bad-op', /expected op to be one of "c", "u", "d", "r", "t" or "m", got "x"/);
  });

  it('rejects a PostgreSQL event without source.schema with missing-field naming the field', () => {
    assertDecodeError(() => debezium.decode(variant('pg-insert-bare', { schema: null }), ctx), 'missing-field', /source\.schema/);
  });

  it('rejects a MySQL event without source.file or source.db', () => {
    assertDecodeError(() => debezium.decode(variant('mysql-insert', { file: null }), ctx), 'missing-field', /source\.file .*binlog file name/);
    assertDecodeError(() => debezium.decode(variant('mysql-insert', { db: '' }), ctx), 'missing-field', /source\.db/);
  });

  it('rejects a PostgreSQL event with neither sequence nor lsn, and a malformed sequence', () => {
    assertDecodeError(() => debezium.decode(variant('pg-insert-bare', { sequence: null, lsn: null }), ctx), 'missing-field', /source\.sequence .* or source\.lsn/);
    assertDecodeError(() => debezium.decode(variant('pg-insert-bare', { sequence: '[1,2,3]' }), ctx), 'bad-position', /JSON array of two LSNs/);
  });

  it('rejects a message without source, or from a connector this decoder does not handle', () => {
    assertDecodeError(() => debezium.decode(inboundFrom({ op: 'c', after: { id: 1 } }), ctx), 'missing-field', /source is nothing/);
    const mongo = inboundFrom({ op: 'c', after: '{}', source: { connector: 'mongodb' } });
    assertDecodeError(() => debezium.decode(mongo, ctx), 'unsupported-connector', /MongoDB events have their own decoder: set format debezium-mongodb/);
  });

  it('rejects an insert whose after image is missing', () => {
    assertDecodeError(() => debezium.decode(variant('pg-insert-bare', {}, { after: null }), ctx), 'missing-field', /expected after to hold the new row/);
  });
});
