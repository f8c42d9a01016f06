/**
 * What a replay re-applies: tables, a landing-time range, a position range and optionally a set of
 * keys. Pure: parsing the CLI's arguments and the `--keys` file, and testing one event against it.
 *
 *   --table public.orders --since 2026-11-30T00:00Z --until 2026-11-30T06:00Z
 *   --from-position '[1000,1000]' --to-position '[2000,2000]' --keys keys.jsonl
 *
 * A keys file is JSON Lines: `{"table": "public.orders", "key": {"order_id": 7}}`, or just the key
 * object `{"order_id": 7}` when one table is selected. Keys are compared in canonical form (keys.ts
 * `keyId`), so `{"order_id": "7"}` matches a number column holding 7.
 */
import type { TableConfig, TidemarkConfig } from '../config/types.js';
import { DecodeError, TidemarkError } from '../core/errors.js';
import { isJsonObject, parseJson, toBigInt } from '../core/json.js';
import { keyId, normalizeKey } from '../core/keys.js';
import { decodePosition, encodePosition } from '../core/position.js';
import type { ChangeEvent } from '../core/types.js';

/** The name of one event of a selection's rows: table, key id ('' for a truncate) and position. */
export const eventName = (table: string, keyId: string | null, position: string): string => `${table}\0${keyId ?? ''}\0${position}`;

export interface ReplaySelection {
  readonly tables: readonly string[];
  /** Landing (arrival) time, epoch ms, inclusive. */
  readonly since?: number;
  /** Landing time, epoch ms, exclusive. */
  readonly until?: number;
  /** Encoded positions, inclusive. */
  readonly fromPosition?: string;
  readonly toPosition?: string;
  /** Per table, the canonical keys to replay; absent means every key. */
  readonly keys?: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * The events a chunk of replay-select's rows names (bucket-merge.ts `eventName`: table, key id,
   * position); absent means every event. A record rebuilt from one row may hold other rows' events
   * (a multi-row message): those are applied with their own rows, in their own key's order.
   */
  readonly events?: ReadonlySet<string>;
}

export class SelectionError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'SelectionError';
  }
}

/** ISO-8601 text or epoch milliseconds → epoch ms. */
export function parseTime(text: string, what: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new SelectionError(`${what} must be an ISO-8601 time (2026-11-30T06:00:00Z) or epoch milliseconds, not "${text}"`);
  return ms;
}

/**
 * A position as a JSON array of unsigned integers (`[1000, 1002]`, big values as strings) or as the
 * stored encoded form (`__pos`), → the encoded form.
 */
export function parsePosition(text: string, what: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = parseJson(trimmed);
    } catch {
      throw new SelectionError(`${what} is not a JSON array: ${trimmed}`);
    }
    if (!Array.isArray(parsed) || parsed.length === 0) throw new SelectionError(`${what} must be a non-empty array of unsigned integers`);
    const tuple = parsed.map((v) => toBigInt(v));
    if (tuple.some((n) => n === undefined || n < 0n)) throw new SelectionError(`${what} must be a non-empty array of unsigned integers`);
    return encodePosition(tuple as bigint[]);
  }
  try {
    decodePosition(trimmed);
  } catch {
    throw new SelectionError(`${what} must be a JSON array such as [1000,1002] or an encoded __pos, not "${trimmed}"`);
  }
  return trimmed;
}

export interface KeysFileProblem {
  readonly line: number;
  readonly detail: string;
}

/** One `--keys` line: the table and canonical key it names, or why it names none. */
function parseKeysLine(line: string, config: TidemarkConfig, tables: readonly string[]): { table: string; id: string } | { detail: string } {
  let parsed: unknown;
  try {
    parsed = parseJson(line);
  } catch {
    return { detail: 'not JSON' };
  }
  if (!isJsonObject(parsed)) return { detail: 'expected {"table": …, "key": {…}} or a key object' };
  const wrapped = typeof parsed.table === 'string' && isJsonObject(parsed.key);
  const tableName = wrapped ? (parsed.table as string) : tables.length === 1 ? tables[0] : undefined;
  if (tableName === undefined) return { detail: 'a bare key object needs exactly one selected table; write {"table": …, "key": {…}}' };
  const table = config.tables.find((t) => t.source === tableName);
  if (!table) return { detail: `table "${tableName}" is not configured` };
  try {
    return { table: table.source, id: canonicalKey(table, (wrapped ? parsed.key : parsed) as Record<string, never>) };
  } catch (err) {
    return { detail: err instanceof DecodeError ? `${err.reason}: ${err.message}` : 'bad key' };
  }
}

/** Parses a `--keys` file into canonical keys per table; problems name the line, never the values. */
export function parseKeysFile(text: string, config: TidemarkConfig, tables: readonly string[]): { keys: Map<string, Set<string>>; problems: KeysFileProblem[] } {
  const keys = new Map<string, Set<string>>();
  const problems: KeysFileProblem[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseKeysLine(line, config, tables);
    if ('detail' in parsed) {
      problems.push({ line: i + 1, detail: parsed.detail });
      return;
    }
    const set = keys.get(parsed.table) ?? new Set<string>();
    set.add(parsed.id);
    keys.set(parsed.table, set);
  });
  return { keys, problems };
}

/** The canonical key text of key columns given by a user (types coerced as configured). */
export function canonicalKey(table: TableConfig, key: Readonly<Record<string, never>>): string {
  return keyId(table, normalizeKey(table, key));
}

/** Whether a record that landed at `at` (epoch ms) is inside the selection's landing-time range. */
export const inArrivalRange = (selection: ReplaySelection, at: number): boolean => !((selection.since !== undefined && at < selection.since) || (selection.until !== undefined && at >= selection.until));

/** Whether a normalized change event is part of the selection (landing time is checked per record). */
export function selects(selection: ReplaySelection, event: ChangeEvent, canonical: string, encodedPosition: string): boolean {
  if (!selection.tables.includes(event.table)) return false;
  if (selection.events !== undefined && !selection.events.has(eventName(event.table, event.op === 't' ? null : canonical, encodedPosition))) return false;
  if (event.op === 't') return selection.keys === undefined && inPositionRange(selection, encodedPosition);
  if (!inPositionRange(selection, encodedPosition)) return false;
  const keys = selection.keys?.get(event.table);
  return selection.keys === undefined || keys?.has(canonical) === true;
}

function inPositionRange(selection: ReplaySelection, encoded: string): boolean {
  if (selection.fromPosition !== undefined && encoded < selection.fromPosition) return false;
  if (selection.toPosition !== undefined && encoded > selection.toPosition) return false;
  return true;
}
