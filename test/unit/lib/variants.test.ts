import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { ConfigError } from '../../../functions/core/errors.js';
import { defaultKinesisMappingProps, overrideProps } from '../../../lib/defaults.js';
import { deploymentIssues, tablesWithoutTopic } from '../../../lib/pipeline.js';
import { TidemarkStack } from '../../../lib/stack.js';
import { buildStack, FIXTURE_HANDLER, MSK_CLUSTER_ARN, templateOf, testConfig } from './fixtures/stack.js';

type Statement = { Action: string | string[]; Resource: unknown };
// The ingest role's statements: the state machines and job functions have their own roles and tests
// (test/unit/lib/jobs/jobs.test.ts, test/unit/lib/replay/jobs.test.ts).
const statementsOf = (template: Template): Statement[] =>
  Object.entries(template.findResources('AWS::IAM::Policy'))
    .filter(([id]) => id.startsWith('PipelineIngestRole'))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
const allActions = (template: Template): string[] => statementsOf(template).flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
const everyRolesActions = (template: Template): string[] =>
  Object.values(template.findResources('AWS::IAM::Policy'))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));

describe('TidemarkPipeline with an MSK source', () => {
  const mskConfig = (source: object, patch: Record<string, unknown> = {}) =>
    testConfig({ source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, ...source }, ...patch });
  const built = buildStack(mskConfig({ topicPrefix: 'shop' }));
  const template = Template.fromStack(built.stack);
  const topics = ['shop.public.customers', 'shop.public.order_lines', 'shop.public.shipments'];
  const bucketArn = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineRawBucket'), 'Arn'] };

  it('maps every topic of <prefix>.<table> with its own consumer group, provisioned so error handling applies, failed batches to S3', () => {
    template.resourceCountIs('AWS::Kinesis::Stream', 0);
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
    for (const topic of topics) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: MSK_CLUSTER_ARN,
        Topics: [topic],
        AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: `shop-ingest.${topic}` },
        StartingPosition: 'TRIM_HORIZON',
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 5,
        MaximumRecordAgeInSeconds: 84 * 3600,
        ParallelizationFactor: Match.absent(),
        ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 10 },
        DestinationConfig: { OnFailure: { Destination: bucketArn } },
      });
    }
    assert.equal(built.stack.pipeline.eventSourceMappings.length, 3, 'the mappings are exposed (OffsetLag alarms)');
  });

  it('grants the exact actions of the MSK mapping: no AWSLambdaMSKExecutionRole, topics and groups by name, EC2 only where EC2 cannot scope', () => {
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    const byTopic = (kind: string, name: string) => `${MSK_CLUSTER_ARN.replace(':cluster/', `:${kind}/`)}/${name}`;
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          { Sid: 'FindCluster', Effect: 'Allow', Action: ['kafka:DescribeCluster', 'kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'], Resource: MSK_CLUSTER_ARN },
          Match.objectLike({ Sid: 'ClusterNetworkInterfaces', Resource: '*' }),
          Match.objectLike({
            Sid: 'ReadTopicsAsConsumerGroups',
            Resource: [MSK_CLUSTER_ARN, ...topics.map((t) => byTopic('topic', t)), ...topics.map((t) => byTopic('group', `shop-ingest.${t}`))],
          }),
        ]),
      },
    });
    const starResources = statementsOf(template).filter((s) => s.Resource === '*');
    // Only EC2 (the mapping's network interfaces) and X-Ray (tracing) have no resource-level permissions.
    assert.deepEqual(starResources.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])).filter((a) => !a.startsWith('ec2:') && !a.startsWith('xray:')), []);
    assert.deepEqual(allActions(template).filter((a) => a.includes('*')), []);
  });

  it('warns at synth about a table no topic could carry, and not about those a topic carries', () => {
    const { stack } = buildStack(mskConfig({ topics: ['shop.public.customers', 'shop.all'] }));
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('has no topic'));
    const text = warnings.map((w) => String(w.entry.data));
    assert.equal(text.length, 2, text.join('\n'));
    assert.ok(text.some((t) => t.includes('public.order_lines')) && text.some((t) => t.includes('public.shipments')));
    assert.deepEqual(tablesWithoutTopic([{ source: 'public.a' }, { source: 'public.b' }], ['x.public.a', 'public.b']), []);
    assert.deepEqual(tablesWithoutTopic([{ source: 'public.a' }], ['x.public.ab', 'x.public']), ['public.a']);
  });

  it('refuses a cluster in another region or account than the stack', () => {
    const other = MSK_CLUSTER_ARN.replace('us-east-1', 'eu-west-1').replace('111122223333', '999988887777');
    assert.throws(
      () => buildStack(testConfig({ source: { type: 'msk', clusterArn: other, topic: 'shop.cdc' } })),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.issues.some((i) => i.includes('the cluster is in eu-west-1, the stack in us-east-1')) &&
        e.issues.some((i) => i.includes('account 999988887777, the stack in 111122223333')),
    );
  });

  it('says so when an env-agnostic stack leaves the cluster’s region and account unchecked', () => {
    const stack = new TidemarkStack(new App(), 'Agnostic', { config: mskConfig({ topic: 'shop.cdc' }), pipeline: { ingestEntry: FIXTURE_HANDLER } });
    assert.equal(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('could not be checked')).length, 1);
  });

  it('shows offset lag instead of an iterator-age alarm', () => {
    assert.equal(Object.keys(template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'IteratorAge' } })).length, 0);
    // The pipeline's own alarms; the jobs' alarms are counted in test/unit/lib/jobs/jobs.test.ts.
    assert.equal(Object.keys(template.findResources('AWS::CloudWatch::Alarm')).filter((id) => id.startsWith('PipelineMonitoring')).length, 13, 'the Kinesis pipeline’s thirteen, OffsetLag in place of IteratorAge');
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'OffsetLag', Namespace: 'AWS/Lambda', Threshold: 100_000 });
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
          Match.objectLike({ Sid: 'UsePipelineKey', Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Resource: key }),
        ]),
      },
    });
    assert.deepEqual(everyRolesActions(template).filter((a) => a.includes('*')), []);
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
    const esm = defaultKinesisMappingProps(testConfig().ingest, { bind: () => ({ destination: 'arn:x' }) });
    assert.equal(esm.maxRecordAge?.toSeconds(), 43_200);
  });

  it('reports every deployment problem of the config together', () => {
    const config = testConfig({ logRetentionDays: 31, raw: { bucket: 'shop-cdc-raw', prefix: 'raw/', infrequentAccessAfterDays: 7 } });
    const issues = deploymentIssues(config);
    assert.equal(issues.length, 2, issues.join('\n'));
    assert.throws(() => buildStack(config), (e: unknown) => e instanceof ConfigError && e.issues.length === 2);
  });
});
