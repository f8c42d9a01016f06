/**
 * Metrics and logs. Logs carry keys, positions and counts, never row values. Metric names come only
 * from the telemetry contract (`functions/telemetry/contract.ts`), so nothing is emitted that the
 * dashboard and alarms do not know. Every value is emitted twice: with `{service, pipeline, table}`
 * and with `{service, pipeline}`, so alarms read one pipeline-level metric however many tables there are.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { keyHash } from '../core/key-hash.js';
import { type MetricName, METRICS_NAMESPACE, SERVICE_NAME } from './contract.js';

export { MetricUnit };
export type Unit = 'Count' | 'Bytes' | 'Milliseconds';

/**
 * The fields of a log line. A field named `key` does not compile: a primary key is named by its
 * keyed hash (`keyHash`, from a {@link KeyRef}), because logs are kept out of erase's reach.
 */
export type LogFields = Record<string, unknown> & { readonly key?: never };

export interface Log {
  debug(message: string, extra?: LogFields): void;
  info(message: string, extra?: LogFields): void;
  warn(message: string, extra?: LogFields): void;
  error(message: string, extra?: LogFields): void;
}

/**
 * Names one key in a log line without the key: the erase ledger's keyed hash under the current
 * ledger key (functions/core/key-hash.ts), so an operator with the key finds the lines of a key,
 * and nobody without it can. Undefined when no ledger key is at hand (a local run without one).
 */
export type KeyRef = (table: string, keyId: string) => string | undefined;

/** No ledger key: log lines carry table and position only. */
export const noKeyRef: KeyRef = () => undefined;

/** The keyed hash under `secret`. */
export function keyRefOf(secret: Uint8Array): KeyRef {
  return (table, keyId) => keyHash(secret, table, keyId);
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
