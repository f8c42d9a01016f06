/**
 * `tidemark plan`: the dry run, no AWS. Plans a file as one batch and shows the state each key
 * must hold, keys sorted by their column types, positions in their source's notation, and the
 * rejected lines with where `apply` would quarantine them. `--strict` exits 1 when a line was
 * rejected. `--json`: one line per key (encoded positions), one per rejected line, then the summary.
 *
 *   tidemark plan -i changes.jsonl
 *   public.customers  id=1   c  LSN 0/1FB05C8  {"id":1,"name":"Anne","bio":"A"}
 *   plan: 3 messages, 2 keys, 2 writes; 1 rejected line (apply would quarantine it under s3://shop-raw/quarantine/)
 */
import type { TidemarkConfig } from '../../../lib/config/config.js';
import type { InputShape } from '../input.js';
import { config as loadConfig } from '../context.js';
import { clip, type Column, out, renderTable, summaryLine, WIDTH } from '../output.js';
import { compareKeys, keyText, positionText } from '../notation.js';
import { type PlanEntry, type PlanReport, runPlan } from '../plan.js';

interface PlanOptions {
  readonly config: string;
  readonly input: string;
  readonly inputShape: InputShape;
  readonly strict?: boolean;
  readonly json?: boolean;
}

const COLUMNS: readonly Column[] = [{ header: 'table' }, { header: 'key', flex: true }, { header: 'op' }, { header: 'position', flex: true }, { header: 'row', flex: true }];

function printHuman(report: PlanReport, cfg: TidemarkConfig, entries: readonly PlanEntry[], quarantine: string): void {
  const tables = new Map(cfg.tables.map((t) => [t.source, t]));
  const transport = cfg.source.type === 'msk' ? 'msk' : 'kinesis';
  const rows = entries.map((e) => {
    const t = tables.get(e.table);
    const f = report.formats[e.table];
    const row = e.deleted ? '(deleted)' : JSON.stringify(e.row);
    return [e.table, t ? keyText(t, e.key) : JSON.stringify(e.key), e.op, positionText(e.position, { format: f?.format, ordering: f?.ordering, transport }), row];
  });
  if (rows.length > 0) out(renderTable(COLUMNS, rows));
  for (const p of report.problems) out(clip(`line ${p.line}: ${p.reason}`, WIDTH));
  const s = report.stats;
  out(`plan: ${s.messages} messages, ${s.keys} keys, ${s.writes} writes (${s.superseded} superseded, ${s.duplicates} duplicates, ${s.conflicts} conflicts, ${s.controls} controls)`);
  const rejected = report.problems.length;
  out(rejected === 0 ? 'plan: no line rejected' : `plan: ${rejected} line${rejected > 1 ? 's' : ''} rejected (reasons above, in full with --json); apply quarantines undecodable records under ${quarantine}`);
}

export function planCommand(o: PlanOptions): void {
  const cfg = loadConfig(o.config);
  const report = runPlan(cfg, o.input, o.inputShape);
  const quarantine = `s3://${cfg.raw.bucket}/${cfg.raw.quarantinePrefix}`;
  const tables = new Map(cfg.tables.map((t) => [t.source, t]));
  const entries = [...report.entries].sort((a, b) => {
    if (a.table !== b.table) return a.table < b.table ? -1 : 1;
    const t = tables.get(a.table);
    return t ? compareKeys(t, a.key, b.key) : 0;
  });
  const rejected = report.problems.length;
  const exitCode = o.strict && rejected > 0 ? 1 : 0;
  if (o.json) {
    for (const e of entries) out(JSON.stringify(e));
    for (const p of report.problems) out(JSON.stringify({ rejected: true, line: p.line, reason: p.reason }));
    out(summaryLine({ command: 'plan', input: o.input, ...report.stats, quarantine, exitCode }));
  } else {
    printHuman(report, cfg, entries, quarantine);
  }
  process.exitCode = exitCode;
}
