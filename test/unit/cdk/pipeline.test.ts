import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match } from 'aws-cdk-lib/assertions';
import { templateOf, testConfig } from './fixtures/stack.js';

// One synth shared by every assertion in this file.
const template = templateOf(testConfig());
const resources = (type: string): Record<string, { Properties: Record<string, unknown> }> =>
  template.findResources(type) as Record<string, { Properties: Record<string, unknown> }>;

type Statement = { Action: string | string[]; Effect: string; Resource: unknown; Sid?: string };
// The jobs' roles are checked in test/unit/jobs/constructs.test.ts.
const statements = (): Statement[] =>
  Object.entries(resources('AWS::IAM::Policy'))
    .filter(([id]) => !id.startsWith('PipelineJobs'))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

// biome-ignore lint/suspicious/noTemplateCurlyInString: Glue partition-projection placeholders, not JavaScript
const LOCATION_SUFFIX = '/raw/table=${source_table}/dt=${dt}/hr=${hr}/';

describe('TidemarkPipeline with a Kinesis source', () => {
  it('maps the stream with partial batch failures, bisect, bounded retries and age, and an SQS on-failure destination', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineStream'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 86_400,
      ParallelizationFactor: 1,
      BatchSize: 500,
      MaximumBatchingWindowInSeconds: 1,
      StartingPosition: 'TRIM_HORIZON',
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineDeadLetterQueue'), 'Arn'] } } },
    });
  });

  it('creates a provisioned, encrypted stream with the configured shards and retention', () => {
    template.hasResourceProperties('AWS::Kinesis::Stream', {
      Name: 'shop-cdc',
      ShardCount: 2,
      RetentionPeriodHours: 24,
      StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
      StreamModeDetails: { StreamMode: 'PROVISIONED' },
    });
  });

  it('keeps failed-batch descriptors 14 days in an encrypted, SSL-only queue', () => {
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'shop-ingest-failures', MessageRetentionPeriod: 1_209_600, KmsMasterKeyId: 'alias/aws/sqs' });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('bundles one ESM handler for nodejs22.x on arm64 with the config, Powertools settings and source maps', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'shop-ingest',
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      MemorySize: 1024,
      Timeout: 120,
      LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp('^PipelineIngestLogGroup') } },
      Environment: {
        Variables: {
          TIDEMARK_CONFIG: JSON.stringify(testConfig()),
          POWERTOOLS_SERVICE_NAME: 'tidemark-ingest',
          POWERTOOLS_METRICS_NAMESPACE: 'Tidemark',
          NODE_OPTIONS: '--enable-source-maps',
        },
      },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/shop-ingest', RetentionInDays: 30 });
  });

  it('gives the ingest role no managed policies and no wildcard actions', () => {
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    const wildcards = statements().flatMap(actionsOf).filter((a) => a.includes('*'));
    assert.deepEqual(wildcards, []);
    const granted = new Set(statements().flatMap(actionsOf));
    for (const unwanted of ['cloudwatch:PutMetricData', 'dynamodb:BatchWriteItem', 'dynamodb:DeleteTable', 's3:GetObject', 's3:DeleteObject']) {
      assert.equal(granted.has(unwanted), false, `${unwanted} is not needed by the ingest function`);
    }
  });

  it('limits s3:PutObject to the raw and quarantine prefixes', () => {
    const puts = statements().filter((s) => actionsOf(s).includes('s3:PutObject'));
    assert.equal(puts.length, 1);
    const bucketArn = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineRawBucket'), 'Arn'] };
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: 'LandRawAndQuarantine',
            Effect: 'Allow',
            Action: 's3:PutObject',
            Resource: [{ 'Fn::Join': ['', [bucketArn, '/raw/*']] }, { 'Fn::Join': ['', [bucketArn, '/quarantine/*']] }],
          },
        ]),
      },
    });
  });

  it('grants the target tables only the guarded-write and truncate-sweep actions, and the status table only its row actions', () => {
    const ids = Object.keys(resources('AWS::DynamoDB::Table'));
    const arn = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
    const targets = ids.filter((id) => !id.includes('StatusTable'));
    const status = ids.filter((id) => id.includes('StatusTable'));
    assert.deepEqual([targets.length, status.length], [3, 1]);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: 'GuardedWritesAndTruncate',
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:DeleteItem'],
            Resource: targets.map(arn),
          },
          {
            Sid: 'StatusRows',
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
            Resource: arn(status[0]!),
          },
        ]),
      },
    });
  });

  it('blocks public access, enforces TLS 1.2 over SSL, encrypts, versions and logs access to the raw bucket', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'shop-cdc-raw',
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      VersioningConfiguration: { Status: 'Enabled' },
      LoggingConfiguration: { DestinationBucketName: { Ref: Match.stringLikeRegexp('^PipelineRawAccessLogs') }, LogFilePrefix: 'raw-bucket/' },
    });
    template.hasResource('AWS::S3::Bucket', { Properties: { BucketName: 'shop-cdc-raw' }, DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: Match.stringLikeRegexp('^PipelineRawBucket') },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Principal: { AWS: '*' }, Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
        ]),
      },
    });
  });

  it('moves raw to infrequent access, expires quarantine and old versions, aborts stale multipart uploads', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'shop-cdc-raw',
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: 'raw/', Status: 'Enabled', Transitions: [{ StorageClass: 'STANDARD_IA', TransitionInDays: 30 }] }),
          Match.objectLike({ Prefix: 'quarantine/', Status: 'Enabled', ExpirationInDays: 90 }),
          Match.objectLike({ NoncurrentVersionExpiration: { NoncurrentDays: 30 }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 } }),
        ]),
      },
    });
  });

  const protectedTable = (name: string, keySchema: unknown[], attributes: unknown[]) => ({
    TableName: name,
    KeySchema: Match.exact(keySchema),
    AttributeDefinitions: Match.exact(attributes),
    BillingMode: 'PAY_PER_REQUEST',
    PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    TimeToLiveSpecification: { AttributeName: '__expiresAt', Enabled: true },
    DeletionProtectionEnabled: true,
    SSESpecification: { SSEEnabled: true },
  });

  it('keys a one-column table by its column (partition key)', () => {
    template.hasResourceProperties(
      'AWS::DynamoDB::Table',
      protectedTable('shop-customers', [{ AttributeName: 'id', KeyType: 'HASH' }], [{ AttributeName: 'id', AttributeType: 'N' }]),
    );
  });

  it('keys a two-column table by partition + sort key', () => {
    template.hasResourceProperties(
      'AWS::DynamoDB::Table',
      protectedTable(
        'shop-order-lines',
        [
          { AttributeName: 'order_id', KeyType: 'HASH' },
          { AttributeName: 'line_no', KeyType: 'RANGE' },
        ],
        [
          { AttributeName: 'order_id', AttributeType: 'N' },
          { AttributeName: 'line_no', AttributeType: 'N' },
        ],
      ),
    );
  });

  it('keys a three-column table by the encoded __key string', () => {
    template.hasResourceProperties(
      'AWS::DynamoDB::Table',
      protectedTable('shop-shipments', [{ AttributeName: '__key', KeyType: 'HASH' }], [{ AttributeName: '__key', AttributeType: 'S' }]),
    );
  });

  it('keys the status table by (pipeline, table) with the same protections, and retains every table', () => {
    template.hasResourceProperties(
      'AWS::DynamoDB::Table',
      protectedTable(
        'shop-status',
        [
          { AttributeName: 'pipeline', KeyType: 'HASH' },
          { AttributeName: 'table', KeyType: 'RANGE' },
        ],
        [
          { AttributeName: 'pipeline', AttributeType: 'S' },
          { AttributeName: 'table', AttributeType: 'S' },
        ],
      ),
    );
    for (const [id, table] of Object.entries(template.findResources('AWS::DynamoDB::Table'))) {
      assert.equal(table.DeletionPolicy, 'Retain', id);
    }
  });

  it('alarms on iterator age, errors, dead letters, quarantine, and per table on freshness p99, conflicts and stale rate', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 4 + 3 * 3 + 13); // + the jobs' alarms (test/unit/jobs/constructs.test.ts)
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'IteratorAge', Namespace: 'AWS/Lambda', Statistic: 'Maximum', Threshold: 300_000 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Errors', Namespace: 'AWS/Lambda', Threshold: 0 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateNumberOfMessagesVisible', Namespace: 'AWS/SQS', Threshold: 0 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 1,
      AlarmDescription: Match.stringLikeRegexp('quarantined'),
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'SUM(METRICS())' }),
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: {
              Namespace: 'Tidemark',
              MetricName: 'Quarantined',
              Dimensions: [
                { Name: 'pipeline', Value: 'shop' },
                { Name: 'service', Value: 'tidemark-ingest' },
                { Name: 'table', Value: '*' },
              ],
            },
          }),
        }),
      ]),
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'FreshnessLagMs',
      ExtendedStatistic: 'p99',
      Threshold: 600_000,
      Dimensions: Match.arrayWith([{ Name: 'table', Value: 'public.order_lines' }]),
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Conflicts', Statistic: 'Sum', Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 0.5,
      Metrics: Match.arrayWith([Match.objectLike({ Expression: 'FILL(stale, 0) / (FILL(applied, 0) + FILL(stale, 0))' })]),
    });
    for (const [id, alarm] of Object.entries(resources('AWS::CloudWatch::Alarm'))) {
      const targets = alarm.Properties.AlarmActions as { Ref: string }[];
      assert.equal(targets.length, 1, id);
      assert.match(targets[0]!.Ref, /^PipelineMonitoringAlarmTopic/, id);
    }
  });

  it('publishes alarms to an SSL-only topic and draws a dashboard', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'tidemark-shop' });
  });

  it('catalogs raw for Athena with projected table, date and hour partitions over gzip JSON Lines', () => {
    template.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'tidemark_shop' } });
    template.hasResourceProperties('AWS::Glue::Table', {
      DatabaseName: 'tidemark_shop',
      TableInput: {
        Name: 'raw_events',
        PartitionKeys: [
          { Name: 'source_table', Type: 'string' },
          { Name: 'dt', Type: 'string' },
          { Name: 'hr', Type: 'int' },
        ].map((k) => Match.objectLike(k)),
        Parameters: Match.objectLike({
          'projection.enabled': 'true',
          'projection.source_table.type': 'injected',
          'projection.dt.type': 'date',
          'projection.dt.format': 'yyyy-MM-dd',
          'projection.dt.range': '2024-01-01,NOW',
          'projection.hr.type': 'integer',
          'projection.hr.range': '0,23',
          'projection.hr.digits': '2',
          'storage.location.template': { 'Fn::Join': ['', ['s3://', { Ref: Match.stringLikeRegexp('^PipelineRawBucket') }, LOCATION_SUFFIX]] },
        }),
        StorageDescriptor: Match.objectLike({
          SerdeInfo: Match.objectLike({ SerializationLibrary: 'org.openx.data.jsonserde.JsonSerDe' }),
          Columns: Match.arrayWith([
            Match.objectLike({ Name: 'commitTs', Type: 'bigint' }),
            Match.objectLike({ Name: 'transport', Type: 'struct<kind:string,stream:string,shard:string,sequence:string,partitionKey:string,arrivalTime:bigint>' }),
          ]),
        }),
      },
    });
  });

  it('outputs the tables, status table, bucket, stream, queue, dashboard and alarm topic', () => {
    const outputs = Object.keys(template.findOutputs('*'));
    for (const prefix of ['PipelineTargetTable0', 'PipelineTargetTable1', 'PipelineTargetTable2', 'PipelineStatusTable', 'PipelineRawBucket', 'PipelineStreamName', 'PipelineDeadLetterQueueUrl', 'PipelineDashboardName', 'PipelineAlarmTopicArn']) {
      assert.ok(outputs.some((o) => o.startsWith(prefix)), `missing output ${prefix} in ${outputs.join(', ')}`);
    }
  });
});
