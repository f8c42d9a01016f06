/**
 * Alarms and the dashboard, built from the metric factory in `metrics.ts`, which names every metric
 * once from the telemetry contract. Every alarm notifies one SNS topic (SSL-only).
 *
 * Alarms read pipeline-level metrics only, so their number and size do not grow with the table
 * count (CloudWatch math allows 10 metrics per alarm; a pipeline may have hundreds of tables). Where
 * silence itself means a stall (no records received), missing data is breaching.
 *
 * The dashboard draws every contract counter once, pipeline-wide, on the graph its `panel` names,
 * and the top tables of the signals that matter per table through SEARCH expressions, which stay
 * readable at 500 tables.
 */
import { Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TidemarkConfig } from './config/config.js';
import { COUNTER_NAMES, COUNTERS, type Counter, DISTRIBUTIONS, type Panel } from '../functions/telemetry/contract.js';
import type { TidemarkMetricFactory } from './metrics.js';

export interface MonitoringProps {
  readonly config: TidemarkConfig;
  readonly metrics: TidemarkMetricFactory;
  readonly function: lambda.IFunction;
  readonly deadLetterQueue: sqs.IQueue;
  /** `kinesis` gets an iterator-age alarm; `msk` an offset-lag alarm. */
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

interface AlarmSpec {
  readonly metric: cloudwatch.IMetric;
  readonly threshold: number;
  readonly description: string;
  readonly below?: boolean;
  readonly periods?: number;
  /** Silence is a stall: no data counts as breaching. */
  readonly silenceBreaches?: boolean;
}

const PANEL_TITLES: Record<Panel, string> = {
  outcomes: 'Records received and their outcomes (received = sum of the others)',
  ops: 'Op mix and snapshots',
  rows: 'Row writes: placeholders, missing columns, spills, truncated rows',
  cost: 'DynamoDB write units and raw bytes',
};

/** The per-table signals drawn as "top tables" graphs. */
const TOP_TABLES: readonly { title: string; counter?: Counter }[] = [
  { title: 'Top tables: records received', counter: 'received' },
  { title: 'Top tables: failed records', counter: 'failed' },
  { title: 'Top tables: quarantined', counter: 'quarantined' },
  { title: 'Top tables: freshness lag p99 (ms)' },
];

export class Monitoring extends Construct {
  /** Every alarm notifies this topic; subscribe to it. */
  readonly alarmTopic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `tidemark ${props.config.name} alarms`,
      enforceSSL: true,
      ...(props.topicKey ? { masterKey: props.topicKey } : {}),
    });
    for (const [alarmId, spec] of Object.entries(alarmSpecs(props))) this.addAlarm(alarmId, spec, props.config.name);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: props.dashboardName ?? `tidemark-${props.config.name}` });
    this.drawDashboard(props);
  }

  private addAlarm(alarmId: string, spec: AlarmSpec, pipeline: string): void {
    const periods = spec.periods ?? 1;
    const alarm = new cloudwatch.Alarm(this, alarmId, {
      metric: spec.metric,
      threshold: spec.threshold,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      comparisonOperator: spec.below ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD : cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: spec.silenceBreaches ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `tidemark ${pipeline}: ${spec.description}`,
    });
    const notify = new actions.SnsAction(this.alarmTopic);
    alarm.addAlarmAction(notify);
    alarm.addOkAction(notify);
    this.alarms.push(alarm);
  }

  private drawDashboard(props: MonitoringProps): void {
    const { config, metrics: m, function: fn } = props;
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) => new cloudwatch.GraphWidget({ title, width: 8, height: 6, left, right });
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# tidemark ${config.name}\nStatus table \`${config.statusTable}\` · region ${Stack.of(this).region} · ${config.tables.length} tables`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph(props.sourceKind === 'kinesis' ? 'Iterator age (ms)' : 'Offset lag (records)', [props.sourceKind === 'kinesis' ? m.iteratorAge(fn) : m.offsetLag(fn)]),
      graph('Freshness lag p50 / p99 (ms)', [m.freshnessLag('p50').with({ label: 'p50' }), m.freshnessLag('p99').with({ label: 'p99' })]),
      graph('Ingest function', [m.lambdaInvocations(fn), m.lambdaErrors(fn)], [m.lambdaDuration(fn)]),
    );
    const panels = Object.keys(PANEL_TITLES) as Panel[];
    this.dashboard.addWidgets(
      ...panels.map((panel) =>
        graph(
          PANEL_TITLES[panel],
          COUNTER_NAMES.filter((c) => COUNTERS[c].panel === panel).map((c) => m.counter(c).with({ label: c })),
          panel === 'outcomes' ? [m.dlqVisible(props.deadLetterQueue).with({ label: 'failed batches in the on-failure queue' })] : [],
        ),
      ),
    );
    this.dashboard.addWidgets(
      ...TOP_TABLES.map((t) =>
        graph(t.title, [t.counter ? m.topTables(COUNTERS[t.counter].metric, 'Sum') : m.topTables(DISTRIBUTIONS.freshnessLag.metric, 'p99')]),
      ),
    );
    this.dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Alarms', width: 24, height: 4, alarms: this.alarms }));
  }
}

/** Every alarm, by id. Thresholds come from the config's `alarms` block. */
function alarmSpecs(props: MonitoringProps): Record<string, AlarmSpec> {
  const { config, metrics: m, function: fn } = props;
  const a = config.alarms;
  const periodMinutes = m.period.toMinutes();
  const specs: Record<string, AlarmSpec> = {};
  if (props.sourceKind === 'kinesis') {
    specs.IteratorAge = { metric: m.iteratorAge(fn), threshold: a.iteratorAgeMs, description: `ingest is more than ${a.iteratorAgeMs} ms behind the stream` };
  } else {
    specs.OffsetLag = { metric: m.offsetLag(fn), threshold: a.offsetLag, description: `ingest is more than ${a.offsetLag} records behind the topic` };
  }
  if (a.silenceMinutes > 0) {
    specs.Silent = {
      metric: m.counter('received'),
      threshold: 1,
      below: true,
      periods: Math.max(1, Math.ceil(a.silenceMinutes / periodMinutes)),
      silenceBreaches: true,
      description: `no record received for ${a.silenceMinutes} minutes: the source, connector, stream or event source mapping stalled (enable connector heartbeats on quiet sources)`,
    };
  }
  specs.FailedRecords = {
    metric: m.counter('failed'),
    threshold: 0,
    periods: a.failedPeriods,
    description: `records kept failing for ${a.failedPeriods * periodMinutes} minutes (writes, truncates or raw landing); the shard is retrying and not advancing`,
  };
  specs.LambdaErrors = { metric: m.lambdaErrors(fn), threshold: 0, description: 'the ingest function failed an invocation (it is retried, then bisected, then sent to the on-failure destination)' };
  specs.NearTimeout = {
    metric: m.lambdaDuration(fn),
    threshold: Math.round(config.ingest.timeoutSeconds * 1000 * a.durationShare),
    description: `p99 invocation duration is above ${a.durationShare * 100}% of the ${config.ingest.timeoutSeconds} s timeout: batches are about to time out`,
  };
  specs.DeadLetters = { metric: m.dlqVisible(props.deadLetterQueue), threshold: 0, description: 'failed batches are waiting in the on-failure destination; replay them' };
  specs.Quarantined = { metric: m.counter('quarantined'), threshold: a.quarantined, description: 'records were quarantined as unparseable or invalid' };
  specs.Conflicts = { metric: m.counter('conflicts'), threshold: a.conflicts, description: 'events with equal positions and different content were not applied' };
  specs.FreshnessLag = { metric: m.freshnessLag('p99'), threshold: a.freshnessLagMs, description: `p99 commit-to-apply lag is above ${a.freshnessLagMs} ms` };
  specs.StatusUpdatesFailed = {
    metric: m.health('statusUpdatesFailed'),
    threshold: 0,
    description: "status-row updates failed after every retry the invocation's time allowed (throttled status table?): those batches' counters are missing from `tidemark status`; the metrics have them",
  };
  specs.FreshnessBehind = {
    metric: m.frontierAge(),
    threshold: a.freshnessBehindMs,
    description: `a table fell more than ${a.freshnessBehindMs} ms behind the source (a batch's newest commit, heartbeat or resolved timestamp, to its apply); a stalled shard shows as FailedRecords or IteratorAge instead`,
  };
  specs.TableStopped = {
    metric: m.counter('enteredError'),
    threshold: 0,
    description: 'a table stopped in error (its write failures outlasted ingest.errorBudget, or no retry could fix them): its records land in raw and are not applied; tidemark status gives the reason, tidemark resume --force applies them once fixed',
  };
  specs.StaleRate = { metric: m.staleRate(), threshold: a.staleRate, description: `more than ${a.staleRate * 100}% of writes were stale` };
  if (a.schemaDrift !== 'off') {
    specs.SchemaDrift =
      a.schemaDrift === 'incompatible'
        ? { metric: m.counter('schemaIncompatible'), threshold: 0, description: 'a column started carrying a type the target cannot hold as before (tidemark status --schema names it); values are written as delivered, never coerced' }
        : { metric: m.counter('schemaChanges'), threshold: 0, description: 'a column was added, removed or changed type at the source (tidemark status --schema)' };
  }
  return specs;
}
