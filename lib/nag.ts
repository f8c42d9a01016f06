/**
 * cdk-nag (v3, CDK policy validation) AwsSolutions findings accepted on purpose, each with its
 * one-line reason. Acknowledged with `Validations.of(construct).acknowledge`.
 */
import { type CfnResource, Stack, Validations } from 'aws-cdk-lib';
import type { TidemarkPipeline } from './pipeline.js';

export function suppressJustifiedFindings(pipeline: TidemarkPipeline): void {
  const { config } = pipeline;
  const stack = Stack.of(pipeline);
  Validations.of(pipeline.deadLetterQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: 'This queue is itself the dead letter: the on-failure destination of the ingest event source mapping.',
  });
  Validations.of(pipeline.ingest.function).acknowledge({
    id: 'AwsSolutions-L1',
    reason: 'The ingest runtime is pinned to nodejs22.x, the Node line the project bundles for and tests against.',
  });
  const bucketId = stack.resolve(stack.getLogicalId(pipeline.rawStore.bucket.node.defaultChild as CfnResource)) as string;
  for (const prefix of [config.raw.prefix, config.raw.quarantinePrefix]) {
    Validations.of(pipeline.ingest.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`,
      reason: `s3:PutObject is limited to the objects under the "${prefix}" prefix; object keys are per batch and not known in advance.`,
    });
  }
  if (pipeline.encryptionKey && pipeline.stream) {
    Validations.of(pipeline.stream).acknowledge({
      id: 'AwsSolutions-KDS3',
      reason: 'encryption: "kms" asks for the pipeline customer-managed key on every store, the stream included.',
    });
  }
  if (config.source?.type === 'msk' && pipeline.stream === undefined) {
    Validations.of(pipeline.ingest.role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaMSKExecutionRole]',
      reason: 'Added by ManagedKafkaEventSource: the MSK event source needs the ENI and cluster-describe permissions it grants.',
    });
  }
}
