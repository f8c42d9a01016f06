/**
 * Alarms and the dashboard, built from the metric definitions in `metrics.ts`. Every alarm notifies
 * one SNS topic (SSL-only) that users subscribe to.
 */
import { Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../functions/commons/config.js';
import { type TidemarkMetricFactory, TidemarkMetricName as M } from './metrics.js';

export interface MonitoringProps {
  readonly config: TidemarkConfig;
  readonly metrics: TidemarkMetricFactory;
  readonly function: lambda.IFunction;
  readonly deadLetterQueue: sqs.IQueue;
  /** `kinesis` gets an iterator-age alarm; `msk` shows the offset lag instead. */
  readonly sourceKind: 'kinesis' | 'msk';
  /**
   * Key of the alarm topic. CloudWatch cannot publish to a topic under the AWS-managed `aws/sns`
   * key, so without a customer-managed key the topic relies on SSL-only publishing.
   * @default - no SSE on the alarm topic
   */
  readonly topicKey?: kms.IKey;
  /**
   * Dashboard name.
   * @default "tidemark-<pipeline>"
   */
  readonly dashboardName?: string;
}

export class Monitoring extends Construct {
  /** Every alarm notifies this topic; subscribe to it. */
  readonly alarmTopic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { config, metrics: m, function: fn } = props;
    const thresholds = config.alarms;
    const tables = config.tables.map((t) => t.source);

    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `tidemark ${config.name} alarms`,
      enforceSSL: true,
      ...(props.topicKey ? { masterKey: props.topicKey } : {}),
    });
    const notify = new actions.SnsAction(this.alarmTopic);
    const alarm = (alarmId: string, metric: cloudwatch.IMetric, threshold: number, description: string): cloudwatch.Alarm => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `tidemark ${config.name}: ${description}`,
      });
      created.addAlarmAction(notify);
      created.addOkAction(notify);
      this.alarms.push(created);
      return created;
    };

    if (props.sourceKind === 'kinesis') {
      alarm('IteratorAge', m.iteratorAge(fn), thresholds.iteratorAgeMs, `ingest is more than ${thresholds.iteratorAgeMs} ms behind the stream`);
    }
    alarm('LambdaErrors', m.lambdaErrors(fn), 0, 'the ingest function failed a batch (it is retried, then bisected, then sent to the DLQ)');
    alarm('DeadLetters', m.dlqVisible(props.deadLetterQueue), 0, 'failed batches are waiting in the on-failure queue; replay them from raw');
    alarm('Quarantined', m.totalOverTables(M.Quarantined, tables), thresholds.quarantined, 'records were quarantined as unparseable or invalid');
    for (const table of tables) {
      const slug = table.replace(/[^A-Za-z0-9]/g, '-');
      alarm(`FreshnessLag-${slug}`, m.freshnessLag(table), thresholds.freshnessLagMs, `p99 commit-to-apply lag of ${table} is above ${thresholds.freshnessLagMs} ms`);
      alarm(`Conflicts-${slug}`, m.tableMetric(M.Conflicts, table), thresholds.conflicts, `${table} has events with equal positions and different content`);
      alarm(`StaleRate-${slug}`, m.staleRate(table), thresholds.staleRate, `more than ${thresholds.staleRate * 100}% of ${table} writes were stale`);
    }

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName ?? `tidemark-${config.name}`,
    });
    const perTable = (title: string, name: M, statistic?: string): cloudwatch.GraphWidget =>
      new cloudwatch.GraphWidget({ title, width: 8, left: tables.map((t) => m.tableMetric(name, t, statistic).with({ label: t })) });
    const lagWidget =
      props.sourceKind === 'kinesis'
        ? new cloudwatch.GraphWidget({ title: 'Iterator age (ms)', width: 8, left: [m.iteratorAge(fn)] })
        : new cloudwatch.GraphWidget({ title: 'Offset lag (records)', width: 8, left: [m.offsetLag(fn)] });
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# tidemark ${config.name}\nStatus table \`${config.statusTable}\` · region ${Stack.of(this).region}`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      lagWidget,
      new cloudwatch.GraphWidget({
        title: 'Freshness lag p50 / p99 (ms)',
        width: 8,
        left: tables.flatMap((t) => [m.freshnessLag(t, 'p50').with({ label: `${t} p50` }), m.freshnessLag(t, 'p99').with({ label: `${t} p99` })]),
      }),
      new cloudwatch.GraphWidget({
        title: 'Ingest function',
        width: 8,
        left: [fn.metricInvocations({ period: m.period }), m.lambdaErrors(fn)],
        right: [m.lambdaDuration(fn)],
      }),
    );
    this.dashboard.addWidgets(
      perTable('Events applied', M.EventsApplied),
      perTable('Stale writes', M.EventsStale),
      perTable('Superseded in batch', M.EventsSuperseded),
    );
    this.dashboard.addWidgets(
      perTable('Duplicates', M.Duplicates),
      perTable('Conflicts', M.Conflicts),
      perTable('Placeholders', M.Placeholders),
    );
    this.dashboard.addWidgets(
      perTable('Snapshot events', M.SnapshotEvents),
      perTable('Updates with a null before-image', M.BeforeImageNullUpdates),
      new cloudwatch.GraphWidget({
        title: 'Quarantined / DLQ',
        width: 8,
        left: [...tables, '*'].map((t) => m.tableMetric(M.Quarantined, t).with({ label: t })),
        right: [m.dlqVisible(props.deadLetterQueue)],
      }),
    );
    this.dashboard.addWidgets(
      perTable('Write errors (retried)', M.WriteErrors),
      perTable('Rows spilled to S3', M.Spilled),
      perTable('Patches with no stored row', M.MissingColumns),
    );
    this.dashboard.addWidgets(
      perTable('DynamoDB write units', M.WriteUnits),
      perTable('Raw bytes landed', M.RawBytes),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', width: 8, alarms: this.alarms }),
    );
  }
}
