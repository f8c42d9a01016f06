/**
 * Byte sizes and CPU costs measured on a sample, for the cost model to extrapolate linearly:
 *
 * - raw: the sample landed through `RawStore.land` (history-load.ts), NDJSON and gzip (`RAW_GZIP`)
 *   bytes per change line;
 * - history and expected state: the embedded engine (bin/local/duckdb-engine.ts) runs
 *   `compact-hour` and `fold-expected` over the sample, and the Parquet files it writes (the
 *   stand-in for Iceberg) are measured column by column with DuckDB's `parquet_metadata`, as
 *   written (DuckDB's default codec, Snappy) and rewritten with ZSTD (Athena's default for Iceberg,
 *   prices.ts FORMATS);
 * - table side: the gzip JSON Lines history-load.ts writes, per item;
 * - DynamoDB: the item the guarded writer puts for each planned write (its size is what an export
 *   bills), its line in an export file (DynamoDB JSON, gzip), and the CPU of turning export lines
 *   into table-side lines (decodeItem, the canonical key, JSON, gzip) and of rewriting one raw
 *   object as erase does (gunzip, parse every line, drop a key's, gzip).
 *
 * One table, one hour: a partition of the sample's size, so Parquet's per-file overhead is that of
 * a file of `events` rows (the reference pipeline's hourly files hold 360,000 rows of a table at
 * 1,000 tables, more with fewer).
 *
 *   const sizes = await measureSizes({ events: 30_000, keys: 10_000 });
 *   sizes.history.zstd.message   // bytes per event of the message column
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { DuckDbEngine } from '../../../bin/local/duckdb-engine.js';
import { putCommand } from '../../../functions/adapters/guard.js';
import { decodeItem } from '../../../functions/adapters/item-codec.js';
import { RAW_GZIP } from '../../../functions/adapters/raw-store.js';
import { keyId, normalizeKey } from '../../../functions/core/keys.js';
import { Normalizer } from '../../../functions/core/normalize.js';
import { planBatch } from '../../../functions/core/plan.js';
import { buildStatements } from '../../../functions/sql/index.js';
import { itemBytes } from '../cost.js';
import { loadHistory } from './history-load.js';
import { decodeBatch } from './landing.js';
import { memoryS3 } from './memory-s3.js';
import { scaleBatches, scaleConfig } from './workload.js';

/** Compressed bytes per row, by column (a nested column's parts summed under its top-level name). */
export type ColumnBytes = Readonly<Record<string, number>>;

export interface ParquetSizes {
  readonly snappy: ColumnBytes;
  readonly zstd: ColumnBytes;
  readonly rows: number;
}

export interface MeasuredSizes {
  readonly sampleEvents: number;
  readonly sampleKeys: number;
  readonly rowBytes: number;
  readonly rawNdjsonPerEvent: number;
  readonly rawGzipPerEvent: number;
  /** Per event. */
  readonly history: ParquetSizes;
  /** Per key. */
  readonly expected: ParquetSizes;
  readonly tableSideGzipPerKey: number;
  /** DynamoDB item size of a written row (what an export bills), and its export line gzipped. */
  readonly itemBytes: number;
  readonly exportGzipPerItem: number;
  /** CPU µs per exported item turned into a table-side line. */
  readonly exportToSideMicros: number;
  /** CPU µs to rewrite one raw object of `rawObjectEvents` events without one key's lines. */
  readonly rewriteObjectMicros: number;
  readonly rawObjectEvents: number;
}

export interface SizeOptions {
  readonly events: number;
  readonly keys: number;
  /** @default 1000 */
  readonly rowBytes?: number;
  /** Records per raw object. @default 3000 */
  readonly batch?: number;
}

const LAYOUT = { bucket: 'scale-sizes', rawPrefix: 'raw/', quarantinePrefix: 'quarantine/', warehousePrefix: 'warehouse/', tableSidePrefix: 'reports/table_side/' } as const;
const START = Date.UTC(2026, 10, 30);

/** Column sizes of Parquet files, per row, as written and rewritten with ZSTD. */
async function parquetSizes(files: readonly Buffer[]): Promise<ParquetSizes> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-scale-sizes-'));
  const instance = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '512MB' });
  const db = await instance.connect();
  try {
    const paths = files.map((body, i) => {
      const p = join(dir, `f${i}.parquet`);
      writeFileSync(p, body);
      return p;
    });
    const list = `[${paths.map((p) => `'${p}'`).join(', ')}]`;
    const zstd = join(dir, 'zstd.parquet');
    await db.run(`COPY (SELECT * FROM read_parquet(${list})) TO '${zstd}' (FORMAT PARQUET, COMPRESSION ZSTD)`);
    const perColumn = async (glob: string): Promise<{ bytes: Record<string, number>; rows: number }> => {
      const rows = Number((await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet(${glob})`)).getRowObjectsJS()[0]?.n ?? 0);
      const out: Record<string, number> = {};
      const meta = (await db.runAndReadAll(`SELECT path_in_schema AS p, sum(total_compressed_size) AS b FROM parquet_metadata(${glob}) GROUP BY 1`)).getRowObjectsJS();
      for (const m of meta) {
        const column = String(m.p).split(',')[0]?.trim() ?? '';
        out[column] = (out[column] ?? 0) + Number(m.b) / Math.max(1, rows);
      }
      return { bytes: out, rows };
    };
    const snappy = await perColumn(list);
    return { snappy: snappy.bytes, zstd: (await perColumn(`'${zstd}'`)).bytes, rows: snappy.rows };
  } finally {
    db.closeSync();
    instance.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cpuMicros = (fn: () => void, repeats: number): number => {
  fn();
  const start = process.cpuUsage();
  for (let i = 0; i < repeats; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / repeats;
};

/** The DynamoDB side of the sample: item sizes, export lines and the export → table side CPU. */
function dynamodbSide(o: SizeOptions): Pick<MeasuredSizes, 'itemBytes' | 'exportGzipPerItem' | 'exportToSideMicros'> {
  const config = scaleConfig(1, LAYOUT.bucket);
  const table = config.tables[0];
  if (!table) throw new Error('the sample has one table');
  const normalizer = new Normalizer(config);
  const batch = scaleBatches({ tables: 1, keys: 3000, events: 3000, batch: 3000, start: START, rowBytes: o.rowBytes ?? 1000, hoursPerDay: 1, badEvery: 0 }).next().value;
  if (!batch) throw new Error('no sample batch');
  const decoded = decodeBatch(batch.records, config, normalizer);
  const plan = planBatch(decoded.changes, (e) => normalizer.keyIdOf(e), decoded.identity);
  const items = plan.writes.map((w) => putCommand(table.target, w, { table, now: START }).Item ?? {});
  const exportLines = items.map((Item) => JSON.stringify({ Item }));
  const exportGz = gzipSync(`${exportLines.join('\n')}\n`, RAW_GZIP).length;
  const toSide = () => {
    const out: string[] = [];
    for (const line of exportLines) {
      const item = (JSON.parse(line) as { Item: (typeof items)[number] }).Item;
      const d = decodeItem(table, item);
      const key = normalizeKey(table, d.row);
      out.push(JSON.stringify({ source_table: table.source, key_id: keyId(table, key), key_json: JSON.stringify(key), position: d.position, deleted: d.deleted, erased: false, hash: d.contentHash, applied_at: d.appliedAt }));
    }
    gzipSync(`${out.join('\n')}\n`, RAW_GZIP);
  };
  return {
    itemBytes: items.reduce((n, i) => n + itemBytes(i), 0) / items.length,
    exportGzipPerItem: exportGz / items.length,
    exportToSideMicros: cpuMicros(toSide, 3) / items.length,
  };
}

/** Erase's rewrite of one raw object: gunzip, parse every line, drop one key's lines, gzip. */
function rewriteCpu(body: Buffer): { micros: number; events: number } {
  const lines = gunzipSync(body).toString('utf8').split('\n').filter((l) => l !== '');
  const victim = (JSON.parse(lines[0] ?? '{}') as { keyId?: string }).keyId;
  const rewrite = () => {
    const kept = gunzipSync(body)
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '' && (JSON.parse(l) as { keyId?: string }).keyId !== victim);
    gzipSync(`${kept.join('\n')}\n`, RAW_GZIP);
  };
  return { micros: cpuMicros(rewrite, 3), events: lines.length };
}

export async function measureSizes(o: SizeOptions): Promise<MeasuredSizes> {
  const s3 = memoryS3();
  try {
    const load = await loadHistory(s3.client, LAYOUT, {
      tables: 1,
      keys: o.keys,
      events: o.events,
      batch: o.batch ?? 3000,
      start: START,
      hoursPerDay: 1,
      rowBytes: o.rowBytes ?? 1000,
      badEvery: 0,
      checkpoints: [0],
      extra: 0,
    });
    const engine = new DuckDbEngine({ s3: s3.client, ...LAYOUT });
    const hour = load.hours[0] ?? START;
    for (const s of [...buildStatements('compact-hour', { hour }), ...buildStatements('fold-expected', { hour })]) await engine.run(s);
    await engine.close();
    const bodies = (prefix: string) => s3.keys(prefix).map((k) => s3.body(k) ?? Buffer.alloc(0));
    const ndjson = bodies(LAYOUT.rawPrefix).reduce((n, b) => n + gunzipSync(b).length, 0);
    const firstRaw = bodies(LAYOUT.rawPrefix)[0];
    if (!firstRaw) throw new Error('the sample landed no raw object');
    const rewrite = rewriteCpu(firstRaw);
    return {
      sampleEvents: load.events,
      sampleKeys: load.keys,
      rowBytes: o.rowBytes ?? 1000,
      rawNdjsonPerEvent: ndjson / load.events,
      rawGzipPerEvent: load.rawBytes / load.events,
      history: await parquetSizes(bodies(`${LAYOUT.warehousePrefix}history/`)),
      expected: await parquetSizes(bodies(`${LAYOUT.warehousePrefix}expected_state/`)),
      tableSideGzipPerKey: s3.usage(LAYOUT.tableSidePrefix).bytes / Math.max(1, load.checkpoints[0]?.items ?? 1),
      ...dynamodbSide(o),
      rewriteObjectMicros: rewrite.micros,
      rawObjectEvents: rewrite.events,
    };
  } finally {
    s3.restore();
  }
}

/** Bytes per row of the named columns (all when `columns` is undefined). */
export const bytesOf = (sizes: ColumnBytes, columns?: readonly string[]): number => (columns ?? Object.keys(sizes)).reduce((n, c) => n + (sizes[c] ?? 0), 0);
