/** `tidemark`: the command line. Every command reads the one validated config file. */
import { Command, InvalidArgumentError, Option } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { ConfigError, errorMessage } from '../../functions/core/errors.js';
import { parseJson, isJsonObject } from '../../functions/core/json.js';
import { envExports, localDown, localStatus, localUp } from '../local/emulators.js';
import { provision, streamNameOf } from '../local/provision.js';
import { runApply } from './apply.js';
import { clients, config, LOCAL_DIR, localDeps, STATE_DIR } from './context.js';
import { runDemo } from './demo.js';
import { runPlan } from './plan.js';
import { runPoller } from './runner.js';
import { registerReplay } from './replay.js';
import { registerErase } from './erase.js';
import { registerReconcile } from './reconcile.js';
import { registerSnapshotCheck } from './snapshot-check.js';
import { registerHistory } from './history.js';
import { getRow, scanTable, statusRows, statusTable, stringifyJson, tableOrThrow } from './state.js';

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);
const configOption = () => new Option('-c, --config <file>', 'pipeline config').default('tidemark.config.json');
const shapeOption = () => new Option('--input-shape <shape>', 'value: one message per line; record: {key, value, topic}').choices(['value', 'record']).default('value');

/** A commander parser for an integer option within [min, max] (the mapping's own limits). */
const intIn =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };

function summaryLine(s: Record<string, number>): string {
  const keys = ['records', 'applied', 'stale', 'superseded', 'duplicates', 'conflicts', 'quarantined', 'failed', 'writeUnits', 's3Puts'];
  return keys.map((k) => `${k}=${s[k] ?? 0}`).join(' ');
}

export function program(): Command {
  const p = new Command('tidemark').description('Serverless CDC: Kinesis/MSK → S3 raw + position-guarded DynamoDB current state').showHelpAfterError();

  p.command('plan')
    .description('dry run: plan a JSON Lines file as one batch and print the state each key must hold')
    .addOption(configOption())
    .requiredOption('-i, --input <file>', 'JSON Lines of messages')
    .addOption(shapeOption())
    .action((o) => {
      const report = runPlan(config(o.config), o.input, o.inputShape);
      for (const line of report.lines) out(line);
      for (const pr of report.problems) err(`line ${pr.line}: ${pr.reason}`);
      err(`plan: ${Object.entries(report.stats).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    });

  const local = p.command('local').description('embedded AWS emulators as local processes (DynamoDB Local, kinesalite, s3rver)');
  local.command('up').description('start them in the background (idempotent)').action(async () => {
    const state = await localUp(LOCAL_DIR, {}, (l) => err(l));
    err(state.alreadyRunning ? 'tidemark: local emulators already running' : 'tidemark: local emulators started');
    out(envExports(state.endpoints));
  });
  local.command('env').description('print export lines for the AWS SDK environment').action(async () => {
    const status = await localStatus(LOCAL_DIR);
    if (!status.running || !status.state) throw new Error('local emulators are not running: run `npx tidemark local up`');
    out(envExports(status.state.endpoints));
  });
  local.command('down').description('stop them').action(async () => {
    err((await localDown(LOCAL_DIR)) ? 'tidemark: local emulators stopped' : 'tidemark: local emulators were not running');
  });

  p.command('provision')
    .description('create the stream, tables (with TTL) and bucket on the current endpoints; idempotent')
    .addOption(configOption())
    .action(async (o) => {
      const cfg = config(o.config);
      const report = await provision(cfg, await clients(cfg), { log: (l) => err(l) });
      for (const r of report.resources) out(`${r.action.padEnd(8)} ${r.kind.padEnd(7)} ${r.name}${r.detail ? ` (${r.detail})` : ''}`);
    });

  p.command('apply')
    .description('push a file of messages through the ingest handler in Kinesis-shaped batches')
    .addOption(configOption())
    .requiredOption('-i, --input <file>', 'JSON Lines of messages')
    .addOption(shapeOption())
    .option('--batch-size <n>', 'records per batch', (v) => Number.parseInt(v, 10), 500)
    .action(async (o) => {
      const cfg = config(o.config);
      const bar = new SingleBar({ format: 'apply [{bar}] {value}/{total} {stats}', stream: process.stderr, hideCursor: true }, Presets.shades_classic);
      let started = false;
      const result = await runApply(localDeps(cfg, await clients(cfg)), {
        path: o.input,
        shape: o.inputShape,
        batchSize: o.batchSize,
        maxRetries: cfg.ingest.retryAttempts,
        onBatch: (done, total, totals) => {
          if (!started) bar.start(total, 0, { stats: '' });
          started = true;
          bar.update(done, { stats: summaryLine(totals as unknown as Record<string, number>) });
        },
      });
      if (started) bar.stop();
      for (const pr of result.problems) err(`line ${pr.line}: ${pr.reason}`);
      out(stringifyJson({ ...result.totals, inputProblems: result.problems.length, retries: result.retries }));
    });

  p.command('run')
    .description('poll every shard of the stream and apply batches like the Lambda event source mapping: a batch goes when it holds --batch-size records, its window has passed, or one more record would take the event past 6 MB')
    .addOption(configOption())
    .option('--until-idle', 'stop once every shard has been empty for a few polls')
    .option('--batch-size <n>', 'records per invocation at most, 1-10000 (default: ingest.batchSize)', intIn(1, 10_000))
    .option('--max-batching-window <ms>', 'how long to gather records after the first one of a batch, 0-300000 (default: ingest.maxBatchingWindowSeconds)', intIn(0, 300_000))
    .action(async (o) => {
      const cfg = config(o.config);
      const c = await clients(cfg);
      const controller = new AbortController();
      process.once('SIGINT', () => controller.abort());
      const bar = new SingleBar({ format: 'run {stats}', stream: process.stderr }, Presets.shades_classic);
      bar.start(0, 0, { stats: 'waiting for records…' });
      const totals = await runPoller({
        kinesis: c.kinesis,
        deps: localDeps(cfg, c),
        streamName: streamNameOf(cfg),
        stateDir: STATE_DIR,
        batchSize: o.batchSize ?? cfg.ingest.batchSize,
        maxBatchingWindowMs: o.maxBatchingWindow ?? cfg.ingest.maxBatchingWindowSeconds * 1000,
        maxRetries: cfg.ingest.retryAttempts,
        stopWhenIdle: o.untilIdle ? 5 : undefined,
        signal: controller.signal,
        onBatch: (_shard, _s, t) => bar.update(t.records, { stats: summaryLine(t as unknown as Record<string, number>) }),
      });
      bar.stop();
      out(stringifyJson(totals));
    });

  p.command('scan')
    .description('print current state of a table as JSON Lines (tombstones only with --include-deleted)')
    .addOption(configOption())
    .requiredOption('-t, --table <source>', 'source table, e.g. public.orders')
    .option('--include-deleted', 'also print tombstones')
    .action(async (o) => {
      const cfg = config(o.config);
      const c = await clients(cfg);
      const table = tableOrThrow(cfg, o.table);
      const wm = (await statusRows(c.dynamodb, cfg)).find((r) => r.table === o.table)?.truncateWatermark;
      for await (const row of scanTable(c.dynamodb, table, Boolean(o.includeDeleted), typeof wm === 'string' ? wm : undefined)) out(stringifyJson(row));
    });

  p.command('get')
    .description('print one row by key')
    .addOption(configOption())
    .requiredOption('-t, --table <source>', 'source table')
    .requiredOption('-k, --key <json>', 'key columns as JSON, e.g. \'{"order_id": 7}\'')
    .action(async (o) => {
      const cfg = config(o.config);
      const key = parseJson(o.key);
      if (!isJsonObject(key)) throw new Error('--key must be a JSON object of key columns');
      const row = await getRow((await clients(cfg)).dynamodb, tableOrThrow(cfg, o.table), key);
      if (!row) {
        err('no row for that key');
        process.exitCode = 1;
        return;
      }
      out(stringifyJson(row));
    });

  p.command('status')
    .description('status rows per (pipeline, table)')
    .addOption(configOption())
    .option('--json', 'print JSON')
    .action(async (o) => {
      const cfg = config(o.config);
      const rows = await statusRows((await clients(cfg)).dynamodb, cfg);
      if (o.json) for (const r of rows) out(stringifyJson(r));
      else out(statusTable(rows));
    });

  p.command('demo')
    .description('start embedded emulators, stream a Debezium PostgreSQL workload through Kinesis and apply it')
    .option('--keep', 'leave the emulators running afterwards')
    .action(async (o) => {
      await runDemo({ keep: Boolean(o.keep) });
    });
  registerReplay(p);
  registerErase(p);
  registerReconcile(p);
  registerSnapshotCheck(p);
  registerHistory(p);
  return p;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof ConfigError) err(`tidemark: ${e.message}`);
    else err(`tidemark: ${errorMessage(e)}`);
    return 1;
  }
}
