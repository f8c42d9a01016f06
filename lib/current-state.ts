/**
 * Current state in DynamoDB: one table per configured source table, keyed by `keyLayout(table)`
 * (one column → partition key, two → partition + sort, more → `__key`), and the status table.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import type { TableConfig, TidemarkConfig } from '../functions/commons/config.js';
import { type KeyAttribute, keyLayout } from '../functions/core/keys.js';
import { EXPIRES_AT_ATTRIBUTE } from '../functions/commons/telemetry-contract.js';

/** TTL attribute of tombstones and per-hour status rows: from the telemetry contract. */
export { EXPIRES_AT_ATTRIBUTE } from '../functions/commons/telemetry-contract.js';

export interface CurrentStateProps {
  readonly config: TidemarkConfig;
  /**
   * Customer-managed key for every table.
   * @default - AWS-managed key (`alias/aws/dynamodb`)
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the tables when they leave the stack. Anything but RETAIN also turns deletion protection off.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

const attribute = (a: KeyAttribute): dynamodb.Attribute => ({
  name: a.name,
  type: a.type === 'N' ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.STRING,
});

/** The target tables (by source table name) and the status table, with the same protections. */
export class CurrentState extends Construct {
  /** Target table of each configured source table, keyed by `TableConfig.source`. */
  readonly tables: ReadonlyMap<string, dynamodb.Table>;
  /** One row per (pipeline, table): partition key `pipeline`, sort key `table`. */
  readonly statusTable: dynamodb.Table;

  constructor(scope: Construct, id: string, props: CurrentStateProps) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const common: Omit<dynamodb.TableProps, 'partitionKey'> = {
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: EXPIRES_AT_ATTRIBUTE,
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy,
      ...(props.encryptionKey
        ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.encryptionKey }
        : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
    };

    const tables = new Map<string, dynamodb.Table>();
    props.config.tables.forEach((table: TableConfig) => {
      const layout = keyLayout(table);
      tables.set(
        table.source,
        new dynamodb.Table(this, `Table-${table.target}`, {
          ...common,
          tableName: table.target,
          partitionKey: attribute(layout.partitionKey),
          ...(layout.sortKey ? { sortKey: attribute(layout.sortKey) } : {}),
        }),
      );
    });
    this.tables = tables;

    this.statusTable = new dynamodb.Table(this, 'StatusTable', {
      ...common,
      tableName: props.config.statusTable,
      partitionKey: { name: 'pipeline', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'table', type: dynamodb.AttributeType.STRING },
    });
  }

  /** Every table the ingest function writes: the targets, then the status table. */
  get allTables(): dynamodb.Table[] {
    return [...this.tables.values(), this.statusTable];
  }
}
