/**
 * The ingest Lambda: one bundled ESM handler, its own log group and a role with no managed
 * policies, granted only what the handler does (land raw and quarantine objects, guarded writes
 * to the target and status tables, write its logs).
 */
import { Annotations, Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import path from 'node:path';
import type { TidemarkConfig } from '../functions/commons/config.js';
import type { CurrentState } from './current-state.js';
import { DEFAULT_BUNDLING, DEFAULT_INGEST_ENTRY, INGEST_RUNTIME, METRIC_NAMESPACE, REPO_ROOT, SERVICE_NAME } from './defaults.js';
import type { RawStore } from './raw-store.js';

/** Lambda caps the environment at 4 KB; leave room for the other variables. */
const MAX_CONFIG_BYTES = 3500;

/**
 * DynamoDB actions on the target tables: guarded puts and patches, and the truncate sweep
 * (`functions/ingest/truncate.ts`: a filtered Scan, then conditional deletes below the watermark).
 */
export const TARGET_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:Query',
  'dynamodb:Scan',
  'dynamodb:DeleteItem',
] as const;

/** DynamoDB actions on the status table: load the batch's rows, then update them. */
export const STATUS_TABLE_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'] as const;

export interface IngestFunctionProps {
  readonly config: TidemarkConfig;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  /**
   * Handler source file; it must export `handler`.
   * @default `<repo>/functions/ingest.ts`
   */
  readonly entry?: string;
  /**
   * Customer-managed key of the bucket, tables, queue and log group.
   * @default - AWS-managed encryption
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the log group when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

export class IngestFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: IngestFunctionProps) {
    super(scope, id);
    const { config, rawStore, currentState } = props;
    const functionName = `${config.name}-ingest`;

    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
    });

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `tidemark ${config.name} ingest: raw and quarantine objects, guarded table writes`,
    });
    this.logGroup.grantWrite(this.role);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'LandRawAndQuarantine',
        actions: ['s3:PutObject'],
        resources: [rawStore.objectsUnder(config.raw.prefix), rawStore.objectsUnder(config.raw.quarantinePrefix)],
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'GuardedWritesAndTruncate',
        actions: [...TARGET_TABLE_ACTIONS],
        resources: [...currentState.tables.values()].map((t) => t.tableArn),
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'StatusRows', actions: [...STATUS_TABLE_ACTIONS], resources: [currentState.statusTable.tableArn] }),
    );
    if (props.encryptionKey) {
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'UsePipelineKey',
          actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey'],
          resources: [props.encryptionKey.keyArn],
        }),
      );
    }

    const configJson = JSON.stringify(config);
    this.function = new NodejsFunction(this, 'Function', {
      functionName,
      description: `tidemark ${config.name}: decode, land raw, collapse per key, guarded write`,
      entry: props.entry ?? DEFAULT_INGEST_ENTRY,
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: config.ingest.memoryMb,
      timeout: Duration.seconds(config.ingest.timeoutSeconds),
      role: this.role,
      logGroup: this.logGroup,
      bundling: DEFAULT_BUNDLING,
      environment: {
        TIDEMARK_CONFIG: configJson,
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRIC_NAMESPACE,
        NODE_OPTIONS: '--enable-source-maps',
      },
    });
    if (Buffer.byteLength(configJson) > MAX_CONFIG_BYTES) {
      Annotations.of(this.function).addError(
        `TIDEMARK_CONFIG is ${Buffer.byteLength(configJson)} bytes; Lambda allows 4 KB of environment in total (keep the config under ${MAX_CONFIG_BYTES} bytes)`,
      );
    }
  }
}
