/**
 * Anomalies of one table against its own history (docs/contract.md, "Jobs"),
 * from per-hour counter rows. Pure. "Recent" is the last `recentHours` hours before `now`; history
 * is the `historyHours` before that. Each check stays quiet without enough events to judge.
 *
 *   resnapshot         snapshot reads in the recent hours after streamed changes earlier on
 *   no-deletes         history deletes at least `deleteShare` of changes; recent hours none
 *   only-deletes       every recent change a delete, while history mostly is not
 *   update-storm       recent updates an hour above `updateStormFactor` times history's
 *   before-null-rate   share of updates without a before image rose by more than `beforeNullRateJump`
 *   placeholder-rate   share of events with placeholders rose by more than `placeholderRateJump`
 *   quarantine-spike   share of records quarantined rose by more than `quarantineRateJump`
 *   silent             history averages `silentMinHourlyEvents` an hour; the last `silentHours` had none
 *                      while another table of the pipeline had events (so the whole stream is not just idle)
 */
import type { AnomalyThresholds } from '../../config/types.js';
import type { HourCounter, HourRow } from './hours.js';

export const ANOMALY_KINDS = ['resnapshot', 'no-deletes', 'only-deletes', 'update-storm', 'before-null-rate', 'placeholder-rate', 'quarantine-spike', 'silent'] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export { SNAPSHOT_FINDING_METRICS } from '../../telemetry/job-metrics.js';

export interface Anomaly {
  readonly kind: AnomalyKind;
  readonly table: string;
  /** What was measured, e.g. `{ recent: 0.6, history: 0.05 }`. Counts and rates only. */
  readonly detail: Readonly<Record<string, number | string>>;
}

const HOUR_MS = 3_600_000;

type Totals = Record<HourCounter, number> & { events: number; streamed: number };

function total(rows: readonly HourRow[]): Totals {
  const t = { received: 0, applied: 0, opC: 0, opU: 0, opD: 0, opR: 0, placeholders: 0, beforeNullUpdates: 0, snapshotEvents: 0, resnapshots: 0, quarantined: 0, events: 0, streamed: 0 };
  for (const r of rows) for (const k of Object.keys(r.counters) as HourCounter[]) t[k] += r.counters[k];
  t.streamed = t.opC + t.opU + t.opD;
  t.events = t.streamed + t.opR;
  return t;
}

const rate = (n: number, d: number): number => (d > 0 ? n / d : 0);
const round = (x: number): number => Math.round(x * 1e4) / 1e4;


/** One table's recent hours against its history. */
interface Comparison {
  readonly table: string;
  readonly recent: Totals;
  readonly history: Totals;
  readonly th: AnomalyThresholds;
}

// Ingest counts a re-snapshot when snapshot reads above the recorded snapshot position arrive after
// streaming began; a redelivered snapshot window is not one (snapshot reads alone are not enough).
function resnapshotAnomalies({ table, recent }: Comparison, recentRows: readonly HourRow[], now: number): Anomaly[] {
  if (recent.resnapshots <= 0) return [];
  const hour = recentRows.find((r) => r.counters.resnapshots > 0);
  return [{ kind: 'resnapshot', table, detail: { snapshotEvents: recent.snapshotEvents, resnapshots: recent.resnapshots, hour: new Date(hour?.hourStart ?? now).toISOString().slice(0, 13) } }];
}

function deleteShareAnomalies({ table, recent, history, th }: Comparison): Anomaly[] {
  if (recent.streamed < th.minEvents || history.streamed < th.minEvents) return [];
  const out: Anomaly[] = [];
  const historyDeleteShare = rate(history.opD, history.streamed);
  if (recent.opD === 0 && historyDeleteShare >= th.deleteShare) out.push({ kind: 'no-deletes', table, detail: { recentEvents: recent.streamed, historyDeleteShare: round(historyDeleteShare) } });
  if (recent.opD === recent.streamed && historyDeleteShare < 0.5) out.push({ kind: 'only-deletes', table, detail: { recentEvents: recent.streamed, historyDeleteShare: round(historyDeleteShare) } });
  return out;
}

function updateStormAnomalies({ table, recent, history, th }: Comparison): Anomaly[] {
  const recentHourlyUpdates = recent.opU / th.recentHours;
  const historyHourlyUpdates = history.opU / th.historyHours;
  if (recent.opU >= th.minEvents && history.opU > 0 && recentHourlyUpdates > th.updateStormFactor * historyHourlyUpdates) {
    return [{ kind: 'update-storm', table, detail: { recentHourlyUpdates: round(recentHourlyUpdates), historyHourlyUpdates: round(historyHourlyUpdates) } }];
  }
  return [];
}

/** A share (part of whole) that jumped by more than `jump` between history and recent hours. */
function rateJump(kind: 'quarantine-spike' | 'before-null-rate' | 'placeholder-rate', c: Comparison, part: (t: Totals) => number, whole: (t: Totals) => number, jump: number): Anomaly[] {
  if (whole(c.recent) < c.th.minEvents || whole(c.history) < c.th.minEvents) return [];
  const r = rate(part(c.recent), whole(c.recent));
  const h = rate(part(c.history), whole(c.history));
  return r - h > jump ? [{ kind, table: c.table, detail: { recent: round(r), history: round(h) } }] : [];
}

/** Whether any table but `table` had events in the hours overlapping the last `silentHours`. */
export function othersFlowIn(table: string, rows: readonly HourRow[], now: number, th: Pick<AnomalyThresholds, 'silentHours'>): boolean {
  const silentFrom = now - th.silentHours * HOUR_MS;
  return total(rows.filter((r) => r.table !== table && r.hourStart + HOUR_MS > silentFrom)).events > 0;
}

/** A table that used to flow went quiet while others still flow. */
function silentAnomalies(c: Comparison, own: readonly HourRow[], othersFlow: boolean, now: number): Anomaly[] {
  const { table, history, th } = c;
  const hourly = history.events / th.historyHours;
  const silentFrom = now - th.silentHours * HOUR_MS;
  const lately = total(own.filter((r) => r.hourStart + HOUR_MS > silentFrom)).events;
  if (th.silentMinHourlyEvents > 0 && hourly >= th.silentMinHourlyEvents && lately === 0 && othersFlow) {
    return [{ kind: 'silent', table, detail: { historyHourlyEvents: round(hourly), silentHours: th.silentHours } }];
  }
  return [];
}

/**
 * `rows`: the table's hour rows (other tables' rows are ignored, except to tell whether others
 * flow when `othersFlow` is not given: the snapshot job works that out once per run instead).
 */
export function detectAnomalies(table: string, rows: readonly HourRow[], now: number, th: AnomalyThresholds, othersFlow: boolean = othersFlowIn(table, rows, now, th)): Anomaly[] {
  const own = rows.filter((r) => r.table === table);
  const recentFrom = now - th.recentHours * HOUR_MS;
  const historyFrom = recentFrom - th.historyHours * HOUR_MS;
  const recentRows = own.filter((r) => r.hourStart + HOUR_MS > recentFrom && r.hourStart <= now);
  const historyRows = own.filter((r) => r.hourStart + HOUR_MS > historyFrom && r.hourStart + HOUR_MS <= recentFrom);
  const c: Comparison = { table, recent: total(recentRows), history: total(historyRows), th };
  return [
    ...resnapshotAnomalies(c, recentRows, now),
    ...deleteShareAnomalies(c),
    ...updateStormAnomalies(c),
    ...rateJump('quarantine-spike', c, (t) => t.quarantined, (t) => t.events + t.quarantined, th.quarantineRateJump),
    ...rateJump('before-null-rate', c, (t) => t.beforeNullUpdates, (t) => t.opU, th.beforeNullRateJump),
    ...rateJump('placeholder-rate', c, (t) => t.placeholders, (t) => t.events, th.placeholderRateJump),
    ...silentAnomalies(c, own, othersFlow, now),
  ];
}
