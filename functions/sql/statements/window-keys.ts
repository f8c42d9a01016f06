/**
 * window-keys: the distinct keys whose changes arrived in a range of compacted hours, with their key
 * JSON: what window reconcile fetches from DynamoDB (BatchGetItem) before reconcile-window.
 *
 * Invariant: exactly the (table, key) pairs with at least one keyed change in history in those
 * hours, each once; the same set reconcile-window classifies.
 *
 *   windowKeys({ tables: ['public.orders'], from: h0, to: h2, output: 's3://…/keys/' })
 *   // SELECT h.source_table, h.key_id, max(h.key_json) AS key_json FROM history h WHERE … GROUP BY h.source_table, h.key_id
 */
import { WINDOW_KEYS } from '../schemas.js';
import { bindList, call, sql } from '../sql.js';
import { selectStatement, type Statement } from '../statement.js';
import { hourRange } from '../time.js';
import { historyHours, keyedChange, tableList } from './common.js';

export interface WindowKeysArgs {
  readonly tables: readonly string[];
  /** First and last compacted hour, hour starts (epoch ms), inclusive. */
  readonly from: number;
  readonly to: number;
  /** An `s3://` prefix to UNLOAD the keys to; absent: a plain SELECT. */
  readonly output?: string;
}

export function windowKeys(args: WindowKeysArgs): Statement {
  const tables = tableList(args.tables);
  const range = hourRange(args.from, args.to);
  const query = sql`SELECT h.source_table, h.key_id, max(h.key_json) AS key_json FROM ${call((d) => d.table('history'))} h WHERE h.source_table IN ${bindList(tables, 'tables')} AND ${historyHours(sql`h`, range)} AND ${keyedChange(sql`h`)} GROUP BY h.source_table, h.key_id ORDER BY h.source_table, h.key_id`;
  return selectStatement('window-keys', query, {
    reads: [{ table: 'history', filter: { tables, days: { from: range.from.dt, to: range.to.dt } } }],
    columns: WINDOW_KEYS.columns,
    ...(args.output !== undefined ? { output: { location: args.output, partitionedBy: [] } } : {}),
  });
}
