/**
 * The job commands' options and help: replay, erase, reconcile, snapshot-check, history compact and history maintain. Like program.ts,
 * nothing behind them loads until one runs. Each runs the job's state machine definition in this
 * process (`--on local`, the default; needs the dev dependency aws-local-stepfunctions) or starts the
 * deployed one and waits for it (`--on aws`).
 *
 *   tidemark reconcile --cutoff-seconds abc
 *   → error: option '--cutoff-seconds <n>' argument 'abc' is invalid. must be an integer from 0 to 31536000
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { configOption, intIn, jsonOption, lazy } from './options.js';

const onOption = (job: string) =>
  new Option('--on <where>', `local: run the ${job} state machine's definition in this process; aws: start the deployed one and wait`).choices(['local', 'aws']).default('local');
const arnOption = (name: string) => new Option('--state-machine-arn <arn>', `with --on aws; default: the state machine named <pipeline>-${name}`);

function registerReplay(p: Command): void {
  p.command('replay')
    .description('re-apply raw into the live table or a fresh one (guarded writes, pre-read), or recover failed batches with --from-dlq')
    .addOption(configOption())
    .option('-t, --table <source...>', 'source tables to replay')
    .option('--all', 'every configured table')
    .option('--since <time>', 'landing time, inclusive (ISO-8601 or epoch ms)')
    .option('--until <time>', 'landing time, exclusive')
    .option('--from-position <pos>', 'lowest position, inclusive: a JSON array such as [1000,1002], or an encoded __pos')
    .option('--to-position <pos>', 'highest position, inclusive')
    .option('--keys <file>', 'JSON Lines of keys: {"table": …, "key": {…}} or bare key objects with one --table')
    .option('--into <target>', 'live, or fresh:<new table> (same key schema; verified by a full diff)', 'live')
    .option('--dry-run', 'show, per key, the stored position, the replayed winner and the action; write nothing')
    .option('--force', 'allow a live replay reaching records older than now - tombstoneTtlDays')
    .option('--from-dlq [file]', 'replay failed batches: the local on-failure file(s), plus --queue-url and the S3 on-failure prefix')
    .option('--queue-url <url>', 'the on-failure SQS queue (with --from-dlq)')
    .option('--on-failure-prefix <prefix>', 'S3 on-failure objects (with --from-dlq; default replay.onFailureBucket / replay.onFailurePrefix)')
    .addOption(onOption('replay'))
    .addOption(arnOption('replay'))
    .addOption(jsonOption())
    .action(lazy(() => import('./replay.js'), (m) => m.replayCommand));
}

function registerErase(p: Command): void {
  p.command('erase')
    .description('erase keys from current state, raw, history, quarantine, failed batches and reports, each recorded in the erase ledger; or --list it')
    .addOption(configOption())
    .option('-t, --table <source>', 'source table')
    .option('-k, --key <json>', 'key columns as JSON, e.g. \'{"id": 42}\'')
    .option('--keys-file <file>', 'many keys in one run: one JSON object a line, {"table", "key", "reason"?, "blockFuture"?}; each gets its own ledger entry and result line')
    .option('--reason <text>', 'why (kept in the ledger; never put values here); with --keys-file, for the lines that give none')
    .option('--block-future', 'hold the key above every position: refuse all its future arrivals, found or not')
    .option('--list', 'list the ledger: table, keyed hash, position, time, reason')
    .addOption(onOption('erase'))
    .addOption(arnOption('erase'))
    .addOption(jsonOption())
    .action(lazy(() => import('./erase.js'), (m) => m.eraseCommand));
}

function registerReconcile(p: Command): void {
  p.command('reconcile')
    .description('diff raw (folded per key) against the current-state tables through the reconcile state machine')
    .addOption(configOption())
    .addOption(new Option('--mode <mode>', 'window: recent raw, its keys only; full: all raw and every row').choices(['window', 'full']).default('window'))
    .option('--hours <n>', 'window mode: hours of raw before the cutoff, 1-8784', intIn(1, 8784))
    .option('--since <iso>', 'window mode: keys touched by raw that arrived from this time')
    .option('--until <iso>', 'window mode: … up to this time (default: now)')
    .option('-t, --table <source...>', 'only these source tables')
    .option('--repair', 're-apply raw’s winning events for missing, stale and deleted-live keys through the guarded writer')
    .option('--manifest <file|s3-uri>', 'key-set manifest (JSON Lines of {"table", "key"}) to diff live keys against')
    .option('--cutoff-seconds <n>', 'leave raw stored and rows applied within this many seconds alone, 0-31536000 (default: jobs.reconcile.cutoffSeconds)', intIn(0, 31_536_000))
    .option('--run-id <id>', 'name of the run (report prefix)')
    .addOption(onOption('reconcile'))
    .addOption(arnOption('reconcile'))
    .addOption(jsonOption())
    .action(lazy(() => import('./reconcile.js'), (m) => m.reconcileCommand));
}

function registerSnapshotCheck(p: Command): void {
  p.command('snapshot-check')
    .description('detect re-snapshots, orphans after a complete snapshot and anomalies, through the snapshot state machine')
    .addOption(configOption())
    .option('-t, --table <source...>', 'only these source tables')
    .option('--apply', 'tombstone orphan rows at the snapshot’s position through the guarded writer')
    .option('--hours <n>', 'hours of raw to look for snapshots in, 1-8784', intIn(1, 8784))
    .option('--run-id <id>', 'name of the run (report prefix)')
    .addOption(onOption('snapshot'))
    .addOption(arnOption('snapshot'))
    .addOption(jsonOption())
    .action(lazy(() => import('./snapshot-check.js'), (m) => m.snapshotCheckCommand));
}

/** A commander parser collecting `--hour` values as epoch ms. */
export function hourOption(value: string, previous: number[] = []): number[] {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`must be an ISO 8601 time (2026-11-30T06:00:00Z), got "${value}"`);
  return [...previous, ms];
}

function registerHistory(p: Command): void {
  const history = p.command('history').description('the compacted history table (docs/history.md)');
  history
    .command('compact')
    .description('compact raw into the history table, fold it into expected state, count it per table and hour; delete raw past its grace')
    .addOption(configOption())
    .option('--closed-only', 'only hours closed for 80 minutes, as the deployed schedule does (default: up to now)')
    .option('--hour <iso...>', 'compact these hours again, whatever the frontier says', hourOption)
    .addOption(jsonOption())
    .action(lazy(() => import('./history.js'), (m) => m.historyCompactCommand));
  history
    .command('maintain')
    .description('OPTIMIZE (bin-pack) then VACUUM each Iceberg table, as the daily schedule does (locally: nothing to run on DuckDB)')
    .addOption(configOption())
    .addOption(new Option('-t, --table <iceberg table...>', 'only these tables').choices(['history', 'expected_state', 'truncates', 'table_hours']))
    .addOption(onOption('maintenance'))
    .addOption(arnOption('maintenance'))
    .addOption(jsonOption())
    .action(lazy(() => import('./history.js'), (m) => m.historyMaintainCommand));
}


function registerLifecycle(p: Command): void {
  p.command('suspend')
    .description('stop applying tables (their records still land in raw), or with --pipeline disable the deployed event source mappings')
    .addOption(configOption())
    .option('-t, --table <source...>', 'tables to suspend')
    .option('--all', 'every configured table')
    .option('--pipeline', 'the whole deployed pipeline: disable its event source mappings (with --on aws)')
    .option('--reason <text>', 'why (kept in the status row; never put values here)')
    .addOption(new Option('--on <where>', 'local or aws (only --pipeline needs aws)').choices(['local', 'aws']).default('local'))
    .addOption(jsonOption())
    .action(lazy(() => import('./lifecycle.js'), (m) => m.suspendCommand));
  p.command('resume')
    .description('apply suspended tables again: back to live apply, then what they held replayed from raw (a table in error needs --force)')
    .addOption(configOption())
    .option('-t, --table <source...>', 'tables to resume')
    .option('--all', 'every configured table')
    .option('--pipeline', 'the whole deployed pipeline: enable its event source mappings (with --on aws)')
    .option('--force', 'resume a table in error (after fixing its cause); also lets the catch-up reach records older than tombstoneTtlDays')
    .option('--no-catch-up', 'only return to live apply; print the replay command for what was held')
    .option('--settle-seconds <n>', 'wait before the catch-up replay, 0-3600 (default: ingest.statusMaxAgeSeconds + 5)', intIn(0, 3600))
    .addOption(onOption('replay'))
    .addOption(arnOption('replay'))
    .addOption(jsonOption())
    .action(lazy(() => import('./lifecycle.js'), (m) => m.resumeCommand));
}

/** Adds the job commands, and suspend and resume (whose catch-up is a replay). */
export function registerJobCommands(p: Command): void {
  registerLifecycle(p);
  registerReplay(p);
  registerErase(p);
  registerReconcile(p);
  registerSnapshotCheck(p);
  registerHistory(p);
}
