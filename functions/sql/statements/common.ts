/**
 * Pieces several statements share: argument checks, partition predicates over hours and days
 * (bound where Athena takes parameters, inlined where it does not), per-table key lists, and the
 * definition of a key's change lines. One definition each, so that compaction, folding, reconcile
 * and replay agree on what "the hour", "a key's events" and "the requested keys" are.
 *
 *   rawHours(sql`r`, hourRange(h, h))   // r.dt BETWEEN ? AND ? AND (r.dt <> ? OR r.hr >= ?) AND (r.dt <> ? OR r.hr <= ?)
 */
import { bind, bindList, join, lit, litList, raw, type Sql, SqlArgumentError, sql } from '../sql.js';
import { type DayRange, type Hour, hourRange } from '../time.js';

/** Tables a statement is about: non-empty, distinct, non-empty names. */
export function tableList(tables: readonly string[], what = 'tables'): readonly string[] {
  if (tables.length === 0) throw new SqlArgumentError(`${what} must name at least one table`);
  for (const t of tables) if (typeof t !== 'string' || t === '') throw new SqlArgumentError(`${what} must be non-empty table names`);
  return [...new Set(tables)];
}

/** Keys to act on, per table. */
export interface TableKeys {
  readonly table: string;
  /** Canonical key texts (functions/core/keys.ts keyId). */
  readonly keyIds: readonly string[];
}

export function keyLists(keys: readonly TableKeys[]): readonly TableKeys[] {
  if (keys.length === 0) throw new SqlArgumentError('keys must name at least one table and key');
  for (const k of keys) {
    tableList([k.table], 'keys');
    if (k.keyIds.length === 0) throw new SqlArgumentError(`keys of ${k.table} must not be empty`);
  }
  return keys;
}

/** `((<table> = ? AND <key> IN (?, …)) OR …)`; inlined with `inline` (MERGE, DELETE). */
export function keyPredicate(keys: readonly TableKeys[], table: Sql, key: Sql, inline = false): Sql {
  const one = (k: TableKeys): Sql =>
    inline ? sql`(${table} = ${lit(k.table)} AND ${key} IN ${litList(k.keyIds, 'keyIds')})` : sql`(${table} = ${bind(k.table)} AND ${key} IN ${bindList(k.keyIds, 'keyIds')})`;
  return sql`(${join(keyLists(keys).map(one), ' OR ')})`;
}

/** `<alias>.dt` and `<alias>.hr` of raw (dt text) within an inclusive range of hours; inlined with `inline`. */
export function rawHours(alias: Sql, range: { readonly from: Hour; readonly to: Hour }, inline = false): Sql {
  const v = inline ? lit : (x: string | number) => sql`${bind(x)}`;
  const { from, to } = range;
  if (from.start === to.start) return sql`${alias}.dt = ${v(from.dt)} AND ${alias}.hr = ${v(from.hr)}`;
  return sql`${alias}.dt BETWEEN ${v(from.dt)} AND ${v(to.dt)} AND (${alias}.dt <> ${v(from.dt)} OR ${alias}.hr >= ${v(from.hr)}) AND (${alias}.dt <> ${v(to.dt)} OR ${alias}.hr <= ${v(to.hr)})`;
}

/** History's `dt` (a DATE) and `hr` within an inclusive range of hours; inlined with `inline`. */
export function historyHours(alias: Sql, range: { readonly from: Hour; readonly to: Hour }, inline = false): Sql {
  const v = inline ? lit : (x: string | number) => sql`${bind(x)}`;
  const day = (d: string): Sql => sql`CAST(${v(d)} AS DATE)`;
  const { from, to } = range;
  if (from.start === to.start) return sql`${alias}.dt = ${day(from.dt)} AND ${alias}.hr = ${v(from.hr)}`;
  return sql`${alias}.dt BETWEEN ${day(from.dt)} AND ${day(to.dt)} AND (${alias}.dt <> ${day(from.dt)} OR ${alias}.hr >= ${v(from.hr)}) AND (${alias}.dt <> ${day(to.dt)} OR ${alias}.hr <= ${v(to.hr)})`;
}

/** History's `dt` within an inclusive range of days, bound. */
export const historyDays = (alias: Sql, days: DayRange): Sql => sql`${alias}.dt BETWEEN CAST(${bind(days.from)} AS DATE) AND CAST(${bind(days.to)} AS DATE)`;

/** One hour as a range. */
export const single = (hour: number): { from: Hour; to: Hour } => hourRange(hour, hour);

/**
 * A key's change lines: what folds into expected state and what reconcile and replay count as
 * "events of the key". Truncates (`t`) are table-level and have no key; controls are not changes.
 */
export const keyedChange = (alias: Sql): Sql =>
  sql`${alias}.kind = 'change' AND ${alias}.key_id IS NOT NULL AND ${alias}.position IS NOT NULL AND ${alias}.op IN ('c', 'u', 'd', 'r')`;

/** A table's truncate lines. */
export const truncateLine = (alias: Sql): Sql => sql`${alias}.kind = 'change' AND ${alias}.op = 't' AND ${alias}.position IS NOT NULL`;

/** An inlined integer (counts, epoch ms) checked to be one. */
export function int(n: number, what: string): Sql {
  if (!Number.isSafeInteger(n)) throw new SqlArgumentError(`${what} must be an integer, got ${n}`);
  return raw(String(n));
}

/** An inlined finite number (a threshold). */
export function num(n: number, what: string): Sql {
  if (!Number.isFinite(n)) throw new SqlArgumentError(`${what} must be a finite number, got ${n}`);
  return lit(n);
}

/** An encoded position argument: the characters encodePosition writes (functions/core/position.ts). */
export function positionArg(p: string, what: string): string {
  if (p.length > 4096) throw new SqlArgumentError(`${what} is too long`);
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    const ok = c === 0x2e || (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a);
    if (!ok) throw new SqlArgumentError(`${what} must be an encoded position (a-z, 0-9 and .), got "${p.slice(0, 40)}"`);
  }
  return p;
}
