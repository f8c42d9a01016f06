/**
 * `TidemarkJobs`: the scheduled jobs of a pipeline, each its own state machine (docs/contract.md, "Jobs"; docs/jobs.md):
 * reconcile (a window schedule and a full schedule) and snapshot detection. Each task function is
 * granted exactly what its step does; schedules come from `config.jobs`.
 */
import { Duration, type RemovalPolicy, Stack, Validations, type CfnResource } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../config/config.js';
import type { CurrentState } from '../current-state.js';
import type { RawStore } from '../raw-store.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC, SNAPSHOT_FINDING_METRICS } from '../../functions/telemetry/job-metrics.js';
import { METRIC_NAMESPACE, SERVICE_NAME } from '../defaults.js';
import { tableStatements } from '../ingest-function.js';
import { RECONCILE_TASKS, reconcileDefinition, SNAPSHOT_TASKS, snapshotDefinition } from './definitions.js';
import { type JobTaskProps, TidemarkJob } from './job.js';
import type { LedgerKeyAccess } from '../replay/jobs.js';

export interface TidemarkJobsProps {
  readonly config: TidemarkConfig;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  /** @default - AWS-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** Where job alarms notify. @default - no action */
  readonly alarmTopic?: sns.ITopic;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Source file of the job handlers; it must export every task's handler.
   * @default `functions/jobs.ts`, or the prebuilt handlers of the installed package
   */
  readonly entry?: string;
  /** The erase ledger key, read at cold start: log lines name keys by its keyed hash. @default - log lines name no keys */
  readonly ledgerKey?: LedgerKeyAccess;
}

export class TidemarkJobs extends Construct {
  readonly reconcile: TidemarkJob;
  readonly snapshot: TidemarkJob;
  /** Finding alarms: `reconcile-ahead`, `reconcile-window-findings`, and one per snapshot finding kind. */
  readonly findingAlarms: ReadonlyMap<string, cloudwatch.Alarm>;

  constructor(scope: Construct, id: string, props: TidemarkJobsProps) {
    super(scope, id);
    const { config, rawStore, currentState } = props;
    const bucket = rawStore.bucket;
    const reports = rawStore.objectsUnder(config.jobs.reportPrefix);
    const raw = rawStore.objectsUnder(config.raw.prefix);
    // Target tables by name in size-bounded statements: 500 tables stay within IAM's policy limits.
    const targetNames = config.tables.map((t) => t.target);
    const onTargets = (sid: string, actions: string[]) => tableStatements(this, sid, actions, targetNames);
    const status = currentState.statusTable.tableArn;
    const statement = (sid: string, actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
      new iam.PolicyStatement({ sid, actions, resources, ...(conditions ? { conditions } : {}) });
    const list = statement('ListRawAndReports', ['s3:ListBucket'], [bucket.bucketArn], { StringLike: { 's3:prefix': [`${config.raw.prefix}*`, `${config.jobs.reportPrefix}*`] } });
    const readRaw = statement('ReadRaw', ['s3:GetObject'], [raw]);
    const readReports = statement('ReadReports', ['s3:GetObject'], [reports]);
    const writeReports = statement('WriteReports', ['s3:PutObject'], [reports]);
    const grant =
      (...statements: iam.PolicyStatement[]) =>
      (role: iam.IRole) => {
        for (const s of statements) role.addToPrincipalPolicy(s);
        if (props.ledgerKey && role instanceof iam.Role) props.ledgerKey.grantRead(role);
      };
    const common = {
      config: props.ledgerKey ? props.ledgerKey.runtimeConfig(config) : config,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
      ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
      ...(props.entry ? { entry: props.entry } : {}),
    };

    const reconcileTasks: Record<string, JobTaskProps> = {
      [RECONCILE_TASKS.plan]: { handler: 'reconcilePlan', description: 'list raw, cut the work into items', grant: grant(list, writeReports) },
      [RECONCILE_TASKS.shuffleRaw]: { handler: 'reconcileShuffleRaw', description: 'fold raw per key into shuffle partitions', grant: grant(readRaw, readReports, writeReports) },
      [RECONCILE_TASKS.scanTable]: {
        handler: 'reconcileScanTable',
        description: 'scan a table segment (keys and metadata) into shuffle partitions',
        grant: grant(readReports, writeReports, ...onTargets('ScanTargets', ['dynamodb:Scan'])),
      },
      [RECONCILE_TASKS.reduce]: {
        handler: 'reconcileReduce',
        description: 'classify one partition, repair through the guarded writer',
        grant: grant(
          list,
          readRaw,
          readReports,
          writeReports,
          statement('SpillRepairedRows', ['s3:PutObject'], [rawStore.objectsUnder(`${config.raw.prefix}spill/`)]),
          ...onTargets('ReadAndRepairTargets', ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
          statement('ReadTruncateWatermarks', ['dynamodb:BatchGetItem'], [status]),
        ),
      },
      [RECONCILE_TASKS.report]: {
        handler: 'reconcileReport',
        description: 'sum partitions, write the reports, emit metrics, record the last run',
        grant: grant(list, readReports, writeReports, statement('RecordLastRun', ['dynamodb:UpdateItem'], [status])),
      },
    };
    this.reconcile = new TidemarkJob(this, 'Reconcile', {
      ...common,
      job: 'reconcile',
      definition: reconcileDefinition(),
      tasks: reconcileTasks,
      schedules: [
        { id: 'Window', expression: config.jobs.reconcile.window.schedule, enabled: config.jobs.reconcile.window.enabled, input: { mode: 'window' } },
        { id: 'Full', expression: config.jobs.reconcile.full.schedule, enabled: config.jobs.reconcile.full.enabled, input: { mode: 'full' } },
      ],
    });

    const snapshotTasks: Record<string, JobTaskProps> = {
      [SNAPSHOT_TASKS.plan]: {
        handler: 'snapshotPlan',
        description: 'fix the run and its tables, and find which tables flow lately (their recent hours)',
        // No ledger key: the plan names no keys.
        grant: (role) => role.addToPrincipalPolicy(statement('ReadRecentHours', ['dynamodb:BatchGetItem', 'dynamodb:Query'], [status])),
      },
      [SNAPSHOT_TASKS.detect]: {
        handler: 'snapshotDetect',
        description: 'find re-snapshots, orphans and anomalies of one table',
        grant: grant(
          list,
          readRaw,
          writeReports,
          ...onTargets('ScanAndTombstoneTargets', ['dynamodb:Scan', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
          statement('ReadStatusAndHours', ['dynamodb:BatchGetItem', 'dynamodb:Query'], [status]),
        ),
      },
      [SNAPSHOT_TASKS.report]: {
        handler: 'snapshotReport',
        description: 'write the report, emit metrics, record open findings',
        grant: grant(list, readReports, writeReports, statement('RecordOpenFindings', ['dynamodb:UpdateItem'], [status])),
      },
    };
    this.snapshot = new TidemarkJob(this, 'Snapshot', {
      ...common,
      job: 'snapshot',
      definition: snapshotDefinition(),
      tasks: snapshotTasks,
      schedules: [{ id: 'Detect', expression: config.jobs.snapshot.schedule, enabled: config.jobs.snapshot.enabled, input: {} }],
    });

    // Finding alarms read the all-tables totals the report steps emit (table = "*").
    const alarms = new Map<string, cloudwatch.Alarm>();
    const findingAlarm = (id: string, metricName: string, description: string) => {
      const alarm = new cloudwatch.Alarm(this, `${id}Alarm`, {
        alarmName: `${config.name}-${id}`,
        alarmDescription: description,
        metric: new cloudwatch.Metric({
          namespace: METRIC_NAMESPACE,
          metricName,
          dimensionsMap: { service: SERVICE_NAME, pipeline: config.name, table: ALL_TABLES },
          statistic: 'Sum',
          period: Duration.hours(1),
        }),
        threshold: 0,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      if (props.alarmTopic) alarm.addAlarmAction(new actions.SnsAction(props.alarmTopic));
      alarms.set(id, alarm);
    };
    findingAlarm('reconcile-ahead', RECONCILE_METRICS.ahead, 'Reconcile found rows ahead of raw: raw lost data (critical)');
    findingAlarm('reconcile-window-findings', RECONCILE_WINDOW_FINDINGS_METRIC, 'The scheduled window reconcile found rows that disagree with raw');
    for (const [kind, metric] of Object.entries(SNAPSHOT_FINDING_METRICS)) findingAlarm(`snapshot-${kind}`, metric, `Snapshot detection: ${kind}`);
    this.findingAlarms = alarms;

    // Object keys are per run and per batch: the grants name prefixes, not objects.
    const stack = Stack.of(this);
    const bucketId = stack.resolve(stack.getLogicalId(bucket.node.defaultChild as CfnResource)) as string;
    for (const job of [this.reconcile, this.snapshot]) {
      for (const fn of job.functions.values()) {
        if (!fn.role) continue;
        for (const prefix of [config.raw.prefix, config.jobs.reportPrefix, `${config.raw.prefix}spill/`]) {
          Validations.of(fn.role).acknowledge({ id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`, reason: `Objects under "${prefix}" only; their keys are per run or per batch.` });
        }
      }
    }
  }
}
