/**
 * The one customer-managed key used when `encryption` is `kms`: stream, DLQ, tables, raw bucket,
 * log group and alarm topic. Its policy lets CloudWatch Logs and CloudWatch alarms use it.
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';

/** Creates the pipeline key with yearly rotation, retained when the stack is deleted. */
export function createPipelineKey(scope: Construct, id: string, pipelineName: string): kms.Key {
  const stack = Stack.of(scope);
  const key = new kms.Key(scope, id, {
    description: `tidemark ${pipelineName}: stream, queue, tables, raw bucket, logs and alarm topic`,
    enableKeyRotation: true,
    pendingWindow: Duration.days(30),
    removalPolicy: RemovalPolicy.RETAIN,
  });
  allowServiceUse(key, stack);
  return key;
}

/**
 * Lets CloudWatch Logs encrypt the pipeline's log groups, and CloudWatch alarms publish to the
 * encrypted alarm topic. Has no effect on an imported key: grant those in its own policy.
 */
export function allowServiceUse(key: kms.IKey, stack: Stack): void {
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'AllowCloudWatchLogs',
      principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: ['kms:Encrypt', 'kms:Decrypt', 'kms:ReEncryptFrom', 'kms:ReEncryptTo', 'kms:GenerateDataKey', 'kms:DescribeKey'],
      resources: ['*'],
      conditions: {
        ArnLike: { 'kms:EncryptionContext:aws:logs:arn': stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }),
  );
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'AllowCloudWatchAlarmsToPublish',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      resources: ['*'],
      conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
    }),
  );
}
