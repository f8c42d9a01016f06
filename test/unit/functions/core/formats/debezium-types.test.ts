import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debezium } from '../../../../../functions/core/formats/debezium.js';
import { nameUuidFromBytes, placeholderForms } from '../../../../../functions/core/formats/debezium-placeholders.js';
import {
  bytesToBigInt,
  decodeDecimal,
  decodeValue,
  decodeVariableScaleDecimal,
  formatEpoch,
  formatEpochDay,
  formatTimeOfDay,
} from '../../../../../functions/core/formats/debezium-types.js';
import { LosslessNumber } from '../../../../../functions/core/json.js';
import { decodeContext, inboundFromFixture, onlyChange } from '../../../../helpers/messages.js';

describe('debezium decimals', () => {
  it('decodes Decimal bytes as big-endian two\'s complement: "BOI=" scale 2 is 12.50, "/gw=" is -5.00', () => {
    assert.equal(decodeDecimal('BOI=', 2), '12.50');
    assert.equal(decodeDecimal('/gw=', 2), '-5.00');
    assert.equal(decodeDecimal('E4c=', 2), '49.99');
  });

  it('decodes a 30-digit unscaled value exactly, positive and negative', () => {
    assert.equal(decodeDecimal('AY7pD/bDc+DuTj8K0g==', 2), '1234567890123456789012345678.90');
    assert.equal(decodeDecimal('/nEW8Ak8jB8RscD1Lg==', 2), '-1234567890123456789012345678.90');
  });

  it('pads small values with leading zeros and handles zero, scale 0 and empty bytes', () => {
    assert.equal(decodeDecimal(Buffer.from([0xfb]).toString('base64'), 3), '-0.005');
    assert.equal(decodeDecimal('AA==', 2), '0.00');
    assert.equal(decodeDecimal('Bw==', 0), '7');
    assert.equal(decodeDecimal('', 2), '0.00');
    assert.equal(bytesToBigInt(new Uint8Array([0x80, 0x00])), -32768n);
  });

  it('decodes a VariableScaleDecimal {scale, value}', () => {
    assert.equal(decodeVariableScaleDecimal({ scale: 4, value: 'AeJA' }), '12.3456');
    assert.equal(decodeVariableScaleDecimal({ scale: 0, value: 'Bw==' }), '7');
    assert.equal(decodeVariableScaleDecimal({ value: 'Bw==' }), undefined);
  });

  it('keeps a Decimal delivered as a JSON number (decimal.format=NUMERIC) as it is', () => {
    const schema = { type: 'bytes', name: 'org.apache.kafka.connect.data.Decimal', parameters: { scale: '2' } };
    assert.equal(decodeValue(12.5, schema), 12.5);
  });

  it('lands a Decimal as a number, exactly from its text: "BOI=" at scale 2 is 12.5, a long one a LosslessNumber', () => {
    // The pg decimal example of the Debezium PostgreSQL docs (decimal.handling.mode=precise):
    // https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-decimal-types
    const schema = { type: 'bytes', name: 'org.apache.kafka.connect.data.Decimal', parameters: { scale: '2' } };
    assert.equal(decodeValue('BOI=', schema), 12.5);
    assert.deepEqual(decodeValue('AY7pD/bDc+DuTj8K0g==', schema), new LosslessNumber('1234567890123456789012345678.90'));
    const variable = { type: 'struct', name: 'io.debezium.data.VariableScaleDecimal' };
    assert.equal(decodeValue({ scale: 4, value: 'AeJA' }, variable), 12.3456);
  });

  it('reads plain decimal text in a Decimal field as that decimal, never base64-decoded into garbage', () => {
    // "12.50" base64-decoded would be the bytes d7 6d b9 …, i.e. -26587.00 at scale 2.
    const schema = { type: 'bytes', name: 'org.apache.kafka.connect.data.Decimal', parameters: { scale: '2' } };
    assert.equal(decodeValue('12.50', schema), 12.5);
    assert.equal(decodeValue('-5', schema), -5);
    assert.equal(decodeValue('7.', schema), 7);
  });

  it('rejects a Decimal field holding text that is neither base64 nor a decimal as bad-field, naming the column', () => {
    const schema = { type: 'bytes', name: 'org.apache.kafka.connect.data.Decimal', parameters: { scale: '2' } };
    for (const text of ['12,50', 'NaN', 'abc', '1 2', '==']) {
      assert.throws(
        () => decodeValue(text, schema, 'price'),
        (e: unknown) => e instanceof DecodeError && e.reason === 'bad-field' && /"price"/.test(e.message),
        text,
      );
    }
    const variable = { type: 'struct', name: 'io.debezium.data.VariableScaleDecimal' };
    assert.throws(() => decodeValue({ scale: 2, value: '12.50' }, variable, 'ratio'), (e: unknown) => e instanceof DecodeError && e.reason === 'bad-field');
  });
});

describe('debezium time types', () => {
  it('keeps a number whose schema name is an Object.prototype member ("toString", "constructor") as delivered (found by the mutation fuzz)', () => {
    for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf']) {
      assert.equal(decodeValue(1735732800123, { type: 'int64', name }), 1735732800123, name);
    }
  });

  it('formats epoch ms, µs and ns timestamps as ISO-8601 UTC with the unit\'s full precision', () => {
    assert.equal(formatEpoch(1735732800123n, 'ms'), '2025-01-01T12:00:00.123Z');
    assert.equal(formatEpoch(1735732800123456n, 'us'), '2025-01-01T12:00:00.123456Z');
    assert.equal(formatEpoch(1735732800123456789n, 'ns'), '2025-01-01T12:00:00.123456789Z');
    assert.equal(formatEpoch(1735732800000000n, 'us'), '2025-01-01T12:00:00.000000Z');
  });

  it('formats timestamps before 1970 with a positive fraction', () => {
    assert.equal(formatEpoch(-1n, 'ms'), '1969-12-31T23:59:59.999Z');
    assert.equal(formatEpoch(-1n, 'us'), '1969-12-31T23:59:59.999999Z');
  });

  it('formats days since the epoch as YYYY-MM-DD', () => {
    assert.equal(formatEpochDay(20089n), '2025-01-01');
    assert.equal(formatEpochDay(0n), '1970-01-01');
    assert.equal(formatEpochDay(-1n), '1969-12-31');
  });

  it('formats times of day in ms, µs and ns since midnight', () => {
    // 12:34:56 = 45296 s
    assert.equal(formatTimeOfDay(45296789n, 'ms'), '12:34:56.789');
    assert.equal(formatTimeOfDay(45296789000n, 'us'), '12:34:56.789000');
    assert.equal(formatTimeOfDay(45296789012345n, 'ns'), '12:34:56.789012345');
    assert.equal(formatTimeOfDay(86400000000n, 'us'), '24:00:00.000000');
  });

  it('decodes a NanoTimestamp above 2^53 from its exact digits', () => {
    const schema = { type: 'int64', name: 'io.debezium.time.NanoTimestamp' };
    assert.equal(decodeValue(new LosslessNumber('1735732800123456789'), schema), '2025-01-01T12:00:00.123456789Z');
  });

  it('keeps a date outside what Date can represent as delivered', () => {
    const schema = { type: 'int32', name: 'io.debezium.time.Date' };
    assert.equal(decodeValue(999999999999, schema), 999999999999);
  });
});

describe('debezium schema-driven decoding of a whole message', () => {
  const e = onlyChange(debezium.decode(inboundFromFixture('debezium', 'pg-types-schema-wrapped'), decodeContext()));

  it('decodes every logical-typed column of after and before', () => {
    assert.deepEqual(e.after, {
      id: 42,
      price: 12.5,
      refund: -5,
      big_total: new LosslessNumber('1234567890123456789012345678.90'),
      ratio: 12.3456,
      created_at: '2025-01-01T12:00:00.123456Z',
      created_ms: '2025-01-01T12:00:00.123Z',
      created_ns: '2025-01-01T12:00:00.123456789Z',
      due_on: '2025-01-01',
      due_at: '12:34:56.789000',
      updated_at: '2025-01-01T12:00:00.123456Z',
      toasted_amount: '__debezium_unavailable_value',
      note: '__debezium_unavailable_value',
    });
    assert.deepEqual(e.before?.big_total, new LosslessNumber('-1234567890123456789012345678.90'));
    assert.equal(e.before?.refund, null);
    assert.equal(e.before?.toasted_amount, 12.5);
  });

  it('never decodes a placeholder, even in a Decimal column, and lists it', () => {
    assert.deepEqual(e.placeholders, ['toasted_amount', 'note']);
  });

  it('uses the unwrapped key payload as the key', () => {
    assert.deepEqual(e.key, { id: 42 });
    assert.deepEqual(e.position.tuple, [33261900n, 33262000n]);
  });
});

describe('debezium placeholder forms', () => {
  it('computes the uuid[] form as UUID.nameUUIDFromBytes (MD5, version 3) of the placeholder', () => {
    assert.equal(nameUuidFromBytes(Buffer.from('__debezium_unavailable_value')), 'b68a35a7-17ad-35b3-af2a-ae46edb4545a');
  });

  it('derives the base64 and byte forms from the configured placeholder', () => {
    const forms = placeholderForms('__debezium_unavailable_value');
    assert.equal(forms.base64, 'X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==');
    assert.deepEqual(forms.bytes.slice(0, 3), [95, 95, 100]);
    assert.equal(forms.bytes.length, 28);
  });
});
