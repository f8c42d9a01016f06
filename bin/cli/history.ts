/**
 * `tidemark history compact`: runs the compaction state machine locally (the deployed ASL): the
 * hours of raw up to now (or only the closed ones, as the schedule does on AWS) into the history
 * table, folded into expected state and counted per table and hour; raw past its grace deleted.
 * Every other job runs it first, so it is only needed to compact without running a job.
 *
 * Exit codes: 0 done, 2 the run failed. `--json` prints the summary as one line.
 *
 *   tidemark history compact --closed-only
 */
import type { CompactionRequest } from '../../functions/jobs/history/compaction.js';
import { clients, config } from './context.js';
import { jobProgress } from './job-run.js';
import { compactLocally } from './jobs-local.js';
import { out, summaryLine } from './output.js';

/** The options of `tidemark history compact` as commander parses them. */
interface CompactOptions {
  readonly config: string;
  readonly closedOnly?: boolean;
  readonly hour?: number[];
  readonly json?: boolean;
}

/** The compaction request of the options: given hours again, else up to now (or the closed hours only). */
export function compactionRequestOf(o: Pick<CompactOptions, 'closedOnly' | 'hour'>): CompactionRequest {
  return o.hour && o.hour.length > 0 ? { hours: o.hour } : { throughNow: o.closedOnly !== true };
}

/** `tidemark history compact`: run compaction here, print its summary. */
export async function historyCompactCommand(o: CompactOptions): Promise<void> {
  const cfg = config(o.config);
  const c = await clients(cfg);
  const bar = jobProgress('history compact', o.json === true);
  let summary: Awaited<ReturnType<typeof compactLocally>>;
  try {
    summary = await compactLocally(cfg, c, compactionRequestOf(o), { onProgress: bar.onEvent });
  } finally {
    bar.stop();
  }
  if (o.json) {
    out(summaryLine({ command: 'history compact', ...summary }));
    return;
  }
  const through = summary.compactedThrough === null ? 'nothing yet' : new Date(summary.compactedThrough).toISOString();
  out(`history compact ${summary.runId}: ${summary.hours.length} hours, ${summary.lateObjects} late objects in ${summary.lateHours} hours, ${summary.queries} queries`);
  out(`  compacted through ${through}; ${summary.rawDeleted} raw objects deleted past the grace`);
}
