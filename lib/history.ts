/**
 * History: a Glue database and tables over raw, so Athena can query every delivered change.
 *
 * `raw_lines` reads the batch objects the runtime writes now (docs/history.md §1):
 * `<raw prefix>dt=YYYY-MM-DD/hr=HH/<shard>-<firstSeq>-<lastSeq>-<digest>.jsonl.gz`, one JSON object
 * per line, every table's lines in one object per batch. Its partitions `dt` and `hr` are projected
 * (no crawler, no MSCK REPAIR).
 *
 * `raw_events` reads raw landed in the first layout, one object per table per batch:
 * `<raw prefix>table=<source table>/dt=…/hr=…/…`. Its `source_table` partition is injected, so its
 * queries must name it; the path holds the table name percent-encoded (letters, digits, `.`, `_`,
 * `-` unchanged), and so does the value: `public.café` is `source_table = 'public.caf%C3%A9'`.
 */
import { Stack } from 'aws-cdk-lib';
import * as glue from 'aws-cdk-lib/aws-glue';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { rawBatchLocationTemplate, rawLocationTemplate } from '../functions/adapters/raw-layout.js';
export interface HistoryProps {
  /** Pipeline name (`config.name`): names the database. */
  readonly pipelineName: string;
  /** The raw prefix (`config.raw.prefix`) the table reads. */
  readonly rawPrefix: string;
  readonly bucket: s3.IBucket;
  /**
   * Glue database name (lowercase, underscores).
   * @default "tidemark_<pipeline name with - as _>"
   */
  readonly databaseName?: string;
  /**
   * First day partition projection covers.
   * @default "2024-01-01"
   */
  readonly firstDay?: string;
}

/**
 * Columns of one raw line, one per field the runtime writes (`RawLine` in
 * functions/adapters/raw-store.ts; a test checks both ways). `key` holds JSON text, `message` and
 * `messageKey` the delivered text untouched.
 */
export const RAW_V1_COLUMNS: readonly glue.CfnTable.ColumnProperty[] = [
  { name: 'kind', type: 'string', comment: 'change or control' },
  { name: 'format', type: 'string', comment: 'wire format the message was decoded as' },
  { name: 'op', type: 'string', comment: 'c, u, d, r or t (changes only)' },
  { name: 'control', type: 'string', comment: 'kind of control message (control only)' },
  { name: 'table', type: 'string', comment: 'source table' },
  { name: 'key', type: 'string', comment: 'JSON: source primary-key columns' },
  { name: 'position', type: 'string', comment: 'encoded ordered source log position (sorts as text)' },
  { name: 'orderingStrength', type: 'string', comment: 'how strongly the position orders the change' },
  { name: 'commitTs', type: 'bigint', comment: 'source commit time, epoch ms' },
  { name: 'txid', type: 'string' },
  { name: 'snapshot', type: 'boolean' },
  {
    name: 'transport',
    type: 'struct<kind:string,stream:string,shard:string,sequence:string,partitionKey:string,arrivalTime:bigint>',
    comment: 'stream or topic, shard or partition, sequence or offset, arrival time (epoch ms)',
  },
  { name: 'topic', type: 'string', comment: 'Kafka topic (MSK), else null' },
  { name: 'headers', type: 'map<string,string>', comment: 'Kafka headers' },
  { name: 'messageKey', type: 'string', comment: 'the delivered message key, untouched (null when not UTF-8)' },
  { name: 'messageKeyBase64', type: 'string', comment: 'the original key bytes, base64, when they are not valid UTF-8' },
  { name: 'message', type: 'string', comment: 'the delivered message, untouched (null when not UTF-8, or on a messageRef line)' },
  { name: 'messageRef', type: 'boolean', comment: 'true: the message is on the first line of the same transport shard and sequence in this object' },
  { name: 'messageBase64', type: 'string', comment: 'the original message bytes, base64, when they are not valid UTF-8' },
];

/** The fields the second layout (one object per batch) adds, for SQL to read without parsing messages. */
const V2_FIELDS: readonly glue.CfnTable.ColumnProperty[] = [
  { name: 'v', type: 'int', comment: 'layout version: 2' },
  { name: 'keyId', type: 'string', comment: 'canonical key text, ["42"]: what the jobs group and join by' },
  { name: 'hash', type: 'string', comment: 'content hash of the event (as __hash on items)' },
  { name: 'arrivalTs', type: 'bigint', comment: 'arrival at the stream, epoch ms' },
  { name: 'beforeNull', type: 'boolean', comment: 'an update delivered without a before image' },
  { name: 'partial', type: 'boolean', comment: 'the event carries placeholders or is a patch' },
];

/**
 * Columns of one raw line as the runtime writes it (`RawLine` in functions/adapters/raw-store.ts;
 * docs/history.md §1; a test checks both ways).
 */
export const RAW_COLUMNS: readonly glue.CfnTable.ColumnProperty[] = [...RAW_V1_COLUMNS, ...V2_FIELDS];

/** The partition key names of the raw tables: the batch objects (`raw_lines`), and the first layout's (`raw_events`). */
export const RAW_PARTITION_KEYS = ['dt', 'hr'] as const;
export const RAW_V1_PARTITION_KEYS = ['source_table', 'dt', 'hr'] as const;

/** The projection of `dt` (a day) and `hr` (an hour) both raw tables share. */
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
function jsonLinesTable(root: string, name: string, description: string, partitionKeys: glue.CfnTable.ColumnProperty[], projection: Record<string, string>, columns: readonly glue.CfnTable.ColumnProperty[]): glue.CfnTable.TableInputProperty {
  return {
    name,
    description,
    tableType: 'EXTERNAL_TABLE',
    partitionKeys,
    parameters: { classification: 'json', compressionType: 'gzip', EXTERNAL: 'TRUE', 'projection.enabled': 'true', ...projection },
    storageDescriptor: {
      location: root,
      inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
      outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
      compressed: true,
      serdeInfo: { serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe', parameters: { 'case.insensitive': 'TRUE', 'dots.in.keys': 'FALSE' } },
      columns: [...columns],
    },
  };
}

const DT = { name: 'dt', type: 'string', comment: 'arrival date of the batch, yyyy-MM-dd (UTC)' };
const HR = { name: 'hr', type: 'int', comment: 'arrival hour of the batch, 0-23 (UTC)' };

export class History extends Construct {
  readonly databaseName: string;
  /** The batch objects: one per batch, every table's lines. */
  readonly tableName = 'raw_lines';
  /** The first layout's objects (one per table per batch), kept readable. */
  readonly legacyTableName = 'raw_events';
  readonly database: glue.CfnDatabase;
  readonly table: glue.CfnTable;
  readonly legacyTable: glue.CfnTable;

  constructor(scope: Construct, id: string, props: HistoryProps) {
    super(scope, id);
    const { pipelineName, bucket } = props;
    const account = Stack.of(this).account;
    this.databaseName = props.databaseName ?? `tidemark_${pipelineName.replace(/-/g, '_')}`;
    const root = `s3://${bucket.bucketName}/${props.rawPrefix}`;
    const firstDay = props.firstDay ?? '2024-01-01';

    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: account,
      databaseInput: { name: this.databaseName, description: `tidemark ${pipelineName}: raw change history` },
    });

    this.table = new glue.CfnTable(this, 'RawLines', {
      catalogId: account,
      databaseName: this.databaseName,
      tableInput: jsonLinesTable(root, this.tableName, 'Every delivered change, as landed in raw: one object per batch (gzip JSON Lines)', [DT, HR], { ...hourProjection(firstDay), 'storage.location.template': rawBatchLocationTemplate(root) }, RAW_COLUMNS),
    });
    this.table.addResourceDependency(this.database);

    this.legacyTable = new glue.CfnTable(this, 'RawEvents', {
      catalogId: account,
      databaseName: this.databaseName,
      tableInput: jsonLinesTable(
        root,
        this.legacyTableName,
        'Changes landed in the first layout, one object per table per batch (gzip JSON Lines)',
        [{ name: 'source_table', type: 'string', comment: 'source table, e.g. public.orders' }, DT, HR],
        { ...hourProjection(firstDay), 'projection.source_table.type': 'injected', 'storage.location.template': rawLocationTemplate(root) },
        RAW_V1_COLUMNS,
      ),
    });
    this.legacyTable.addResourceDependency(this.database);
  }
}
