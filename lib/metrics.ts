/**
 * Metric definitions, kept apart from the alarms and widgets that use them (the
 * cdk-monitoring-constructs `MetricFactory` split). Every tidemark metric is named once, in the
 * telemetry contract (`functions/telemetry/contract.ts`); this factory only turns a
 * contract entry into a `cloudwatch.Metric`.
 *
 * The runtime emits each value twice (`functions/telemetry/sinks.ts`): with dimensions
 * `{service, pipeline}` — what alarms read, one metric however many tables — and with
 * `{service, pipeline, table}` — what per-table SEARCH widgets read. Counters are emitted only when
 * non-zero, so graphs and alarms treat missing points as 0 unless silence itself is the signal.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { type Counter, COUNTERS, DIMENSIONS, DISTRIBUTIONS, HEALTH, type HealthName, type MetricName, METRICS_NAMESPACE, SERVICE_NAME } from '../functions/telemetry/contract.js';

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

/** Builds `cloudwatch.Metric`s and expressions; it creates no resources. */
export class TidemarkMetricFactory {
  readonly pipeline: string;
  readonly period: Duration;

  constructor(props: MetricFactoryProps) {
    this.pipeline = props.pipeline;
    this.period = props.period ?? DEFAULT_PERIOD;
  }

  private metric(name: MetricName, statistic: string, table?: string, period = this.period): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { [DIMENSIONS.service]: SERVICE_NAME, [DIMENSIONS.pipeline]: this.pipeline, ...(table !== undefined ? { [DIMENSIONS.table]: table } : {}) },
      statistic,
      period,
    });
  }

  /** A contract counter (sum), pipeline-wide, or of one table: `counter('applied')`, `counter('applied', 'public.orders')`. */
  counter(counter: Counter, table?: string, period?: Duration): cloudwatch.Metric {
    return this.metric(COUNTERS[counter].metric, 'Sum', table, period);
  }

  /** A pipeline-health count (sum), pipeline-wide or of one table: `health('statusUpdatesFailed')`. */
  health(name: HealthName, table?: string): cloudwatch.Metric {
    return this.metric(HEALTH[name].metric, 'Sum', table);
  }

  /** Commit-to-apply lag at a percentile, pipeline-wide or of one table. @default p99 */
  freshnessLag(percentile = 'p99', table?: string): cloudwatch.Metric {
    return this.metric(DISTRIBUTIONS.freshnessLag.metric, percentile, table);
  }

  /** How far behind the source batches left the tables (FrontierAgeMs), pipeline-wide: the worst. */
  frontierAge(statistic = 'Maximum', table?: string): cloudwatch.Metric {
    return this.metric(DISTRIBUTIONS.frontierAge.metric, statistic, table);
  }

  /** Stale writes as a share of attempted writes, pipeline-wide: stale / (applied + stale). */
  staleRate(): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      expression: 'FILL(stale, 0) / (FILL(applied, 0) + FILL(stale, 0))',
      usingMetrics: { stale: this.counter('stale'), applied: this.counter('applied') },
      period: this.period,
      label: 'stale share of writes',
    });
  }

  /**
   * The `limit` tables with the highest value of a metric, found with a SEARCH expression (so it
   * scales to any number of tables without one metric per table in the template).
   */
  topTables(name: MetricName, statistic: string, limit = 10): cloudwatch.MathExpression {
    const schema = `{${METRICS_NAMESPACE},${DIMENSIONS.pipeline},${DIMENSIONS.service},${DIMENSIONS.table}}`;
    const search = `SEARCH('${schema} MetricName="${name}" ${DIMENSIONS.pipeline}="${this.pipeline}"', '${statistic}', ${this.period.toSeconds()})`;
    return new cloudwatch.MathExpression({
      expression: `SORT(${search}, MAX, DESC, ${limit})`,
      usingMetrics: {},
      period: this.period,
      label: '',
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

  lambdaInvocations(fn: lambda.IFunction): cloudwatch.Metric {
    return fn.metricInvocations({ statistic: 'Sum', period: this.period });
  }

  /** Failed-batch descriptors waiting in the on-failure queue. */
  dlqVisible(queue: sqs.IQueue): cloudwatch.Metric {
    return queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: this.period });
  }
}
