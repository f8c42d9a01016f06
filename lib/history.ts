/**
 * History: the Glue database and tables the jobs' SQL reads and writes (functions/sql/schemas.ts
 * declares every column once; this file only renders them for Glue), and the Athena workgroup the
 * jobs' queries run in (docs/history.md, docs/deploy.md "What gets created").
 *
 * JSON sources, gzip JSON Lines read by the OpenX JSON SerDe, with snake_case columns mapped to the
 * lines' camelCase fields (`mapping.key_id` = `keyid`) and their path partitions projected (no
 * crawler, no MSCK REPAIR):
 *
 * - `raw_lines`: the batch objects the runtime writes now,
 *   `<raw prefix>dt=YYYY-MM-DD/hr=HH/<shard>-<firstSeq>-<lastSeq>-<digest>.jsonl.gz`, every table's
 *   lines in one object per batch (docs/history.md §1);
 * - `raw_events`: raw landed in the first layout, one object per table per batch,
 *   `<raw prefix>table=<source table>/dt=…/hr=…/…`. Its `source_table` partition is injected, so
 *   its queries must name it; the path holds the table name percent-encoded (letters, digits, `.`,
 *   `_`, `-` unchanged), and so does the value: `public.café` is `source_table = 'public.caf%C3%A9'`;
 * - `quarantine_lines`: `<quarantine prefix>dt=…/hr=…/…`;
 * - `table_side`: what reconcile reads of DynamoDB, `<history>table_side/run_id=<run>/…` (`run_id`
 *   injected: every query names its run);
 * - `erase_keys`: the keys of one erase run, `<history>erase_keys/run_id=<run>/keys.jsonl.gz`
 *   (`run_id` injected), which the erase statements join instead of carrying keys in their text;
 *   each run deletes its own object when it ends.
 *
 * Iceberg tables (format version 2, Parquet) under `<history>warehouse/<table>/`: `history`
 * (partitioned by `source_table` and `dt`), `expected_state` (`source_table`), `truncates`, and
 * `table_hours` (`dt`). They are created through `AWS::Glue::Table` `OpenTableFormatInput`:
 * `IcebergInput` with `MetadataOperation: CREATE` and an `IcebergTableInput` (location, schema,
 * partition spec, properties: Parquet with zstd, and the VACUUM bounds of `vacuumProperties`); Glue
 * then writes the first metadata file itself. With
 * `OpenTableFormatInput` the resource names the table at its top level and carries no `TableInput`
 * (CloudFormation User Guide, AWS::Glue::Table, properties `Name` and `OpenTableFormatInput`;
 * AWS::Glue::Table IcebergInput, IcebergTableInput, IcebergSchema, IcebergStructField,
 * IcebergPartitionSpec, IcebergPartitionField).
 *
 * The workgroup (unless `history.workGroup` names an existing one): Athena engine version 3 (Iceberg
 * DML: INSERT, MERGE, DELETE, OPTIMIZE, VACUUM), its configuration enforced, results under
 * `<history>athena/` encrypted with the pipeline key under `encryption: "kms"` (else SSE-S3), a
 * per-query bytes-scanned cutoff when `history.bytesScannedCutoffMb` is set.
 */
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { athenaResultsPrefix, eraseKeysPrefix, historyWarehousePrefix, rawBatchLocationTemplate, rawLocationTemplate, tableSidePrefix } from '../functions/adapters/raw-layout.js';
import { historyDatabase, historyWorkGroup } from '../functions/config/types.js';
import {
  ERASE_KEYS,
  EXPECTED_STATE,
  HISTORY,
  hiveType,
  QUARANTINE_LINES,
  RAW_EVENTS,
  RAW_LINES,
  serdeMappings,
  TABLE_HOURS,
  TABLE_SIDE,
  type ColumnType,
  type TableSchema,
  TRUNCATES,
} from '../functions/sql/schemas.js';
import type { TidemarkConfig } from './config/config.js';

export interface HistoryProps {
  /** The resolved config: `name`, `raw` (prefixes) and `history` (prefix, database, workgroup, cutoff). */
  readonly config: Pick<TidemarkConfig, 'name' | 'raw' | 'history'>;
  readonly bucket: s3.IBucket;
  /** Encrypts the workgroup's query results (SSE-KMS). @default - SSE-S3 */
  readonly encryptionKey?: kms.IKey;
  /**
   * First day partition projection covers.
   * @default "2024-01-01"
   */
  readonly firstDay?: string;
  /** Of the workgroup. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/** Glue columns of a JSON source's data columns (snake_case; the SerDe maps them to the fields). */
export const glueColumns = (schema: TableSchema): glue.CfnTable.ColumnProperty[] => schema.columns.map((c) => ({ name: c.name, type: hiveType(c.type), comment: c.comment }));

/** Columns of one raw line as the runtime writes it (`RawLine` in functions/adapters/raw-store.ts; docs/history.md §1; a test checks both ways). */
export const RAW_COLUMNS: readonly glue.CfnTable.ColumnProperty[] = glueColumns(RAW_LINES);
/** Columns of a line of the first layout (`raw_events`). */
export const RAW_V1_COLUMNS: readonly glue.CfnTable.ColumnProperty[] = glueColumns(RAW_EVENTS);

/** The partition key names of the raw tables: the batch objects (`raw_lines`), and the first layout's (`raw_events`). */
export const RAW_PARTITION_KEYS = ['dt', 'hr'] as const;
export const RAW_V1_PARTITION_KEYS = ['source_table', 'dt', 'hr'] as const;

/** The projection of `dt` (a day) and `hr` (an hour) the JSON sources share. */
function hourProjection(firstDay: string): Record<string, string> {
  return {
    'projection.dt.type': 'date',
    'projection.dt.format': 'yyyy-MM-dd',
    'projection.dt.range': `${firstDay},NOW`,
    'projection.dt.interval': '1',
    'projection.dt.interval.unit': 'DAYS',
    'projection.hr.type': 'integer',
    'projection.hr.range': '0,23',
    'projection.hr.digits': '2',
  };
}

/** A Glue table over gzip JSON Lines under `root`, with its partitions projected (no crawler, no MSCK REPAIR). */
function jsonLinesTable(schema: TableSchema, root: string, description: string, projection: Record<string, string>): glue.CfnTable.TableInputProperty {
  return {
    name: schema.name,
    description,
    tableType: 'EXTERNAL_TABLE',
    partitionKeys: (schema.partitionKeys ?? []).map((c) => ({ name: c.name, type: hiveType(c.type), comment: c.comment })),
    parameters: { classification: 'json', compressionType: 'gzip', EXTERNAL: 'TRUE', 'projection.enabled': 'true', ...projection },
    storageDescriptor: {
      location: root,
      inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
      outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
      compressed: true,
      serdeInfo: {
        serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe',
        parameters: { 'case.insensitive': 'TRUE', 'dots.in.keys': 'FALSE', ...serdeMappings(schema) },
      },
      columns: glueColumns(schema),
    },
  };
}

/** Iceberg's name of a portable primitive type (Iceberg spec, "Primitive Types"). */
const ICEBERG_PRIMITIVES = { string: 'string', bigint: 'long', int: 'int', boolean: 'boolean', double: 'double', date: 'date' } as const;

/**
 * The schema fields of an Iceberg table: ids 1…n in column order, every field optional. A map
 * column (history's `headers`) is the JSON text of Iceberg's map type, its key and value ids after
 * the columns' (Glue's API takes the type as a JSON value; CloudFormation types it as a string).
 */
export function icebergFields(schema: TableSchema): glue.CfnTable.IcebergStructFieldProperty[] {
  let nextId = schema.columns.length + 1;
  const typeOf = (t: ColumnType): string => {
    if (typeof t === 'string') return ICEBERG_PRIMITIVES[t];
    if ('map' in t) {
      const keyId = nextId++;
      const valueId = nextId++;
      return JSON.stringify({ type: 'map', 'key-id': keyId, key: 'string', 'value-id': valueId, value: ICEBERG_PRIMITIVES[t.map], 'value-required': false });
    }
    throw new Error(`${schema.name}: struct columns are not stored in Iceberg tables (flatten them, as history does with transport)`);
  };
  return schema.columns.map((c, i) => ({ id: i + 1, name: c.name, type: typeOf(c.type), required: false, doc: c.comment.slice(0, 255) }));
}

/** Identity partition fields over `partitionedBy`, field ids from 1000 (Iceberg's first partition field id). */
export function icebergPartitionSpec(schema: TableSchema): glue.CfnTable.IcebergPartitionSpecProperty {
  return {
    specId: 0,
    fields: (schema.partitionedBy ?? []).map((name, i) => {
      const sourceId = schema.columns.findIndex((c) => c.name === name) + 1;
      if (sourceId === 0) throw new Error(`${schema.name}: partition column ${name} is not a column`);
      return { name, sourceId, transform: 'identity', fieldId: 1000 + i };
    }),
  };
}

/** The Iceberg tables, in the order the stack creates them. */
export const ICEBERG_TABLES = [HISTORY, EXPECTED_STATE, TRUNCATES, TABLE_HOURS] as const;
/** The JSON sources. */
export const JSON_TABLES = [RAW_LINES, RAW_EVENTS, QUARANTINE_LINES, TABLE_SIDE, ERASE_KEYS] as const;
export type HistoryTableName = (typeof ICEBERG_TABLES)[number]['name'] | (typeof JSON_TABLES)[number]['name'];

/**
 * The Iceberg table properties that bound Athena's VACUUM (Athena User Guide, "VACUUM"): snapshots
 * older than `vacuum_max_snapshot_age_seconds` are expired (Athena's default is 5 days), keeping at
 * least `vacuum_min_snapshots_to_keep`; the data and metadata files only expired snapshots reference
 * are deleted, and so are orphan files older than the same age. Set from
 * `history.maintenance.snapshotRetentionDays`: time travel reaches that far back, and an erased
 * row's old files outlive its erasure by at most that plus the maintenance interval (docs/jobs.md).
 */
export function vacuumProperties(snapshotRetentionDays: number): Record<string, string> {
  return {
    vacuum_max_snapshot_age_seconds: String(snapshotRetentionDays * 86_400),
    vacuum_min_snapshots_to_keep: '1',
    vacuum_max_metadata_files_to_keep: '100',
  };
}

/** Athena's smallest per-query data usage control: 10 MB. */
export const MIN_BYTES_SCANNED_CUTOFF_MB = 10;

export class History extends Construct {
  readonly databaseName: string;
  /** The batch objects: one per batch, every table's lines. */
  readonly tableName = 'raw_lines';
  /** The first layout's objects (one per table per batch), kept readable. */
  readonly legacyTableName = 'raw_events';
  readonly database: glue.CfnDatabase;
  readonly table: glue.CfnTable;
  readonly legacyTable: glue.CfnTable;
  /** Every table by name: the JSON sources and the Iceberg tables. */
  readonly tables: ReadonlyMap<HistoryTableName, glue.CfnTable>;
  /** The Iceberg tables' names. */
  readonly icebergTableNames: readonly string[] = ICEBERG_TABLES.map((t) => t.name);
  /** The workgroup the jobs' queries run in: created here, or `history.workGroup`. */
  readonly workGroupName: string;
  /** The workgroup, when this stack creates it. */
  readonly workGroup?: athena.CfnWorkGroup;

  constructor(scope: Construct, id: string, props: HistoryProps) {
    super(scope, id);
    const { config, bucket } = props;
    const account = Stack.of(this).account;
    this.databaseName = historyDatabase(config);
    const s3Root = (prefix: string) => `s3://${bucket.bucketName}/${prefix}`;
    const rawRoot = s3Root(config.raw.prefix);
    const firstDay = props.firstDay ?? '2024-01-01';
    const history = config.history.prefix;

    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: account,
      databaseInput: { name: this.databaseName, description: `tidemark ${config.name}: raw change history, the compacted history and the jobs' tables` },
    });
    const tables = new Map<HistoryTableName, glue.CfnTable>();
    const jsonTable = (constructId: string, schema: TableSchema & { name: HistoryTableName }, root: string, description: string, projection: Record<string, string>) => {
      const table = new glue.CfnTable(this, constructId, { catalogId: account, databaseName: this.databaseName, tableInput: jsonLinesTable(schema, root, description, projection) });
      table.addResourceDependency(this.database);
      tables.set(schema.name, table);
      return table;
    };

    this.table = jsonTable('RawLines', RAW_LINES, rawRoot, 'Every delivered change, as landed in raw: one object per batch (gzip JSON Lines)', {
      ...hourProjection(firstDay),
      'storage.location.template': rawBatchLocationTemplate(rawRoot),
    });
    this.legacyTable = jsonTable('RawEvents', RAW_EVENTS, rawRoot, 'Changes landed in the first layout, one object per table per batch (gzip JSON Lines)', {
      ...hourProjection(firstDay),
      'projection.source_table.type': 'injected',
      'storage.location.template': rawLocationTemplate(rawRoot),
    });
    const quarantineRoot = s3Root(config.raw.quarantinePrefix);
    jsonTable('QuarantineLines', QUARANTINE_LINES, quarantineRoot, 'Records the ingest could not parse, with the reason (gzip JSON Lines)', {
      ...hourProjection(firstDay),
      'storage.location.template': rawBatchLocationTemplate(quarantineRoot),
    });
    const sideRoot = s3Root(tableSidePrefix(history));
    jsonTable('TableSide', TABLE_SIDE, sideRoot, "Reconcile's table side: the items of a DynamoDB export or of a window's keys, per run (gzip JSON Lines)", {
      'projection.run_id.type': 'injected',
      'storage.location.template': `${sideRoot}run_id=\${run_id}/`,
    });
    const eraseKeysRoot = s3Root(eraseKeysPrefix(history));
    jsonTable('EraseKeys', ERASE_KEYS, eraseKeysRoot, "The keys of one erase run, which erase's queries join (gzip JSON Lines; deleted when the run ends)", {
      'projection.run_id.type': 'injected',
      'storage.location.template': `${eraseKeysRoot}run_id=\${run_id}/`,
    });

    const warehouse = historyWarehousePrefix(history);
    const icebergIds = { history: 'HistoryTable', expected_state: 'ExpectedState', truncates: 'Truncates', table_hours: 'TableHours' } as const;
    for (const schema of ICEBERG_TABLES) {
      const table = new glue.CfnTable(this, icebergIds[schema.name], {
        catalogId: account,
        databaseName: this.databaseName,
        name: schema.name,
        openTableFormatInput: {
          icebergInput: {
            metadataOperation: 'CREATE',
            version: '2',
            icebergTableInput: {
              location: s3Root(`${warehouse}${schema.name}/`),
              schema: { schemaId: 0, type: 'struct', fields: icebergFields(schema) },
              partitionSpec: icebergPartitionSpec(schema),
              properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd', ...vacuumProperties(config.history.maintenance.snapshotRetentionDays) },
            },
          },
        },
      });
      table.addResourceDependency(this.database);
      tables.set(schema.name, table);
    }
    this.tables = tables;

    this.workGroupName = historyWorkGroup(config);
    if (config.history.workGroup === undefined) {
      const cutoff = config.history.bytesScannedCutoffMb;
      this.workGroup = new athena.CfnWorkGroup(this, 'WorkGroup', {
        name: this.workGroupName,
        description: `tidemark ${config.name}: the jobs' queries (compaction, reconcile, snapshot detection)`,
        state: 'ENABLED',
        // Query history blocks the deletion of a workgroup unless this is set; it is set only
        // where the stack is disposable (the removal policy is DESTROY).
        recursiveDeleteOption: props.removalPolicy === RemovalPolicy.DESTROY,
        workGroupConfiguration: {
          enforceWorkGroupConfiguration: true,
          publishCloudWatchMetricsEnabled: true,
          engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
          ...(cutoff !== undefined ? { bytesScannedCutoffPerQuery: cutoff * 1_000_000 } : {}),
          resultConfiguration: {
            outputLocation: s3Root(athenaResultsPrefix(history)),
            expectedBucketOwner: account,
            encryptionConfiguration: props.encryptionKey ? { encryptionOption: 'SSE_KMS', kmsKey: props.encryptionKey.keyArn } : { encryptionOption: 'SSE_S3' },
          },
        },
      });
      this.workGroup.applyRemovalPolicy(props.removalPolicy ?? RemovalPolicy.RETAIN);
    }
  }

  /** ARNs of the catalog, the database and the named tables, for a role's Glue statement. */
  glueArns(tables: readonly HistoryTableName[]): string[] {
    const stack = Stack.of(this);
    return [
      stack.formatArn({ service: 'glue', resource: 'catalog' }),
      stack.formatArn({ service: 'glue', resource: 'database', resourceName: this.databaseName }),
      ...tables.map((t) => stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${this.databaseName}/${t}` })),
    ];
  }

  /** ARN of the jobs' workgroup. */
  get workGroupArn(): string {
    return Stack.of(this).formatArn({ service: 'athena', resource: 'workgroup', resourceName: this.workGroupName });
  }
}
