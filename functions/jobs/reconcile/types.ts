/**
 * What the reconcile state machine takes and reports, and its findings (the data itself moves
 * through S3; the run the steps pass on is `ReconcileRun`, run.ts).
 */
import type { ReportedHeld } from '../held.js';
import type { FindingClass } from './classify.js';

/** The state machine's input; every field is optional. */
export interface ReconcileRequest {
  /** @default "window" */
  readonly mode?: 'window' | 'full';
  /** Source tables to check. @default every configured table */
  readonly tables?: readonly string[];
  /** Window mode: hours of raw, counted back from the cutoff. @default config.jobs.reconcile.window.hours */
  readonly hours?: number;
  /** Re-apply raw's winning events through the guarded writer for repairable findings. @default false */
  readonly repair?: boolean;
  /** `s3://bucket/key` of a key-set manifest (JSON Lines `{"table": …, "key": {…}}`) to diff live keys against. */
  readonly manifest?: string;
  /** Run id; the scheduler leaves it out. @default derived from the start time */
  readonly runId?: string;
  /** Window mode: arrival-time range (ISO 8601) instead of `hours`; `until` defaults to the cutoff. */
  readonly since?: string;
  readonly until?: string;
  /** Override of the cutoff, in seconds before the start. @default config.jobs.reconcile.cutoffSeconds */
  readonly cutoffSeconds?: number;
}

export type ManifestClass = 'manifest-missing' | 'manifest-extra';

/** One finding. Keys and positions only, never row values. */
export interface Finding {
  readonly class: FindingClass | ManifestClass;
  readonly table: string;
  /** The key as JSON text. */
  readonly key: string;
  /** Raw's winner: position, op, whether it is a delete, content hash (null when it could not be recomputed). */
  readonly expected: { readonly position: string; readonly op: string; readonly deleted: boolean; readonly hash: string | null } | null;
  /** The stored item: position, tombstone flag, `__hash`, `__appliedAt`. */
  readonly actual: { readonly position: string; readonly deleted: boolean; readonly hash: string; readonly appliedAt: number } | null;
  /** Outcome of the repair write, when --repair ran for it. */
  readonly repair?: string;
}

/** Counters each step adds up; the report sums them. */
export interface ReconcileCounts {
  rawObjects: number;
  rawEvents: number;
  keys: number;
  tableRows: number;
  readUnits: number;
  inFlight: number;
  unverifiable: number;
  /** Keys erase left a bare tombstone for: never a finding (issue 20, item 17). */
  erased: number;
  repaired: number;
  repairFailed: number;
}

/** What a reconcile run reports (the state machine's output, and `<report prefix>reconcile/<run>/report.json`). */
export interface ReconcileReport {
  readonly job: 'reconcile';
  readonly runId: string;
  readonly mode: 'window' | 'full';
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly cutoff: string;
  readonly window: { readonly from: string; readonly to: string } | null;
  readonly tables: readonly string[];
  readonly repair: boolean;
  /** Keys of held tables changed since they were held (landed, not applied until resume): counted, never findings. */
  readonly counts: ReconcileCounts & { held: number; manifestKeys: number; unmatchedRawLines: number; rawLineProblems: number };
  /**
   * Tables suspended or stopped in error at the plan: from when (`heldFrom`), the keys whose raw
   * arrived since (`keys`, not judged), and whether --repair left the table alone.
   */
  readonly held: Readonly<Record<string, ReportedHeld & { readonly keys: number; readonly repairSkipped: boolean }>>;
  /** Findings per class (every class listed, zeros included), and per table per class. */
  readonly findings: { readonly total: number; readonly byClass: Record<string, number>; readonly byTable: Record<string, Record<string, number>> };
  /** True when raw lost data (`ahead`, `extra`): nothing in raw can repair it. */
  readonly critical: boolean;
  /** s3:// URI of this report, and of the objects listing each finding. */
  readonly report: string;
  readonly findingObjects: readonly string[];
  /** Per table: `reports/reconcile/<table>/<run>.json` (counts, first findings per class) and its full JSON Lines list. */
  readonly tableReports: Readonly<Record<string, { readonly report: string; readonly findings: string | null }>>;
}
