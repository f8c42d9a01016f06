/**
 * compact-legacy-hour: `INSERT INTO history` one table's lines of one hour of raw in the first
 * layout (`<raw>table=<segment>/dt=…/hr=…/`, raw_events), which carries neither key ids nor hashes.
 *
 * Invariant: as compact-hour, for the first layout: each line of the table once. `key_id` is
 * rebuilt from the key JSON and the table's key columns exactly as keyId (functions/core/keys.ts)
 * writes it (`["7","A"]`: each value's text, in column order); `hash`, `before_null` and `partial`
 * are unknown (null), so reconcile cannot see a mismatch at a position only such lines hold. A
 * number key with a fraction (`1.50`) reads back as both engines print it (`1.5`): such keys
 * should be compacted from the batch layout.
 *
 *   compactLegacyHour({ table: 'public.orders', segments: ['public.orders'], key: ['id'], hour })
 *   // … FROM raw_events r … WHERE r.source_table IN (?) AND r.dt = ? AND r.hr = ? AND COALESCE(r."table", '') = ? …
 */
import type { ColumnName, HISTORY } from '../schemas.js';
import { bind, bindList, call, type Sql, sql } from '../sql.js';
import { insertStatement, type Statement } from '../statement.js';
import { hourOf } from '../time.js';
import { rawHours } from './common.js';
import { alreadyCompacted, FROM_RAW_LINE, HISTORY_COLUMNS, selectList } from './compact-hour.js';

export interface CompactLegacyHourArgs {
  /** The source table, as lines name it; '' for the control messages (segment `_control`). */
  readonly table: string;
  /** The table's path segments, in both encodings (functions/adapters/raw-layout.ts tableSegments). */
  readonly segments: readonly string[];
  /** The table's key columns, in order (config `tables[].key`); empty for controls. */
  readonly key: readonly string[];
  readonly hour: number;
}

type HistoryColumn = ColumnName<typeof HISTORY>;

function legacyMapping(key: readonly string[]): Readonly<Record<HistoryColumn, Sql>> {
  const keyId = key.length === 0 ? sql`CAST(NULL AS VARCHAR)` : sql`CASE WHEN r.kind = 'change' AND r."key" IS NOT NULL THEN ${call((d) => d.keyIdOfJson(sql`r."key"`, key))} END`;
  return {
    ...FROM_RAW_LINE,
    key_id: keyId,
    hash: sql`CAST(NULL AS VARCHAR)`,
    arrival_ts: sql`r.transport.arrivalTime`,
    before_null: sql`CAST(NULL AS BOOLEAN)`,
    partial: sql`CAST(NULL AS BOOLEAN)`,
  };
}

export function compactLegacyHour(args: CompactLegacyHourArgs): Statement {
  const hour = hourOf(args.hour);
  const range = { from: hour, to: hour };
  const mapping = legacyMapping(args.key);
  const query = sql`SELECT ${selectList(mapping)} FROM ${call((d) => d.table('raw_events'))} r ${alreadyCompacted(range, mapping.source_table)} WHERE r.source_table IN ${bindList(args.segments, 'segments')} AND ${rawHours(sql`r`, range)} AND COALESCE(r."table", '') = ${bind(args.table)} AND done.raw_object IS NULL`;
  const days = { from: hour.dt, to: hour.dt };
  return insertStatement('compact-legacy-hour', {
    into: 'history',
    columns: HISTORY_COLUMNS,
    query,
    filter: { days },
    reads: [
      { table: 'raw_events', filter: { segments: args.segments, hours: { from: hour.start, to: hour.start } } },
      { table: 'history', filter: { days } },
    ],
  });
}
