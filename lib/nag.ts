/**
 * cdk-nag (v3, CDK policy validation) AwsSolutions findings accepted on purpose, each with the
 * reason it is true for this pipeline. Acknowledged with `Validations.of(construct).acknowledge`.
 */
import { type CfnResource, Stack, Validations } from 'aws-cdk-lib';
import { readsAuroraDsql, spilledRowsPrefix, splitPartsPrefix } from '../functions/adapters/raw-layout.js';
import type { TidemarkPipeline } from './pipeline.js';

export function suppressJustifiedFindings(pipeline: TidemarkPipeline): void {
  const { config } = pipeline;
  const stack = Stack.of(pipeline);
  Validations.of(pipeline.deadLetterQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason:
      'The queue only carries S3 notifications that point at failed batches kept whole in the raw bucket; a message that could not be received would still leave the batch in S3, so a further dead letter queue would hold pointers to pointers.',
  });
  Validations.of(pipeline.ingest.function).acknowledge({
    id: 'AwsSolutions-L1',
    reason: 'The ingest runtime is pinned to nodejs22.x, the Node line the project bundles for and tests against; moving it is a deliberate, tested change.',
  });
  const bucketId = stack.resolve(stack.getLogicalId(pipeline.rawStore.bucket.node.defaultChild as CfnResource)) as string;
  for (const prefix of [config.raw.prefix, config.raw.quarantinePrefix]) {
    Validations.of(pipeline.ingest.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`,
      reason: `s3:PutObject is limited to the objects under the "${prefix}" prefix; object keys are per batch and not known in advance.`,
    });
  }
  Validations.of(pipeline.ingest.role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${spilledRowsPrefix(config.raw.prefix)}*]`,
    reason: `s3:GetObject is limited to spilled rows ("${spilledRowsPrefix(config.raw.prefix)}"), read back to merge a patch; their keys are per row and position.`,
  });
  if (readsAuroraDsql(config)) {
    Validations.of(pipeline.ingest.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${splitPartsPrefix(config.raw.prefix)}*]`,
      reason: `s3:GetObject is limited to the parts of split Aurora DSQL records ("${splitPartsPrefix(config.raw.prefix)}"), read back to reassemble a record; their keys are content digests.`,
    });
  }
  Validations.of(pipeline.ingest.role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${pipeline.onFailure.prefix}*]`,
    reason: `Lambda names each failed-batch object itself (${pipeline.onFailure.prefix}<mapping id>/<shard>/<date>/<uuid>); s3:PutObject is limited to that prefix.`,
  });
  if (pipeline.replay.ledgerKeySecret) {
    Validations.of(pipeline.replay.ledgerKeySecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The secret is the HMAC key of the erase ledger: every ledger entry is a keyed hash made with it, so a rotated key would match none of them and erased keys could come back through replay. Rotation is not meaningful here; the key never leaves Secrets Manager except to the replay and erase functions and to operators allowed to read it.',
    });
  }
  if (pipeline.encryptionKey && pipeline.stream) {
    Validations.of(pipeline.stream).acknowledge({
      id: 'AwsSolutions-KDS3',
      reason: 'encryption: "kms" asks for the pipeline customer-managed key on every store, the stream included.',
    });
  }
  if (pipeline.kafkaAccessByPrefix) {
    for (const arn of [pipeline.kafkaAccessByPrefix.topics, pipeline.kafkaAccessByPrefix.groups]) {
      Validations.of(pipeline.ingest.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${arn}]`,
        reason: `Hundreds of topics derived from topicPrefix: every topic and consumer group the pipeline reads is named under this prefix, and one ARN each would exceed IAM's policy size limits.`,
      });
    }
  }
  const wildcardReasons: string[] = [];
  if (config.ingest.tracing) wildcardReasons.push('X-Ray active tracing sends segments with xray:PutTraceSegments and PutTelemetryRecords, which X-Ray does not scope to resources.');
  if (config.source.type === 'msk' && pipeline.stream === undefined) {
    wildcardReasons.push('The MSK mapping manages its network interfaces in the cluster VPC with ec2:CreateNetworkInterface, DeleteNetworkInterface and the Describe* calls, which EC2 does not scope to resources.');
  }
  if (wildcardReasons.length > 0) Validations.of(pipeline.ingest.role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: wildcardReasons.join(' ') });
}
