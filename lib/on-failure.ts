/**
 * On-failure destination of the event source mapping. Unlike `SqsDlq`, it grants only
 * `sqs:SendMessage` on the queue: the KMS permissions of a customer-managed key are granted once,
 * without wildcard actions, by the ingest role.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

export class QueueOnFailure implements lambda.IEventSourceDlq {
  constructor(private readonly queue: sqs.IQueue) {}

  /** Lambda sends one message per failed batch: the shard (or partition) and its sequence (or offset) range. */
  bind(_target: lambda.IEventSourceMapping, targetHandler: lambda.IFunction): lambda.DlqDestinationConfig {
    targetHandler.addToRolePolicy(new iam.PolicyStatement({ sid: 'SendFailedBatchDescriptors', actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }));
    return { destination: this.queue.queueArn };
  }
}
