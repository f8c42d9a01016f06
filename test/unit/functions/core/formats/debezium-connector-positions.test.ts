/**
 * The position rules of the Debezium connectors added in issue 24, on the edges the documented
 * examples (test/fixtures/debezium/, each citing its docs page) do not reach: Db2's 16-byte LSNs,
 * Informix's repeated change_lsn before debezium/dbz#2336, Vitess ranks in both Decimal forms,
 * a CockroachDB `ts_hlc` when the connector sets one, and the position ranges of limits.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debezium } from '../../../../../functions/core/formats/debezium.js';
import { parseHexLsn } from '../../../../../functions/core/formats/debezium-positions-commit.js';
import { binlogFileNo } from '../../../../../functions/core/formats/kit.js';
import { cloneJson, type JsonObject } from '../../../../../functions/core/json.js';
import { checkPosition } from '../../../../../functions/core/limits.js';
import { comparePositions, type Position, sourcePosition } from '../../../../../functions/core/position.js';
import { decodeContext, inboundFrom, onlyChange, readFixture } from '../../../../helpers/messages.js';

const ctx = decodeContext();

/** The decoded change of a fixture with `source` (and top-level) fields replaced. */
function changeOf(name: string, source: JsonObject, top: JsonObject = {}) {
  const f = readFixture('debezium', name);
  const value = cloneJson(f.message_value) as JsonObject;
  Object.assign(value.source as JsonObject, source);
  Object.assign(value, top);
  return onlyChange(debezium.decode(inboundFrom(value, { key: f.message_key, sequence: '9' }), ctx));
}

const reasonOf = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (e) {
    if (e instanceof DecodeError) return e.reason;
    throw e;
  }
};

describe('Db2 LSNs', () => {
  it('reads 10-byte and 16-byte LSNs as the integer of their bytes, which orders like the bytes', () => {
    assert.equal(parseHexLsn('00000027:00000758:0005', 'lsn', [4, 16]), 0x00000027000007580005n);
    assert.equal(parseHexLsn('00000000:00004a5e:000000000006a0b0', 'lsn', [4, 16]), 0x0000000000004a5e000000000006a0b0n);
    const hex = fc.stringMatching(/^[0-9a-f]{32}$/);
    fc.assert(
      fc.property(hex, hex, (a, b) => {
        const lsn = (h: string) => `${h.slice(0, 8)}:${h.slice(8, 16)}:${h.slice(16)}`;
        const x = parseHexLsn(lsn(a), 'lsn', [4, 16]);
        const y = parseHexLsn(lsn(b), 'lsn', [4, 16]);
        assert.equal(x < y, a < b);
      }),
    );
  });

  it('refuses a tail of another width, a short LSN and overlong text as bad-position', () => {
    for (const text of ['00000027:00000758:00051', '27:758', '00000027:00000758:', `${'0'.repeat(70)}`]) {
      assert.equal(reasonOf(() => parseHexLsn(text, 'source.commit_lsn', [4, 16])), 'bad-position', text);
    }
  });
});

describe('Informix positions', () => {
  it('tells apart events of one transaction that repeat a change_lsn (before dbz#2336) by transaction.total_order', () => {
    const first = changeOf('informix-insert', {}, { transaction: { id: '157', total_order: 1, data_collection_order: 1 } });
    const second = changeOf('informix-update', {}, { transaction: { id: '157', total_order: 2, data_collection_order: 2 } });
    assert.deepEqual(first.position.tuple.slice(0, 2), second.position.tuple.slice(0, 2), 'the documented events share an LSN pair');
    assert.ok(comparePositions(first.position, second.position) < 0);
  });

  it('requires commit_lsn, and reads a missing change_lsn (a snapshot row) as 0', () => {
    assert.equal(reasonOf(() => changeOf('informix-insert', { commit_lsn: null })), 'missing-field');
    assert.deepEqual(changeOf('informix-insert', { change_lsn: null }, { op: 'r' }).position.tuple, [627404540760620n, 0n, 0n]);
  });
});

describe('Vitess positions', () => {
  const ordered = (rank: unknown) => changeOf('vitess-insert', {}, { transaction: { id: 'v', total_order: 2, data_collection_order: 1, transaction_epoch: 1, transaction_rank: rank as JsonObject } });

  it('reads transaction_rank as a number or as base64 Decimal bytes, and refuses a negative or malformed one', () => {
    assert.deepEqual(ordered(853).position, sourcePosition(1n, 853n, 2n));
    assert.deepEqual(ordered('A1U=').position, sourcePosition(1n, 853n, 2n)); // 0x0355 = 853
    assert.equal(reasonOf(() => ordered('/w==')), 'bad-position'); // 0xff: negative in two's complement
    assert.equal(reasonOf(() => ordered('not base64!')), 'bad-position');
  });

  it('orders a later epoch above any rank of an earlier one (a connector generation change)', () => {
    const before = changeOf('vitess-update', {}, { transaction: { id: 'a', total_order: 1, transaction_epoch: 0, transaction_rank: 900 } });
    const after = changeOf('vitess-delete', {}, { transaction: { id: 'b', total_order: 1, transaction_epoch: 1, transaction_rank: 3 } });
    assert.ok(comparePositions(before.position, after.position) < 0);
  });
});

describe('Debezium CockroachDB positions', () => {
  it('uses source.ts_hlc as the HLC position and commit time when the connector sets it', () => {
    const e = changeOf('cockroachdb-insert', { ts_hlc: '1705312200000000001.0000000002' });
    assert.deepEqual(e.position, sourcePosition(1705312200000000001n, 2n));
    assert.equal(e.commitTs, 1705312200000);
  });

  it('refuses a ts_hlc that is not an HLC string', () => {
    assert.equal(reasonOf(() => changeOf('cockroachdb-insert', { ts_hlc: 'yesterday' })), 'bad-position');
    assert.equal(reasonOf(() => changeOf('cockroachdb-insert', { ts_hlc: 17 })), 'bad-position');
  });
});

describe('binlog file names (MySQL, MariaDB, Maxwell, flattened) are read in linear time', () => {
  it('reads the trailing number by a scan, and refuses a name longer than MySQL allows before any pattern runs', () => {
    assert.equal(binlogFileNo('mariadb-bin.000003', 'f'), 3n);
    assert.equal(binlogFileNo('mysql-bin.000042 ', 'f'), 42n);
    assert.equal(binlogFileNo('no-number', 'f'), null);
    // A run of digits with no number at the end took seconds through /(\d+)\s*$/: now it is refused at once.
    const poison = `${'1'.repeat(2_000_000)}x`;
    assert.equal(reasonOf(() => changeOf('mariadb-insert', { file: poison })), 'bad-position');
    assert.equal(reasonOf(() => binlogFileNo(poison, 'f')), 'bad-position');
    assert.equal(reasonOf(() => changeOf('mariadb-insert', { file: 'mariadb-bin' })), 'bad-position');
  });
});

describe('position ranges of the new formats (limits.ts POSITION_RANGES)', () => {
  const U64 = (1n << 64n) - 1n;
  for (const [format, pos, expected] of [
    ['debezium-mariadb', sourcePosition(3n, 154n, 0n), null],
    ['debezium-mariadb', sourcePosition(1n << 31n, 154n, 0n), 'bad-position'],
    ['debezium-db2', sourcePosition((1n << 128n) - 1n, 0n), null],
    ['debezium-db2', sourcePosition(1n << 128n, 0n), 'bad-position'],
    ['debezium-informix', sourcePosition(627404540760620n, 627404540485812n, 0n), null],
    ['debezium-informix', sourcePosition(1n << 63n, 0n, 0n), 'bad-position'],
    ['debezium-informix', sourcePosition(1n, 2n), 'bad-position'],
    ['debezium-vitess', sourcePosition(0n, 68n, 1n), null],
    ['debezium-vitess', { tuple: [7n], strength: 'transport' }, null],
    ['debezium-spanner', sourcePosition(1670955531785000000n, 1n, 0n), null],
    ['debezium-spanner', sourcePosition(1670955531785n, 1n, 0n), 'bad-position'],
    ['debezium-cockroachdb', sourcePosition(1705312200000000001n, 2n), null],
    ['debezium-cockroachdb', { tuple: [7n], strength: 'transport' }, null],
    ['debezium-yashandb', sourcePosition(828249295637925888n, 3692924n, 220n, 0n), null],
    ['debezium-yashandb', sourcePosition(U64 + 1n, 0n, 0n, 0n), 'bad-position'],
    ['aurora-dsql', sourcePosition(1705318200000000000n, 1n << 200n), null],
    ['aurora-dsql', sourcePosition(1705318200000000000n, 1n << 520n), 'bad-position'],
  ] as [string, Position, string | null][]) {
    it(`${format} [${pos.tuple.map((v) => (String(v).length > 12 ? `${String(v).length} digits` : String(v))).join(', ')}] ${pos.strength}: ${expected ?? 'accepted'}`, () => {
      assert.equal(reasonOf(() => checkPosition(format, pos)), expected);
    });
  }
});
