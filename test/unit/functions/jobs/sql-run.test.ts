/**
 * The queries a job's state machine runs (functions/jobs/sql-run.ts, queries.ts): a ref names its
 * statement by name, arguments and step, and carries the Athena text; refs over Athena's query size
 * are refused; stored queries are fetched one at a time.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/config.js';
import { JobInputError } from '../../../../functions/jobs/deps.js';
import { queryAt, storeQueries } from '../../../../functions/jobs/queries.js';
import { configQueryRefs, MAX_QUERY_BYTES, queryRefs, s3Uri, statementOf } from '../../../../functions/jobs/sql-run.js';
import { fakeS3, type FakeS3 } from '../../../helpers/fake-s3.js';

const config = parseConfig({ name: 'my-shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } });
const HOUR = 3_600_000;
const window = { tables: ['public.orders'], from: Date.UTC(2026, 10, 30, 3), to: Date.UTC(2026, 10, 30, 5), output: 's3://shop-raw/history/unload/reconcile/r/window-keys/' };

describe('job queries', () => {
  let s3: FakeS3;
  beforeEach(() => {
    s3 = fakeS3();
  });
  afterEach(() => s3.restore());

  it('a ref names its statement and carries the Athena text for the config’s database; the statement is rebuilt from it', () => {
    const refs = configQueryRefs(config, 'window-keys', window);
    assert.equal(refs.length, 1);
    const [ref] = refs;
    assert.deepEqual(ref?.statement, { name: 'window-keys', args: window, index: 0 });
    assert.match(ref?.athena.QueryString ?? '', /^UNLOAD/);
    assert.ok(ref?.athena.QueryString.includes('tidemark_my_shop'), 'the database named after the pipeline');
    assert.equal(statementOf(ref?.statement ?? { name: 'window-keys', args: {}, index: 0 }).name, 'window-keys');
    assert.throws(() => statementOf({ name: 'window-keys', args: window, index: 1 }), (e: Error) => e instanceof JobInputError && /has no step 1 \(it builds 1\)/.test(e.message));
    const folds = queryRefs('fold-expected', { hour: Date.UTC(2026, 10, 30, 5) }, 'db');
    assert.ok(folds.length > 1, 'a statement file of several steps');
    assert.deepEqual(
      folds.map((r) => r.statement.index),
      folds.map((_, i) => i),
    );
  });

  it('refuses a query over Athena’s size, naming the statement', () => {
    const tables = Array.from({ length: Math.ceil(MAX_QUERY_BYTES / 40) }, (_, i) => `public.table_with_a_long_name_${String(i).padStart(8, '0')}`);
    assert.throws(() => queryRefs('window-keys', { ...window, tables, from: window.from - HOUR }, 'db'), (e: Error) => e instanceof JobInputError && /window-keys is \d+ bytes of SQL, over Athena's 262144/.test(e.message));
  });

  it('stores queries and fetches them one at a time, saying whether another follows', async () => {
    const deps = { s3: s3.client, config };
    const refs = [...configQueryRefs(config, 'window-keys', window), ...configQueryRefs(config, 'window-keys', { ...window, from: window.from - HOUR })];
    const stored = await storeQueries(deps, 'reports/reconcile/r/q.json', refs);
    assert.deepEqual(stored, { queriesKey: 'reports/reconcile/r/q.json', count: 2 });
    const first = await queryAt({ ...stored, index: 0 }, deps);
    assert.deepEqual([first.next, first.more], [1, true]);
    const second = await queryAt({ ...stored, index: 1 }, deps);
    assert.deepEqual([second.next, second.more, second.query], [2, false, refs[1]]);
    assert.equal(s3.calls.filter((c) => c.startsWith('Get')).length, 1, 'read once per container');
    await assert.rejects(queryAt({ ...stored, index: 2 }, deps), (e: Error) => e instanceof JobInputError && /no query 2 in reports\/reconcile\/r\/q.json \(it holds 2\)/.test(e.message));
    assert.equal(s3Uri('b', 'k/x'), 's3://b/k/x');
  });
});
