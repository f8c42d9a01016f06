/**
 * History: a Glue database and table over raw, so Athena can query every delivered change.
 *
 * Layout written by the runtime's raw writer:
 * `<raw prefix>table=<source table>/dt=YYYY-MM-DD/hr=HH/<shard>-<firstSeq>-<lastSeq>-<digest>.jsonl.gz`,
 * one JSON object per line. Partitions are projected (no crawler, no MSCK REPAIR): `source_table`
 * is injected, so queries must name it: `WHERE source_table = 'public.orders'`. The path holds the
 * table name percent-encoded (letters, digits, `.`, `_`, `-` unchanged), and so does the partition
 * value: `public.café` is queried as `source_table = 'public.caf%C3%A9'`. The partition key
 * is not called `table` because `table` is already a data column.
 */
import { Stack } from 'aws-cdk-lib';
import * as glue from 'aws-cdk-lib/aws-glue';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { rawLocationTemplate } from '../functions/adapters/raw-layout.js';
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
export const RAW_COLUMNS: readonly glue.CfnTable.ColumnProperty[] = [
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

/** The partition key names of the raw table. */
export const RAW_PARTITION_KEYS = ['source_table', 'dt', 'hr'] as const;

export class History extends Construct {
  readonly databaseName: string;
  readonly tableName = 'raw_events';
  readonly database: glue.CfnDatabase;
  readonly table: glue.CfnTable;

  constructor(scope: Construct, id: string, props: HistoryProps) {
    super(scope, id);
    const { pipelineName, bucket } = props;
    const account = Stack.of(this).account;
    this.databaseName = props.databaseName ?? `tidemark_${pipelineName.replace(/-/g, '_')}`;
    const root = `s3://${bucket.bucketName}/${props.rawPrefix}`;

    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: account,
      databaseInput: { name: this.databaseName, description: `tidemark ${pipelineName}: raw change history` },
    });

    this.table = new glue.CfnTable(this, 'RawEvents', {
      catalogId: account,
      databaseName: this.databaseName,
      tableInput: {
        name: this.tableName,
        description: 'Every delivered change, as landed in raw (gzip JSON Lines)',
        tableType: 'EXTERNAL_TABLE',
        partitionKeys: [
          { name: 'source_table', type: 'string', comment: 'source table, e.g. public.orders' },
          { name: 'dt', type: 'string', comment: 'arrival date, yyyy-MM-dd (UTC)' },
          { name: 'hr', type: 'int', comment: 'arrival hour, 0-23 (UTC)' },
        ],
        parameters: {
          classification: 'json',
          compressionType: 'gzip',
          EXTERNAL: 'TRUE',
          'projection.enabled': 'true',
          'projection.source_table.type': 'injected',
          'projection.dt.type': 'date',
          'projection.dt.format': 'yyyy-MM-dd',
          'projection.dt.range': `${props.firstDay ?? '2024-01-01'},NOW`,
          'projection.dt.interval': '1',
          'projection.dt.interval.unit': 'DAYS',
          'projection.hr.type': 'integer',
          'projection.hr.range': '0,23',
          'projection.hr.digits': '2',
          'storage.location.template': rawLocationTemplate(root),
        },
        storageDescriptor: {
          location: root,
          inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          compressed: true,
          serdeInfo: {
            serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe',
            parameters: { 'case.insensitive': 'TRUE', 'dots.in.keys': 'FALSE' },
          },
          columns: [...RAW_COLUMNS],
        },
      },
    });
    this.table.addResourceDependency(this.database);
  }
}
