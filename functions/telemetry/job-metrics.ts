/**
 * Every metric the jobs emit, named once: the report steps emit them, the CDK alarms read them.
 * Namespace `Tidemark`, dimensions `{service, pipeline, table}`; `table` = `*` holds totals over all tables.
 */

/** Reconcile findings per class, plus the keys checked. */
export const RECONCILE_METRICS = {
  missing: 'ReconcileMissing',
  'deleted-live': 'ReconcileDeletedLive',
  stale: 'ReconcileStale',
  mismatch: 'ReconcileMismatch',
  ahead: 'ReconcileAhead',
  extra: 'ReconcileExtra',
  keys: 'ReconcileKeys',
} as const;

/** Every finding of a window run (the scheduled check), under `table` = `*`: its alarm fires on any. */
export const RECONCILE_WINDOW_FINDINGS_METRIC = 'ReconcileWindowFindings';

/** Snapshot detection findings per kind (orphans not tombstoned, and each anomaly kind). */
export const SNAPSHOT_FINDING_METRICS = {
  resnapshot: 'Resnapshots',
  'no-deletes': 'AnomalyNoDeletes',
  'only-deletes': 'AnomalyOnlyDeletes',
  'update-storm': 'AnomalyUpdateStorm',
  'quarantine-spike': 'AnomalyQuarantineSpike',
  'before-null-rate': 'AnomalyBeforeNullRate',
  'placeholder-rate': 'AnomalyPlaceholderRate',
  silent: 'AnomalySilent',
  orphan: 'SnapshotOrphans',
} as const;

/** The `table` dimension of totals over every table (one alarm, whatever the number of tables). */
export const ALL_TABLES = '*';

/** Snapshot detection's schema drift: changes recorded since each table's previous report, and those the target cannot hold. */
export const SNAPSHOT_DRIFT_METRICS = {
  changes: 'SchemaDriftChanges',
  incompatible: 'SchemaDriftIncompatible',
} as const;
