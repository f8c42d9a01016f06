/**
 * `tidemark status` as text, within 100 columns: the facts of each table (state, phase, lag as
 * `4m05s`, last position in its source's notation), the contract counters marked `column` with
 * compact numbers (`12.3k`), the last error of a table in error, then the jobs' latest runs with
 * what they found and what `--repair` fixed.
 *
 *   table          state    phase      lag    last position    ordering
 *   public.orders  RUNNING  streaming  4m05s  LSN 0/1FB05C8    source
 *
 *   job        table          last run     mode    result
 *   reconcile  public.orders  12m00s ago   window  missing 1, stale 1: all 2 repaired
 */
import type { JsonObject } from '../../functions/core/json.js';
import { COUNTER_NAMES, COUNTERS, SCHEMA_ROW_PREFIX } from '../../functions/telemetry/contract.js';
import { LIFECYCLE, lifecycleOf } from '../../functions/core/lifecycle.js';
import { positionText } from './notation.js';
import { isSchemaRow } from './schema-status.js';
import { clip, type Column, humanDuration, renderTable, WIDTH } from './output.js';

const COUNTER_COLUMNS = COUNTER_NAMES.filter((c) => COUNTERS[c].column);
/** `tidemark status` shows these facts of each row: every contract counter marked `column` among them. */
export const STATUS_COLUMNS: readonly string[] = ['table', 'state', 'phase', ...COUNTER_COLUMNS, 'lagMs', 'ordering', 'lastPosition'];

/** Short headers, so that eleven counters and the table name fit 100 columns. */
const COUNTER_HEADERS: Readonly<Record<string, string>> = {
  received: 'recv',
  applied: 'applied',
  stale: 'stale',
  duplicates: 'dup',
  conflicts: 'confl',
  superseded: 'super',
  quarantined: 'quar',
  controls: 'ctrl',
  truncates: 'trunc',
  failed: 'failed',
  held: 'held',
  placeholders: 'plhd',
};

/** A count in at most 5 characters: 999, 12.3k, 456k, 7.8M. */
export function compactCount(n: unknown): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '-';
  const units: [number, string][] = [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [size, unit] of units) {
    if (n >= size) {
      const v = n / size;
      return `${v < 100 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)}${unit}`;
    }
  }
  return String(n);
}

/** The jobs' rows in the status table: `reconcile#<table>` (last run) and `snapshot#<table>` (open findings). */
function jobOf(table: string): { job: string; table: string } | null {
  for (const job of ['reconcile', 'snapshot']) if (table.startsWith(`${job}#`)) return { job, table: table.slice(job.length + 1) };
  return null;
}

/** What a reconcile run found, and what its repair left: `missing 1, stale 1: all 2 repaired`. */
export function reconcileResult(row: JsonObject): string {
  const f = row.findings;
  const counts = f !== null && typeof f === 'object' && !Array.isArray(f) ? Object.entries(f).filter(([, v]) => typeof v === 'number' && v > 0) : [];
  if (counts.length === 0) return 'clean';
  const found = counts.map(([k, v]) => `${k} ${String(v)}`).join(', ');
  const total = counts.reduce((n, [, v]) => n + Number(v), 0);
  const repaired = typeof row.repaired === 'number' ? row.repaired : 0;
  const failed = typeof row.repairFailed === 'number' ? row.repairFailed : 0;
  if (repaired === 0 && failed === 0) return found;
  if (repaired >= total) return `${found}: all ${total} repaired`;
  return `${found}: ${repaired} repaired, ${total - repaired} open${failed > 0 ? ` (${failed} repairs failed)` : ''}`;
}

function jobCells(row: JsonObject, job: string, table: string, now: number): string[] {
  const at = typeof row.lastRunAt === 'number' ? `${humanDuration(now - row.lastRunAt)} ago` : '-';
  let result = '-';
  if (job === 'reconcile') result = reconcileResult(row);
  else if (Array.isArray(row.openFindings)) result = row.openFindings.length === 0 ? 'clean' : row.openFindings.map(String).join(', ');
  return [job, table, at, typeof row.mode === 'string' ? row.mode : '-', result];
}

const text = (v: unknown): string => (v === undefined || v === null ? '-' : String(v));

/**
 * Lag over the last hour as p50/p99 bucket bounds (`2s/30s`, `>1d` above the last bucket), or the
 * last batch's highest lag where the row has no histogram yet.
 */
function lagText(r: JsonObject): string {
  const bound = (v: unknown) => (v === null ? '>1d' : humanDuration(Number(v)));
  if (r.lagP99Ms !== undefined) return `${bound(r.lagP50Ms)}/${bound(r.lagP99Ms)}`;
  return typeof r.lagMs === 'number' ? humanDuration(r.lagMs) : '-';
}

/** The state column: the lifecycle when the table is held (SUSPENDED, STOPPED for a table in error), else the last batch's state. */
function stateText(r: JsonObject): string {
  const lifecycle = lifecycleOf(r);
  if (lifecycle === 'suspended') return 'SUSPENDED';
  if (lifecycle === 'error') return 'STOPPED';
  return text(r.state);
}

/** One line per held table (since when, how many records it holds, why), then the commands that resume them. */
function heldLines(tables: readonly JsonObject[], now: number): string[] {
  const lines: string[] = [];
  const resume: Record<'suspended' | 'error', string[]> = { suspended: [], error: [] };
  for (const r of tables) {
    const lifecycle = lifecycleOf(r);
    if (lifecycle === 'running') continue;
    resume[lifecycle].push(`-t ${text(r.table)}`);
    const since = typeof r[LIFECYCLE.at] === 'number' ? ` ${humanDuration(now - (r[LIFECYCLE.at] as number))} ago` : '';
    const held = typeof r.held === 'number' && r.held > 0 ? `, ${compactCount(r.held)} records held` : '';
    const reason = typeof r[LIFECYCLE.reason] === 'string' ? `: ${r[LIFECYCLE.reason] as string}` : '';
    lines.push(clip(`${text(r.table)}: ${lifecycle === 'error' ? 'stopped in error' : 'suspended'}${since}${held}${reason}`, WIDTH));
  }
  if (resume.suspended.length > 0) lines.push(clip(`resume: tidemark resume ${resume.suspended.join(' ')}`, WIDTH));
  if (resume.error.length > 0) lines.push(clip(`once fixed: tidemark resume ${resume.error.join(' ')} --force`, WIDTH));
  return lines;
}

/** Options of {@link statusTable}. */
export interface StatusTextOptions {
  /** Kafka offsets or Kinesis sequence numbers, for transport positions. @default kinesis */
  readonly transport?: 'kinesis' | 'msk';
  readonly now?: number;
}

/** Renders status rows as text tables: facts, counters, errors, then the jobs' last runs. */
export function statusTable(rows: readonly JsonObject[], options: StatusTextOptions = {}): string {
  const now = options.now ?? Date.now();
  const tables: JsonObject[] = [];
  const jobs: string[][] = [];
  const drift: string[] = [];
  for (const r of rows) {
    if (isSchemaRow(r)) {
      const changes = Number(r.changes ?? 0);
      const incompatible = Number(r.incompatible ?? 0);
      if (changes > 0) drift.push(`${String(r.table).slice(SCHEMA_ROW_PREFIX.length)} ${changes} changes${incompatible > 0 ? ` (${incompatible} the target cannot hold)` : ''}`);
      continue;
    }
    const job = jobOf(String(r.table));
    if (job) jobs.push(jobCells(r, job.job, job.table, now));
    else tables.push(r);
  }
  const facts: Column[] = [{ header: 'table', flex: true }, { header: 'state' }, { header: 'phase' }, { header: 'lag 1h p50/p99', align: 'right' }, { header: 'last position', flex: true }, { header: 'ordering' }];
  const factRows = tables.map((r) => [
    text(r.table),
    stateText(r),
    text(r.phase),
    lagText(r),
    positionText(typeof r.lastPosition === 'string' ? r.lastPosition : null, { format: typeof r.format === 'string' ? r.format : undefined, ordering: typeof r.orderingStrength === 'string' ? r.orderingStrength : undefined, transport: options.transport ?? 'kinesis' }),
    r.orderingStrength === 'transport' ? 'transport (weak)' : text(r.orderingStrength),
  ]);
  const counters: Column[] = [{ header: 'table', flex: true }, ...COUNTER_COLUMNS.map((c): Column => ({ header: COUNTER_HEADERS[c] ?? c, align: 'right' }))];
  const counterRows = tables.map((r) => [text(r.table), ...COUNTER_COLUMNS.map((c) => compactCount(r[c] ?? 0))]);
  const parts = [renderTable(facts, factRows), renderTable(counters, counterRows)];
  const held = heldLines(tables, now);
  if (held.length > 0) parts.push(held.join('\n'));
  const errors = tables.filter((r) => r.state === 'ERROR' && r.lastError !== undefined);
  if (errors.length > 0) {
    parts.push(
      errors
        .map((r) => clip(`${text(r.table)}: last error${typeof r.lastErrorAt === 'number' ? ` ${humanDuration(now - r.lastErrorAt)} ago` : ''}: ${text(r.lastError)}`, WIDTH))
        .join('\n'),
    );
  }
  if (jobs.length > 0) parts.push(renderTable([{ header: 'job' }, { header: 'table', flex: true }, { header: 'last run' }, { header: 'mode' }, { header: 'result', flex: true }], jobs));
  if (drift.length > 0) parts.push(clip(`schema drift: ${drift.join(', ')} (tidemark status --schema)`, WIDTH));
  return parts.join('\n\n');
}
