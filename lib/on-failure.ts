/**
 * On-failure destination of the event source mappings: the raw bucket, where Lambda writes each
 * batch it gives up on (retries exhausted, or older than the maximum record age) as one JSON
 * object holding the whole records, under `aws/lambda/<mapping id>/...`. An SQS destination would
 * keep only shard and sequence coordinates, which the stream is trimming by then.
 *
 * Unlike `S3OnFailureDestination` (read-write on the whole bucket), this grants exactly what
 * Lambda documents for an S3 destination: `s3:PutObject` under the prefix and `s3:ListBucket`.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { ON_FAILURE_PREFIX } from './config/config.js';

export class S3OnFailure implements lambda.IEventSourceDlq {
  /** Where the failed batches land. */
  readonly prefix = ON_FAILURE_PREFIX;

  private readonly granted = new WeakSet<lambda.IFunction>();

  constructor(readonly bucket: s3.IBucket) {}

  bind(_target: lambda.IEventSourceMapping, targetHandler: lambda.IFunction): lambda.DlqDestinationConfig {
    // One grant per function, however many mappings (one per Kafka topic) share this destination.
    if (this.granted.has(targetHandler)) return { destination: this.bucket.bucketArn };
    this.granted.add(targetHandler);
    targetHandler.addToRolePolicy(
      new iam.PolicyStatement({ sid: 'WriteFailedBatches', actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects(`${ON_FAILURE_PREFIX}*`)] }),
    );
    targetHandler.addToRolePolicy(new iam.PolicyStatement({ sid: 'FailedBatchesListBucket', actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }));
    return { destination: this.bucket.bucketArn };
  }
}
