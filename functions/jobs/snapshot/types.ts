/** What snapshot detection takes and reports: the state machine's input and output. */
import type { Anomaly } from './anomalies.js';

export interface SnapshotRequest {
  readonly tables?: readonly string[];
  /** Tombstone the orphans found after a complete snapshot. @default false */
  readonly apply?: boolean;
  /** Hours of raw to look for snapshots in. @default anomalies.historyHours */
  readonly hours?: number;
  readonly runId?: string;
}

export interface TableSnapshotResult {
  readonly table: string;
  /** Snapshot reads that arrived after the first streamed change seen in raw. */
  readonly resnapshotReads: number;
  /** The latest complete snapshot, if raw holds one. */
  readonly snapshot: { readonly startPosition: string; readonly endPosition: string; readonly keys: number } | null;
  readonly orphans: { readonly count: number; readonly tombstoned: number; readonly failed: number; readonly keys: readonly string[] };
  readonly anomalies: readonly Anomaly[];
  readonly readUnits: number;
}

export interface SnapshotReport {
  readonly job: 'snapshot';
  readonly runId: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly apply: boolean;
  readonly tables: readonly TableSnapshotResult[];
  /** Anomalies (re-snapshots included) plus orphan rows not tombstoned. */
  readonly findings: number;
  readonly report: string;
}
