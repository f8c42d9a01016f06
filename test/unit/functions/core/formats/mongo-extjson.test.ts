import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { canonicalJson, isLosslessNumber, parseJson } from '../../../../../functions/core/json.js';
import { parseExtJson, parseExtJsonDocument, toPlain } from '../../../../../functions/core/formats/mongo-extjson.js';

const plain = (text: string) => toPlain(parseJson(text));

describe('mongo extended JSON', () => {
  it('converts an ObjectId to its lower-case 24-hex string in every dialect', () => {
    assert.equal(plain('{"$oid": "596E275826F08B2730779E1F"}'), '596e275826f08b2730779e1f');
    assert.equal(plain('{"$oid" : "596e275826f08b2730779e1f"}'), '596e275826f08b2730779e1f');
  });

  it('reads $numberLong, $numberInt and bare integers as the same exact number', () => {
    assert.equal(plain('{"$numberLong": "1004"}'), 1004);
    assert.equal(plain('{"$numberInt": "1004"}'), 1004);
    assert.equal(plain('1004'), 1004);
  });

  it('keeps a $numberLong beyond 2^53 exact as a LosslessNumber', () => {
    const v = plain('{"$numberLong": "9223372036854775807"}');
    assert.ok(isLosslessNumber(v));
    assert.equal(v.value, '9223372036854775807');
    const near = plain('{"$numberLong": "9007199254740993"}');
    assert.ok(isLosslessNumber(near));
    assert.equal(near.value, '9007199254740993');
  });

  it('keeps a relaxed-mode bare integer beyond 2^53 exact', () => {
    const v = plain('{"n": 1546547425148721999}') as { n: unknown };
    assert.ok(isLosslessNumber(v.n));
    assert.equal(v.n.value, '1546547425148721999');
  });

  it('returns $numberDecimal as its decimal string, digit for digit', () => {
    assert.equal(plain('{"$numberDecimal": "12345678901234567890.123456789"}'), '12345678901234567890.123456789');
  });

  it('reads $numberDouble as a number and keeps NaN / Infinity as strings', () => {
    assert.equal(plain('{"$numberDouble": "1.5"}'), 1.5);
    assert.equal(plain('{"$numberDouble": "-Infinity"}'), '-Infinity');
    assert.equal(plain('{"$numberDouble": "NaN"}'), 'NaN');
  });

  it('gives the same ISO date for v1 ms, canonical $numberLong and relaxed ISO forms', () => {
    const iso = '2025-01-01T12:00:00.000Z';
    assert.equal(plain('{"$date": 1735732800000}'), iso);
    assert.equal(plain('{"$date": {"$numberLong": "1735732800000"}}'), iso);
    assert.equal(plain('{"$date": "2025-01-01T12:00:00Z"}'), iso);
    assert.equal(plain('{"$date": "2025-01-01T12:00:00.000+00:00"}'), iso);
  });

  it('keeps a date outside the JS range as exact epoch milliseconds', () => {
    const v = plain('{"$date": {"$numberLong": "-9223372036854775808"}}');
    assert.ok(isLosslessNumber(v));
    assert.equal(v.value, '-9223372036854775808');
  });

  it('converts binary in v1 and v2 forms to base64, and UUID subtypes to UUID text', () => {
    assert.equal(plain('{"$binary": "AQID", "$type": "00"}'), 'AQID');
    assert.equal(plain('{"$binary": {"base64": "AQID", "subType": "00"}}'), 'AQID');
    const uuid = '14aed813-35e0-4174-97f4-ec66ce5947db';
    assert.equal(plain('{"$binary": "FK7YEzXgQXSX9OxmzllH2w==", "$type": "04"}'), uuid);
    assert.equal(plain('{"$binary": {"base64": "FK7YEzXgQXSX9OxmzllH2w==", "subType": "04"}}'), uuid);
    assert.equal(plain('{"$uuid": "14AED813-35E0-4174-97F4-EC66CE5947DB"}'), uuid);
  });

  it('converts timestamps, regexes, symbols, code, min/max keys and undefined', () => {
    assert.deepEqual(plain('{"$timestamp": {"t": 1735732800, "i": 3}}'), { t: 1735732800, i: 3 });
    assert.equal(plain('{"$regex": "^a", "$options": "i"}'), '/^a/i');
    assert.equal(plain('{"$regularExpression": {"pattern": "^a", "options": "i"}}'), '/^a/i');
    assert.equal(plain('{"$symbol": "s"}'), 's');
    assert.equal(plain('{"$code": "f()"}'), 'f()');
    assert.equal(plain('{"$minKey": 1}'), 'MinKey');
    assert.equal(plain('{"$maxKey": 1}'), 'MaxKey');
    assert.equal(plain('{"$undefined": true}'), null);
  });

  it('converts nested documents and arrays member by member, leaving ordinary $-less objects alone', () => {
    const doc = parseExtJsonDocument(
      '{"_id": {"$oid": "596e275826f08b2730779e1f"}, "tags": [{"$numberInt": "1"}, "x"], "addr": {"zip": {"$numberLong": "12345"}, "city": "Oslo"}}',
      'after',
    );
    assert.deepEqual(doc, { _id: '596e275826f08b2730779e1f', tags: [1, 'x'], addr: { zip: 12345, city: 'Oslo' } });
  });

  it('yields the same document for legacy, canonical and relaxed dialects', () => {
    const legacy = parseExtJson('{"_id": {"$numberLong": "7"}, "n": 3, "d": {"$date": 1735732800000}, "x": 1.5}', 'doc');
    const canonical = parseExtJson(
      '{"_id": {"$numberLong": "7"}, "n": {"$numberInt": "3"}, "d": {"$date": {"$numberLong": "1735732800000"}}, "x": {"$numberDouble": "1.5"}}',
      'doc',
    );
    const relaxed = parseExtJson('{"_id": 7, "n": 3, "d": {"$date": "2025-01-01T12:00:00Z"}, "x": 1.5}', 'doc');
    assert.equal(canonicalJson(legacy), canonicalJson(canonical));
    assert.equal(canonicalJson(legacy), canonicalJson(relaxed));
  });

  it('throws invalid-json for text that is not JSON and bad-field for a non-document', () => {
    assert.throws(() => parseExtJson('{"_id": ', 'after'), (e: unknown) => e instanceof DecodeError && e.reason === 'invalid-json' && /after/.test(e.message));
    assert.throws(() => parseExtJsonDocument('[1]', 'after'), (e: unknown) => e instanceof DecodeError && e.reason === 'bad-field');
  });

  it('throws bad-value for a wrapper holding an unusable value', () => {
    assert.throws(() => plain('{"$numberLong": "12x"}'), (e: unknown) => e instanceof DecodeError && e.reason === 'bad-value');
    assert.throws(() => plain('{"$date": "yesterday"}'), (e: unknown) => e instanceof DecodeError && e.reason === 'bad-value');
  });
});
