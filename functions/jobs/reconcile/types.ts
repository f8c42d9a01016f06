/**
 * What flows between the reconcile state machine's steps (all of it small JSON: the data itself
 * moves through S3), and the shuffle records.
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

/** Fixed for one run; every task receives it. */
export interface RunContext {
  readonly runId: string;
  readonly mode: 'window' | 'full';
  readonly startedAt: number;
  /** Raw stored after this (epoch ms) is not yet held against the table; rows applied after it are in flight. */
  readonly cutoff: number;
  /** Window mode: the hour range of raw read. */
  readonly window: { readonly fromMs: number; readonly toMs: number } | null;
  readonly tables: readonly string[];
  readonly partitions: number;
  readonly repair: boolean;
  readonly manifest: { readonly bucket: string; readonly key: string } | null;
  /** Where this run's scratch and report objects go, in the raw bucket. */
  readonly prefix: string;
}

export interface RawItem {
  readonly kind: 'raw';
  readonly index: number;
}
export interface TableItem {
  readonly kind: 'table';
  readonly table: string;
  readonly segment: number;
  readonly totalSegments: number;
}
export interface ManifestItem {
  readonly kind: 'manifest';
}
export type WorkItem = RawItem | TableItem | ManifestItem;

export interface PlanOutput {
  readonly run: RunContext;
  readonly rawItems: readonly RawItem[];
  /** Table scan segments (full mode) and the manifest reader. */
  readonly tableItems: readonly (TableItem | ManifestItem)[];
  readonly partitionItems: readonly number[];
  readonly rawObjects: number;
}

export interface TaskInput<I> {
  readonly run: RunContext;
  readonly item: I;
}

/** One chain link: where a raw event of the key is, and whether it is a full image or delete. */
export interface ChainRef {
  readonly p: string;
  /** Raw object key, record index in the object and line index in the record (see raw-reader.ts). */
  readonly o: string;
  readonly i: number;
  readonly j: number;
  /** A full row or a delete: events before it do not contribute. */
  readonly f: boolean;
}

/** Raw side of one key, as one map task saw it. */
/**
 * One key's fold of raw, as a task builds it (mutable): the fields of {@link RawSideRecord} that
 * the raw shuffle accumulates per key and the reduce merges across shuffle outputs.
 */
export interface RawKeyFold {
  t: string;
  k: string;
  key: string;
  w: { p: string; o: string; h: string | null; x: boolean } | null;
  m: string;
  c: ChainRef[];
}

export interface RawSideRecord {
  readonly s: 'r';
  readonly t: string;
  /** keyId (canonical key text). */
  readonly k: string;
  /** The normalized key as JSON text, from the raw line. */
  readonly key: string;
  /** Settled winner, or null. */
  readonly w: { readonly p: string; readonly o: string; readonly h: string | null; readonly x: boolean } | null;
  /** Highest position among every line of the key. */
  readonly m: string;
  /** Settled events from the last full image or delete on, for repair. */
  readonly c: readonly ChainRef[];
  /** Raw lines of the key. */
  readonly n: number;
}

/** Table side of one key (full mode scans). */
export interface TableSideRecord {
  readonly s: 'd';
  readonly t: string;
  readonly k: string;
  readonly key: string;
  readonly p: string;
  readonly d: boolean;
  readonly h: string;
  readonly a: number;
}

/** A key listed by the source's key-set manifest. */
export interface ManifestSideRecord {
  readonly s: 'm';
  readonly t: string;
  readonly k: string;
  readonly key: string;
}

export type ShuffleRecord = RawSideRecord | TableSideRecord | ManifestSideRecord;

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

export const emptyCounts = (): ReconcileCounts => ({
  rawObjects: 0,
  rawEvents: 0,
  keys: 0,
  tableRows: 0,
  readUnits: 0,
  inFlight: 0,
  unverifiable: 0,
  erased: 0,
  repaired: 0,
  repairFailed: 0,
});

export interface PartitionSummary {
  readonly partition: number;
  readonly counts: ReconcileCounts;
  /** Findings per table per class. */
  readonly findings: Record<string, Record<string, number>>;
  /** Object holding this partition's findings (JSON Lines), or null when there are none. */
  readonly findingsKey: string | null;
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
