import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { debezium } from '../../../../../functions/core/formats/debezium.js';
import { transactionGroupId } from '../../../../../functions/core/formats/debezium-control.js';
import { decodeContext, inboundFrom, inboundFromFixture, onlyChange, onlyControl } from '../../../../helpers/messages.js';

const DIR = 'debezium';
const ctx = decodeContext({ 'public.customers': ['id'] });
const control = (name: string) => onlyControl(debezium.decode(inboundFromFixture(DIR, name), ctx));

describe('debezium transaction metadata', () => {
  it('decodes a PostgreSQL BEGIN with the txId part of "<txId>:<lsn>" as the transaction id', () => {
    const e = control('pg-tx-begin');
    assert.equal(e.control, 'tx-begin');
    assert.equal(e.txid, '769');
    assert.equal(e.position, null);
    assert.equal(e.commitTs, 1735732807000);
    assert.deepEqual(e.detail, { status: 'BEGIN', id: '769:33228600' });
  });

  it('decodes an END with its event counts, and groups it with the data events of the same txId', () => {
    const end = control('pg-tx-end');
    assert.equal(end.control, 'tx-end');
    assert.equal(end.detail.eventCount, 2);
    assert.deepEqual(end.detail.dataCollections, [
      { data_collection: 'public.customers', event_count: 1 },
      { data_collection: 'public.orders', event_count: 1 },
    ]);
    const data = onlyChange(debezium.decode(inboundFromFixture(DIR, 'pg-insert-with-tx-block'), ctx));
    assert.equal(end.txid, data.txid);
  });

  it('keeps MySQL GTIDs, MySQL file/pos ids, SQL Server LSNs and Oracle XIDs whole', () => {
    assert.equal(control('mysql-tx-begin-gtid').txid, '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10');
    assert.equal(control('mysql-tx-end-gtid').control, 'tx-end');
    assert.equal(control('mysql-tx-begin-no-gtid').txid, 'file=mysql-bin.000003,pos=1500');
    assert.equal(control('sqlserver-tx-begin').txid, '00000025:00000d08:0025');
    assert.equal(control('sqlserver-tx-end').detail.eventCount, 2);
    assert.equal(control('oracle-tx-begin').txid, '0a001b00f3120000');
  });

  it('groups only the PostgreSQL "<digits>:<digits>" id shape', () => {
    assert.equal(transactionGroupId('571:53195829'), '571');
    assert.equal(transactionGroupId('0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10'), '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10');
    assert.equal(transactionGroupId('00000025:00000d08:0025'), '00000025:00000d08:0025');
  });

  it('does not let the transaction block change the position of a data event', () => {
    const e = onlyChange(debezium.decode(inboundFromFixture(DIR, 'pg-insert-with-tx-block'), ctx));
    assert.deepEqual(e.position.tuple, [33228416n, 33228700n]);
  });
});

describe('debezium heartbeats and messages', () => {
  it('decodes a heartbeat on the heartbeat topic with no position and no commit time', () => {
    for (const name of ['pg-heartbeat', 'mysql-heartbeat']) {
      const e = control(name);
      assert.equal(e.control, 'heartbeat', name);
      assert.equal(e.position, null);
      assert.equal(e.commitTs, null);
      assert.equal(e.detail.tsMs, 1735733400000);
    }
  });

  it('treats a value that is exactly {ts_ms} as a heartbeat whatever the topic', () => {
    const msg = inboundFrom({ ts_ms: 1735733400000 }, { topic: 'somewhere.else' });
    assert.equal(debezium.detect(msg), true);
    assert.equal(onlyControl(debezium.decode(msg, ctx)).control, 'heartbeat');
  });

  it('decodes op "m" as a message control event with its prefix, content, txid and position', () => {
    const e = control('pg-message');
    assert.equal(e.control, 'message');
    assert.equal(e.format, 'debezium-postgresql');
    assert.equal(e.table, null);
    assert.equal(e.txid, '801');
    assert.equal(e.commitTs, 1735732841000);
    assert.deepEqual(e.detail, { prefix: 'foo', content: 'Ymfy' });
    assert.deepEqual(e.position?.tuple, [33250900n, 33251000n]);
  });
});
