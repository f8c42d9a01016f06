/**
 * The `jobs` section of `tidemark.config.json`: when reconcile and snapshot detection run, and the
 * thresholds of the anomaly checks. Every field has a default, so `"jobs"` may be left out:
 *
 *   "jobs": {
 *     "reportPrefix": "reports/",
 *     "reconcile": { "window": { "schedule": "rate(1 hour)", "hours": 3 }, "full": { "schedule": "cron(0 3 ? * SUN *)" } },
 *     "snapshot": { "schedule": "rate(1 hour)", "enabled": false }
 *   }
 */
import { z } from 'zod';

/** An EventBridge Scheduler expression: `rate(…)`, `cron(…)` or a one-time `at(…)`. */
const scheduleExpression = z.string().regex(/^(rate|cron|at)\(.+\)$/, 'must be an EventBridge Scheduler expression: rate(...), cron(...) or at(...)');

const schedule = (expression: string) =>
  z
    .object({
      /** @default per job */
      schedule: scheduleExpression.default(expression),
      /** Set false to keep the state machine but not schedule it. @default true */
      enabled: z.boolean().default(true),
    })
    .prefault({});

export const AnomalyThresholdsSchema = z
  .object({
    /** Hours of per-hour counters the current hours are compared with. @default 168 */
    historyHours: z.number().int().min(2).max(24 * 90).default(168),
    /** Hours that make up "now" in the comparisons. @default 3 */
    recentHours: z.number().int().min(1).max(72).default(3),
    /** Fewer events than this in the recent hours: the op-mix and rate checks stay quiet. @default 200 */
    minEvents: z.number().int().min(1).default(200),
    /** Op mix: history has at least this share of deletes, and the recent hours have none. @default 0.01 */
    deleteShare: z.number().min(0).max(1).default(0.01),
    /** Before-image null rate on updates rose by more than this (absolute share). @default 0.2 */
    beforeNullRateJump: z.number().min(0).max(1).default(0.2),
    /** Placeholder rate rose by more than this (absolute share). @default 0.2 */
    placeholderRateJump: z.number().min(0).max(1).default(0.2),
    /** Share of a table's records quarantined rose by more than this (absolute). @default 0.05 */
    quarantineRateJump: z.number().min(0).max(1).default(0.05),
    /** Recent updates an hour above this many times the history's hourly updates. @default 5 */
    updateStormFactor: z.number().min(1).default(5),
    /** A table averaging at least this many events an hour in history that has had none for `silentHours`. @default 10 */
    silentMinHourlyEvents: z.number().min(0).default(10),
    /** @default 3 */
    silentHours: z.number().int().min(1).default(3),
  })
  .prefault({});

export const JobsConfigSchema = z
  .object({
    /** Prefix of report objects (and the jobs' scratch space) in the raw bucket. @default "reports/" */
    reportPrefix: z
      .string()
      .regex(/^([A-Za-z0-9._=-]+\/)+$/, 'must be a key prefix ending in "/"')
      .default('reports/'),
    /** Days objects under `reportPrefix` (reports and the jobs' scratch space) are kept. @default 90 */
    reportRetentionDays: z.number().int().min(1).max(3650).default(90),
    reconcile: z
      .object({
        window: z
          .object({
            schedule: scheduleExpression.default('rate(1 hour)'),
            enabled: z.boolean().default(true),
            /** Hours of raw each window run reads, counted back from the cutoff. @default 3 */
            hours: z.number().int().min(1).max(24 * 31).default(3),
          })
          .prefault({}),
        full: schedule('cron(0 3 ? * SUN *)'),
        /** Hash partitions of the shuffle: memory per reduce task is about keys / partitions. @default 16 */
        partitions: z.number().int().min(1).max(4096).default(16),
        /** Parallel scan segments per table in full mode. @default 4 */
        scanSegments: z.number().int().min(1).max(1000).default(4),
        /**
         * Only raw landed at least this long before the run is held against the table, and rows
         * applied after that are left alone: ingest may still be between landing and applying.
         * @default 900 (the longest Lambda run)
         */
        cutoffSeconds: z.number().int().min(0).default(900),
        /** Keys a shuffle task keeps in memory before it flushes its partitions. @default 50000 */
        maxKeysInMemory: z.number().int().min(100).default(50_000),
      })
      .prefault({}),
    snapshot: z
      .object({
        schedule: scheduleExpression.default('rate(1 hour)'),
        enabled: z.boolean().default(true),
        anomalies: AnomalyThresholdsSchema,
      })
      .prefault({}),
  })
  .prefault({});

export type JobsConfig = z.infer<typeof JobsConfigSchema>;
export type AnomalyThresholds = z.infer<typeof AnomalyThresholdsSchema>;
