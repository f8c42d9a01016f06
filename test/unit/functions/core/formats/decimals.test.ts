/**
 * Issue 9 item 5: one logical type lands as one DynamoDB type whatever the source. A decimal that
 * fits DynamoDB's 38 significant digits is a number (exact, from its text); a longer one is its
 * exact text, flagged in `decimalText`. docs/formats.md, "Decimals".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LosslessNumber, parseJson } from '../../../../../functions/core/json.js';
import { changesOf, fixtureRecord, kafkaRecord, normalizerFor } from './normalizer-kit.js';

/** Big-endian two's-complement bytes of `n`, base64: how Kafka Connect writes a Decimal's unscaled value. */
function decimalBytes(n: bigint): string {
  let hex = (n < 0n ? (1n << 8n * 64n) + n : n).toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if (n < 0n) bytes = bytes.subarray(bytes.findIndex((b, i) => b !== 0xff || ((bytes[i + 1] ?? 0) & 0x80) === 0));
  else if ((bytes[0] ?? 0) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return bytes.toString('base64');
}

/** A Debezium PostgreSQL insert with a NUMERIC(p, 2) `price`, schema-wrapped (JsonConverter schemas.enable=true). */
function debeziumPrice(base64: string) {
  const field = { type: 'bytes', optional: true, name: 'org.apache.kafka.connect.data.Decimal', version: 1, parameters: { scale: '2', 'connect.decimal.precision': '50' }, field: 'price' };
  const row = { type: 'struct', optional: true, name: 'shop.public.products.Value', fields: [{ type: 'int32', optional: false, field: 'id' }, field] };
  return kafkaRecord({
    schema: { type: 'struct', name: 'shop.public.products.Envelope', fields: [{ ...row, field: 'before' }, { ...row, field: 'after' }] },
    payload: {
      before: null,
      after: { id: 5, price: base64 },
      source: { version: '3.4.0.Final', connector: 'postgresql', name: 'shop', ts_ms: 1, snapshot: 'false', db: 'shop', sequence: '["1","2"]', schema: 'public', table: 'products', txId: 1, lsn: 2 },
      op: 'c',
    },
  });
}

const cockroachPrice = (price: string) => kafkaRecord(parseJson(`{"after": {"id": 5, "price": ${price}}, "topic": "products"}`), { key: [5] });

/** A Canal flat message with a decimal(50,2) price, in the shape of Flink's canal-data.txt. */
const canalPrice = (price: string) =>
  kafkaRecord({
    data: [{ id: '5', price }],
    database: 'public',
    es: 1589373560000,
    id: 9,
    isDdl: false,
    mysqlType: { id: 'int(11)', price: 'decimal(50,2)' },
    old: null,
    pkNames: ['id'],
    sql: '',
    sqlType: { id: 4, price: 3 },
    table: 'products',
    ts: 1589373560798,
    type: 'INSERT',
  });

/** A Maxwell insert (maxwells-daemon.io/dataformat) whose price column is a JSON number. */
const maxwellPrice = (price: string) => kafkaRecord(parseJson(`{"database":"public","table":"products","type":"insert","ts":1477053217,"xid":23396,"commit":true,"data":{"id":5,"price":${price}}}`));

const n = normalizerFor([{ source: 'public.products', key: ['id'], keyTypes: { id: 'number' } }, { source: 'products', key: ['id'], keyTypes: { id: 'number' } }]);
const priceOf = (record: ReturnType<typeof kafkaRecord>) => {
  const [e] = changesOf(n.normalize(record));
  return { price: e?.after?.price, decimalText: e?.decimalText ?? [] };
};

describe('decimals land as one DynamoDB type from every source', () => {
  it('12.50 is the number 12.5 from Debezium Decimal, CockroachDB DECIMAL, Canal decimal text and Maxwell', () => {
    const sources = {
      debezium: priceOf(debeziumPrice('BOI=')),
      cockroachdb: priceOf(cockroachPrice('12.50')),
      canal: priceOf(canalPrice('12.50')),
      maxwell: priceOf(maxwellPrice('12.50')),
    };
    for (const [source, got] of Object.entries(sources)) assert.deepEqual(got, { price: 12.5, decimalText: [] }, source);
  });

  it('a decimal of 38 significant digits stays an exact number (a LosslessNumber), from every source', () => {
    const digits = '123456789012345678901234567890123456.78'; // 38 significant digits
    const expected = { price: new LosslessNumber(digits), decimalText: [] };
    assert.deepEqual(priceOf(debeziumPrice(decimalBytes(12345678901234567890123456789012345678n))), expected);
    assert.deepEqual(priceOf(cockroachPrice(digits)), expected);
    assert.deepEqual(priceOf(canalPrice(digits)), expected);
    assert.deepEqual(priceOf(maxwellPrice(digits)), expected);
  });

  it('a longer decimal is its exact text, flagged in decimalText, from every source', () => {
    const digits = '-12345678901234567890123456789012345678.90'; // 40 significant digits
    const expected = { price: digits, decimalText: ['price'] };
    assert.deepEqual(priceOf(debeziumPrice(decimalBytes(-1234567890123456789012345678901234567890n))), expected);
    assert.deepEqual(priceOf(cockroachPrice(digits)), expected);
    assert.deepEqual(priceOf(canalPrice(digits)), expected);
    assert.deepEqual(priceOf(maxwellPrice(digits)), expected);
  });

  it('a Decimal field holding plain text "12.50" is 12.5, not base64-decoded into -26587.00', () => {
    assert.deepEqual(priceOf(debeziumPrice('12.50')), { price: 12.5, decimalText: [] });
  });

  it('a Decimal field holding text that is neither base64 nor a decimal is quarantined as bad-field', () => {
    const result = n.normalize(debeziumPrice('12,50'));
    assert.ok(!result.ok);
    assert.equal(result.reason, 'bad-field');
    assert.match(result.detail, /"price"/);
  });

  it('the fixture of the Debezium docs (decimal.handling.mode=precise, schema-wrapped) decodes 12.50 as 12.5', () => {
    const types = normalizerFor([{ source: 'public.orders', key: ['id'], keyTypes: { id: 'number' } }]);
    const [e] = changesOf(types.normalize(fixtureRecord('debezium', 'pg-types-schema-wrapped')));
    assert.equal(e?.after?.price, 12.5);
  });
});
