/**
 * Hours and days as the statements name them: raw partitions are `dt` (YYYY-MM-DD, UTC) and `hr`
 * (0-23) of the batch's first arrival; history's `dt` is the same day as a DATE. Every other time
 * is epoch ms.
 *
 *   hourOf(Date.UTC(2026, 10, 30, 6))   // { start: 1796018400000, dt: '2026-11-30', hr: 6 }
 */
import { SqlArgumentError } from './sql.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** One hour: its start (epoch ms) and its raw partition. */
export interface Hour {
  readonly start: number;
  readonly dt: string;
  readonly hr: number;
}

/** An inclusive range of days, YYYY-MM-DD. */
export interface DayRange {
  readonly from: string;
  readonly to: string;
}

function epochMs(ms: number, what: string): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new SqlArgumentError(`${what} must be epoch milliseconds, got ${ms}`);
  return ms;
}

/** The day (YYYY-MM-DD, UTC) holding `ms`. */
export const dayOf = (ms: number): string => new Date(epochMs(ms, 'a time')).toISOString().slice(0, 10);

/** The hour starting at `start`; refuses a time that is not an hour's start. */
export function hourOf(start: number, what = 'hour'): Hour {
  epochMs(start, what);
  if (start % HOUR_MS !== 0) throw new SqlArgumentError(`${what} must be the start of an hour (epoch ms divisible by 3600000), got ${start}`);
  return { start, dt: dayOf(start), hr: new Date(start).getUTCHours() };
}

/** The hours from `from` to `to`, both hour starts, inclusive; refuses an inverted range. */
export function hourRange(from: number, to: number): { from: Hour; to: Hour } {
  const a = hourOf(from, 'from hour');
  const b = hourOf(to, 'to hour');
  if (b.start < a.start) throw new SqlArgumentError(`the hour range is inverted: ${a.dt} ${a.hr}h is after ${b.dt} ${b.hr}h`);
  return { from: a, to: b };
}

/** The days from the day of `fromMs` to the day of `toMs`, inclusive. */
export function dayRange(fromMs: number, toMs: number): DayRange {
  if (epochMs(toMs, 'until') < epochMs(fromMs, 'since')) throw new SqlArgumentError(`the time range is inverted: ${fromMs} is after ${toMs}`);
  return { from: dayOf(fromMs), to: dayOf(toMs) };
}
