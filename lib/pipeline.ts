/**
 * `TidemarkPipeline`: the whole flow as one reusable construct, driven by the one resolved config:
 * source (Kinesis, or MSK with one mapping per topic) → ingest Lambda → raw in S3 and current state
 * in DynamoDB → status, metrics, alarms and a queryable history. Batches the mappings give up on
 * land whole in the raw bucket under `aws/lambda/`, and each is announced on the failed-batch queue.
 */
import { Annotations, CfnOutput, Duration, NestedStack, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cxapi from 'aws-cdk-lib/cx-api';
import { Construct } from 'constructs';
import { MSK_CLUSTER_ARN, type MskSourceConfig, ON_FAILURE_PREFIX, type TidemarkConfig } from './config/config.js';
import { ConfigError } from '../functions/core/errors.js';
import { CurrentState } from './current-state.js';
import {
  DLQ_RETENTION,
  defaultKafkaMappingProps,
  defaultKinesisMappingProps,
  INLINE_RESOURCE_LIMIT,
  LOG_RETENTION_DAYS,
  overrideProps,
  RESOURCES_PER_NESTED_STACK,
} from './defaults.js';
import { createPipelineKey } from './encryption.js';
import { History } from './history.js';
import { chunksBySize, IngestFunction } from './ingest-function.js';
import { TidemarkJobs } from './jobs/jobs.js';
import { TidemarkMetricFactory } from './metrics.js';
import { Monitoring } from './monitoring.js';
import { S3OnFailure } from './on-failure.js';
import { MIN_INFREQUENT_ACCESS_DAYS, RawStore } from './raw-store.js';
import { ReplayJobs } from './replay/jobs.js';

/** Event source mapping settings a caller may override (`defaultKinesisMappingProps` / `defaultKafkaMappingProps`). */
export type MappingOverrides = Partial<Omit<lambda.EventSourceMappingOptions, 'eventSourceArn' | 'kafkaTopic' | 'kafkaConsumerGroupId'>>;

export interface TidemarkPipelineProps {
  /** The resolved pipeline config (`loadConfigFile` / `parseConfig` from `lib/config/config.ts`). */
  readonly config: TidemarkConfig;
  /**
   * Bring your own Kinesis stream; it replaces `config.source`.
   * @default - from `config.source`: created, or imported by name when `create` is false
   */
  readonly stream?: kinesis.IStream;
  /**
   * Customer-managed key for everything the pipeline stores. Used only when `config.encryption` is `kms`.
   * An imported key must already let CloudWatch Logs, CloudWatch alarms and S3 notifications use it.
   * @default - a new key with rotation when `config.encryption` is `kms`, otherwise AWS-managed encryption
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * Overrides of the Kinesis mapping defaults (`defaultKinesisMappingProps`).
   * @default - none
   */
  readonly eventSourceOverrides?: MappingOverrides;
  /**
   * Overrides of every Kafka mapping's defaults (`defaultKafkaMappingProps`).
   * @default - none
   */
  readonly kafkaEventSourceOverrides?: MappingOverrides;
  /**
   * Handler source file of the ingest function; it must export `handler`.
   * @default `functions/ingest.ts`, or the prebuilt handler of the installed package
   */
  readonly ingestEntry?: string;
  /**
   * Name of the raw bucket.
   * @default config.raw.bucket
   */
  readonly bucketName?: string;
  /**
   * Removal policy of the tables, buckets and log group. `DESTROY` also turns off table deletion
   * protection and empties the buckets on delete.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Create the alarms, alarm topic and dashboard (turn off to bring your own monitoring).
   * @default true
   */
  readonly monitoring?: boolean;
  /**
   * Ship source maps with the ingest handler and run it with `--enable-source-maps`.
   * @default false
   */
  readonly sourceMaps?: boolean;
}

/** Config problems only the deployment cares about, reported together; `stack` checks the MSK cluster's region and account. */
export function deploymentIssues(config: TidemarkConfig, stack?: Stack): string[] {
  const issues: string[] = [];
  if (!LOG_RETENTION_DAYS.includes(config.logRetentionDays)) {
    issues.push(`logRetentionDays: ${config.logRetentionDays} is not a CloudWatch Logs retention; use one of ${LOG_RETENTION_DAYS.join(', ')}`);
  }
  if (config.raw.infrequentAccessAfterDays < MIN_INFREQUENT_ACCESS_DAYS) {
    issues.push(`raw.infrequentAccessAfterDays: S3 needs at least ${MIN_INFREQUENT_ACCESS_DAYS} days before STANDARD_IA`);
  }
  if (config.source.type === 'msk' && stack) {
    const [, , region, account] = MSK_CLUSTER_ARN.exec(config.source.clusterArn) ?? [];
    if (!Token.isUnresolved(stack.region) && region !== stack.region) {
      issues.push(`source.clusterArn: the cluster is in ${region}, the stack in ${stack.region}; Lambda reads MSK only in its own region`);
    }
    if (!Token.isUnresolved(stack.account) && account !== stack.account) {
      issues.push(`source.clusterArn: the cluster is in account ${account}, the stack in ${stack.account}`);
    }
  }
  return issues;
}

/**
 * The configured tables no topic could carry. Debezium names topics `<topic.prefix>.<schema>.<table>`,
 * and tidemark names tables `<schema>.<table>`, so a table is carried by a topic equal to its name
 * or ending in `.<name>`. A topic routed by an SMT (e.g. all tables into one topic) matches nothing.
 */
export function tablesWithoutTopic(tables: readonly { readonly source: string }[], topics: readonly string[]): string[] {
  return tables.filter((t) => !topics.some((topic) => topic === t.source || topic.endsWith(`.${t.source}`))).map((t) => t.source);
}

/** Kinesis read actions the mapping needs with a shared-throughput (non-EFO) iterator. */
export const KINESIS_READ_ACTIONS = [
  'kinesis:DescribeStream',
  'kinesis:DescribeStreamSummary',
  'kinesis:GetRecords',
  'kinesis:GetShardIterator',
  'kinesis:ListShards',
] as const;

/** What the MSK mapping needs to find the cluster and reach it from its VPC (AWSLambdaMSKExecutionRole, action by action). */
export const MSK_CLUSTER_ACTIONS = ['kafka:DescribeCluster', 'kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'] as const;
/** EC2 actions for the mapping's network interfaces; EC2 does not scope them to resources. */
export const MSK_NETWORK_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeVpcs',
  'ec2:DeleteNetworkInterface',
  'ec2:DescribeSubnets',
  'ec2:DescribeSecurityGroups',
] as const;
/** IAM access control: connect, read the topics, manage the consumer groups. */
export const MSK_DATA_ACTIONS = [
  'kafka-cluster:Connect',
  'kafka-cluster:DescribeClusterDynamicConfiguration',
  'kafka-cluster:DescribeTopic',
  'kafka-cluster:ReadData',
  'kafka-cluster:DescribeGroup',
  'kafka-cluster:AlterGroup',
] as const;

export class TidemarkPipeline extends Construct {
  /** The Kinesis stream, or undefined for an MSK source. */
  readonly stream?: kinesis.IStream;
  readonly ingest: IngestFunction;
  /**
   * One message per failed batch: the S3 notification of the object, under `aws/lambda/` in the raw
   * bucket, that holds the batch's whole records.
   */
  readonly deadLetterQueue: sqs.Queue;
  /** Where the mappings send failed batches (the raw bucket, `aws/lambda/`). */
  readonly onFailure: S3OnFailure;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  readonly history: History;
  readonly metrics: TidemarkMetricFactory;
  /** The config the pipeline was built from. */
  readonly config: TidemarkConfig;
  readonly monitoring?: Monitoring;
  /** The customer-managed key, when `config.encryption` is `kms`. */
  readonly encryptionKey?: kms.IKey;
  /** Every event source mapping: one for Kinesis, one per topic for MSK (alarm on their OffsetLag or IteratorAge). */
  readonly eventSourceMappings: lambda.EventSourceMapping[] = [];
  /** Nested stacks holding mappings, when there are more than `INLINE_RESOURCE_LIMIT` topics. */
  readonly mappingStacks: NestedStack[] = [];
  /** The topic and group ARN patterns granted when hundreds of topics share a prefix (else undefined: exact ARNs). */
  kafkaAccessByPrefix?: { readonly topics: string; readonly groups: string };
  /** The replay and erase state machines (docs/replay.md). */
  readonly replay: ReplayJobs;
  /** Compaction, reconcile and snapshot detection: one state machine each over Athena, on EventBridge Scheduler schedules (docs/jobs.md). */
  readonly jobs: TidemarkJobs;

  constructor(scope: Construct, id: string, props: TidemarkPipelineProps) {
    super(scope, id);
    const { config } = props;
    this.config = config;
    const issues = deploymentIssues(config, Stack.of(this));
    if (issues.length > 0) throw new ConfigError(issues, 'config (deployment)');
    // Access logs are delivered through a bucket policy, not the legacy log-delivery ACL.
    this.node.setContext(cxapi.S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    const key = config.encryption === 'kms' ? (props.encryptionKey ?? createPipelineKey(this, 'Key', config.name)) : undefined;
    this.encryptionKey = key;
    const withKey = key ? { encryptionKey: key } : {};

    const jobs = { jobsPrefix: config.replay.jobsPrefix, jobsRetentionDays: config.replay.jobsRetentionDays, reportPrefix: config.jobs.reportPrefix, reportRetentionDays: config.jobs.reportRetentionDays };
    this.rawStore = new RawStore(this, 'Raw', {
      raw: config.raw,
      jobs,
      historyPrefix: config.history.prefix,
      removalPolicy,
      ...withKey,
      ...(props.bucketName ? { bucketName: props.bucketName } : {}),
    });
    this.currentState = new CurrentState(this, 'CurrentState', { tables: config.tables, statusTable: config.statusTable, removalPolicy, ...withKey });
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      queueName: `${config.name}-ingest-failures`,
      retentionPeriod: DLQ_RETENTION,
      enforceSSL: true,
      // S3 cannot publish to a queue under the AWS-managed aws/sqs key, so SSE-SQS unless a customer key is asked for.
      ...(key ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key } : { encryption: sqs.QueueEncryption.SQS_MANAGED }),
    });
    this.rawStore.notifyFailedBatches(this.deadLetterQueue);
    this.onFailure = new S3OnFailure(this.rawStore.bucket);

    // The Glue tables and the workgroup: the jobs' queries, and erase's (it erases history too).
    this.history = new History(this, 'History', { config, bucket: this.rawStore.bucket, removalPolicy, ...withKey });

    // Replay and erase own the erase ledger key; the ingest and the jobs read it to name keys in logs.
    const entries = props.ingestEntry ? { replay: props.ingestEntry, erase: props.ingestEntry } : undefined;
    this.replay = new ReplayJobs(this, 'Replay', { config, rawStore: this.rawStore, currentState: this.currentState, history: this.history, removalPolicy, entries, ...withKey });
    this.ingest = new IngestFunction(this, 'Ingest', {
      config,
      bucket: this.rawStore.bucket,
      removalPolicy,
      ledgerKey: this.replay.ledgerKey,
      ...withKey,
      ...(props.ingestEntry ? { entry: props.ingestEntry } : {}),
      ...(props.sourceMaps ? { sourceMaps: true } : {}),
    });

    const stream = this.connectSource(config, props, key);
    if (stream !== undefined) this.stream = stream;
    // A mapping starts reading as soon as it exists: let the tables exist first.
    for (const mapping of this.eventSourceMappings) mapping.node.addDependency(this.currentState);


    this.metrics = new TidemarkMetricFactory({ pipeline: config.name });
    if (props.monitoring ?? true) this.monitoring = this.createMonitoring(config, key);
    const alarmTopic = this.monitoring ? { alarmTopic: this.monitoring.alarmTopic } : {};
    this.jobs = new TidemarkJobs(this, 'Jobs', {
      config,
      rawStore: this.rawStore,
      currentState: this.currentState,
      history: this.history,
      removalPolicy,
      ledgerKey: this.replay.ledgerKey,
      ...alarmTopic,
      ...withKey,
    });
    this.addOutputs(config);
  }

  /** Maps the source to the ingest function: an MSK cluster's topics, or the Kinesis stream (returned). */
  private connectSource(config: TidemarkConfig, props: TidemarkPipelineProps, key: kms.IKey | undefined): kinesis.IStream | undefined {
    if (props.stream === undefined && config.source.type === 'msk') {
      const stack = Stack.of(this);
      if (Token.isUnresolved(stack.region) || Token.isUnresolved(stack.account)) {
        Annotations.of(this).addWarningV2(
          'tidemark:msk-env-agnostic',
          'the stack has no explicit account and region, so the MSK cluster ARN could not be checked against them; give the stack an env',
        );
      }
      this.addKafkaMappings(config.source, props.kafkaEventSourceOverrides);
      return undefined;
    }
    const stream = props.stream ?? this.createOrImportStream(config, key);
    this.addKinesisMapping(stream, props.eventSourceOverrides);
    return stream;
  }

  private createMonitoring(config: TidemarkConfig, key: kms.IKey | undefined): Monitoring {
    return new Monitoring(this, 'Monitoring', {
      config,
      metrics: this.metrics,
      function: this.ingest.function,
      deadLetterQueue: this.deadLetterQueue,
      sourceKind: this.stream ? 'kinesis' : 'msk',
      ...(key ? { topicKey: key } : {}),
    });
  }

  private addKinesisMapping(stream: kinesis.IStream, overrides: MappingOverrides | undefined): void {
    const fn = this.ingest.function;
    fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'ReadStream', actions: [...KINESIS_READ_ACTIONS], resources: [stream.streamArn] }));
    if (stream.encryptionKey) stream.encryptionKey.grantDecrypt(fn);
    const mapping = new lambda.EventSourceMapping(this, 'KinesisMapping', {
      target: fn,
      eventSourceArn: stream.streamArn,
      ...overrideProps(defaultKinesisMappingProps(this.config.ingest, this.onFailure), overrides),
    });
    this.eventSourceMappings.push(mapping);
  }

  /** One mapping per topic (a Kafka mapping reads a single topic), each in its own consumer group. */
  private addKafkaMappings(source: MskSourceConfig, overrides: MappingOverrides | undefined): void {
    const fn = this.ingest.function;
    const groupOf = (topic: string) => `${source.consumerGroupId}.${topic}`;
    const scoped = (kind: 'topic' | 'group', name: string): string => `${source.clusterArn.replace(':cluster/', `:${kind}/`)}/${name}`;
    fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'FindCluster', actions: [...MSK_CLUSTER_ACTIONS], resources: [source.clusterArn] }));
    fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'ClusterNetworkInterfaces', actions: [...MSK_NETWORK_ACTIONS], resources: ['*'] }));
    // Exact topic and group ARNs for a modest list; past INLINE_RESOURCE_LIMIT topics derived from a
    // prefix, the prefix itself (every topic and group tidemark reads is named under it), so the
    // policy stays within IAM's size limits.
    const byPrefix = source.topicPrefix !== undefined && source.topics.length > INLINE_RESOURCE_LIMIT;
    const topicArns = byPrefix ? [scoped('topic', `${source.topicPrefix}.*`)] : source.topics.map((t) => scoped('topic', t));
    const groupArns = byPrefix ? [scoped('group', `${source.consumerGroupId}.${source.topicPrefix}.*`)] : source.topics.map((t) => scoped('group', groupOf(t)));
    chunksBySize([...topicArns, ...groupArns], (arn) => arn.length + 8).forEach((group, i) => {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          sid: i === 0 ? 'ReadTopicsAsConsumerGroups' : `ReadTopicsAsConsumerGroups${i + 1}`,
          actions: [...MSK_DATA_ACTIONS],
          resources: i === 0 ? [source.clusterArn, ...group] : group,
        }),
      );
    });
    this.kafkaAccessByPrefix = byPrefix ? { topics: topicArns[0] ?? '', groups: groupArns[0] ?? '' } : undefined;
    for (const table of tablesWithoutTopic(this.config.tables, source.topics)) {
      Annotations.of(this).addWarningV2(
        'tidemark:table-without-topic',
        `table ${table} has no topic that could carry it (Debezium names topics <prefix>.${table}); configured topics: ${source.topics.slice(0, 5).join(', ')}${source.topics.length > 5 ? ', …' : ''}`,
      );
    }
    const settings = overrideProps(defaultKafkaMappingProps(this.config.ingest, this.onFailure), overrides);
    source.topics.forEach((topic, index) => {
      const scope = this.mappingScope(index, source.topics.length);
      const mapping = new lambda.EventSourceMapping(scope, `Topic-${topic}`, {
        target: fn,
        eventSourceArn: source.clusterArn,
        kafkaTopic: topic,
        kafkaConsumerGroupId: groupOf(topic),
        ...settings,
      });
      this.eventSourceMappings.push(mapping);
    });
  }

  private mappingScope(index: number, count: number): Construct {
    if (count <= INLINE_RESOURCE_LIMIT) return this;
    const group = Math.floor(index / RESOURCES_PER_NESTED_STACK);
    this.mappingStacks[group] ??= new NestedStack(this, `Mappings${group}`, { description: `tidemark Kafka event source mappings, group ${group}` });
    return this.mappingStacks[group];
  }

  private createOrImportStream(config: TidemarkConfig, key: kms.IKey | undefined): kinesis.IStream {
    const source = config.source;
    if (source.type !== 'kinesis') throw new ConfigError(['source: a Kinesis stream was expected'], 'config (deployment)');
    if (!source.create) {
      const streamArn = Stack.of(this).formatArn({ service: 'kinesis', resource: 'stream', resourceName: source.streamName });
      return kinesis.Stream.fromStreamAttributes(this, 'Stream', { streamArn, ...(key ? { encryptionKey: key } : {}) });
    }
    return new kinesis.Stream(this, 'Stream', {
      streamName: source.streamName,
      retentionPeriod: Duration.hours(source.retentionHours),
      ...(source.shardCount === 0
        ? { streamMode: kinesis.StreamMode.ON_DEMAND }
        : { streamMode: kinesis.StreamMode.PROVISIONED, shardCount: source.shardCount }),
      ...(key ? { encryption: kinesis.StreamEncryption.KMS, encryptionKey: key } : { encryption: kinesis.StreamEncryption.MANAGED }),
    });
  }

  private addOutputs(config: TidemarkConfig): void {
    const out = (outputId: string, value: string, description: string): void => {
      new CfnOutput(this, outputId, { value, description });
    };
    // CloudFormation allows 200 outputs per stack: name each table only for a modest pipeline.
    if (config.tables.length <= INLINE_RESOURCE_LIMIT) {
      config.tables.forEach((t, i) => {
        out(`TargetTable${i}`, t.target, `current state of ${t.source}`);
      });
    }
    out('StatusTable', this.currentState.statusTable.tableName, 'status rows per (pipeline, table)');
    out('RawBucket', this.rawStore.bucket.bucketName, `raw under ${config.raw.prefix}, quarantine under ${config.raw.quarantinePrefix}, failed batches under ${ON_FAILURE_PREFIX}`);
    if (this.stream) out('StreamName', this.stream.streamName, 'Kinesis stream the connector writes to');
    out('DeadLetterQueueUrl', this.deadLetterQueue.queueUrl, `one message per failed batch (its whole records are in the raw bucket under ${ON_FAILURE_PREFIX})`);
    out('IngestFunctionName', this.ingest.function.functionName, 'the ingest Lambda');
    if (this.monitoring) {
      out('DashboardName', this.monitoring.dashboard.dashboardName, 'CloudWatch dashboard');
      out('AlarmTopicArn', this.monitoring.alarmTopic.topicArn, 'subscribe to receive alarms');
    }
    out('HistoryTable', `${this.history.databaseName}.${this.history.tableName}`, 'Glue/Athena table over raw');
    out('HistoryIcebergTable', `${this.history.databaseName}.history`, 'the compacted history (Iceberg), partitioned by source_table and dt');
    out('AthenaWorkGroup', this.history.workGroupName, "the Athena workgroup the jobs' queries run in");
    // Every state machine is deployed whatever config.jobs says (`enabled: false` only disables its
    // schedules), so each gets its ARN: an operator or a test starts it with the input named here.
    const schedule = (enabled: boolean) => (enabled ? 'scheduled' : 'schedule disabled');
    const { reconcile, snapshot } = config.jobs;
    out(
      'CompactionStateMachineArn',
      this.jobs.compaction.stateMachine.stateMachineArn,
      `hourly compaction of raw into ${this.history.databaseName}.history; input a CompactionRequest, {} or {"hours":[<hour start, epoch ms>]} (${schedule(config.history.compaction.enabled)})`,
    );
    out(
      'ReconcileStateMachineArn',
      this.jobs.reconcile.stateMachine.stateMachineArn,
      `reconcile job; input a ReconcileRequest, e.g. {"mode":"window"} (${schedule(reconcile.window.enabled)}) or {"mode":"full"} (${schedule(reconcile.full.enabled)})`,
    );
    out('SnapshotStateMachineArn', this.jobs.snapshot.stateMachine.stateMachineArn, `snapshot detection job; input a SnapshotRequest, {} (${schedule(snapshot.enabled)})`);
    out(
      'MaintenanceStateMachineArn',
      this.jobs.maintenance.stateMachine.stateMachineArn,
      `table maintenance (OPTIMIZE, VACUUM) of the Iceberg tables; input a MaintenanceRequest, {} or {"tables":["history"]} (${schedule(config.history.maintenance.enabled)})`,
    );
    out('ReplayStateMachineArn', this.replay.replayStateMachine.stateMachineArn, 'replay job, on demand; input a ReplayRequest {"runId","tables","into":"live"|"fresh:<table>",...} (tidemark replay --on aws)');
    out('EraseStateMachineArn', this.replay.eraseStateMachine.stateMachineArn, `erase job, on demand; input {"runId","requestKey"}, the request object under ${config.replay.jobsPrefix}erase/ (tidemark erase --on aws)`);
  }
}
