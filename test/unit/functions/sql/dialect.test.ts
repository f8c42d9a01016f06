/**
 * The Athena SQL checked statically, and every statement run on DuckDB: the Athena form of every
 * SELECT, INSERT and DELETE parses with node-sql-parser's `trino` mode; the forms it cannot parse are
 * exactly the kinds named by dialect entries (MERGE, UNLOAD, OPTIMIZE, VACUUM), whose embedded
 * queries parse; every `?` sits in a WHERE clause (Athena's rule) and has its value; MERGE and DELETE
 * bind nothing; every statement runs on DuckDB and yields its schema's columns.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import nodeSqlParser from 'node-sql-parser';
import { bindable } from '../../../../bin/local/duckdb-values.js';
import {
  athena,
  athenaQuery,
  buildStatements,
  DIALECT_ENTRIES,
  duckdb,
  literal,
  render,
  type Statement,
  type StatementName,
  STATEMENTS,
  UNPARSED_KINDS,
} from '../../../../functions/sql/index.js';
import { renderSql } from '../../../../functions/sql/sql.js';
import { emptyTable } from '../../../../functions/sql/duckdb-views.js';
import { TABLES } from '../../../../functions/sql/schemas.js';
import { DUCKDB_INSERT_SUFFIX } from '../../../../functions/sql/dialect.js';
import { SqlBench } from '../../../helpers/duckdb-bench.js';

const { Parser } = nodeSqlParser;
const parser = new Parser();
const trino = (text: string) => parser.astify(text, { database: 'trino' });

const HOUR = 3_600_000;
const H = Date.UTC(2026, 10, 30, 6);
const keys = [{ table: 'public.orders', keyIds: ['["1"]', `["it's"]`] }];
const th = { historyHours: 168, recentHours: 3, minEvents: 200, deleteShare: 0.01, beforeNullRateJump: 0.2, placeholderRateJump: 0.2, quarantineRateJump: 0.05, updateStormFactor: 5, silentMinHourlyEvents: 10, silentHours: 3 };
const tables = ['public.orders', 'public.customers'];

/** Every statement, with arguments exercising each optional part. */
const SPECS: readonly { name: StatementName; args: unknown }[] = [
  { name: 'compact-hour', args: { hour: H } },
  { name: 'compact-objects', args: { objects: ['s3://b/raw/dt=2026-11-30/hr=06/a.jsonl.gz', 's3://b/raw/dt=2026-11-30/hr=07/b.jsonl.gz'] } },
  { name: 'compact-legacy-hour', args: { table: 'public.orders', segments: ['public.orders'], key: ['id', 'line no'], hour: H } },
  { name: 'fold-expected', args: { hour: H } },
  { name: 'count-table-hours', args: { from: H, to: H + HOUR } },
  { name: 'window-keys', args: { tables, from: H, to: H + 2 * HOUR } },
  { name: 'window-keys', args: { tables, from: H, to: H, output: 's3://b/keys/' } },
  { name: 'reconcile-full', args: { tables, runId: 'r1', cutoff: H, part: 'findings', unsettled: { from: H, to: H + HOUR } } },
  { name: 'reconcile-full', args: { tables, runId: 'r1', cutoff: H, part: 'counts', output: 's3://b/counts/' } },
  { name: 'reconcile-full', args: { tables, runId: 'r1', cutoff: H, part: 'counts', unsettled: { from: H, to: H + HOUR }, held: { tables: [{ table: tables[0] as string, since: H - 60_000 }], until: H + HOUR } } },
  { name: 'reconcile-window', args: { tables, runId: 'r1', cutoff: H, from: H - HOUR, to: H, part: 'findings', held: { tables: [{ table: tables[0] as string, since: H - 60_000 }], until: H + HOUR } } },
  { name: 'reconcile-window', args: { tables, runId: 'r1', cutoff: H, part: 'findings', from: H, to: H + HOUR, unsettled: { from: H + 2 * HOUR, to: H + 2 * HOUR } } },
  { name: 'reconcile-window', args: { tables, runId: 'r1', cutoff: H, part: 'counts', from: H, to: H } },
  { name: 'replay-select', args: { tables, since: H, until: H + 2 * HOUR, buckets: 16, uncompactedFrom: H + HOUR, keys, fromPosition: 'a11', toPosition: 'a19' } },
  { name: 'replay-select', args: { tables, since: H, until: H + HOUR, buckets: 4, uncompactedFrom: H + 5 * HOUR, output: 's3://b/replay/' } },
  { name: 'erase-find-raw', args: { runId: 'erase-1', tables, since: H - 3 * 24 * HOUR, until: H } },
  { name: 'erase-find-raw', args: { runId: 'erase-1', tables, since: H - HOUR, until: H, legacy: { tables: [{ table: 'public.orders', segments: ['public.orders'], key: ['id'] }], since: H - 9 * HOUR, until: H }, output: 's3://b/erase/' } },
  { name: 'erase-find-raw', args: { runId: 'erase-1', tables, since: H - 3 * 24 * HOUR, until: H, compacted: { from: H - 2 * 24 * HOUR, through: H - 2 * HOUR, late: [H - 5 * HOUR, H - 30 * HOUR] }, output: 's3://b/erase/' } },
  { name: 'erase-find-history', args: { runId: 'erase-1', tables } },
  { name: 'erase-history', args: { runId: 'erase-1', tables } },
  { name: 'erase-expected', args: { runId: 'erase-1', tables } },
  { name: 'detect-anomalies', args: { now: H, thresholds: th } },
  { name: 'detect-anomalies', args: { now: H, thresholds: th, tables } },
  { name: 'detect-resnapshots', args: { tables, since: H - 24 * HOUR, until: H } },
  { name: 'detect-orphans', args: { tables, since: H - 24 * HOUR, until: H, output: 's3://b/unload/orphans/' } },
  { name: 'optimize', args: { table: 'history' } },
  { name: 'vacuum', args: { table: 'history' } },
];
const ALL: readonly Statement[] = SPECS.flatMap((s) => buildStatements(s.name, s.args as never));
const ATHENA = athena('tidemark_shop');

/** Counts `?` placeholders in an AST, and those under a `where` key. */
function placeholders(node: unknown, inWhere = false, out = { all: 0, inWhere: 0 }): { all: number; inWhere: number } {
  if (Array.isArray(node)) for (const n of node) placeholders(n, inWhere, out);
  else if (node !== null && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.type === 'origin' && o.value === '?') {
      out.all++;
      if (inWhere) out.inWhere++;
    }
    for (const [k, v] of Object.entries(o)) placeholders(v, inWhere || k === 'where', out);
  }
  return out;
}

describe('the Athena form, checked with a Trino parser', () => {
  it('covers every statement', () => {
    assert.deepEqual(new Set(SPECS.map((s) => s.name)), new Set(Object.keys(STATEMENTS)));
  });

  for (const s of ALL) {
    const r = render(s, ATHENA);
    const unparsed = UNPARSED_KINDS[s.kind];
    it(`${s.name} (${s.kind}) ${unparsed ? `fails to parse only as dialect entry "${unparsed}", its queries parse` : 'parses as Trino SQL'}`, () => {
      assert.ok(r.sql);
      if (unparsed) {
        assert.ok(DIALECT_ENTRIES[unparsed].reason.length > 20);
        assert.throws(() => trino(r.sql ?? ''));
      } else {
        const ast = trino(r.sql);
        const q = placeholders(ast);
        assert.equal(q.all, r.params.length, 'one value per ?');
        assert.equal(q.inWhere, q.all, 'Athena takes ? only in WHERE clauses');
      }
      for (const query of s.queries) {
        const text = renderSql(query, ATHENA).text;
        const q = placeholders(trino(text));
        assert.equal(q.inWhere, q.all, 'Athena takes ? only in WHERE clauses');
      }
    });
  }

  it('MERGE, DELETE, OPTIMIZE and VACUUM bind nothing; the others give Athena each value as its SQL literal', () => {
    for (const s of ALL) {
      const q = athenaQuery(s, 'tidemark_shop');
      if (['merge', 'delete', 'optimize', 'vacuum'].includes(s.kind)) assert.equal(q.ExecutionParameters, undefined, s.name);
      else assert.deepEqual(q.ExecutionParameters, render(s, ATHENA).params.map(literal), s.name);
    }
    const [compact] = buildStatements('compact-hour', { hour: H });
    assert.ok(compact);
    assert.deepEqual(athenaQuery(compact, 'tidemark_shop').ExecutionParameters, ["'2026-11-30'", '6', "'2026-11-30'", '6']);
  });

  it('names the sources in the Glue database, and inlines escaped values where Athena takes no parameters', () => {
    const [erase] = buildStatements('erase-expected', { runId: 'erase-1', tables: ["public.it's"] });
    assert.ok(erase);
    const source = "SELECT DISTINCT k.source_table, k.key_id FROM (SELECT k.source_table, k.key_id, k.key_hash, k.request FROM %KEYS% k WHERE k.run_id = 'erase-1' AND k.key_id IS NOT NULL) k";
    const on = "t.source_table IN ('public.it''s') AND t.source_table = s.source_table AND t.key_id = s.key_id";
    assert.equal(render(erase, ATHENA).sql, `MERGE INTO "tidemark_shop"."expected_state" t USING (${source.replace('%KEYS%', '"tidemark_shop"."erase_keys"')}) s ON ${on} WHEN MATCHED THEN DELETE`);
    assert.equal(render(erase, duckdb).sql, `MERGE INTO expected_state t USING (${source.replace('%KEYS%', 'erase_keys')}) s ON ${on} WHEN MATCHED THEN DELETE`);

    assert.throws(() => athena('Bad-Name'), /lowercase/);
  });

  it('renders every dialect entry differently on the two engines, with its reason', () => {
    for (const [name, e] of Object.entries(DIALECT_ENTRIES)) {
      assert.notEqual(e.athena, e.duckdb, name);
      assert.ok(e.reason.length > 40, name);
    }
    const [optimize] = buildStatements('optimize', { table: 'history' });
    assert.ok(optimize);
    assert.equal(render(optimize, ATHENA).sql, 'OPTIMIZE "tidemark_shop"."history" REWRITE DATA USING BIN_PACK');
    assert.equal(render(optimize, duckdb).sql, null);
  });
});

describe('values', () => {
  it('escapes text literals the same way for both engines and refuses control characters', () => {
    assert.equal(literal("it's"), "'it''s'");
    assert.equal(literal('a\\b'), "'a\\b'");
    assert.equal(literal(null), 'NULL');
    assert.equal(literal(true), 'TRUE');
    assert.equal(literal(1796018400000), '1796018400000');
    assert.throws(() => literal('a\nb'), /control characters/);
    assert.throws(() => literal(Number.NaN), /finite/);
  });
});

describe('every statement on DuckDB', () => {
  let bench: SqlBench;
  before(async () => {
    bench = await SqlBench.open();
    await bench.sources();
  });
  after(() => bench.close());

  for (const s of ALL) {
    it(`${s.name} runs${s.columns ? ' and yields its schema\'s columns' : ''}`, async () => {
      const r = render(s, duckdb);
      if (r.sql === null) return assert.ok(s.kind === 'optimize' || s.kind === 'vacuum');
      const target = s.writes?.table;
      if (s.kind === 'insert' && target) await bench.db.run(emptyTable(TABLES[target], `${target}${DUCKDB_INSERT_SUFFIX}`));
      const result = await bench.db.stream(s.kind === 'unload' ? r.sql.replace(/^CREATE TABLE "unload_result" AS /, '') : r.sql, bindable(r.params));
      if (s.columns) assert.deepEqual(result.columnNames(), s.columns.map((c) => c.name));
      if (s.kind === 'insert' && target) await bench.db.run(`DROP TABLE ${target}${DUCKDB_INSERT_SUFFIX}`);
    });
  }
});
