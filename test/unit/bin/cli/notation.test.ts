/**
 * Human output reads positions in their source's own notation (the encoded form stays for --json)
 * and keys as typed values sorted by their column types.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareKeys, compareNumberText, keyText, positionText } from '../../../../bin/cli/notation.js';
import { encodePosition } from '../../../../functions/core/position.js';

const pos = (...t: bigint[]) => encodePosition(t);

describe('positions in their source notation', () => {
  it('shows each format as its source writes it', () => {
    assert.equal(positionText(pos(33_228_000n, 23_808_840n), { format: 'debezium-postgresql' }), 'LSN 0/16B4B48');
    assert.equal(positionText(pos(3n, 4567n, 0n), { format: 'debezium-mysql' }), 'binlog.000003:4567');
    assert.equal(positionText(pos(3n, 4567n, 2n), { format: 'maxwell' }), 'binlog.000003:4567 row 2');
    const lsn = (0x2dn << 48n) | (0xbd0n << 16n) | 3n;
    assert.equal(positionText(pos(lsn, lsn, 1n), { format: 'debezium-sqlserver' }), 'LSN 0000002d:00000bd0:0003 #1');
    assert.equal(positionText(pos(30_198_340n, 30_198_344n, 0n), { format: 'debezium-oracle' }), 'SCN 30198344');
    assert.equal(positionText(pos(1_735_732_800n, 3n), { format: 'debezium-mongodb' }), 'Timestamp(1735732800, 3)');
    assert.equal(positionText(pos(1_735_732_800_123_456_789n, 2n), { format: 'cockroachdb' }), 'HLC 1735732800123456789.0000000002');
    assert.equal(positionText(pos(3n, 154n, 0n), { format: 'debezium-flattened' }), 'binlog.000003:154');
    assert.equal(positionText(pos(0n, 33_228_232n), { format: 'debezium-postgresql+debezium-control' }), 'LSN 0/1FB05C8');
  });

  it('shows transport order as a Kinesis sequence or a Kafka offset', () => {
    const seq = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898n;
    assert.equal(positionText(pos(seq), { format: 'dms', ordering: 'transport' }), `Kinesis seq ${seq}`);
    assert.equal(positionText(pos(11n, 0n), { format: 'canal', ordering: 'transport', transport: 'msk' }), 'Kafka offset 11');
    assert.equal(positionText(pos(2n ** 32n, 42n), { format: 'debezium-mongodb', ordering: 'transport', transport: 'msk' }), 'Kafka offset 42');
  });

  it('falls back to the tuple for an unknown format, and shows no position as -', () => {
    assert.equal(positionText(pos(1n, 2n)), '[1, 2]');
    assert.equal(positionText(''), '-');
    assert.equal(positionText(null), '-');
    assert.equal(positionText('not-a-position'), 'not-a-position');
  });
});

describe('keys as typed values', () => {
  const orders = { key: ['order_id'], keyTypes: { order_id: 'number' as const } };
  const lines = { key: ['region', 'line'], keyTypes: { line: 'number' as const } };

  it('prints numbers bare and strings quoted, from a key object or canonical text', () => {
    assert.equal(keyText(orders, { order_id: 7 }), 'order_id=7');
    assert.equal(keyText(orders, '["1"]'), 'order_id=1');
    assert.equal(keyText(lines, '["eu","12"]'), 'region="eu", line=12');
  });

  it('sorts number columns numerically and string columns by code point', () => {
    const ids = ['["10"]', '["2"]', '["1"]', '["11"]'];
    assert.deepEqual([...ids].sort((a, b) => compareKeys(orders, a, b)), ['["1"]', '["2"]', '["10"]', '["11"]']);
    const pairs = [{ region: 'us', line: 2 }, { region: 'eu', line: 10 }, { region: 'eu', line: 9 }];
    assert.deepEqual(
      [...pairs].sort((a, b) => compareKeys(lines, a, b)).map((k) => keyText(lines, k)),
      ['region="eu", line=9', 'region="eu", line=10', 'region="us", line=2'],
    );
  });

  it('compares integers past 2^53 exactly, and puts non-numbers last', () => {
    assert.equal(compareNumberText('9007199254740993', '9007199254740992'), 1);
    assert.equal(compareNumberText('-2', '10.5'), -1);
    assert.equal(compareNumberText('abc', '1'), 1);
  });
});
