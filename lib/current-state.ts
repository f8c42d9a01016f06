/**
 * Current state in DynamoDB: one table per configured source table, keyed by `keyLayout(table)`
 * (one column → partition key, two → partition + sort, more → `__key`), and the status table.
 * Past `INLINE_RESOURCE_LIMIT` tables they are grouped into nested stacks, so a pipeline of
 * hundreds of tables stays under CloudFormation's 500 resources per stack.
 */
import { NestedStack, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import type { TableConfig, TidemarkConfig } from './config/config.js';
import { type KeyAttribute, keyLayout } from '../functions/core/keys.js';
import { EXPIRES_AT_ATTRIBUTE } from '../functions/telemetry/contract.js';
import { STATUS_KEY } from '../functions/telemetry/status-layout.js';
import { INLINE_RESOURCE_LIMIT, RESOURCES_PER_NESTED_STACK } from './defaults.js';

/** TTL attribute of tombstones and per-hour status rows: from the telemetry contract. */
export { EXPIRES_AT_ATTRIBUTE } from '../functions/telemetry/contract.js';

export interface CurrentStateProps {
  /** The resolved tables: target name and key layout of each. */
  readonly tables: readonly TableConfig[];
  /** Name of the status table (resolved `statusTable`). */
  readonly statusTable: TidemarkConfig['statusTable'];
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
  /**
   * Status, hour, job and registry rows: partition key `pipeline` (one partition per pipeline and
   * table), sort key `table` (the row kind); functions/telemetry/status-layout.ts.
   */
  readonly statusTable: dynamodb.Table;
  /** The nested stacks holding the target tables, when there are more than `INLINE_RESOURCE_LIMIT`. */
  readonly nestedStacks: readonly NestedStack[];

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
    const nested: NestedStack[] = [];
    const scopeOf = (index: number): Construct => {
      if (props.tables.length <= INLINE_RESOURCE_LIMIT) return this;
      const group = Math.floor(index / RESOURCES_PER_NESTED_STACK);
      nested[group] ??= new NestedStack(this, `Tables${group}`, { description: `tidemark target tables, group ${group}` });
      return nested[group];
    };
    props.tables.forEach((table, index) => {
      const layout = keyLayout(table);
      tables.set(
        table.source,
        new dynamodb.Table(scopeOf(index), `Table-${table.target}`, {
          ...common,
          tableName: table.target,
          partitionKey: attribute(layout.partitionKey),
          ...(layout.sortKey ? { sortKey: attribute(layout.sortKey) } : {}),
        }),
      );
    });
    this.tables = tables;
    this.nestedStacks = nested;

    this.statusTable = new dynamodb.Table(this, 'StatusTable', {
      ...common,
      tableName: props.statusTable,
      partitionKey: { name: STATUS_KEY.partition, type: dynamodb.AttributeType.STRING },
      sortKey: { name: STATUS_KEY.row, type: dynamodb.AttributeType.STRING },
    });
  }

  /** Every table the ingest function writes: the targets, then the status table. */
  get allTables(): dynamodb.Table[] {
    return [...this.tables.values(), this.statusTable];
  }
}
