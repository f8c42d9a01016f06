/** What snapshot detection takes and reports: the state machine's input and output. */
import type { ReportedHeld } from '../held.js';
import type { SchemaChangeKind, SchemaBasis } from '../../core/schema-drift.js';
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
  /** Suspended or stopped in error at the plan: not queried (its rows are not applied), so no orphan or anomaly is reported for it. */
  readonly held: ReportedHeld | null;
  /** Schema changes recorded since the table's previous snapshot report (drift.ts). */
  readonly drift: TableDrift;
}

/** One schema change: column names and types only, never row values. */
export interface DriftChange {
  readonly kind: SchemaChangeKind;
  readonly column: string;
  readonly from?: string;
  readonly to?: string;
  /** Encoded position of the first event that showed it (the CLI prints it in the source's notation). */
  readonly position: string;
  /** Source commit time of that event, ISO 8601; null when the format carries none. */
  readonly commitTime: string | null;
  /** `schema`: from the message's declared schema; `rows`: from row images. */
  readonly basis: SchemaBasis;
  /** False when the target cannot hold the values as before (a number column carrying text): named, never coerced. */
  readonly holds: boolean;
}

export interface TableDrift {
  /** The ingest has recorded a schema for the table. */
  readonly recorded: boolean;
  /** The report the changes are counted from; null: the first report of the table (its whole recorded history). */
  readonly previous: { readonly runId: string | null; readonly at: string | null } | null;
  /** The changes since, oldest first. */
  readonly changes: readonly DriftChange[];
  /** Changes since that the recorded history no longer lists (it keeps the last 100). */
  readonly unlisted: number;
  /** Changes since that the target cannot hold (exact, listed or not). */
  readonly incompatible: number;
  readonly hasIncompatible: boolean;
  /** Every change recorded for the table so far. */
  readonly total: number;
  /** How its positions read in the source's notation (the table's status row: `format`, `orderingStrength`). */
  readonly notation?: { readonly format?: string; readonly ordering?: string };
}

export interface SnapshotReport {
  readonly job: 'snapshot';
  readonly runId: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly apply: boolean;
  readonly tables: readonly TableSnapshotResult[];
  /** Anomalies (re-snapshots included), orphan rows not tombstoned, and schema changes the target cannot hold. */
  readonly findings: number;
  /** Schema drift over the tables: changes since each table's previous report, of those the ones the target cannot hold, and the tables with any. */
  readonly drift: { readonly changes: number; readonly incompatible: number; readonly tables: number };
  /** Tables suspended or stopped at the plan (labelled, not queried). */
  readonly held: readonly string[];
  readonly report: string;
}
