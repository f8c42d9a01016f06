/**
 * DuckDB in-process over local files, for the SQL unit tests: raw objects written as gzip JSON Lines
 * under a directory that mirrors a bucket (read through the same views the engine creates,
 * functions/sql/duckdb-views.ts), the Iceberg tables as plain DuckDB tables, and statements run with
 * the engine's semantics: an INSERT stages its rows and appends them, MERGE and DELETE change the
 * tables in place, an UNLOAD's rows are read back from its staging table.
 *
 *   const bench = await SqlBench.open();
 *   bench.object('raw/dt=2026-11-30/hr=06/a.jsonl.gz', body);
 *   await bench.sources();
 *   const rows = await bench.run(compactHour({ hour }));
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { bindable, type PlainRow, plainRows } from '../../bin/local/duckdb-values.js';
import { DUCKDB_INSERT_SUFFIX, DUCKDB_UNLOAD_TABLE, duckdb, render } from '../../functions/sql/dialect.js';
import { emptyTable, jsonView } from '../../functions/sql/duckdb-views.js';
import { duckdbType, ERASE_KEYS, QUARANTINE_LINES, RAW_EVENTS, RAW_LINES, TABLE_SIDE, TABLES, type TableName, type TableSchema } from '../../functions/sql/schemas.js';
import type { Statement } from '../../functions/sql/statement.js';

export const BUCKET = 'bench-bucket';
const ICEBERG: readonly TableName[] = ['history', 'expected_state', 'truncates', 'table_hours'];

export class SqlBench {
  private constructor(
    readonly dir: string,
    private readonly instance: DuckDBInstance,
    readonly db: DuckDBConnection,
  ) {}

  static async open(): Promise<SqlBench> {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-sql-'));
    const instance = await DuckDBInstance.create(':memory:', { memory_limit: '256MB', threads: '2', temp_directory: join(dir, 'spill') });
    const bench = new SqlBench(dir, instance, await instance.connect());
    for (const t of ICEBERG) await bench.db.run(emptyTable(TABLES[t]));
    return bench;
  }

  /** The local directory standing for the bucket. */
  get root(): string {
    return join(this.dir, 's3', BUCKET);
  }

  /** `s3://bench-bucket/<key>` */
  uri = (key: string): string => `s3://${BUCKET}/${key}`;

  /** Writes an object (a raw or table-side file) under the bucket directory. */
  object(key: string, body: Uint8Array | string): void {
    const file = join(this.root, key);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, body);
  }

  /** (Re)creates the JSON views over what `object` wrote: raw_lines, raw_events, quarantine_lines, table_side, erase_keys. */
  async sources(): Promise<void> {
    const local = (glob: string) => ({ files: join(this.root, glob), localRoot: `${this.root}/`, uriRoot: `s3://${BUCKET}/` });
    const views: [TableSchema, string][] = [
      [RAW_LINES, 'raw/dt=*/hr=*/*.jsonl.gz'],
      [RAW_EVENTS, 'raw/table=*/dt=*/hr=*/*.jsonl.gz'],
      [QUARANTINE_LINES, 'quarantine/dt=*/hr=*/*.jsonl.gz'],
      [TABLE_SIDE, 'side/run_id=*/*.jsonl'],
      [ERASE_KEYS, 'erase_keys/run_id=*/*.jsonl'],
    ];
    for (const [schema, glob] of views) {
      const found = (await this.db.runAndReadAll(`SELECT count(*) AS n FROM glob('${join(this.root, glob)}')`)).getRowObjectsJS()[0]?.n;
      await this.db.run(jsonView(schema, found ? local(glob) : { ...local(glob), files: null }));
    }
  }

  /** Adds rows to one of the Iceberg stand-in tables. */
  async insert(table: TableName, rows: readonly Record<string, unknown>[]): Promise<void> {
    if (rows.length === 0) return;
    const schema = TABLES[table];
    const file = join(this.dir, `rows-${table}-${Date.now()}-${Math.random().toString(16).slice(2)}.jsonl`);
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'));
    const columns = schema.columns.map((c) => `'${c.name}': '${duckdbType(c.type)}'`).join(', ');
    await this.db.run(`INSERT INTO ${table} SELECT ${schema.columns.map((c) => `"${c.name}"`).join(', ')} FROM read_json('${file}', format = 'newline_delimited', columns = {${columns}})`);
  }

  /** Every row of a table or view, ordered by `order`. */
  async rows(table: string, order = '1'): Promise<PlainRow[]> {
    return this.query(`SELECT * FROM ${table} ORDER BY ${order}`);
  }

  async query(text: string, params: readonly (string | number | boolean | null)[] = []): Promise<PlainRow[]> {
    const out: PlainRow[] = [];
    for await (const row of plainRows(await this.db.stream(text, bindable(params)))) out.push(row);
    return out;
  }

  /** Runs a statement as the engine would; returns a SELECT's or UNLOAD's rows (empty for DML). */
  async run(statement: Statement): Promise<PlainRow[]> {
    const r = render(statement, duckdb);
    if (r.sql === null) return [];
    const target = statement.writes?.table;
    if (statement.kind === 'insert' && target) await this.db.run(emptyTable(TABLES[target], `${target}${DUCKDB_INSERT_SUFFIX}`));
    let rows: PlainRow[] = [];
    if (statement.kind === 'select') rows = await this.query(r.sql, r.params);
    else await this.db.run(r.sql, bindable(r.params));
    if (statement.kind === 'insert' && target) {
      await this.db.run(`INSERT INTO ${target} SELECT * FROM ${target}${DUCKDB_INSERT_SUFFIX}`);
      await this.db.run(`DROP TABLE ${target}${DUCKDB_INSERT_SUFFIX}`);
    }
    if (statement.kind === 'unload') {
      const out = await this.query(`SELECT * FROM ${DUCKDB_UNLOAD_TABLE}`);
      await this.db.run(`DROP TABLE ${DUCKDB_UNLOAD_TABLE}`);
      return out;
    }
    return rows;
  }

  async runAll(statements: readonly Statement[]): Promise<void> {
    for (const s of statements) await this.run(s);
  }

  close(): void {
    this.db.closeSync();
    this.instance.closeSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
