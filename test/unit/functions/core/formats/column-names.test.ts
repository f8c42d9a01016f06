/**
 * Column names that are also Object.prototype members must neither vanish nor reach the prototype:
 * `__proto__` is quarantined as `reserved-column` (issue 10 item 7); `constructor`, `toString` and
 * `hasOwnProperty` are ordinary columns. Shapes: the Debezium PostgreSQL schema-wrapped insert and
 * the MongoDB pre-image update fixtures (test/fixtures), with the column added.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cloneJson, type JsonObject, parseJson } from '../../../../../functions/core/json.js';
import { readFixture } from '../../../../helpers/messages.js';
import { changesOf, kafkaRecord, normalizerFor } from './normalizer-kit.js';

/** The schema-wrapped Debezium insert with one extra string column, in the schema and in `after`. */
function debeziumWithColumn(column: string) {
  const f = readFixture('debezium', 'pg-insert-schema-wrapped');
  const value = cloneJson(f.message_value) as JsonObject;
  const text = JSON.stringify(value).replace('"first_name":', `${JSON.stringify(column)}:"x","first_name":`);
  const withColumn = parseJson(text.replace('{"type":"string","optional":false,"field":"first_name"}', `{"type":"string","optional":true,"field":${JSON.stringify(column)}},{"type":"string","optional":false,"field":"first_name"}`));
  return kafkaRecord(withColumn, { key: f.message_key });
}

/** The MongoDB pre-image update whose `after` document holds one extra field. */
function mongoWithField(field: string) {
  const f = readFixture('debezium-mongodb', 'update-with-pre-image');
  const value = cloneJson(f.message_value) as JsonObject;
  value.after = `{"_id": {"$numberLong": "1004"}, ${JSON.stringify(field)}: {"a": 1}, "first_name": "Anne Marie"}`;
  return kafkaRecord(value, { key: f.message_key });
}

const pg = normalizerFor([{ source: 'public.customers', key: ['id'], keyTypes: { id: 'number' } }]);
const mongo = normalizerFor([{ source: 'inventory.customers', key: ['_id'], keyTypes: { _id: 'number' } }]);

describe('column names that are Object.prototype members', () => {
  it('quarantines a __proto__ column of a schema-wrapped Debezium message as reserved-column', () => {
    const result = pg.normalize(debeziumWithColumn('__proto__'));
    assert.ok(!result.ok);
    assert.equal(result.reason, 'reserved-column');
  });

  it('quarantines a __proto__ field of a MongoDB document as reserved-column, without touching Object.prototype', () => {
    const result = mongo.normalize(mongoWithField('__proto__'));
    assert.ok(!result.ok);
    assert.equal(result.reason, 'reserved-column');
    assert.equal(({} as Record<string, unknown>).a, undefined);
  });

  it('never pollutes Object.prototype through a MongoDB update path', () => {
    const f = readFixture('debezium-mongodb', 'update-with-pre-image');
    const value = cloneJson(f.message_value) as JsonObject;
    value.after = null;
    value.updateDescription = { updatedFields: '{"__proto__.polluted": "yes", "constructor.prototype.polluted": "yes"}', removedFields: null, truncatedArrays: null };
    mongo.normalize(kafkaRecord(value, { key: f.message_key }));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  for (const column of ['constructor', 'toString', 'hasOwnProperty']) {
    it(`keeps a "${column}" column as an ordinary value (Debezium and MongoDB)`, () => {
      const [e] = changesOf(pg.normalize(debeziumWithColumn(column)));
      assert.ok(Object.hasOwn(e?.after ?? {}, column));
      assert.equal(e?.after?.[column], 'x');
      const [m] = changesOf(mongo.normalize(mongoWithField(column)));
      assert.deepEqual(m?.after?.[column], { a: 1 });
    });
  }
});

describe('key columns named like Object.prototype members', () => {
  it('reports a missing "constructor" key column as missing-key, not as a bad key holding a function', () => {
    const n = normalizerFor([{ source: 'inventory.customers', key: ['constructor'] }]);
    // The Maxwell insert of maxwells-daemon.io/dataformat, without the key column.
    const result = n.normalize(
      kafkaRecord({ database: 'inventory', table: 'customers', type: 'insert', ts: 1477053217, xid: 23396, commit: true, data: { id: 1, name: 'x' } }),
    );
    assert.ok(!result.ok);
    assert.equal(result.reason, 'missing-key');
    assert.match(result.detail, /"constructor"/);
  });

  it('reads a present "constructor" key column', () => {
    const n = normalizerFor([{ source: 'inventory.customers', key: ['constructor'] }]);
    const [e] = changesOf(
      n.normalize(kafkaRecord({ database: 'inventory', table: 'customers', type: 'insert', ts: 1477053217, xid: 23396, commit: true, data: { constructor: 'k1', name: 'x' } })),
    );
    assert.deepEqual(e?.key, { constructor: 'k1' });
  });
});
