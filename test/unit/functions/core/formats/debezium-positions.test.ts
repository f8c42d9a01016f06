import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debezium } from '../../../../../functions/core/formats/debezium.js';
import { debeziumPosition, parsePgSequence, parseSqlServerLsn } from '../../../../../functions/core/formats/debezium-positions.js';
import { cloneJson, type JsonObject, parseJson } from '../../../../../functions/core/json.js';
import { comparePositions, decodePosition, encodePosition, type Position } from '../../../../../functions/core/position.js';
import { decodeContext, inboundFrom, inboundFromFixture, onlyChange, readFixture } from '../../../../helpers/messages.js';

const ctx = decodeContext();

/** Decodes a fixture with some `source` fields replaced, and returns its position. */
function positionOf(name: string, source: JsonObject, top: JsonObject = {}): Position {
  const f = readFixture('debezium', name);
  const value = cloneJson(f.message_value) as JsonObject;
  Object.assign(value.source as JsonObject, source);
  Object.assign(value, top);
  return onlyChange(debezium.decode(inboundFrom(value, { key: f.message_key }), ctx)).position;
}

describe('debezium positions', () => {
  it('orders PostgreSQL events by sequence even when their change LSNs interleave across transactions', () => {
    // T1 wrote at LSN 1200 and committed first; T2 wrote at LSN 1100 and committed later (commit LSN 1300).
    const t1 = positionOf('pg-insert-bare', { sequence: '["500","1200"]', lsn: 1200 });
    const t2 = positionOf('pg-update-no-before', { sequence: '["1300","1100"]', lsn: 1100 });
    assert.ok(comparePositions(t1, t2) < 0, 'the later-committed transaction is newer');
    assert.equal(t1.strength, 'source');
  });

  it('falls back to a weak [0, lsn] position when a PostgreSQL event has no sequence', () => {
    const p = positionOf('pg-insert-bare', { sequence: null });
    assert.deepEqual(p, { tuple: [0n, 33228232n], strength: 'transport' });
  });

  it('keeps PostgreSQL LSNs above 2^53 exact', () => {
    const e = onlyChange(debezium.decode(inboundFromFixture('debezium', 'pg-big-lsn'), ctx));
    assert.deepEqual(e.position.tuple, [18446744073709551000n, 18446744073709551557n]);
    assert.equal(e.txid, '9007199254740993');
    assert.deepEqual(decodePosition(encodePosition(e.position.tuple)), [18446744073709551000n, 18446744073709551557n]);
    const lsnOnly = debeziumPosition('postgresql', parseJson('{"lsn": 18446744073709551557}') as JsonObject, null, inboundFrom({}));
    assert.deepEqual(lsnOnly.tuple, [0n, 18446744073709551557n]);
  });

  it('reads null sequence entries as 0', () => {
    assert.deepEqual(parsePgSequence('[null,"33227000"]'), [0n, 33227000n]);
  });

  it('reads the compact form Debezium writes exactly as the general JSON path reads any spacing of it', () => {
    const lsn = fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.constantFrom(0n, 9n, 10n ** 19n, 10n ** 20n - 1n, 10n ** 20n));
    const zeros = fc.constantFrom('', '0', '000');
    fc.assert(
      fc.property(lsn, lsn, zeros, (a, b, pad) => {
        const compact = parsePgSequence(`["${pad}${a}","${b}"]`);
        const spaced = parsePgSequence(`[ "${pad}${a}" , "${b}" ]`);
        assert.deepEqual(compact, [a, b]);
        assert.deepEqual(spaced, [a, b]);
      }),
      { numRuns: 500 },
    );
    for (const bad of ['["1","2","3"]', '["1"]', '["-1","2"]', '["1","x"]', '["1",2.5]']) {
      assert.throws(() => parsePgSequence(bad), DecodeError, bad);
    }
  });

  it('orders MySQL binlog files by number across a rollover: mysql-bin.000009 < mysql-bin.000010', () => {
    const before = positionOf('mysql-insert', { file: 'mysql-bin.000009', pos: 99999, row: 0 });
    const after = positionOf('mysql-insert', { file: 'mysql-bin.000010', pos: 4, row: 0 });
    assert.ok(comparePositions(before, after) < 0);
  });

  it('orders the rows of one MySQL rows event by row index', () => {
    const first = positionOf('mysql-multi-row-second', { row: 0 });
    const second = onlyChange(debezium.decode(inboundFromFixture('debezium', 'mysql-multi-row-second'), ctx)).position;
    assert.deepEqual(second.tuple, [3n, 1024n, 1n]);
    assert.ok(comparePositions(first, second) < 0);
  });

  it('compares Oracle SCNs as integers, not strings: "9" < "10"', () => {
    const nine = positionOf('oracle-insert', { commit_scn: '9', scn: '9' });
    const ten = positionOf('oracle-insert', { commit_scn: '10', scn: '10' });
    assert.ok(comparePositions(nine, ten) < 0);
  });

  it('breaks Oracle ties inside a transaction with txSeq, else transaction.total_order', () => {
    assert.equal(positionOf('oracle-insert', { txSeq: 7 }).tuple[2], 7n);
    assert.equal(positionOf('oracle-insert', {}, { transaction: { id: 'x', total_order: 3, data_collection_order: 1 } }).tuple[2], 3n);
  });

  it('orders SQL Server events by (commit_lsn, change_lsn, event_serial_no)', () => {
    const insert = onlyChange(debezium.decode(inboundFromFixture('debezium', 'sqlserver-insert'), ctx)).position;
    const update = onlyChange(debezium.decode(inboundFromFixture('debezium', 'sqlserver-update'), ctx)).position;
    const del = onlyChange(debezium.decode(inboundFromFixture('debezium', 'sqlserver-delete'), ctx)).position;
    assert.ok(comparePositions(insert, update) < 0 && comparePositions(update, del) < 0);
    assert.deepEqual(update.tuple.slice(2), [2n]);
  });

  it('parses SQL Server LSNs into integers that sort like the fixed-width text', () => {
    const lsns = ['00000027:00000758:0003', '00000027:00000758:0005', '00000027:00000ac0:0002', '00000028:00000001:0001', 'ffffffff:ffffffff:ffff'];
    const values = lsns.map((l) => parseSqlServerLsn(l));
    for (let i = 1; i < values.length; i++) assert.ok(values[i - 1]! < values[i]!, lsns[i]);
    assert.equal(values[0], (0x27n << 48n) | (0x758n << 16n) | 3n);
    assert.throws(() => parseSqlServerLsn('27-758-3'), DecodeError);
  });
});
