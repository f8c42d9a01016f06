import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runPlan } from '../../../../bin/cli/plan.js';
import { parseConfig } from '../../../../lib/config/config.js';

const config = parseConfig({
  name: 'plan-test',
  tables: [{ source: 'public.customers', target: 'customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'plan-test-raw' },
});
const fixture = join(import.meta.dirname, '../../../fixtures/plan/mixed.jsonl');

describe('tidemark plan', () => {
  const report = runPlan(config, fixture, 'value');
  const rows = report.lines.map((l) => JSON.parse(l));

  it('folds a placeholder update onto the latest earlier value of the same batch', () => {
    const anne = rows.find((r) => r.key.id === 1);
    assert.deepEqual(anne.row, { id: 1, name: 'Anna', bio: 'B' });
    assert.equal(anne.deleted, false);
  });

  it('keeps a deleted key deleted when an older update arrives after the delete', () => {
    const ghost = rows.find((r) => r.key.id === 2);
    assert.equal(ghost.deleted, true);
    assert.equal(ghost.row, null);
  });

  it('reports bad lines with their line number and reason, and keeps going', () => {
    assert.deepEqual(
      report.problems.map((p) => [p.line, p.reason.split(':')[0]]),
      [
        [4, 'invalid-json'],
        [7, 'unknown-table'],
      ],
    );
  });

  it('counts the redelivered first event as a duplicate, not a second change', () => {
    assert.equal(report.stats.duplicates, 1);
    assert.equal(report.stats.keys, 2);
  });

  it('reads the record shape, where a null value is a Kafka tombstone and not a delete', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-plan-'));
    const path = join(dir, 'records.jsonl');
    const insert = { before: null, after: { id: 9, name: 'N' }, source: { version: '3.4.0.Final', connector: 'postgresql', name: 's', ts_ms: 1, snapshot: 'false', db: 'd', sequence: '["1","2"]', schema: 'public', table: 'customers', txId: 1, lsn: 2 }, op: 'c' };
    writeFileSync(path, `${JSON.stringify({ key: { id: 9 }, value: insert, topic: 's.public.customers' })}\n${JSON.stringify({ key: { id: 9 }, value: null })}\n{"nope": 1}\n`);
    const r = runPlan(config, path, 'record');
    assert.equal(r.lines.length, 1);
    assert.equal(JSON.parse(r.lines[0]!).deleted, false);
    assert.equal(r.stats.controls, 1);
    assert.deepEqual(r.problems.map((p) => p.line), [3]);
  });
});
