/**
 * The embedded default's SQL engine: runs a statement of functions/sql on DuckDB, with Parquet files
 * in the S3 emulator standing in for the Iceberg tables, as Athena runs it on AWS.
 *
 * DuckDB cannot read S3 here (httpfs is a download), so each statement gets a session: a temporary
 * directory and its own schema in the engine's one disk-backed DuckDB database (`memory_limit`,
 * `temp_directory`: larger data spills to disk, never to the heap), opened on first use and kept
 * until `close()` (a database costs far more to open than a schema). The objects it reads (only the partitions its `reads` name) are
 * fetched into the directory and exposed as views named as the Glue tables (functions/sql/duckdb-views.ts);
 * the statement runs as rendered for the `duckdb` dialect; what it wrote goes back to S3
 * (duckdb-store.ts): an INSERT as new Parquet files of the partitions it touched, a MERGE or DELETE
 * as a rewrite of the partitions it can touch (its `affected` query narrows them), an UNLOAD as gzip
 * JSON Lines under its location. SELECT rows are streamed a chunk at a time.
 *
 *   const engine = new DuckDbEngine({ s3, bucket, rawPrefix: 'raw/', quarantinePrefix: 'quarantine/', warehousePrefix: 'warehouse/', tableSidePrefix: 'reports/table_side/' });
 *   await engine.runAll(buildStatements('fold-expected', { hour }));
 *   for await (const row of engine.query(reconcileFull({ …, part: 'findings' }))) …
 *   engine.close();
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { DUCKDB_INSERT_SUFFIX, DUCKDB_UNLOAD_TABLE, duckdb, render } from '../../functions/sql/dialect.js';
import { emptyTable, jsonView, loadedTable, parquetView } from '../../functions/sql/duckdb-views.js';
import { TABLES } from '../../functions/sql/schemas.js';
import { literal, renderSql } from '../../functions/sql/sql.js';
import type { Read, Statement, StatementKind, Write } from '../../functions/sql/statement.js';
import { download, ICEBERG_TABLES, type IcebergTable, type Partition, partitionAt, partitionColumns, partitionDir, partitions, removeEverywhere, type StoreLayout, sourceKeys, upload } from './duckdb-store.js';
import { bindable, type PlainRow, plainRows, type PlainValue } from './duckdb-values.js';

export interface DuckDbEngineOptions extends StoreLayout {
  readonly s3: S3Client;
  /** DuckDB's `memory_limit`. @default '512MB' */
  readonly memoryLimit?: string;
  /** DuckDB's `threads`. @default 2 */
  readonly threads?: number;
  /** Where sessions make their temporary directories. @default os.tmpdir() */
  readonly tempRoot?: string;
}

export interface RunReport {
  readonly name: string;
  readonly kind: StatementKind;
  /** Rows a SELECT yielded or an UNLOAD wrote; rows an INSERT, MERGE or DELETE changed. */
  readonly rows: number;
  /** Objects written: Parquet partition files, UNLOAD files. */
  readonly written: readonly string[];
  /** Objects of older generations removed, with every version. */
  readonly removed: readonly string[];
}

export class EngineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineError';
  }
}

const isIceberg = (t: string): t is IcebergTable => (ICEBERG_TABLES as readonly string[]).includes(t);
const fileId = (): string => `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
const gen = (n: number): string => `g${String(n).padStart(8, '0')}`;

/** The engine's DuckDB database: one disk-backed file, each statement in a schema of its own. */
class Database {
  private schemas = 0;
  private readonly cleanup = () => this.close();
  private closed = false;
  private constructor(
    private readonly dir: string,
    private readonly instance: DuckDBInstance,
  ) {
    // A caller that never closes the engine still leaves no directory behind.
    process.once('exit', this.cleanup);
  }

  static async open(o: DuckDbEngineOptions): Promise<Database> {
    const dir = mkdtempSync(join(o.tempRoot ?? tmpdir(), 'tidemark-duckdb-db-'));
    try {
      return new Database(dir, await DuckDBInstance.create(join(dir, 'engine.duckdb'), { memory_limit: o.memoryLimit ?? '512MB', threads: String(o.threads ?? 2), temp_directory: join(dir, 'spill') }));
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A connection whose unqualified names resolve in a new, empty schema. */
  async connect(): Promise<{ db: DuckDBConnection; schema: string }> {
    const db = await this.instance.connect();
    const schema = `s${++this.schemas}`;
    try {
      await db.run(`CREATE SCHEMA "${schema}"`);
      await db.run(`SET schema = '${schema}'`);
      return { db, schema };
    } catch (err) {
      db.closeSync();
      throw err;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    process.removeListener('exit', this.cleanup);
    this.instance.closeSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One statement's schema and local copies; removed when the statement is done. */
class Session {
  private files = 0;
  private constructor(
    readonly dir: string,
    private readonly schema: string,
    readonly db: DuckDBConnection,
    readonly o: DuckDbEngineOptions,
  ) {}

  static async open(o: DuckDbEngineOptions, database: Database): Promise<Session> {
    const dir = mkdtempSync(join(o.tempRoot ?? tmpdir(), 'tidemark-duckdb-'));
    try {
      const { db, schema } = await database.connect();
      return new Session(dir, schema, db, o);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A fresh local file name under the session's output directory. */
  outFile(ext: string): string {
    mkdirSync(join(this.dir, 'out'), { recursive: true });
    return join(this.dir, 'out', `${this.files++}${ext}`);
  }

  /** Fetches what a read names and creates its view. */
  async read(r: Read): Promise<void> {
    const root = join(this.dir, 'src', r.table, '/');
    if (isIceberg(r.table)) {
      const keys = (await partitions(this.o.s3, this.o, r.table, r.filter)).flatMap((p) => p.keys);
      await download(this.o.s3, this.o.bucket, keys, root);
      await this.db.run(parquetView(TABLES[r.table], keys.length > 0 ? `${root}**/*.parquet` : null));
      return;
    }
    const keys = await sourceKeys(this.o.s3, this.o, r.table, r.filter);
    await download(this.o.s3, this.o.bucket, keys, root);
    await this.db.run(jsonView(TABLES[r.table], { files: keys.length > 0 ? `${root}**/*` : null, localRoot: root, uriRoot: `s3://${this.o.bucket}/` }));
  }

  async rows(sql: string, params: readonly (string | number | boolean | null)[] = []): Promise<PlainRow[]> {
    const out: PlainRow[] = [];
    for await (const row of plainRows(await this.db.stream(sql, bindable(params)))) out.push(row);
    return out;
  }

  /** Writes the rows of `table` in one partition to a Parquet file and stores it at `key`. */
  async writePartition(table: string, columns: readonly string[], values: Readonly<Record<string, PlainValue>>, key: string): Promise<void> {
    const file = this.outFile('.parquet');
    const where = columns.length > 0 ? ` WHERE ${columns.map((c) => `"${c}" = ${literal(values[c] as string)}`).join(' AND ')}` : '';
    await this.db.run(`COPY (SELECT * FROM "${table}"${where}) TO ${literal(file)} (FORMAT PARQUET)`);
    await upload(this.o.s3, this.o.bucket, key, file, 'application/vnd.apache.parquet');
  }

  /** Drops the schema (what the statement created) and the local copies. */
  async close(): Promise<void> {
    try {
      await this.db.run("SET schema = 'main'");
      await this.db.run(`DROP SCHEMA "${this.schema}" CASCADE`);
    } catch {
      // Left in the database file, which close() removes: never hides the statement's own error.
    } finally {
      this.db.closeSync();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** The partition values present in a DuckDB table, and their directories. */
async function presentPartitions(s: Session, source: string, table: IcebergTable): Promise<{ values: PlainRow; dir: string }[]> {
  const cols = partitionColumns(table);
  const rows = cols.length > 0 ? await s.rows(`SELECT DISTINCT ${cols.map((c) => `CAST("${c}" AS VARCHAR) AS "${c}"`).join(', ')} FROM "${source}"`) : (await s.rows(`SELECT count(*) AS n FROM "${source}"`)).filter((r) => Number(r.n) > 0).map(() => ({}));
  return rows.map((values) => ({ values, dir: partitionDir(s.o, table, values) }));
}

/** INSERT: the staged rows become new files at each partition's current generation. */
async function writeInserted(s: Session, table: IcebergTable, staged: string): Promise<string[]> {
  const written: string[] = [];
  for (const p of await presentPartitions(s, staged, table)) {
    const current = await partitionAt(s.o.s3, s.o, p.dir);
    const key = `${p.dir}${gen(current?.generation ?? 1)}-${fileId()}.parquet`;
    await s.writePartition(staged, partitionColumns(table), p.values, key);
    written.push(key);
  }
  return written;
}

/**
 * The partitions a rewrite loads: those its `affected` query names (each listed on its own), or
 * without one every partition the filter selects.
 */
async function affectedPartitions(s: Session, w: Write, table: IcebergTable): Promise<Partition[]> {
  if (!w.affected) return partitions(s.o.s3, s.o, table, w.filter);
  const rows = await s.rows(renderSql(w.affected, duckdb, true).text);
  const dirs = new Set(rows.map((r) => partitionDir(s.o, table, Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? '' : String(v)])))));
  const found: Partition[] = [];
  for (const dir of dirs) {
    const p = await partitionAt(s.o.s3, s.o, dir);
    if (p) found.push(p);
  }
  return found;
}

/** MERGE / DELETE: the loaded partitions are written as the next generation, then the old files removed. */
async function writeRewritten(s: Session, table: IcebergTable, loaded: readonly Partition[]): Promise<{ written: string[]; removed: string[] }> {
  const byDir = new Map(loaded.map((p) => [p.dir, p]));
  const present = await presentPartitions(s, table, table);
  for (const p of present) {
    if (!byDir.has(p.dir) && (await partitionAt(s.o.s3, s.o, p.dir)) !== null) throw new EngineError(`${table}: the statement wrote partition ${p.dir}, which it did not load; its affected query must name it`);
  }
  const written: string[] = [];
  for (const p of present) {
    const key = `${p.dir}${gen((byDir.get(p.dir)?.generation ?? 0) + 1)}-${fileId()}.parquet`;
    await s.writePartition(table, partitionColumns(table), p.values, key);
    written.push(key);
  }
  const removed = loaded.flatMap((p) => p.keys);
  for (const key of removed) await removeEverywhere(s.o.s3, s.o.bucket, key);
  return { written, removed };
}

/** `s3://bucket/prefix/` → bucket and prefix. */
function location(uri: string): { bucket: string; prefix: string } {
  if (!uri.startsWith('s3://')) throw new EngineError(`an UNLOAD location must be s3://bucket/prefix/, got ${uri}`);
  const rest = uri.slice(5);
  const slash = rest.indexOf('/');
  const prefix = slash < 0 ? '' : rest.slice(slash + 1);
  return { bucket: slash < 0 ? rest : rest.slice(0, slash), prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` };
}

/** UNLOAD: the staged rows as gzip JSON Lines, one directory per partition value (`bucket=3/`), the partition column left out as Athena does. */
async function writeUnloaded(s: Session, statement: Statement): Promise<string[]> {
  const out = statement.output;
  if (!out) throw new EngineError(`${statement.name} has no output location`);
  const { bucket, prefix } = location(out.location);
  const col = out.partitionedBy[0];
  const copy = async (select: string, key: string) => {
    const file = s.outFile('.json.gz');
    await s.db.run(`COPY (${select}) TO ${literal(file)} (FORMAT JSON, COMPRESSION GZIP)`);
    await upload(s.o.s3, bucket, key, file, 'application/x-ndjson');
    return key;
  };
  if (col === undefined) return [await copy(`SELECT * FROM "${DUCKDB_UNLOAD_TABLE}"`, `${prefix}${fileId()}-0.json.gz`)];
  const written: string[] = [];
  for (const r of await s.rows(`SELECT DISTINCT CAST("${col}" AS VARCHAR) AS v FROM "${DUCKDB_UNLOAD_TABLE}" ORDER BY 1`)) {
    const v = String(r.v);
    written.push(await copy(`SELECT * EXCLUDE ("${col}") FROM "${DUCKDB_UNLOAD_TABLE}" WHERE CAST("${col}" AS VARCHAR) = ${literal(v)}`, `${prefix}${col}=${v}/${fileId()}-0.json.gz`));
  }
  return written;
}

export class DuckDbEngine {
  private database: Promise<Database> | null = null;
  constructor(private readonly o: DuckDbEngineOptions) {}

  private session(): Promise<Session> {
    this.database ??= Database.open(this.o).catch((err: unknown) => {
      this.database = null;
      throw err;
    });
    return this.database.then((d) => Session.open(this.o, d));
  }

  /** Closes the engine's database and removes its files; a later statement opens a new one. */
  async close(): Promise<void> {
    const database = this.database;
    this.database = null;
    if (database) (await database.catch(() => null))?.close();
  }

  /** Runs statements in order (a statement file's steps, e.g. fold-expected's three MERGEs). */
  async runAll(statements: readonly Statement[]): Promise<RunReport[]> {
    const out: RunReport[] = [];
    for (const s of statements) out.push(await this.run(s));
    return out;
  }

  /** Runs one statement; a SELECT's rows are counted, not kept (use `query` for them). */
  async run(statement: Statement): Promise<RunReport> {
    const base = { name: statement.name, kind: statement.kind, written: [] as string[], removed: [] as string[] };
    if (statement.kind === 'select') {
      let rows = 0;
      for await (const _ of this.query(statement)) rows++;
      return { ...base, rows };
    }
    const r = render(statement, duckdb);
    if (r.sql === null) return { ...base, rows: 0 };
    const s = await this.session();
    try {
      for (const read of statement.reads) await s.read(read);
      return await this.execute(s, statement, r.sql, r.params);
    } finally {
      await s.close();
    }
  }

  private async execute(s: Session, statement: Statement, sql: string, params: readonly (string | number | boolean | null)[]): Promise<RunReport> {
    const base = { name: statement.name, kind: statement.kind };
    const w = statement.writes;
    if (statement.kind === 'unload') {
      await s.db.run(sql, bindable(params));
      const rows = Number((await s.rows(`SELECT count(*) AS n FROM "${DUCKDB_UNLOAD_TABLE}"`))[0]?.n ?? 0);
      return { ...base, rows, written: await writeUnloaded(s, statement), removed: [] };
    }
    if (!w || !isIceberg(w.table)) throw new EngineError(`${statement.name}: a ${statement.kind} must write one of ${ICEBERG_TABLES.join(', ')}`);
    const table = w.table;
    if (w.mode === 'insert') {
      const staged = `${table}${DUCKDB_INSERT_SUFFIX}`;
      await s.db.run(emptyTable(TABLES[table], staged));
      const rows = (await s.db.run(sql, bindable(params))).rowsChanged;
      return { ...base, rows, written: await writeInserted(s, table, staged), removed: [] };
    }
    const loaded = await affectedPartitions(s, w, table);
    const root = join(s.dir, 'load', table, '/');
    await download(this.o.s3, this.o.bucket, loaded.flatMap((p) => p.keys), root);
    await s.db.run(`DROP VIEW IF EXISTS "${table}"`);
    await s.db.run(loaded.length > 0 ? loadedTable(TABLES[table], `${root}**/*.parquet`) : emptyTable(TABLES[table]));
    const rows = (await s.db.run(sql, bindable(params))).rowsChanged;
    return { ...base, rows, ...(await writeRewritten(s, table, loaded)) };
  }

  /** Streams a SELECT's rows as plain objects (or an UNLOAD's query's rows, without writing them). */
  async *query(statement: Statement): AsyncGenerator<PlainRow> {
    const query = statement.queries[0];
    if ((statement.kind !== 'select' && statement.kind !== 'unload') || !query) throw new EngineError(`${statement.name} is a ${statement.kind}, not a query`);
    const r = renderSql(query, duckdb);
    const s = await this.session();
    try {
      for (const read of statement.reads) await s.read(read);
      yield* plainRows(await s.db.stream(r.text, bindable(r.params)));
    } finally {
      await s.close();
    }
  }
}
