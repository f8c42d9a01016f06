/**
 * The one customer-managed key used when `encryption` is `kms`: stream, DLQ, tables, raw bucket,
 * log groups, alarm topic, and the definitions and execution histories of every job's state
 * machine (reconcile, snapshot, replay, erase). Its policy lets CloudWatch Logs, CloudWatch alarms
 * and the log delivery of those state machines use it, each only for this account and region:
 *
 *   const key = createPipelineKey(this, 'Key', 'shop');
 *   encryptStateMachine(machine, key, 'shop-replay');
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';

/**
 * What DynamoDB needs of its caller to create a table under a customer-managed key: DescribeKey to
 * check the key, CreateGrant for the grant the table then uses it by. Only through DynamoDB
 * (`kms:ViaService`), so the role cannot create grants for anything else. Every other job role
 * holds only the ingest's `KEY_ACTIONS` (Decrypt, GenerateDataKey).
 */
export const FRESH_TABLE_KEY_ACTIONS = ['kms:CreateGrant', 'kms:DescribeKey'] as const;

/** The statement letting `replay --into fresh:` create a table under `key` (see FRESH_TABLE_KEY_ACTIONS). */
export function freshTableKeyStatement(key: kms.IKey, stack: Stack): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid: 'CreateFreshTablesUnderPipelineKey',
    actions: [...FRESH_TABLE_KEY_ACTIONS],
    resources: [key.keyArn],
    conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${stack.region}.amazonaws.com` } },
  });
}

/**
 * Encrypts a state machine's definition and execution history with `key`, as
 * `sfn.CustomerManagedEncryptionConfiguration` does, but with a key policy statement for the log
 * delivery service that names this account and its log sources: CDK's own statement lets
 * `delivery.logs.amazonaws.com` decrypt with the key for anyone's logs (no `aws:SourceAccount` or
 * `aws:SourceArn`). The state machine's role gets the same two grants CDK gives it: the executions'
 * data keys (encryption context: this state machine) and the log payloads' (context: logs).
 */
export function encryptStateMachine(machine: sfn.StateMachine, key: kms.IKey, stateMachineName: string): void {
  const stack = Stack.of(machine);
  const cfn = machine.node.defaultChild as sfn.CfnStateMachine;
  cfn.encryptionConfiguration = { type: 'CUSTOMER_MANAGED_KMS_KEY', kmsKeyId: key.keyArn, kmsDataKeyReusePeriodSeconds: 300 };
  const self = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  const logSources = stack.formatArn({ service: 'logs', resource: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  machine.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'EncryptExecutions',
      actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      resources: [key.keyArn],
      conditions: { StringEquals: { 'kms:EncryptionContext:aws:states:stateMachineArn': self } },
    }),
  );
  machine.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'EncryptLogDelivery',
      actions: ['kms:GenerateDataKey'],
      resources: [key.keyArn],
      conditions: { StringEquals: { 'kms:EncryptionContext:SourceArn': logSources } },
    }),
  );
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'AllowStateMachineLogDelivery',
      principals: [new iam.ServicePrincipal('delivery.logs.amazonaws.com')],
      actions: ['kms:Decrypt'],
      resources: ['*'],
      conditions: { StringEquals: { 'aws:SourceAccount': stack.account }, ArnLike: { 'aws:SourceArn': logSources } },
    }),
  );
}

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
