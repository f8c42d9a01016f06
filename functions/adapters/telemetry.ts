/**
 * Metrics and logs. Logs carry keys, positions and counts, never row values. Metrics are per
 * (pipeline, table): Powertools EMF in Lambda, an in-memory collector for local runs and tests.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

export { MetricUnit };
export type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

export interface Log {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

export interface MetricSink {
  add(table: string, name: string, unit: Unit, value: number): void;
  flush(): void;
}

export const METRICS_NAMESPACE = 'Tidemark';

/** Powertools metrics, one instance per table so each carries its `table` dimension. */
export class PowertoolsMetricSink implements MetricSink {
  private readonly perTable = new Map<string, Metrics>();
  constructor(private readonly pipeline: string) {}

  add(table: string, name: string, unit: Unit, value: number): void {
    let m = this.perTable.get(table);
    if (!m) {
      m = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: 'tidemark-ingest', defaultDimensions: { pipeline: this.pipeline, table } });
      this.perTable.set(table, m);
    }
    m.addMetric(name, unit, value);
  }

  flush(): void {
    for (const m of this.perTable.values()) if (m.hasStoredMetrics()) m.publishStoredMetrics();
  }
}

/** Keeps totals (and lag samples) in memory: local runs print them, tests assert on them. */
export class CollectingMetricSink implements MetricSink {
  readonly totals = new Map<string, number>();
  readonly samples = new Map<string, number[]>();
  add(table: string, name: string, unit: Unit, value: number): void {
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
