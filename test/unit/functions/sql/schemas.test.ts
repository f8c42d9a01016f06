/**
 * The schemas against what raw holds: raw_lines maps every field of a batch-layout line
 * (docs/history.md §1; the test helper's V2Line) and no other; raw_events is the same without the
 * six fields the first layout lacks; and the types render for Glue and DuckDB, with the SerDe
 * mappings that give snake_case columns their camelCase fields.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { duckdbType, HISTORY, hiveType, OUTPUTS, RAW_EVENTS, RAW_LINES, serdeMappings, TABLES } from '../../../../functions/sql/schemas.js';
import { v2Line } from '../../../helpers/raw-v2.js';

const fieldsOf = (s: { columns: readonly { name: string; field?: string }[] }) => s.columns.map((c) => c.field ?? c.name);

describe('schemas', () => {
  it('raw_lines maps every field of a batch-layout line, and raw_events the first layout\'s', () => {
    const line = v2Line({ messageRef: true, messageBase64: 'AA==' });
    const all = new Set([...Object.keys(line), 'messageKeyBase64']);
    assert.deepEqual(new Set(fieldsOf(RAW_LINES)), all);
    const v2Only = new Set(['v', 'keyId', 'hash', 'arrivalTs', 'beforeNull', 'partial']);
    assert.deepEqual(new Set(fieldsOf(RAW_EVENTS)), new Set([...all].filter((f) => !v2Only.has(f))));
  });

  it('names every column in lowercase snake_case, once per table', () => {
    for (const s of [...Object.values(TABLES), ...Object.values(OUTPUTS)]) {
      const names = [...s.columns, ...('partitionKeys' in s ? (s.partitionKeys ?? []) : [])].map((c) => c.name);
      assert.equal(new Set(names).size, names.length, s.name);
      for (const n of names) assert.match(n, /^[a-z][a-z0-9_]*$/, `${s.name}.${n}`);
    }
    assert.deepEqual(HISTORY.partitionedBy, ['source_table', 'dt']);
  });

  it('renders types for Glue and DuckDB, and the SerDe mappings of camelCase fields', () => {
    const transport = RAW_LINES.columns.find((c) => c.name === 'transport');
    assert.ok(transport);
    assert.equal(hiveType(transport.type), 'struct<kind:string,stream:string,shard:string,sequence:string,partitionKey:string,arrivalTime:bigint>');
    assert.equal(duckdbType(transport.type), 'STRUCT("kind" VARCHAR, "stream" VARCHAR, "shard" VARCHAR, "sequence" VARCHAR, "partitionKey" VARCHAR, "arrivalTime" BIGINT)');
    assert.equal(duckdbType({ map: 'string' }), 'MAP(VARCHAR, VARCHAR)');
    const m = serdeMappings(RAW_LINES);
    assert.equal(m['mapping.key_id'], 'keyid');
    assert.equal(m['mapping.arrival_ts'], 'arrivalts');
    assert.equal(m['mapping.message_ref'], 'messageref');
    assert.equal(m['mapping.kind'], undefined);
    assert.equal(Object.keys(m).length, 9);
  });
});
