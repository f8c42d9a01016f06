import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { debezium } from '../../../../../functions/core/formats/debezium.js';
import { generic } from '../../../../../functions/core/formats/generic.js';
import { type JsonObject, parseJson } from '../../../../../functions/core/json.js';
import { comparePositions } from '../../../../../functions/core/position.js';
import { decodeContext, inboundFrom, inboundFromFixture, onlyChange } from '../../../../helpers/messages.js';

const ctx = decodeContext({ 'public.items': ['id'] });
const decodeFixture = (name: string) => onlyChange(generic.decode(inboundFromFixture('generic', name), ctx));
const decodeValue = (value: JsonObject) => onlyChange(generic.decode(inboundFrom(value), ctx));

const insert = (source: JsonObject, extra: JsonObject = {}): JsonObject => ({
  operation: 'insert',
  before: null,
  after: { id: 1, name: 'a' },
  source: { table: 'public.items', lsn: '0/1A2F4C88', txid: 901, commit_ts: '2025-01-01T12:00:00.000Z', snapshot: false, ...source },
  ...extra,
});

function assertDecodeError(fn: () => unknown, reason: string, mentions: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof DecodeError && e.reason === reason && mentions.test(e.message));
}

describe('generic envelope', () => {
  it('detects the teaching envelope and its op variant, but not Debezium or CockroachDB enriched envelopes', () => {
    assert.equal(generic.detect(inboundFromFixture('generic', 'teaching-insert')), true);
    assert.equal(generic.detect(inboundFromFixture('generic', 'op-variant')), true);
    assert.equal(debezium.detect(inboundFromFixture('generic', 'op-variant')), false);
    assert.equal(generic.detect(inboundFromFixture('debezium', 'pg-insert-bare')), false);
    const crdbEnriched = { after: { id: 1 }, op: 'u', source: { table_name: 'employees', ts_hlc: '1701102311425045162.0000000000' } };
    assert.equal(generic.detect(inboundFrom(crdbEnriched)), false);
  });

  it('decodes an insert with its "X/Y" LSN as the position and the ISO commit time', () => {
    const e = decodeFixture('teaching-insert');
    assert.equal(e.format, 'generic');
    assert.equal(e.op, 'c');
    assert.equal(e.table, 'public.items');
    assert.deepEqual(e.key, { id: 1 });
    assert.deepEqual(e.position, { tuple: [439307400n], strength: 'source' });
    assert.equal(e.txid, '901');
    assert.equal(e.commitTs, Date.UTC(2025, 0, 1, 12, 0, 0));
    assert.equal(e.snapshot, false);
    assert.deepEqual(e.placeholders, []);
  });

  it('decodes update, delete and snapshot read', () => {
    const u = decodeFixture('teaching-update');
    assert.equal(u.op, 'u');
    assert.deepEqual(u.before, { id: 1, name: 'a' });
    const d = decodeFixture('teaching-delete');
    assert.equal(d.op, 'd');
    assert.equal(d.after, null);
    assert.deepEqual(d.key, { id: 1 });
    assert.deepEqual(d.position.tuple, [97500059720n]);
    const r = decodeFixture('teaching-read');
    assert.equal(r.op, 'r');
    assert.equal(r.snapshot, true);
    assert.equal(r.commitTs, null);
  });

  it('accepts operation names in any case', () => {
    assert.equal(decodeValue(insert({}, { operation: 'INSERT' })).op, 'c');
    assert.equal(decodeValue(insert({}, { operation: 'Update' })).op, 'u');
    assert.equal(decodeValue(insert({}, { operation: 'DELETE', after: null, before: { id: 1 } })).op, 'd');
  });

  it('decodes the op variant with top-level ts_ms as the commit time and an integer LSN', () => {
    const e = decodeFixture('op-variant');
    assert.equal(e.op, 'u');
    assert.equal(e.commitTs, 1735732801000);
    assert.deepEqual(e.position.tuple, [439307400n]);
    assert.equal(e.txid, '902');
  });

  it('compares LSNs as numbers: "0/9" < "0/10", and epoch-ms commit_ts is accepted', () => {
    const nine = decodeValue(insert({ lsn: '0/9' }));
    const ten = decodeValue(insert({ lsn: '0/10', commit_ts: 1735732800000 }));
    assert.ok(comparePositions(nine.position, ten.position) < 0);
    assert.equal(ten.commitTs, 1735732800000);
  });

  it('keeps an integer LSN above 2^53 exact', () => {
    const value = parseJson('{"op":"c","ts_ms":1,"source":{"lsn":18446744073709551557,"table":"public.items","txid":1},"before":null,"after":{"id":1}}');
    assert.deepEqual(decodeValue(value as JsonObject).position.tuple, [18446744073709551557n]);
  });

  it('rejects a missing or malformed LSN, an unknown operation, a missing table and a bad commit_ts', () => {
    assertDecodeError(() => decodeValue(insert({ lsn: null })), 'missing-field', /expected source\.lsn/);
    assertDecodeError(() => decodeValue(insert({ lsn: '0/XYZ' })), 'bad-position', /"X\/Y" hex text/);
    assertDecodeError(() => decodeValue(insert({}, { operation: 'upsert' })), 'bad-op', /insert, update, delete or read/);
    assertDecodeError(() => decodeValue(insert({ table: null })), 'missing-field', /source\.table/);
    assertDecodeError(() => decodeValue(insert({ commit_ts: 'yesterday' })), 'bad-field', /ISO-8601/);
  });
});
