/**
 * The ingest Lambda: one bundled ESM handler shipped with the resolved config in its asset, its
 * own log group, and a role with no managed policies granted exactly the SDK calls the handler
 * makes (each action below names the command that needs it; a test derives them from the code).
 */
import { Annotations, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { TidemarkConfig } from './config/config.js';
import { INGEST_RUNTIME, MAX_ENVIRONMENT_BYTES, METRIC_NAMESPACE, SERVICE_NAME } from './defaults.js';
import { handlerCode } from './handler-asset.js';
import type { LedgerKeyAccess } from './replay/jobs.js';
import { readsAuroraDsql, spilledRowsPrefix, splitPartsPrefix } from '../functions/adapters/raw-layout.js';

/**
 * DynamoDB actions on the target tables: guarded puts and patches (PutItem, UpdateItem), the
 * pre-read of stored positions for redelivered writes (BatchGetItem), the read of a row before a
 * read-merge-put (GetItem: patches too wide for one UpdateItem, or on a spilled row), and the
 * truncate sweep (a filtered Scan, then conditional DeleteItems below the watermark).
 */
export const TARGET_TABLE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:DeleteItem'] as const;

/**
 * DynamoDB actions on the status table: read rows a container has no fresh copy of (BatchGetItem),
 * the one update per table per batch (UpdateItem), and the rows written once: a closed hour, a new
 * table's registry row (PutItem). No Query: the ingest never lists.
 */
export const STATUS_TABLE_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'] as const;

/** KMS actions under `encryption: kms`: GenerateDataKey to put S3 objects, Decrypt to read the stream. */
export const KEY_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

/**
 * Characters of resource ARNs per IAM statement. IAM allows 10,240 characters of inline policy per
 * role and 6,144 per managed policy; the CDK moves whole statements into managed policies when a
 * role outgrows its inline budget, so no single statement may exceed a managed policy.
 */
export const ARN_CHARS_PER_STATEMENT = 5000;

/** Characters an ARN of `name` takes once resolved, with room for the longest partition and region. */
export const arnChars = (name: string): number => name.length + 64;

/** `items` in consecutive groups whose `size` adds up to at most `budget` (each group holds at least one). */
export function chunksBySize<T>(items: readonly T[], size: (item: T) => number, budget = ARN_CHARS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let used = 0;
  for (const item of items) {
    const n = size(item);
    if (current.length > 0 && used + n > budget) {
      out.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += n;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * Statements granting `actions` on the DynamoDB tables `names`, by ARN and by name (a table in a
 * nested stack then needs no output), each within ARN_CHARS_PER_STATEMENT resolved characters: a
 * role naming hundreds of tables gets several statements the CDK moves whole into managed policies,
 * never one statement too large for any policy. Sids are `sid`, `sid2`, `sid3`, ….
 */
export function tableStatements(scope: Construct, sid: string, actions: readonly string[], names: readonly string[]): iam.PolicyStatement[] {
  const stack = Stack.of(scope);
  return chunksBySize(names, arnChars).map(
    (group, i) =>
      new iam.PolicyStatement({
        sid: i === 0 ? sid : `${sid}${i + 1}`,
        actions: [...actions],
        resources: group.map((name) => stack.formatArn({ service: 'dynamodb', resource: 'table', resourceName: name })),
      }),
  );
}

export interface IngestFunctionProps {
  /** The resolved config; shipped whole in the asset, and the function's own settings read from it. */
  readonly config: TidemarkConfig;
  /** Raw bucket: raw and quarantine objects (and spilled rows under the raw prefix) are put here. */
  readonly bucket: s3.IBucket;
  /**
   * Handler source file; it must export `handler`.
   * @default `functions/ingest.ts`, or the prebuilt handler of the installed package
   */
  readonly entry?: string;
  /**
   * Customer-managed key of the bucket, tables, stream, log group and environment.
   * @default - AWS-managed encryption
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the log group when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Ship a source map and run with `--enable-source-maps` (larger asset, slower cold start).
   * @default false
   */
  readonly sourceMaps?: boolean;
  /** The erase ledger key, read at cold start: log lines name keys by its keyed hash. @default - log lines name no keys */
  readonly ledgerKey?: LedgerKeyAccess;
}

export class IngestFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  /** Bytes of the handler bundle (`index.mjs`). */
  readonly bundleBytes: number;
  /** The staged asset folder: `index.mjs` and the shipped `tidemark.config.json`. */
  readonly codeDirectory: string;

  constructor(scope: Construct, id: string, props: IngestFunctionProps) {
    super(scope, id);
    const { config, bucket } = props;
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
        resources: [bucket.arnForObjects(`${config.raw.prefix}*`), bucket.arnForObjects(`${config.raw.quarantinePrefix}*`)],
      }),
    );
    // A patch on a spilled row is merged with the spilled copy, read back from S3.
    this.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'ReadSpilledRows', actions: ['s3:GetObject'], resources: [bucket.arnForObjects(`${spilledRowsPrefix(config.raw.prefix)}*`)] }));
    // By name, not by reference: the tables may live in nested stacks, and a name needs no output.
    const targets = tableStatements(this, 'GuardedWritesAndTruncate', TARGET_TABLE_ACTIONS, config.tables.map((t) => t.target));
    for (const s of [...targets, ...tableStatements(this, 'StatusRows', STATUS_TABLE_ACTIONS, [config.statusTable])]) this.role.addToPrincipalPolicy(s);
    if (readsAuroraDsql(config)) {
      // Split Aurora DSQL records: their parts' texts read back, and their items in one partition of the status table.
      this.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'ReadSplitRecordParts', actions: ['s3:GetObject'], resources: [bucket.arnForObjects(`${splitPartsPrefix(config.raw.prefix)}*`)] }));
      for (const s of tableStatements(this, 'SplitRecordParts', ['dynamodb:GetItem', 'dynamodb:Query'], [config.statusTable])) {
        s.addCondition('ForAllValues:StringEquals', { 'dynamodb:LeadingKeys': [`${config.name}#dsql-parts`] });
        this.role.addToPrincipalPolicy(s);
      }
    }
    if (props.encryptionKey) {
      this.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'UsePipelineKey', actions: [...KEY_ACTIONS], resources: [props.encryptionKey.keyArn] }));
    }

    props.ledgerKey?.grantRead(this.role);
    const shipped = props.ledgerKey ? props.ledgerKey.runtimeConfig(config) : config;
    const asset = handlerCode({ name: 'ingest', config: shipped, ...(props.entry ? { entry: props.entry } : {}), sourceMap: props.sourceMaps ?? false });
    this.bundleBytes = asset.bundleBytes;
    this.codeDirectory = asset.directory;
    const environment: Record<string, string> = {
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRIC_NAMESPACE,
      ...(props.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
    };
    this.function = new lambda.Function(this, 'Function', {
      functionName,
      description: `tidemark ${config.name}: decode, land raw, collapse per key, guarded write`,
      code: asset.code,
      handler: 'index.handler',
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: config.ingest.memoryMb,
      timeout: Duration.seconds(config.ingest.timeoutSeconds),
      role: this.role,
      logGroup: this.logGroup,
      environment,
      ...(props.encryptionKey ? { environmentEncryption: props.encryptionKey } : {}),
      ...(config.ingest.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: config.ingest.reservedConcurrency } : {}),
      // Active tracing adds xray:PutTraceSegments and PutTelemetryRecords (on `*`: X-Ray has no resources) to the role.
      tracing: config.ingest.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
    });
    const envBytes = Object.entries(environment).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
    if (envBytes > MAX_ENVIRONMENT_BYTES) {
      Annotations.of(this.function).addError(`the environment is ${envBytes} bytes; Lambda allows ${MAX_ENVIRONMENT_BYTES} in total`);
    }
  }
}
