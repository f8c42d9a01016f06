/**
 * Metrics and logs. Logs carry keys, positions and counts, never row values. Metric names come only
 * from the telemetry contract (`functions/telemetry/contract.ts`), so nothing is emitted that the
 * dashboard and alarms do not know. Every value is emitted twice: with `{service, pipeline, table}`
 * and with `{service, pipeline}`, so alarms read one pipeline-level metric however many tables there are.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type MetricName, METRICS_NAMESPACE, SERVICE_NAME } from './contract.js';

export { MetricUnit };
export type Unit = 'Count' | 'Bytes' | 'Milliseconds';

export interface Log {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

/** A Powertools logger as a {@link Log}: used by the Lambda handler and the CLI alike. */
export function logFromPowertools(logger: Logger): Log {
  return {
    debug: (m, extra) => logger.debug(m, extra ?? {}),
    info: (m, extra) => logger.info(m, extra ?? {}),
    warn: (m, extra) => logger.warn(m, extra ?? {}),
    error: (m, extra) => logger.error(m, extra ?? {}),
  };
}

export interface MetricSink {
  /** One value of a contract metric for a source table (or `*`); the sink also rolls it up per pipeline. */
  add(table: string, name: MetricName, unit: Unit, value: number): void;
  flush(): void;
}

/** Powertools metrics (EMF): one instance per dimension set, the pipeline roll-up under `null`. */
export class PowertoolsMetricSink implements MetricSink {
  private readonly byTable = new Map<string | null, Metrics>();
  constructor(private readonly pipeline: string) {}

  private metricsFor(table: string | null): Metrics {
    let m = this.byTable.get(table);
    if (!m) {
      const dimensions: Record<string, string> = table === null ? { pipeline: this.pipeline } : { pipeline: this.pipeline, table };
      m = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME, defaultDimensions: dimensions });
      this.byTable.set(table, m);
    }
    return m;
  }

  add(table: string, name: MetricName, unit: Unit, value: number): void {
    this.metricsFor(table).addMetric(name, unit, value);
    this.metricsFor(null).addMetric(name, unit, value);
  }

  flush(): void {
    for (const m of this.byTable.values()) if (m.hasStoredMetrics()) m.publishStoredMetrics();
  }
}

/** Keeps totals (and lag samples) in memory: local runs print them, tests assert on them. */
export class CollectingMetricSink implements MetricSink {
  readonly totals = new Map<string, number>();
  readonly samples = new Map<string, number[]>();
  add(table: string, name: MetricName, unit: Unit, value: number): void {
    const key = `${table}:${name}`;
    this.totals.set(key, (this.totals.get(key) ?? 0) + value);
    if (unit === MetricUnit.Milliseconds) {
      const list = this.samples.get(key) ?? [];
      if (list.length < 10_000) list.push(value);
      this.samples.set(key, list);
    }
  }
  flush(): void {}
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };
