/**
 * Which of a run's tables are held (suspended, or stopped in error: core/lifecycle.ts), read from
 * their status rows at a job's Plan: one BatchGetItem per 100 tables. A held table's records land
 * in raw and are not applied until resume replays them, so the jobs label it rather than report
 * its unapplied rows as findings (docs/jobs.md, "Held tables").
 *
 *   const held = await heldTables(deps, ['public.orders']);   // { 'public.orders': { state: 'suspended', heldFrom: 1764483600000 } }
 */
import { StatusReader } from '../adapters/status-reader.js';
import { type HeldLabel, heldLabelOf } from '../core/lifecycle.js';
import { STATUS_ROW } from '../telemetry/status-layout.js';
import type { JobDeps } from './deps.js';

/** A held table's label in a job report. */
export interface ReportedHeld {
  readonly state: HeldLabel['state'];
  readonly heldFrom: string;
}

export async function heldTables(deps: Pick<JobDeps, 'dynamodb' | 'config'>, tables: readonly string[]): Promise<Record<string, HeldLabel>> {
  const rows = await new StatusReader(deps.dynamodb, deps.config.statusTable, deps.config.name).tableRows(tables, [STATUS_ROW]);
  const out: Record<string, HeldLabel> = {};
  for (const t of tables) {
    const label = heldLabelOf(rows.get(t)?.get(STATUS_ROW));
    if (label) out[t] = label;
  }
  return out;
}

/**
 * A label as reports show it: the time as ISO 8601. Not the reason: an error's reason quotes the
 * write's error text, and reports carry no text of the source (`tidemark status` shows it).
 */
export const reportedHeld = (label: HeldLabel): ReportedHeld => ({ state: label.state, heldFrom: new Date(label.heldFrom).toISOString() });
