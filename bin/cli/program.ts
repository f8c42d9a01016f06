/**
 * Every `tidemark` command, its options and its help, with nothing behind them loaded yet: each
 * action imports its command module when it runs, so `tidemark --help` (and a typo) costs commander
 * and this file only. Numeric options are checked with their range before anything starts.
 *
 *   tidemark apply -i changes.jsonl --batch-size 0
 *   → error: option '--batch-size <n>' argument '0' is invalid. must be an integer from 1 to 10000
 */
import { Command, Option } from 'commander';
import { registerJobCommands } from './program-jobs.js';
import { configOption, intIn, jsonOption, lazy, shapeOption } from './options.js';

const inputOption = () => new Option('-i, --input <file>', 'JSON Lines of messages').makeOptionMandatory();
const strictOption = () => new Option('--strict', 'exit 1 when any line was rejected (quarantined, or not a record)');

function registerIngest(p: Command): void {
  p.command('plan')
    .description('dry run, no AWS: plan a JSON Lines file as one batch and show the state each key must hold')
    .addOption(configOption())
    .addOption(inputOption())
    .addOption(shapeOption())
    .addOption(strictOption())
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/plan.js'), (m) => m.planCommand));

  p.command('apply')
    .description('push a file of messages through the ingest handler in Kinesis-shaped batches')
    .addOption(configOption())
    .addOption(inputOption())
    .addOption(shapeOption())
    .option('--batch-size <n>', 'records per batch, 1-10000', intIn(1, 10_000), 500)
    .addOption(strictOption())
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/ingest.js'), (m) => m.applyCommand));

  p.command('put')
    .description('write a file of messages onto the configured Kinesis stream (embedded or AWS), for `tidemark run` to read')
    .addOption(configOption())
    .addOption(inputOption())
    .option('--partition-key <column>', 'partition key: the message key, or this field of each message (default: a hash of the line)')
    .option('--stream <name>', 'stream name (default: the config source.streamName, else <name>-cdc)')
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/ingest.js'), (m) => m.putCommand));

  p.command('run')
    .description('poll every shard and apply batches like the Lambda event source mapping (batch size, batching window, 6 MB)')
    .addOption(configOption())
    .option('--until-idle', 'stop once every shard has been empty for a few polls')
    .option('--batch-size <n>', 'records per invocation at most, 1-10000 (default: ingest.batchSize)', intIn(1, 10_000))
    .option('--max-batching-window <ms>', 'gather records this long after a batch’s first one, 0-300000 (default: ingest.maxBatchingWindowSeconds)', intIn(0, 300_000))
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/ingest.js'), (m) => m.runCommand));
}

function registerState(p: Command): void {
  p.command('scan')
    .description('show the current state of a table (tombstones only with --include-deleted)')
    .addOption(configOption())
    .requiredOption('-t, --table <source>', 'source table, e.g. public.orders')
    .option('--include-deleted', 'also show tombstones')
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/read.js'), (m) => m.scanCommand));

  p.command('get')
    .description('show one row by key (exit 1 when there is none)')
    .addOption(configOption())
    .requiredOption('-t, --table <source>', 'source table')
    .requiredOption('-k, --key <json>', 'key columns as JSON, e.g. \'{"order_id": 7}\'')
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/read.js'), (m) => m.getCommand));

  p.command('status')
    .description('status per table (state, counts, lag, position) and the jobs’ latest results')
    .addOption(configOption())
    .option('--schema', "each table's columns and schema drift: additions, removals, type changes, with their positions")
    .option('-t, --table <source>', 'with --schema: only this table')
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/read.js'), (m) => m.statusCommand));

  p.command('status-migrate')
    .description('move the status rows from layout 1 (one partition per pipeline) to layout 2 (one per table); repeatable, nothing lost or counted twice')
    .addOption(configOption())
    .option('--dry-run', 'count what would move, write nothing')
    .option('--delete-old', 'also delete layout-1 rows whose counters have all been moved')
    .action(lazy(() => import('./status-migrate.js'), (m) => m.statusMigrateCommand));
}

function registerLocal(p: Command): void {
  const local = p.command('local').description('embedded AWS emulators as local processes (DynamoDB Local, kinesalite, s3rver; dev dependencies)');
  const ports = (c: Command) =>
    c
      .option('--dynamodb-port <port>', 'DynamoDB Local port (default 8000)', intIn(1, 65_535))
      .option('--kinesis-port <port>', 'kinesalite port (default 4567)', intIn(1, 65_535))
      .option('--s3-port <port>', 's3rver port (default 4569)', intIn(1, 65_535));
  ports(local.command('up').description('start them in the background (idempotent); prints the export lines')).action(
    lazy(() => import('./commands/local.js'), (m) => m.localUpCommand),
  );
  local.command('env').description('print export lines for the AWS SDK environment').action(lazy(() => import('./commands/local.js'), (m) => m.localEnvCommand));
  local.command('down').description('stop them (also those `npm start -- --keep` left running)').action(lazy(() => import('./commands/local.js'), (m) => m.localDownCommand));

  p.command('provision')
    .description('create the stream, tables (with TTL) and bucket on the current endpoints; idempotent')
    .addOption(configOption())
    .addOption(jsonOption())
    .action(lazy(() => import('./commands/local.js'), (m) => m.provisionCommand));

  p.command('demo')
    .description('start embedded emulators, stream a Debezium PostgreSQL workload through Kinesis and apply it')
    .option('--keep', 'leave the emulators running afterwards, reachable from this shell (stop them with `tidemark local down`)')
    .action(lazy(() => import('./commands/local.js'), (m) => m.demoCommand));
}

/** The whole command line. */
export function program(): Command {
  const p = new Command('tidemark')
    .description('Serverless CDC: Kinesis/MSK → S3 raw + position-guarded DynamoDB current state')
    .option('--verbose', 'print the stack of an error')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  registerIngest(p);
  registerState(p);
  registerJobCommands(p);
  registerLocal(p);
  return p;
}
