/**
 * Metric definitions, kept apart from the alarms and widgets that use them (the
 * cdk-monitoring-constructs `MetricFactory` split). Names and dimensions are the contract with the
 * runtime's Powertools EMF output (`functions/adapters/telemetry.ts`): namespace `Tidemark`,
 * dimensions `{service: "tidemark-ingest", pipeline, table}` where `table` is the source table,
 * e.g. `public.orders`, or `*` for records whose table is unknown. Counters are emitted only when
 * non-zero, so expressions fill missing points with 0.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { METRIC_NAMESPACE, SERVICE_NAME, UNKNOWN_TABLE_DIMENSION } from './defaults.js';

/** Every metric the runtime emits. */
export const TidemarkMetricName = {
  EventsApplied: 'EventsApplied',
  EventsStale: 'EventsStale',
  EventsSuperseded: 'EventsSuperseded',
  Duplicates: 'Duplicates',
  Conflicts: 'Conflicts',
  Placeholders: 'Placeholders',
  Quarantined: 'Quarantined',
  FreshnessLagMs: 'FreshnessLagMs',
  WriteUnits: 'WriteUnits',
  RawBytes: 'RawBytes',
  SnapshotEvents: 'SnapshotEvents',
  BeforeImageNullUpdates: 'BeforeImageNullUpdates',
  WriteErrors: 'WriteErrors',
  Spilled: 'Spilled',
  MissingColumns: 'MissingColumns',
} as const;
export type TidemarkMetricName = (typeof TidemarkMetricName)[keyof typeof TidemarkMetricName];

/** Default aggregation window of alarms and widgets. */
export const DEFAULT_PERIOD = Duration.minutes(5);

export interface MetricFactoryProps {
  /** Pipeline name (`config.name`), the `pipeline` dimension. */
  readonly pipeline: string;
  /**
   * Period of every metric.
   * @default Duration.minutes(5)
   */
  readonly period?: Duration;
}

/** Builds `cloudwatch.Metric`s; it creates no resources. */
export class TidemarkMetricFactory {
  readonly pipeline: string;
  readonly period: Duration;

  constructor(props: MetricFactoryProps) {
    this.pipeline = props.pipeline;
    this.period = props.period ?? DEFAULT_PERIOD;
  }

  /** A per-table metric, e.g. `tableMetric('EventsApplied', 'public.orders')` (sum). */
  tableMetric(name: TidemarkMetricName, table: string, statistic = 'Sum'): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: SERVICE_NAME, pipeline: this.pipeline, table },
      statistic,
      period: this.period,
    });
  }

  /** A metric with only `{service, pipeline}` dimensions (for runtimes that emit pipeline totals). */
  pipelineMetric(name: TidemarkMetricName, statistic = 'Sum'): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: SERVICE_NAME, pipeline: this.pipeline },
      statistic,
      period: this.period,
    });
  }

  /** Commit-to-apply lag of one table at a percentile. @default p99 */
  freshnessLag(table: string, percentile = 'p99'): cloudwatch.Metric {
    return this.tableMetric(TidemarkMetricName.FreshnessLagMs, table, percentile);
  }

  /** Sum of one counter over the given tables and the unknown table `*`. */
  totalOverTables(name: TidemarkMetricName, tables: readonly string[]): cloudwatch.MathExpression {
    const usingMetrics: Record<string, cloudwatch.IMetric> = {};
    [...tables, UNKNOWN_TABLE_DIMENSION].forEach((table, i) => {
      usingMetrics[`t${i}`] = this.tableMetric(name, table);
    });
    return new cloudwatch.MathExpression({ expression: 'SUM(METRICS())', usingMetrics, period: this.period, label: `${name} (all tables)` });
  }

  /** Stale writes as a share of attempted writes: stale / (applied + stale); no data when neither happened. */
  staleRate(table: string): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: 'FILL(stale, 0) / (FILL(applied, 0) + FILL(stale, 0))',
      usingMetrics: {
        stale: this.tableMetric(TidemarkMetricName.EventsStale, table),
        applied: this.tableMetric(TidemarkMetricName.EventsApplied, table),
      },
      period: this.period,
      label: `stale rate ${table}`,
    });
  }

  /** Age of the newest record the function has read, per batch (Kinesis only). */
  iteratorAge(fn: lambda.IFunction): cloudwatch.Metric {
    return fn.metric('IteratorAge', { statistic: 'Maximum', period: this.period });
  }

  /** Records behind the latest offset (MSK only). */
  offsetLag(fn: lambda.IFunction): cloudwatch.Metric {
    return fn.metric('OffsetLag', { statistic: 'Maximum', period: this.period });
  }

  lambdaErrors(fn: lambda.IFunction): cloudwatch.Metric {
    return fn.metricErrors({ statistic: 'Sum', period: this.period });
  }

  lambdaDuration(fn: lambda.IFunction, statistic = 'p99'): cloudwatch.Metric {
    return fn.metricDuration({ statistic, period: this.period });
  }

  /** Failed-batch descriptors waiting in the on-failure queue. */
  dlqVisible(queue: sqs.IQueue): cloudwatch.Metric {
    return queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: this.period });
  }
}
