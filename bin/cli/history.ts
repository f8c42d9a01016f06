/**
 * `tidemark history compact`: runs the compaction state machine locally (the deployed ASL): the
 * hours of raw up to now (or only the closed ones, as the schedule does on AWS) into the history
 * table, folded into expected state and counted per table and hour; raw past its grace deleted.
 * Every other job runs it first, so it is only needed to compact without running a job.
 *
 * Exit codes: 0 done, 2 the run failed. `--json` prints the summary as one line.
 */
import { type Command, Option } from 'commander';
import type { CompactionRequest } from '../../functions/jobs/history/compaction.js';
import { clients, config } from './context.js';
import { compactLocally } from './jobs-local.js';
import { asJob, progressPrinter } from './reconcile.js';

function hourOption(value: string, previous: number[] = []): number[] {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new Error(`--hour must be an ISO 8601 time, got "${value}"`);
  return [...previous, ms];
}

export function registerHistory(p: Command): void {
  const history = p.command('history').description('the compacted history table (docs/history.md)');
  history
    .command('compact')
    .description('compact raw into the history table, fold it into expected state, count it per table and hour; delete raw past its grace')
    .addOption(new Option('-c, --config <file>', 'pipeline config').default('tidemark.config.json'))
    .option('--closed-only', 'only hours closed for 80 minutes, as the deployed schedule does (default: up to now)')
    .option('--hour <iso...>', 'compact these hours again, whatever the frontier says', hourOption)
    .option('--json', 'print the summary as one JSON line')
    .action((o) =>
      asJob('history compact', async () => {
        const cfg = config(o.config);
        const c = await clients(cfg);
        const request: CompactionRequest = o.hour ? { hours: o.hour } : { throughNow: o.closedOnly !== true };
        const summary = await compactLocally(cfg, c, request, { onProgress: progressPrinter((l) => process.stderr.write(`history compact: ${l}\n`)) });
        if (o.json) process.stdout.write(`${JSON.stringify({ command: 'history compact', ...summary })}\n`);
        else {
          const through = summary.compactedThrough === null ? 'nothing yet' : new Date(summary.compactedThrough).toISOString();
          process.stdout.write(`history compact ${summary.runId}: ${summary.hours.length} hours, ${summary.lateObjects} late objects in ${summary.lateHours} hours, ${summary.queries} queries; compacted through ${through}; ${summary.rawDeleted} raw objects deleted past the grace\n`);
        }
      }),
    );
}
