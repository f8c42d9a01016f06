/**
 * Where things live in the status table (layout 2): one partition per (pipeline, table), so that no
 * partition key takes writes from many tables, and the rows of one table sort together.
 *
 *   partition (`pipeline` attribute)     row (`table` attribute)      what
 *   shop/public.orders                   status                       the status row: counters, latest facts, the open hour's counters
 *   shop/public.orders                   hour#2026-11-30T06           a closed hour's counters (TTL 35 days)
 *   shop/public.orders                   hour#2026-11-30T06#v1        that hour's counters moved from layout 1 by the migration
 *   shop/public.orders                   job#reconcile, job#snapshot  the jobs' last runs
 *   shop/public.orders                   schema                       its recorded schema and drift (adapters/schema-store.ts)
 *   shop#tables#07                       public.orders                the table registry: one small row per table, over
 *                                                                     REGISTRY_SHARDS partitions by a hash of the table
 *   shop#erased                          <table>#<hash>, #key#<id>    the erase ledger (unchanged)
 *   shop#fresh:<target>/public.orders    status                       a fresh replay's own truncate watermarks
 *   shop#dsql-parts                      chunk#<id>                   split Aurora DSQL records' parts (adapters/split-parts-store.ts)
 *
 * The key attributes keep their layout-1 names (`pipeline`, `table`), so the upgrade needs no new
 * table (CloudFormation cannot change a key schema in place) and the ledger stays where it is; in
 * layout 2 `pipeline` holds the partition and `table` the row kind. Pipeline names are lowercase
 * letters, digits and `-`, so the character after the name tells the partitions apart: `/` is a
 * table's, `#` one of the pipeline's own (registry, ledger, fresh replays), and layout 1 used the
 * bare name.
 *
 * This module is pure; the ingest, the jobs, the CLI and the migration all key rows through it.
 */

/** Key attributes of the status table: partition key `pipeline`, sort key `table` (their layout-1 names). */
export const STATUS_KEY = { partition: 'pipeline', row: 'table' } as const;

/** The status row of a table. */
export const STATUS_ROW = 'status';

/** Closed hours of a table: `hour#<YYYY-MM-DDTHH>` (UTC), and `…#v1` for hours moved from layout 1. */
export const HOUR_ROW_PREFIX = 'hour#';

/** The recorded schema of a table (columns, types, drift history). */
export const SCHEMA_ROW = 'schema';

/** The jobs' last-run rows of a table: `job#reconcile`, `job#snapshot`. */
export const JOB_ROW_PREFIX = 'job#';
export type JobRowKind = 'reconcile' | 'snapshot';

/** How long closed hour rows are kept before DynamoDB's TTL removes them. */
export const HOUR_ROW_TTL_DAYS = 35;

/** The partition of a table's rows: `shop/public.orders`. */
export const tablePartition = (pipeline: string, table: string): string => `${pipeline}/${table}`;

/** The source table of a table partition of `pipeline`, or null for any other partition. */
export function tableOfPartition(pipeline: string, partition: string): string | null {
  return partition.startsWith(`${pipeline}/`) ? partition.slice(pipeline.length + 1) : null;
}

/**
 * How many partitions the table registry is spread over. A table's registry row is written once in
 * its life (at its first status write), so a brand-new pipeline's first batch over 1,000 tables puts
 * about 1,000 / 32 ≈ 31 rows (at most about 45) on any one key instead of 1,000; listing the tables
 * is one small Query per partition, sent together.
 */
export const REGISTRY_SHARDS = 32;

/** The registry partition of layout 2 before it was spread (`shop#tables`): still read, never written. */
export const legacyRegistryPartition = (pipeline: string): string => `${pipeline}#tables`;

/** FNV-1a over the table name's UTF-16 code units: stable across runtimes and releases. */
function registryShard(table: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < table.length; i++) {
    h ^= table.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % REGISTRY_SHARDS;
}

/** The registry partition holding `table`'s row: `shop#tables#07`; sort key the source table. */
export const tableRegistryPartition = (pipeline: string, table: string): string => `${pipeline}#tables#${String(registryShard(table)).padStart(2, '0')}`;

/** Every partition the registry may hold rows in: the spread ones, then the legacy one. */
export const registryPartitions = (pipeline: string): string[] => [
  ...Array.from({ length: REGISTRY_SHARDS }, (_, i) => `${pipeline}#tables#${String(i).padStart(2, '0')}`),
  legacyRegistryPartition(pipeline),
];

/** `2026-11-30T06` for any time in that hour (UTC). */
export const hourLabel = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 13);

/** Start of the hour of a label, epoch ms; NaN for anything else. */
export const hourStartOf = (label: string): number => (/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(label) ? Date.parse(`${label}:00:00.000Z`) : Number.NaN);

/** The row of a closed hour: `hour#2026-11-30T06`. */
export const hourRowKey = (epochMs: number): string => `${HOUR_ROW_PREFIX}${hourLabel(epochMs)}`;

/** The hour of an hour row's sort key (`hour#2026-11-30T06`, `hour#2026-11-30T06#v1`), or null. */
export function hourOfRowKey(row: string): string | null {
  const m = /^hour#(\d{4}-\d{2}-\d{2}T\d{2})(#.*)?$/.exec(row);
  return m?.[1] ?? null;
}

export const jobRowKey = (job: JobRowKind): string => `${JOB_ROW_PREFIX}${job}`;

/**
 * The counters the status row also keeps for its open hour, under `h_<counter>`, and a closed hour
 * row keeps under their own names: what the anomaly checks compare hour by hour.
 */
export const HOUR_COUNTERS = ['received', 'applied', 'opC', 'opU', 'opD', 'opR', 'placeholders', 'beforeNullUpdates', 'snapshotEvents', 'resnapshots', 'quarantined'] as const;
export type HourCounter = (typeof HOUR_COUNTERS)[number];

/** Status-row attributes of the open hour: its label, its batch count, and `h_<counter>`. */
export const OPEN_HOUR = { label: 'hour', batches: 'hourBatches', counterPrefix: 'h_' } as const;

/** Attribute of a closed hour row that counts the batches in it (the most complete copy wins). */
export const HOUR_BATCHES = 'batches';
