import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { ConfigError } from '../../../functions/core/errors.js';
import { defaultKinesisEventSourceProps, overrideProps } from '../../../lib/defaults.js';
import { deploymentIssues } from '../../../lib/pipeline.js';
import { buildStack, MSK_CLUSTER_ARN, templateOf, testConfig } from './fixtures/stack.js';

type Statement = { Action: string | string[]; Resource: unknown };
const allActions = (template: Template): string[] =>
  Object.values(template.findResources('AWS::IAM::Policy'))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));

describe('TidemarkPipeline with an MSK source', () => {
  const template = templateOf(testConfig({ source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topic: 'shop.cdc' } }));

  it('reads the topic from TRIM_HORIZON as its own consumer group, in provisioned mode so error handling applies', () => {
    template.resourceCountIs('AWS::Kinesis::Stream', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: MSK_CLUSTER_ARN,
      Topics: ['shop.cdc'],
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'shop-ingest' },
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 86_400,
      ParallelizationFactor: Match.absent(),
      ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 10 },
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineDeadLetterQueue'), 'Arn'] } } },
    });
  });

  it('lets the role connect, read the one topic and manage the one consumer group', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Sid: 'ReadTopicAsConsumerGroup',
            Resource: [
              MSK_CLUSTER_ARN,
              `${MSK_CLUSTER_ARN.replace(':cluster/', ':topic/')}/shop.cdc`,
              `${MSK_CLUSTER_ARN.replace(':cluster/', ':group/')}/shop-ingest`,
            ],
          }),
        ]),
      },
    });
    assert.deepEqual(allActions(template).filter((a) => a.includes('*')), []);
  });

  it('shows offset lag instead of an iterator-age alarm', () => {
    assert.equal(Object.keys(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'IteratorAge' } })).length, 0);
    template.resourceCountIs('AWS::CloudWatch::Alarm', 3 + 3 * 3 + 13); // + the jobs' alarms (test/unit/jobs/constructs.test.ts)
  });
});

describe('TidemarkPipeline with encryption: kms', () => {
  const template = templateOf(testConfig({ encryption: 'kms' }));
  const key = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineKey'), 'Arn'] };

  it('creates one rotating key and uses it for the stream, queue, tables, bucket, log group and alarm topic', () => {
    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResourceProperties('AWS::Kinesis::Stream', { StreamEncryption: { EncryptionType: 'KMS', KeyId: key } });
    template.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: key });
    template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'shop-status', SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: key } });
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'shop-cdc-raw',
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ BucketKeyEnabled: true, ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: key } }] },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { KmsKeyId: key });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: key });
  });

  it('grants the key to the role with named actions only', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Sid: 'UsePipelineKey', Action: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey'], Resource: key }),
        ]),
      },
    });
    assert.deepEqual(allActions(template).filter((a) => a.includes('*')), []);
  });
});

describe('TidemarkPipeline sources and overrides', () => {
  it('creates an on-demand stream when shardCount is 0', () => {
    const template = templateOf(testConfig({ source: { type: 'kinesis', streamName: 'shop-cdc', shardCount: 0 } }));
    template.hasResourceProperties('AWS::Kinesis::Stream', { StreamModeDetails: { StreamMode: 'ON_DEMAND' }, ShardCount: Match.absent() });
  });

  it('imports the stream by name when create is false', () => {
    const template = templateOf(testConfig({ source: { type: 'kinesis', streamName: 'existing-cdc', create: false } }));
    template.resourceCountIs('AWS::Kinesis::Stream', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':kinesis:us-east-1:111122223333:stream/existing-cdc']] },
    });
  });

  it('uses a stream the caller brings, and applies event source overrides over the defaults', () => {
    const { stack } = buildStack(testConfig(), {
      stream: kinesis.Stream.fromStreamArn(new Stack(), 'Byo', 'arn:aws:kinesis:us-east-1:111122223333:stream/byo'),
      eventSourceOverrides: { batchSize: 100, retryAttempts: 2, maxBatchingWindow: Duration.seconds(5) },
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::Kinesis::Stream', 0);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: 'arn:aws:kinesis:us-east-1:111122223333:stream/byo',
      BatchSize: 100,
      MaximumRetryAttempts: 2,
      MaximumBatchingWindowInSeconds: 5,
      BisectBatchOnFunctionError: true,
    });
  });

  it('keeps a default when an override is undefined', () => {
    const defaults = { batchSize: 500, retryAttempts: 5 };
    assert.deepEqual(overrideProps(defaults, { batchSize: undefined, retryAttempts: 1 }), { batchSize: 500, retryAttempts: 1 });
    assert.deepEqual(defaults, { batchSize: 500, retryAttempts: 5 }, 'defaults are not mutated');
    const esm = defaultKinesisEventSourceProps(testConfig(), { bind: () => ({ destination: 'arn:x' }) });
    assert.equal(esm.maxRecordAge?.toSeconds(), 86_400);
  });

  it('reports every deployment problem of the config together', () => {
    const config = testConfig({ logRetentionDays: 31, raw: { bucket: 'shop-cdc-raw', prefix: 'raw/', quarantinePrefix: 'raw/q/', infrequentAccessAfterDays: 7 } });
    const issues = deploymentIssues(config);
    assert.equal(issues.length, 3, issues.join('\n'));
    assert.throws(() => buildStack(config), (e: unknown) => e instanceof ConfigError && e.issues.length === 3);
  });
});
