/**
 * `TidemarkPipeline`: the whole flow of PIPELINE.md as one reusable construct, driven by the one
 * validated config: source (Kinesis or MSK) → ingest Lambda → raw in S3 and current state in
 * DynamoDB → status, metrics, alarms and a queryable history.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cxapi from 'aws-cdk-lib/cx-api';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../functions/commons/config.js';
import { ConfigError } from '../functions/core/errors.js';
import { CurrentState } from './current-state.js';
import {
  DLQ_RETENTION,
  defaultKafkaEventSourceProps,
  defaultKinesisEventSourceProps,
  LOG_RETENTION_DAYS,
  overrideProps,
} from './defaults.js';
import { createPipelineKey } from './encryption.js';
import { History } from './history.js';
import { TidemarkJobs } from './jobs/jobs.js';
import { IngestFunction } from './ingest-function.js';
import { TidemarkMetricFactory } from './metrics.js';
import { Monitoring } from './monitoring.js';
import { QueueOnFailure } from './on-failure.js';
import { MIN_INFREQUENT_ACCESS_DAYS, RawStore } from './raw-store.js';

export interface TidemarkPipelineProps {
  /** The validated pipeline config (`loadConfigFile` / `parseConfig` from `functions/commons/config.ts`). */
  readonly config: TidemarkConfig;
  /**
   * Bring your own Kinesis stream; it replaces `config.source`.
   * @default - from `config.source`: created, or imported by name when `create` is false; an on-demand stream `<name>-cdc` when no source is configured
   */
  readonly stream?: kinesis.IStream;
  /**
   * Customer-managed key for everything the pipeline stores. Used only when `config.encryption` is `kms`.
   * An imported key must already let CloudWatch Logs and CloudWatch alarms use it.
   * @default - a new key with rotation when `config.encryption` is `kms`, otherwise AWS-managed encryption
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * Overrides of the Kinesis event source defaults (`defaultKinesisEventSourceProps`).
   * @default - none
   */
  readonly eventSourceOverrides?: Partial<sources.KinesisEventSourceProps>;
  /**
   * Overrides of the MSK event source defaults (`defaultKafkaEventSourceProps`).
   * @default - none
   */
  readonly kafkaEventSourceOverrides?: Partial<sources.ManagedKafkaEventSourceProps>;
  /**
   * Handler source file of the ingest function; it must export `handler`.
   * @default `<repo>/functions/ingest.ts`
   */
  readonly ingestEntry?: string;
  /**
   * Name of the raw bucket.
   * @default config.raw.bucket
   */
  readonly bucketName?: string;
  /**
   * Removal policy of the tables, buckets and log group. Anything but RETAIN also turns off table deletion protection.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Config problems only the deployment cares about, reported together. */
export function deploymentIssues(config: TidemarkConfig): string[] {
  const issues: string[] = [];
  if (!LOG_RETENTION_DAYS.includes(config.logRetentionDays)) {
    issues.push(`logRetentionDays: ${config.logRetentionDays} is not a CloudWatch Logs retention; use one of ${LOG_RETENTION_DAYS.join(', ')}`);
  }
  if (config.raw.infrequentAccessAfterDays < MIN_INFREQUENT_ACCESS_DAYS) {
    issues.push(`raw.infrequentAccessAfterDays: S3 needs at least ${MIN_INFREQUENT_ACCESS_DAYS} days before STANDARD_IA`);
  }
  const { prefix, quarantinePrefix } = config.raw;
  if (prefix.startsWith(quarantinePrefix) || quarantinePrefix.startsWith(prefix)) {
    issues.push(`raw.quarantinePrefix: "${quarantinePrefix}" and raw.prefix "${prefix}" must not contain one another`);
  }
  return issues;
}

export class TidemarkPipeline extends Construct {
  /** The Kinesis stream, or undefined for an MSK source. */
  readonly stream?: kinesis.IStream;
  readonly ingest: IngestFunction;
  /** On-failure destination: each message describes a failed batch (shard or partition, sequence or offset range). */
  readonly deadLetterQueue: sqs.Queue;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  readonly history: History;
  readonly metrics: TidemarkMetricFactory;
  /** The config the pipeline was built from. */
  readonly config: TidemarkConfig;
  readonly monitoring: Monitoring;
  /** The customer-managed key, when `config.encryption` is `kms`. */
  readonly encryptionKey?: kms.IKey;
  /** Reconcile and snapshot detection: one state machine each, on EventBridge Scheduler schedules. */
  readonly jobs: TidemarkJobs;

  constructor(scope: Construct, id: string, props: TidemarkPipelineProps) {
    super(scope, id);
    const { config } = props;
    this.config = config;
    const issues = deploymentIssues(config);
    if (issues.length > 0) throw new ConfigError(issues, 'config (deployment)');
    // Access logs are delivered through a bucket policy, not the legacy log-delivery ACL.
    this.node.setContext(cxapi.S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    const key = config.encryption === 'kms' ? (props.encryptionKey ?? createPipelineKey(this, 'Key', config.name)) : undefined;
    this.encryptionKey = key;
    const withKey = key ? { encryptionKey: key } : {};

    this.rawStore = new RawStore(this, 'Raw', { config, removalPolicy, ...withKey, ...(props.bucketName ? { bucketName: props.bucketName } : {}) });
    this.currentState = new CurrentState(this, 'CurrentState', { config, removalPolicy, ...withKey });
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      queueName: `${config.name}-ingest-failures`,
      retentionPeriod: DLQ_RETENTION,
      enforceSSL: true,
      ...(key ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key } : { encryption: sqs.QueueEncryption.KMS_MANAGED }),
    });
    this.ingest = new IngestFunction(this, 'Ingest', {
      config,
      rawStore: this.rawStore,
      currentState: this.currentState,
      removalPolicy,
      ...withKey,
      ...(props.ingestEntry ? { entry: props.ingestEntry } : {}),
    });
    const fn = this.ingest.function;
    const onFailure = new QueueOnFailure(this.deadLetterQueue);

    const source = config.source;
    if (props.stream === undefined && source?.type === 'msk') {
      const defaults = defaultKafkaEventSourceProps(config, source, onFailure);
      const esProps = overrideProps(defaults, props.kafkaEventSourceOverrides);
      fn.addEventSource(new sources.ManagedKafkaEventSource(esProps));
      grantKafkaIamAccess(fn, esProps.clusterArn, esProps.topic, esProps.consumerGroupId ?? `${config.name}-ingest`);
    } else {
      const stream = props.stream ?? this.createOrImportStream(config, key);
      this.stream = stream;
      fn.addEventSource(new sources.KinesisEventSource(stream, overrideProps(defaultKinesisEventSourceProps(config, onFailure), props.eventSourceOverrides)));
    }

    this.history = new History(this, 'History', { config, bucket: this.rawStore.bucket });
    this.metrics = new TidemarkMetricFactory({ pipeline: config.name });
    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      metrics: this.metrics,
      function: fn,
      deadLetterQueue: this.deadLetterQueue,
      sourceKind: this.stream ? 'kinesis' : 'msk',
      ...(key ? { topicKey: key } : {}),
    });
    this.jobs = new TidemarkJobs(this, 'Jobs', { config, rawStore: this.rawStore, currentState: this.currentState, removalPolicy, alarmTopic: this.monitoring.alarmTopic, ...withKey });
    this.addOutputs(config);
  }

  private createOrImportStream(config: TidemarkConfig, key: kms.IKey | undefined): kinesis.IStream {
    const source = config.source?.type === 'kinesis' ? config.source : undefined;
    const streamName = source?.streamName ?? `${config.name}-cdc`;
    if (source && !source.create) {
      const streamArn = Stack.of(this).formatArn({ service: 'kinesis', resource: 'stream', resourceName: streamName });
      return kinesis.Stream.fromStreamAttributes(this, 'Stream', { streamArn, ...(key ? { encryptionKey: key } : {}) });
    }
    const shardCount = source?.shardCount ?? 0;
    return new kinesis.Stream(this, 'Stream', {
      streamName,
      retentionPeriod: Duration.hours(source?.retentionHours ?? 24),
      ...(shardCount === 0 ? { streamMode: kinesis.StreamMode.ON_DEMAND } : { streamMode: kinesis.StreamMode.PROVISIONED, shardCount }),
      ...(key ? { encryption: kinesis.StreamEncryption.KMS, encryptionKey: key } : { encryption: kinesis.StreamEncryption.MANAGED }),
    });
  }

  private addOutputs(config: TidemarkConfig): void {
    const out = (outputId: string, value: string, description: string): void => {
      new CfnOutput(this, outputId, { value, description });
    };
    config.tables.forEach((t, i) => {
      out(`TargetTable${i}`, this.currentState.tables.get(t.source)!.tableName, `current state of ${t.source}`);
    });
    out('StatusTable', this.currentState.statusTable.tableName, 'status rows per (pipeline, table)');
    out('RawBucket', this.rawStore.bucket.bucketName, `raw under ${config.raw.prefix}, quarantine under ${config.raw.quarantinePrefix}`);
    if (this.stream) out('StreamName', this.stream.streamName, 'Kinesis stream the connector writes to');
    out('DeadLetterQueueUrl', this.deadLetterQueue.queueUrl, 'failed-batch descriptors (shard and sequence range)');
    out('DashboardName', this.monitoring.dashboard.dashboardName, 'CloudWatch dashboard');
    out('AlarmTopicArn', this.monitoring.alarmTopic.topicArn, 'subscribe to receive alarms');
    out('HistoryTable', `${this.history.databaseName}.${this.history.tableName}`, 'Glue/Athena table over raw');
  }
}

/**
 * With IAM access control, the MSK event source reads as the function's role: connect to the
 * cluster, read the topic and manage its own consumer group, nothing else.
 */
function grantKafkaIamAccess(fn: lambda.IFunction, clusterArn: string, topic: string, groupId: string): void {
  const scoped = (kind: 'topic' | 'group', name: string): string => `${clusterArn.replace(':cluster/', `:${kind}/`)}/${name}`;
  fn.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'ReadTopicAsConsumerGroup',
      actions: [
        'kafka-cluster:Connect',
        'kafka-cluster:DescribeClusterDynamicConfiguration',
        'kafka-cluster:DescribeTopic',
        'kafka-cluster:ReadData',
        'kafka-cluster:DescribeGroup',
        'kafka-cluster:AlterGroup',
      ],
      resources: [clusterArn, scoped('topic', topic), scoped('group', groupId)],
    }),
  );
}
