/**
 * The `history` section of `tidemark.config.json` (docs/history.md): where the compacted history
 * and the jobs' tables live, how long raw stays after its hour is compacted, and when compaction
 * runs. Every field has a default, so `"history"` may be left out:
 *
 *   "history": { "prefix": "history/", "rawGraceDays": 3, "compaction": { "schedule": "rate(1 hour)" },
 *                "maintenance": { "schedule": "cron(30 3 * * ? *)", "snapshotRetentionDays": 3 } }
 */
import { z } from 'zod';

export const HistoryConfigSchema = z
  .object({
    /**
     * Key prefix of the history tables' data in the raw bucket: the Iceberg tables on AWS, the
     * Parquet stand-in locally, and the jobs' query results. @default "history/"
     */
    prefix: z
      .string()
      .regex(/^([A-Za-z0-9._=-]+\/)+$/, 'must be a key prefix ending in "/"')
      .default('history/'),
    /** The Glue database of the history tables. @default "tidemark_<name with - as _>" */
    database: z
      .string()
      .regex(/^[a-z0-9_]{1,255}$/, 'lowercase letters, digits and _ (a Glue database name)')
      .optional(),
    /** Days raw objects stay once their hour is compacted into history (a replay or erase reads them meanwhile). @default 3 */
    rawGraceDays: z.number().int().min(1).max(3650).default(3),
    compaction: z
      .object({
        schedule: z
          .string()
          .regex(/^(rate|cron|at)\(.+\)$/, 'must be an EventBridge Scheduler expression: rate(...), cron(...) or at(...)')
          .default('rate(1 hour)'),
        enabled: z.boolean().default(true),
        /** Closed hours one run compacts at most: a backlog is caught up over several runs. @default 24 */
        maxHoursPerRun: z.number().int().min(1).max(168).default(24),
        /** Compacted hours rescanned for objects that landed late (a retried batch, replay --from-dlq). @default rawGraceDays × 24 */
        lateScanHours: z.number().int().min(1).max(24 * 90).optional(),
      })
      .prefault({}),
    /**
     * Table maintenance of the Iceberg tables (history, expected_state, truncates, table_hours):
     * `OPTIMIZE … REWRITE DATA USING BIN_PACK`, then `VACUUM`, on this schedule (docs/jobs.md,
     * "Maintenance"). `snapshotRetentionDays` is each table's `vacuum_max_snapshot_age_seconds`:
     * VACUUM expires snapshots older than it (no time travel past it) and deletes the files only they
     * reference, an erased row's old files among them.
     */
    maintenance: z
      .object({
        /** @default "cron(30 3 * * ? *)": daily at 03:30 UTC, between the hourly compactions' busy minutes */
        schedule: z
          .string()
          .regex(/^(rate|cron|at)\(.+\)$/, 'must be an EventBridge Scheduler expression: rate(...), cron(...) or at(...)')
          .default('cron(30 3 * * ? *)'),
        enabled: z.boolean().default(true),
        /** Days of snapshots VACUUM keeps (time travel reaches this far back). @default 3 */
        snapshotRetentionDays: z.number().int().min(1).max(90).default(3),
      })
      .prefault({}),
    /** Key buckets a replay's selection is split into: the apply runs one per bucket, in parallel. @default 16 */
    replayBuckets: z.number().int().min(1).max(100).default(16),
    /** The Athena workgroup the jobs' queries run in. @default "<name>-jobs" */
    workGroup: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, . _ - (an Athena workgroup name)')
      .optional(),
    /**
     * Data one query may scan in the workgroup tidemark creates, in MB (Athena's per-query data
     * usage control, at least 10): a query past it is cancelled and its job run fails. Ignored with
     * `workGroup`, whose own settings apply. @default - no cutoff
     */
    bytesScannedCutoffMb: z.number().int().min(10).optional(),
  })
  .prefault({});
