import { scaleConfig } from './workload.js';

/** The config's defaults the model follows (lib/config/history.ts): the raw grace, the late-scan window, replay's key buckets. */
const HISTORY_DEFAULTS = scaleConfig(1).history;

/**
 * The reference pipeline of /design SCALE.md (copied here: nothing outside the repository is read
 * at run time) and the assumptions the cost model adds to it, each named once.
 */

/** SCALE.md "The reference pipeline". */
export const REFERENCE = {
  shards: 100,
  recordsPerShardPerSecond: 1000,
  /** The ingest defaults: 3,000 records or 3 s, whichever comes first. */
  batchRecords: 3000,
  batchWindowSeconds: 3,
  /** A slower stream: the window closes batches of 300 × 3 = 900 records ("and smaller ones"). */
  slowRecordsPerShardPerSecond: 300,
  tableCounts: [1, 10, 1000] as readonly number[],
  /** 2 B rows of 1 KB: the largest table; the model gives the whole pipeline that many, split evenly over its tables. */
  liveRows: 2e9,
  rowBytes: 1000,
  /** After a day and after a year of retention. */
  retentionDays: { day: 1, year: 365 } as const,
  /** `history.rawGraceDays`, the config's default: raw NDJSON kept after its hour is compacted. */
  rawGraceDays: HISTORY_DEFAULTS.rawGraceDays,
  /** `history.compaction.lateScanHours`, the config's default (rawGraceDays × 24): compacted hours each compaction run lists for late objects. */
  lateScanHours: HISTORY_DEFAULTS.compaction.lateScanHours ?? HISTORY_DEFAULTS.rawGraceDays * 24,
  erasuresPerDay: 1000,
} as const;

export const EVENTS_PER_SECOND = REFERENCE.shards * REFERENCE.recordsPerShardPerSecond;
export const EVENTS_PER_DAY = EVENTS_PER_SECOND * 86_400;
export const EVENTS_PER_HOUR = EVENTS_PER_DAY / 24;

/** What the model assumes where SCALE.md and the code say nothing; each is printed with the figures it moves. */
export const ASSUMPTIONS = {
  /** Events spread evenly over the tables, and over the keys of a table (uniform: a batch reaches ~95% of 1,000 tables). */
  uniformKeys: true,
  /** One record in 10,000 does not decode (quarantined). */
  badRecordEvery: 10_000,
  /**
   * Raw hours not compacted yet that a full reconcile reads (`unsettled`): an hour is closed 1 h 20 min
   * after it began (docs/history.md §2), so one to two hours.
   */
  unsettledHours: 2,
  /** The export-to-table-side Lambda: 1,024 MB, one invocation per export data file. */
  tableSideLambdaMb: 1024,
  /** DynamoDB export data files of about 100 MB gzip (AWS does not publish a size; only requests move with it). */
  exportFileBytes: 100 * 1024 * 1024,
  /** Replay: key buckets (`history.replayBuckets`, the config's default) and the apply Lambda. */
  replayBuckets: HISTORY_DEFAULTS.replayBuckets,
  /** CPU per event of the guarded apply at 1,769 MB: the ingest's measured 80–89 µs per record (docs/performance.md goal 7). */
  applyMicrosPerEvent: 85,
  applyLambdaMb: 1769,
  /** The erase rewrite Lambda: 1,024 MB, one raw object per request to it. */
  eraseLambdaMb: 1024,
  /** Position delete files Athena writes for a DELETE or MERGE: about 8 bytes per deleted row (file path dictionary-encoded, positions delta-encoded). */
  positionDeleteBytesPerRow: 8,
  /**
   * History `OPTIMIZE` runs daily over the closed day, and `expected_state` `OPTIMIZE` daily too
   * (its hourly MERGEs leave delete files): each rewrites what it reads once a day.
   */
  optimizeEveryHours: 24,
  /**
   * Erasure: the keys erased are average keys: their events a day are the table's events ÷ its keys
   * (4.3 at the reference size), so a key has an event on nearly every day of history.
   */
  erasedKeyEventsPerDay: EVENTS_PER_DAY / REFERENCE.liveRows,
  /**
   * Compacted hours of the grace an erasure finds late (an object modified after its hour's marker:
   * a late batch, or a rewrite by the previous pass not compacted again yet), whose raw it reads: one.
   */
  eraseLateHours: 1,
} as const;
