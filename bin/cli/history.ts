/**
 * `tidemark history compact`: runs the compaction state machine locally (the deployed ASL): the
 * hours of raw up to now (or only the closed ones, as the schedule does on AWS) into the history
 * table, folded into expected state and counted per table and hour; raw past its grace deleted.
 * Every other job runs it first, so it is only needed to compact without running a job.
 *
 * `tidemark history maintain`: runs the table-maintenance state machine (OPTIMIZE, then VACUUM, of
 * each Iceberg table), as its daily schedule does: `--on aws` starts the deployed one and waits;
 * locally (the default) the same definition runs, and since the DuckDB dialect has no form for
 * either statement (the Parquet stand-in keeps no snapshots and rewrites whole files), it completes
 * having run nothing, and says so.
 *
 * Exit codes: 0 done, 2 the run failed. `--json` prints the summary as one line.
 *
 *   tidemark history compact --closed-only
 *   tidemark history maintain --on aws [--table history expected_state]
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { CompactionRequest } from '../../functions/jobs/history/compaction.js';
import type { MaintenancePlan, MaintenanceRequest } from '../../functions/jobs/maintenance/plan.js';
import { type QueryRef, statementOf } from '../../functions/jobs/sql-run.js';
import { duckdb, render } from '../../functions/sql/index.js';
import { clients, config } from './context.js';
import { jobProgress, runOnAws, sfnClient, stateMachineArnByName } from './job-run.js';
import { compactLocally, runLocalJob } from './jobs-local.js';
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

/** The options of `tidemark history maintain` as commander parses them. */
interface MaintainOptions {
  readonly config: string;
  readonly table?: string[];
  readonly on: 'local' | 'aws';
  readonly stateMachineArn?: string;
  readonly json?: boolean;
}

/** `tidemark history maintain`: OPTIMIZE and VACUUM of the Iceberg tables, on Athena (`--on aws`) or, as a no-op, locally. */
export async function historyMaintainCommand(o: MaintainOptions): Promise<void> {
  const cfg = config(o.config);
  const runId = `maintain-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const request: MaintenanceRequest = { runId, ...(o.table && o.table.length > 0 ? { tables: o.table } : {}) };
  if (o.on === 'aws') {
    const sfn = sfnClient();
    const arn = o.stateMachineArn ?? (await stateMachineArnByName(sfn, `${cfg.name}-maintenance`));
    const plan = (await runOnAws(sfn, arn, runId, request)) as unknown as MaintenancePlan;
    if (o.json) out(summaryLine({ command: 'history maintain', on: 'aws', runId: plan.runId, tables: plan.tables, statements: plan.statements }));
    else out(`history maintain ${plan.runId} on aws: ${plan.statements.length} statements ran on Athena (${plan.statements.join(', ')})`);
    return;
  }
  const c = await clients(cfg);
  const bar = jobProgress('history maintain', o.json === true);
  let plan: MaintenancePlan;
  try {
    plan = (await runLocalJob(cfg, c, 'maintenance', request, { onProgress: bar.onEvent })) as unknown as MaintenancePlan;
  } finally {
    bar.stop();
  }
  // What the local engine could run of the stored statements: none has a DuckDB form today.
  const got = await c.s3.send(new GetObjectCommand({ Bucket: cfg.raw.bucket, Key: plan.queries.queriesKey }));
  const refs = JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as QueryRef[];
  const nothing = refs.filter((r) => render(statementOf(r.statement), duckdb).sql === null).map((r) => `${r.statement.name}-${String(r.statement.args.table)}`);
  const ran = refs.length - nothing.length;
  if (o.json) {
    out(summaryLine({ command: 'history maintain', on: 'local', runId: plan.runId, tables: plan.tables, statements: plan.statements, ran, nothingToRun: nothing }));
    return;
  }
  out(`history maintain ${plan.runId}: ${refs.length} statements (${plan.statements.join(', ')})`);
  if (ran === 0) out('  locally nothing to run: OPTIMIZE and VACUUM are Iceberg maintenance, and the DuckDB stand-in (Parquet) keeps no snapshots; on AWS they run on Athena (--on aws)');
  else out(`  ${ran} ran locally; ${nothing.length} have nothing to run on DuckDB: ${nothing.join(', ')}`);
}
