/**
 * Raw in S3, the recovery position: every delivered record lands under the raw prefix before its
 * batch is applied; unparseable records go under the quarantine prefix. Access is logged to a
 * separate bucket.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../functions/commons/config.js';

export interface RawStoreProps {
  readonly config: TidemarkConfig;
  /**
   * Name of the raw bucket.
   * @default config.raw.bucket
   */
  readonly bucketName?: string;
  /**
   * Customer-managed key for the raw bucket (SSE-KMS with an S3 bucket key).
   * @default - SSE-S3
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the buckets when they leave the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Days server access logs are kept.
   * @default 365
   */
  readonly accessLogRetentionDays?: number;
}

/** S3 allows a transition to STANDARD_IA only after an object is 30 days old. */
export const MIN_INFREQUENT_ACCESS_DAYS = 30;

export class RawStore extends Construct {
  /** Raw JSON Lines (gzip) under `config.raw.prefix`, quarantine under `config.raw.quarantinePrefix`. */
  readonly bucket: s3.Bucket;
  /** Receives the raw bucket's server access logs. */
  readonly accessLogBucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: RawStoreProps) {
    super(scope, id);
    const { raw } = props.config;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    // Log delivery writes with SSE-S3 only; the log bucket must not use SSE-KMS.
    this.accessLogBucket = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      removalPolicy,
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
      bucketName: props.bucketName ?? raw.bucket,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      removalPolicy,
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
}
