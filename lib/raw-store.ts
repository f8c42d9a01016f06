/**
 * Raw in S3, the recovery position: every delivered record lands under the raw prefix before its
 * batch is applied; unparseable records go under the quarantine prefix; batches the event source
 * mapping gives up on land whole under `aws/lambda/`, and each one is announced on the failed-batch
 * queue. Access is logged to a separate bucket.
 *
 * Lifecycle: raw moves to STANDARD_IA after `infrequentAccessAfterDays` and is never expired (it is
 * the replay source); quarantine expires after `quarantineRetentionDays`; job runs and reports
 * expire after `replay.jobsRetentionDays` and `jobs.reportRetentionDays`; failed batches are kept
 * until replayed and removed by hand; noncurrent versions go after 30 days. Under the history prefix,
 * the jobs' scratch expires: the Athena workgroup's results (`<history>athena/`) after
 * `ATHENA_RESULTS_RETENTION_DAYS`, query outputs and DynamoDB exports (`<history>unload/`) and the
 * table side (`<history>table_side/`) after `JOB_SCRATCH_RETENTION_DAYS` (query outputs never past
 * `jobs.reportRetentionDays`; a finished run deletes its own; these rules take what a failed run
 * leaves). Raw past its grace is not expired by a rule: the
 * compaction job deletes it once its hour is in the history table (docs/history.md §2).
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ON_FAILURE_PREFIX, type TidemarkConfig } from './config/config.js';
import { athenaResultsPrefix, jobOutputsPrefix, splitPartsPrefix, tableSidePrefix } from '../functions/adapters/raw-layout.js';
import { SPLIT_RETENTION_DAYS } from '../functions/adapters/split-parts-store.js';

/** Days the parts of split Aurora DSQL records stay: the longest wait (7 days), the items' TTL after it, and a day. */
const SPLIT_PARTS_EXPIRY_DAYS = 7 + SPLIT_RETENTION_DAYS + 1;

export interface RawStoreProps {
  /** The resolved `raw` section: bucket name, prefixes and lifecycle. */
  readonly raw: TidemarkConfig['raw'];
  /**
   * Where the jobs keep requests and results (`replay.jobsPrefix`) and reports and scratch space
   * (`jobs.reportPrefix`), and for how long: both expire, so that what a failed run leaves (an erase
   * request holds a key) does not stay.
   * @default - no expiry of either prefix
   */
  readonly jobs?: { readonly jobsPrefix: string; readonly jobsRetentionDays: number; readonly reportPrefix: string; readonly reportRetentionDays: number };
  /**
   * The history prefix (`history.prefix`): its query results, unloaded outputs and table side expire.
   * @default - no expiry under it
   */
  readonly historyPrefix?: string;
  /**
   * Name of the raw bucket.
   * @default raw.bucket
   */
  readonly bucketName?: string;
  /**
   * Customer-managed key for the raw bucket (SSE-KMS with an S3 bucket key).
   * @default - SSE-S3
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the buckets when they leave the stack. `DESTROY` also empties them first
   * (`autoDeleteObjects`), for throwaway stacks such as LocalStack's.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Days server access logs are kept.
   * @default 365
   */
  readonly accessLogRetentionDays?: number;
}

/** Days the Athena workgroup's query results are kept (the jobs read none: their queries unload or write tables). */
export const ATHENA_RESULTS_RETENTION_DAYS = 3;
/** Days query outputs, DynamoDB exports and table-side files are kept (a reconcile report's findings objects among them). */
export const JOB_SCRATCH_RETENTION_DAYS = 7;

/** Days query outputs (`<history>unload/`) are kept: `JOB_SCRATCH_RETENTION_DAYS`, or the reports' retention when shorter. */
export const jobOutputsRetentionDays = (reportRetentionDays?: number): number => Math.min(JOB_SCRATCH_RETENTION_DAYS, reportRetentionDays ?? JOB_SCRATCH_RETENTION_DAYS);

/** S3 allows a transition to STANDARD_IA only after an object is 30 days old. */
export const MIN_INFREQUENT_ACCESS_DAYS = 30;

export class RawStore extends Construct {
  /** Raw JSON Lines (gzip) under `config.raw.prefix`, quarantine under `config.raw.quarantinePrefix`. */
  readonly bucket: s3.Bucket;
  /** Receives the raw bucket's server access logs. */
  readonly accessLogBucket: s3.Bucket;
  /** The raw bucket's name, known at synth time. */
  readonly bucketName: string;

  constructor(scope: Construct, id: string, props: RawStoreProps) {
    super(scope, id);
    const { raw } = props;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const autoDeleteObjects = removalPolicy === RemovalPolicy.DESTROY;
    this.bucketName = props.bucketName ?? raw.bucket;

    // Log delivery writes with SSE-S3 only; the log bucket must not use SSE-KMS.
    this.accessLogBucket = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      removalPolicy,
      autoDeleteObjects,
      lifecycleRules: [
        {
          id: 'expire-access-logs',
          expiration: Duration.days(props.accessLogRetentionDays ?? 365),
          noncurrentVersionExpiration: Duration.days(30),
          abortIncompleteMultipartUploadAfter: Duration.days(7),
        },
      ],
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      bucketName: this.bucketName,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      removalPolicy,
      autoDeleteObjects,
      ...(props.encryptionKey
        ? { encryption: s3.BucketEncryption.KMS, encryptionKey: props.encryptionKey, bucketKeyEnabled: true }
        : { encryption: s3.BucketEncryption.S3_MANAGED }),
      serverAccessLogsBucket: this.accessLogBucket,
      serverAccessLogsPrefix: 'raw-bucket/',
      lifecycleRules: [
        {
          id: 'raw-to-infrequent-access',
          prefix: raw.prefix,
          transitions: [
            {
              storageClass: s3.StorageClass.INFREQUENT_ACCESS,
              transitionAfter: Duration.days(raw.infrequentAccessAfterDays),
            },
          ],
        },
        { id: 'expire-quarantine', prefix: raw.quarantinePrefix, expiration: Duration.days(raw.quarantineRetentionDays) },
        // Parts of split Aurora DSQL records (rewritten whenever a part arrives): kept past the
        // longest wait and the parts items' own TTL, then expired.
        { id: 'expire-split-record-parts', prefix: splitPartsPrefix(raw.prefix), expiration: Duration.days(SPLIT_PARTS_EXPIRY_DAYS) },
        ...(props.jobs
          ? [
              { id: 'expire-job-runs', prefix: props.jobs.jobsPrefix, expiration: Duration.days(props.jobs.jobsRetentionDays) },
              { id: 'expire-reports', prefix: props.jobs.reportPrefix, expiration: Duration.days(props.jobs.reportRetentionDays) },
            ]
          : []),
        ...(props.historyPrefix !== undefined
          ? [
              { id: 'expire-athena-results', prefix: athenaResultsPrefix(props.historyPrefix), expiration: Duration.days(ATHENA_RESULTS_RETENTION_DAYS) },
              // Query outputs hold what the reports hold (findings, orphan keys): never kept past the reports.
              { id: 'expire-job-outputs', prefix: jobOutputsPrefix(props.historyPrefix), expiration: Duration.days(jobOutputsRetentionDays(props.jobs?.reportRetentionDays)) },
              { id: 'expire-table-side', prefix: tableSidePrefix(props.historyPrefix), expiration: Duration.days(JOB_SCRATCH_RETENTION_DAYS) },
            ]
          : []),
        {
          id: 'noncurrent-and-multipart',
          noncurrentVersionExpiration: Duration.days(30),
          abortIncompleteMultipartUploadAfter: Duration.days(7),
        },
      ],
    });
  }

  /** ARN pattern of the objects under one key prefix, e.g. `arn:aws:s3:::shop-cdc-raw/raw/*`. */
  objectsUnder(prefix: string): string {
    return this.bucket.arnForObjects(`${prefix}*`);
  }

  /**
   * Sends an S3 event notification to `queue` for every failed batch Lambda writes under
   * `aws/lambda/`, so the queue's depth counts failed batches and its messages name their objects.
   * Set natively on the bucket (no notification custom resource); the queue policy names the
   * bucket by its literal ARN so that the bucket can depend on the policy without a cycle.
   */
  notifyFailedBatches(queue: sqs.IQueue): void {
    const stack = Stack.of(this);
    const added = queue.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'S3FailedBatchNotifications',
        principals: [new iam.ServicePrincipal('s3.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [queue.queueArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:s3:::${this.bucketName}` },
          StringEquals: { 'aws:SourceAccount': stack.account },
        },
      }),
    );
    const cfnBucket = this.bucket.node.defaultChild as s3.CfnBucket;
    cfnBucket.notificationConfiguration = {
      queueConfigurations: [
        { event: 's3:ObjectCreated:*', queue: queue.queueArn, filter: { s3Key: { rules: [{ name: 'prefix', value: ON_FAILURE_PREFIX }] } } },
      ],
    };
    if (added.policyDependable) this.bucket.node.addDependency(added.policyDependable);
  }
}
