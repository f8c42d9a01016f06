/**
 * compact-objects: `INSERT INTO history` the lines of given raw objects, for objects that landed in
 * an hour after it was compacted (a partial-batch retry; found by their `LastModified`).
 *
 * Invariant: as compact-hour, for exactly these objects: each line once, whatever ran before. An
 * object rewritten with the same content (same name) after its compaction adds nothing.
 *
 *   compactObjects({ objects: ['s3://raw/raw/dt=2026-11-30/hr=06/shardId-0-5-9-ab12.jsonl.gz'] })
 *   // … FROM raw_lines r LEFT JOIN (… history of those hours …) done … WHERE r.dt IN (?) AND r."$path" IN (?) AND done.raw_object IS NULL
 */
import { bindList, call, SqlArgumentError, sql } from '../sql.js';
import { insertStatement, type Statement } from '../statement.js';
import { dayOf, hourRange } from '../time.js';
import { alreadyCompacted, FROM_RAW_LINE, HISTORY_COLUMNS, selectList } from './compact-hour.js';

export interface CompactObjectsArgs {
  /** Raw object URIs, `s3://<bucket>/<raw prefix>dt=YYYY-MM-DD/hr=HH/<name>.jsonl.gz`. */
  readonly objects: readonly string[];
}

/** The hour start of a batch object's URI, from its `/dt=YYYY-MM-DD/hr=HH/` segments. */
export function objectHour(uri: string): number {
  const at = uri.length <= 4096 ? uri.lastIndexOf('/dt=') : -1;
  const dt = at >= 0 ? uri.slice(at + 4, at + 14) : '';
  const hr = at >= 0 && uri.slice(at + 14, at + 18) === '/hr=' ? uri.slice(at + 18, at + 20) : '';
  const start = Date.parse(`${dt}T${hr}:00:00.000Z`);
  if (!uri.startsWith('s3://') || Number.isNaN(start) || uri.charAt(at + 20) !== '/') throw new SqlArgumentError(`"${uri.slice(0, 120)}" is not a raw batch object (s3://…/dt=YYYY-MM-DD/hr=HH/…)`);
  return start;
}

export function compactObjects(args: CompactObjectsArgs): Statement {
  const objects = [...new Set(args.objects)];
  if (objects.length === 0) throw new SqlArgumentError('objects must name at least one raw object');
  const hours = objects.map(objectHour);
  const range = hourRange(
    hours.reduce((a, b) => Math.min(a, b)),
    hours.reduce((a, b) => Math.max(a, b)),
  );
  const days = [...new Set(hours.map(dayOf))];
  const query = sql`SELECT ${selectList(FROM_RAW_LINE)} FROM ${call((d) => d.table('raw_lines'))} r ${alreadyCompacted(range, FROM_RAW_LINE.source_table)} WHERE r.dt IN ${bindList(days, 'days')} AND r."$path" IN ${bindList(objects, 'objects')} AND done.raw_object IS NULL`;
  const dayRange = { from: range.from.dt, to: range.to.dt };
  return insertStatement('compact-objects', {
    into: 'history',
    columns: HISTORY_COLUMNS,
    query,
    filter: { days: dayRange },
    reads: [
      { table: 'raw_lines', filter: { objects } },
      { table: 'history', filter: { days: dayRange } },
    ],
  });
}
