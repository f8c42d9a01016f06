/**
 * Every statement by name, each a builder from plain (JSON) arguments to the statements to run in
 * order, so a Step Functions state or the local runner can name a statement and its arguments and
 * render it for either engine:
 *
 *   buildStatements('fold-expected', { hour })       // three statements, run in order
 *   buildStatements('compact-hour', { hour }).map((s) => athenaQuery(s, 'tidemark_shop'))
 */
import type { Statement } from '../statement.js';
import { type CompactHourArgs, compactHour } from './compact-hour.js';
import { type CompactLegacyHourArgs, compactLegacyHour } from './compact-legacy-hour.js';
import { type CompactObjectsArgs, compactObjects } from './compact-objects.js';
import { type CountTableHoursArgs, countTableHours } from './count-table-hours.js';
import { type DetectAnomaliesArgs, detectAnomalies } from './detect-anomalies.js';
import { type DetectResnapshotsArgs, detectResnapshots } from './detect-resnapshots.js';
import { type DetectOrphansArgs, detectOrphans } from './detect-orphans.js';
import { eraseExpected } from './erase-expected.js';
import { type EraseFindHistoryArgs, eraseFindHistory } from './erase-find-history.js';
import { type EraseFindRawArgs, eraseFindRaw, type LegacyTable } from './erase-find-raw.js';
import { eraseHistory } from './erase-history.js';
import type { EraseRunArgs } from './erase-keys.js';
import { type FoldExpectedArgs, foldExpected } from './fold-expected.js';
import { optimize, vacuum } from './maintenance.js';
import { type ReconcileFullArgs, reconcileFull } from './reconcile-full.js';
import { type ReconcileWindowArgs, reconcileWindow } from './reconcile-window.js';
import { type ReplaySelectArgs, replaySelect } from './replay-select.js';
import { type WindowKeysArgs, windowKeys } from './window-keys.js';

type Maintained = Parameters<typeof optimize>[0];

export const STATEMENTS = {
  'compact-hour': (a: CompactHourArgs) => [compactHour(a)],
  'compact-objects': (a: CompactObjectsArgs) => [compactObjects(a)],
  'compact-legacy-hour': (a: CompactLegacyHourArgs) => [compactLegacyHour(a)],
  'fold-expected': (a: FoldExpectedArgs) => foldExpected(a),
  'count-table-hours': (a: CountTableHoursArgs) => [countTableHours(a)],
  'window-keys': (a: WindowKeysArgs) => [windowKeys(a)],
  'reconcile-full': (a: ReconcileFullArgs) => [reconcileFull(a)],
  'reconcile-window': (a: ReconcileWindowArgs) => [reconcileWindow(a)],
  'replay-select': (a: ReplaySelectArgs) => [replaySelect(a)],
  'erase-find-raw': (a: EraseFindRawArgs) => [eraseFindRaw(a)],
  'erase-find-history': (a: EraseFindHistoryArgs) => [eraseFindHistory(a)],
  'erase-history': (a: EraseRunArgs) => [eraseHistory(a)],
  'erase-expected': (a: EraseRunArgs) => [eraseExpected(a)],
  'detect-anomalies': (a: DetectAnomaliesArgs) => [detectAnomalies(a)],
  'detect-resnapshots': (a: DetectResnapshotsArgs) => [detectResnapshots(a)],
  'detect-orphans': (a: DetectOrphansArgs) => [detectOrphans(a)],
  optimize: (a: { table: Maintained; tables?: readonly string[] }) => [optimize(a.table, a.tables)],
  vacuum: (a: { table: Maintained }) => [vacuum(a.table)],
} as const satisfies Record<string, (args: never) => Statement[]>;

export type StatementName = keyof typeof STATEMENTS;
export type StatementArgs<N extends StatementName> = Parameters<(typeof STATEMENTS)[N]>[0];

/** The statements `name` runs, in order, for its arguments. */
export function buildStatements<N extends StatementName>(name: N, args: StatementArgs<N>): Statement[] {
  const build = STATEMENTS[name] as (a: StatementArgs<N>) => Statement[];
  return build(args);
}

export { compactHour, compactObjects, compactLegacyHour, foldExpected, countTableHours, windowKeys, reconcileFull, reconcileWindow, replaySelect, eraseFindRaw, eraseFindHistory, eraseHistory, eraseExpected, detectAnomalies, detectResnapshots, detectOrphans, optimize, vacuum };
export type { CompactHourArgs, CompactObjectsArgs, CompactLegacyHourArgs, FoldExpectedArgs, CountTableHoursArgs, WindowKeysArgs, ReconcileFullArgs, ReconcileWindowArgs, ReplaySelectArgs, EraseFindRawArgs, EraseFindHistoryArgs, EraseRunArgs, LegacyTable, DetectAnomaliesArgs, DetectResnapshotsArgs, DetectOrphansArgs };
export { anomalyOf, type AnomalyRow, SQL_ANOMALY_KINDS } from './detect-anomalies.js';
export { COUNTED_CLASSES, FINDING_CLASSES, type ReconcileClass } from './reconcile-classes.js';
export { FOLD_STEPS } from './fold-expected.js';
export type { TableKeys } from './common.js';
