import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { buildStack, testConfig } from './fixtures/stack.js';

// One synth shared by every assertion in this file.
const built = buildStack(testConfig());
const template = Template.fromStack(built.stack);
const resources = (type: string): Record<string, { Properties: Record<string, unknown> }> =>
  template.findResources(type) as Record<string, { Properties: Record<string, unknown> }>;

type Statement = { Action: string | string[]; Effect: string; Resource: unknown; Sid?: string; Condition?: Record<string, Record<string, unknown>> };
// The ingest role's statements (autoDeleteObjects helpers and the replay and erase jobs have their own roles).
const statements = (): Statement[] =>
  Object.entries(resources('AWS::IAM::Policy'))
    .filter(([id]) => id.startsWith('PipelineIngestRole'))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

// biome-ignore lint/suspicious/noTemplateCurlyInString: Glue partition-projection placeholders, not JavaScript
const LOCATION_SUFFIX = '/raw/table=${source_table}/dt=${dt}/hr=${hr}/';

describe('TidemarkPipeline with a Kinesis source', () => {
  const bucketArn = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineRawBucket'), 'Arn'] };
  const tableArn = (name: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:dynamodb:us-east-1:111122223333:table/${name}`]] });

  it('maps the stream with partial batch failures, bisect, bounded retries, an age below retention, and whole failed batches to S3', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineStream'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 43_200,
      ParallelizationFactor: 1,
      BatchSize: 3000,
      MaximumBatchingWindowInSeconds: 3,
      StartingPosition: 'TRIM_HORIZON',
      DestinationConfig: { OnFailure: { Destination: bucketArn } },
    });
    const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))[0] as { DependsOn?: string[] };
    assert.ok(mapping.DependsOn?.some((d) => d.startsWith('PipelineCurrentStateTable')), 'the mapping waits for the tables');
  });

  it('lets the mapping read the stream with exactly the non-EFO read actions, and write failed batches under aws/lambda/', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: 'ReadStream',
            Effect: 'Allow',
            Action: ['kinesis:DescribeStream', 'kinesis:DescribeStreamSummary', 'kinesis:GetRecords', 'kinesis:GetShardIterator', 'kinesis:ListShards'],
            Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineStream'), 'Arn'] },
          },
          { Sid: 'WriteFailedBatches', Effect: 'Allow', Action: 's3:PutObject', Resource: { 'Fn::Join': ['', [bucketArn, '/aws/lambda/*']] } },
          { Sid: 'FailedBatchesListBucket', Effect: 'Allow', Action: 's3:ListBucket', Resource: bucketArn },
        ]),
      },
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

  it('announces each failed batch object on an SSE-SQS, SSL-only queue that only S3 notifications of this bucket may use', () => {
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'shop-ingest-failures', MessageRetentionPeriod: 1_209_600, SqsManagedSseEnabled: true, KmsMasterKeyId: Match.absent() });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Sid: 'S3FailedBatchNotifications',
            Principal: { Service: 's3.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Condition: {
              ArnLike: { 'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::shop-cdc-raw']] } },
              StringEquals: { 'aws:SourceAccount': '111122223333' },
            },
          }),
        ]),
      },
    });
    template.hasResource('AWS::S3::Bucket', {
      Properties: {
        BucketName: 'shop-cdc-raw',
        NotificationConfiguration: {
          QueueConfigurations: [
            {
              Event: 's3:ObjectCreated:*',
              Queue: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineDeadLetterQueue'), 'Arn'] },
              Filter: { S3Key: { Rules: [{ Name: 'prefix', Value: 'aws/lambda/' }] } },
            },
          ],
        },
      },
      DependsOn: Match.arrayWith([Match.stringLikeRegexp('^PipelineDeadLetterQueuePolicy')]),
    });
  });

  it('bundles one ESM handler for nodejs22.x on arm64 with the resolved config in its asset, not in its environment', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'shop-ingest',
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      MemorySize: 1769,
      Timeout: 120,
      ReservedConcurrentExecutions: Match.absent(),
      LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp('^PipelineIngestLogGroup') } },
      Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'tidemark-ingest', POWERTOOLS_METRICS_NAMESPACE: 'Tidemark' } },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/shop-ingest', RetentionInDays: 30 });
    const dir = built.stack.pipeline.ingest.codeDirectory;
    assert.deepEqual(readdirSync(dir).sort(), ['index.mjs', 'tidemark.config.json']);
    // The config as resolved, but for the ledger key: read from the secret the stack generated (log lines name keys by its keyed hash).
    const shipped = testConfig();
    const expected = { ...shipped, replay: { ...shipped.replay, erase: { ...shipped.replay.erase, ledgerKeySecret: 'secretsmanager:tidemark/shop/erase-ledger-key' } } };
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'tidemark.config.json'), 'utf8')), JSON.parse(JSON.stringify(expected)));
  });

  it('reserves concurrency and ships source maps only when asked', () => {
    const { stack } = buildStack(testConfig({ ingest: { reservedConcurrency: 7 } }), { sourceMaps: true });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: 7,
      Environment: { Variables: Match.objectLike({ NODE_OPTIONS: '--enable-source-maps' }) },
    });
    assert.deepEqual(readdirSync(stack.pipeline.ingest.codeDirectory).sort(), ['index.mjs', 'index.mjs.map', 'tidemark.config.json']);
  });

  it('gives the ingest role no managed policies and no wildcard actions', () => {
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    const wildcards = statements().flatMap(actionsOf).filter((a) => a.includes('*'));
    assert.deepEqual(wildcards, []);
    const granted = new Set(statements().flatMap(actionsOf));
    for (const unwanted of [
      'cloudwatch:PutMetricData',
      'dynamodb:BatchWriteItem',
      'dynamodb:DeleteTable',
      's3:DeleteObject',
      'kinesis:ListStreams',
      'kinesis:SubscribeToShard',
      'kinesis:DescribeStreamConsumer',
      'sqs:SendMessage',
    ]) {
      assert.equal(granted.has(unwanted), false, `${unwanted} is not needed by the ingest function`);
    }
    // dynamodb:Query only on the split records' partition of the status table (the test below).
    assert.ok(statements().filter((s) => actionsOf(s).includes('dynamodb:Query')).every((s) => s.Condition !== undefined));
  });

  it('limits s3:PutObject to the raw and quarantine prefixes (and Lambda’s failed-batch prefix)', () => {
    const puts = statements().filter((s) => actionsOf(s).includes('s3:PutObject'));
    assert.deepEqual(puts.map((s) => s.Sid).sort(), ['LandRawAndQuarantine', 'WriteFailedBatches']);
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

  it('limits s3:GetObject to the spilled rows and the split records’ parts under the raw prefix', () => {
    const gets = statements().filter((s) => actionsOf(s).includes('s3:GetObject'));
    assert.deepEqual(gets.map((s) => s.Sid), ['ReadSpilledRows', 'ReadSplitRecordParts']);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          { Sid: 'ReadSpilledRows', Effect: 'Allow', Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [bucketArn, '/raw/spill/*']] } },
          { Sid: 'ReadSplitRecordParts', Effect: 'Allow', Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [bucketArn, '/raw/dsql-parts/*']] } },
        ]),
      },
    });
  });

  it('lets the ingest read and query the status table only in the split records’ partition (format auto can be Aurora DSQL)', () => {
    const queries = statements().filter((s) => actionsOf(s).includes('dynamodb:Query'));
    assert.deepEqual(queries.map((s) => s.Sid), ['SplitRecordParts']);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: 'SplitRecordParts',
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:Query'],
            Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['shop#dsql-parts'] } },
            Resource: tableArn('shop-status'),
          },
        ]),
      },
    });
  });

  it('grants the target tables only the guarded-write, pre-read, read-merge-put and truncate-sweep actions, and the status table only its row actions, by name', () => {
    const ids = Object.keys(resources('AWS::DynamoDB::Table'));
    assert.deepEqual([ids.filter((id) => !id.includes('StatusTable')).length, ids.filter((id) => id.includes('StatusTable')).length], [3, 1]);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: 'GuardedWritesAndTruncate',
            Effect: 'Allow',
            Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:DeleteItem'],
            Resource: ['shop-customers', 'shop-order-lines', 'shop-shipments'].map(tableArn),
          },
          { Sid: 'StatusRows', Effect: 'Allow', Action: ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], Resource: tableArn('shop-status') },
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

  it('moves raw to infrequent access, expires quarantine, split-record parts, job runs, reports and old versions, aborts stale multipart uploads', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'shop-cdc-raw',
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: 'raw/', Status: 'Enabled', Transitions: [{ StorageClass: 'STANDARD_IA', TransitionInDays: 30 }] }),
          Match.objectLike({ Prefix: 'quarantine/', Status: 'Enabled', ExpirationInDays: 90 }),
          // Parts of split Aurora DSQL records, past the longest wait and their items' TTL.
          Match.objectLike({ Prefix: 'raw/dsql-parts/', Status: 'Enabled', ExpirationInDays: 15 }),
          // Job runs (an erase request holds a key until its run deletes it) and reports expire (issue 20, item 6).
          Match.objectLike({ Prefix: 'jobs/', Status: 'Enabled', ExpirationInDays: 14 }),
          Match.objectLike({ Prefix: 'reports/', Status: 'Enabled', ExpirationInDays: 90 }),
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

  it('alarms on pipeline-level metrics only: iterator age, silence, failed records, errors, near-timeout, dead letters, quarantine, conflicts, freshness p99, freshness behind, a table stopped, failed status updates, stale rate', () => {
    // The pipeline's own alarms; the jobs' alarms are counted in test/unit/lib/jobs/jobs.test.ts.
    assert.equal(Object.keys(resources('AWS::CloudWatch::Alarm')).filter((id) => id.startsWith('PipelineMonitoring')).length, 13);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'FrontierAgeMs', Namespace: 'Tidemark', Statistic: 'Maximum', Threshold: 900_000 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'TablesEnteredError', Namespace: 'Tidemark', Statistic: 'Sum', Threshold: 0 });
    const pipelineDims = [
      { Name: 'pipeline', Value: 'shop' },
      { Name: 'service', Value: 'tidemark-ingest' },
    ];
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'IteratorAge', Namespace: 'AWS/Lambda', Statistic: 'Maximum', Threshold: 300_000 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Errors', Namespace: 'AWS/Lambda', Threshold: 0 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Duration', Namespace: 'AWS/Lambda', ExtendedStatistic: 'p99', Threshold: 96_000 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateNumberOfMessagesVisible', Namespace: 'AWS/SQS', Threshold: 0 });
    // Silence is a stall: no records for 60 minutes, missing data breaching.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'EventsReceived',
      Namespace: 'Tidemark',
      Dimensions: pipelineDims,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      EvaluationPeriods: 12,
      DatapointsToAlarm: 12,
      TreatMissingData: 'breaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'EventsFailed', Dimensions: pipelineDims, Threshold: 0, EvaluationPeriods: 3, TreatMissingData: 'notBreaching' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Quarantined', Dimensions: pipelineDims, Statistic: 'Sum', Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Conflicts', Dimensions: pipelineDims, Statistic: 'Sum', Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'FreshnessLagMs', Dimensions: pipelineDims, ExtendedStatistic: 'p99', Threshold: 600_000 });
    // A status-row update lost after the invocation's retries is counted, and any one alarms.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'StatusUpdatesFailed', Dimensions: pipelineDims, Statistic: 'Sum', Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 0.5,
      Metrics: Match.arrayWith([Match.objectLike({ Expression: 'FILL(stale, 0) / (FILL(applied, 0) + FILL(stale, 0))' })]),
    });
    for (const [id, alarm] of Object.entries(resources('AWS::CloudWatch::Alarm'))) {
      const targets = alarm.Properties.AlarmActions as { Ref: string }[];
      assert.equal(targets.length, 1, id);
      assert.match(targets[0]!.Ref, /^PipelineMonitoringAlarmTopic/, id);
      // The jobs' finding alarms read the all-tables total (table = "*"): one alarm whatever the table count.
      const perTable = JSON.stringify(alarm).replaceAll('{"Name":"table","Value":"*"}', '');
      assert.ok(!perTable.includes('"table"'), `${id} reads a per-table metric`);
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
            Match.objectLike({ Name: 'commit_ts', Type: 'bigint' }),
            Match.objectLike({ Name: 'transport', Type: 'struct<kind:string,stream:string,shard:string,sequence:string,partitionKey:string,arrivalTime:bigint>' }),
          ]),
        }),
      },
    });
  });

  it('outputs the tables, status table, bucket, stream, queue, function, dashboard and alarm topic', () => {
    const outputs = Object.keys(template.findOutputs('*'));
    for (const prefix of ['PipelineTargetTable0', 'PipelineTargetTable1', 'PipelineTargetTable2', 'PipelineStatusTable', 'PipelineRawBucket', 'PipelineStreamName', 'PipelineDeadLetterQueueUrl', 'PipelineIngestFunctionName', 'PipelineDashboardName', 'PipelineAlarmTopicArn']) {
      assert.ok(outputs.some((o) => o.startsWith(prefix)), `missing output ${prefix} in ${outputs.join(', ')}`);
    }
  });
});
