/**
 * `tidemark suspend` and `tidemark resume` (docs/operations.md, "Suspend, resume and tables in
 * error"; functions/core/lifecycle.ts). A table's state lives in its status row, so the same
 * commands work on the local emulators and on a deployed stack (with its credentials):
 *
 *   tidemark suspend -t public.orders --reason "target migration"   records land in raw, not applied
 *   tidemark resume -t public.orders                                applies what it held from raw, then live
 *   tidemark resume -t public.orders --force                        a table in error, once the cause is fixed
 *   tidemark suspend --pipeline                                     deployed: disables the event source mappings
 *
 * Resume, step by step:
 * 1. The row goes back to `running` (conditional on the state it was read in), its failure streak
 *    cleared. Every container applies the table again within `ingest.statusMaxAgeSeconds`.
 * 2. Resume waits that long (plus a margin), so that every record landed from then on is applied
 *    live.
 * 3. It replays the table's raw from when it was held (minus the ingest's timeout: a batch lands
 *    before it reads the state) up to the end of that wait, into the live table through the replay
 *    state machine (`--on local|aws`), with guarded writes and pre-reads: what was applied already
 *    costs reads, not writes, and nothing is applied twice or out of order.
 */
import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { heldRawSince, LIFECYCLE, lifecycleOf, type TableLifecycle } from '../../functions/core/lifecycle.js';
import { STATUS_KEY, STATUS_ROW, tablePartition, tableRegistryPartition } from '../../functions/telemetry/status-layout.js';
import { clients, config as loadConfig } from './context.js';
import { CliError } from './errors.js';
import { err, humanDuration, isoSeconds, out } from './output.js';
import { tableOrThrow } from './state.js';

export interface LifecycleCliOptions {
  readonly config: string;
  readonly table?: string[];
  readonly all?: boolean;
  readonly pipeline?: boolean;
  readonly reason?: string;
  readonly force?: boolean;
  readonly catchUp?: boolean;
  /** Seconds to wait before the catch-up replay (default: ingest.statusMaxAgeSeconds + 5). */
  readonly settleSeconds?: number;
  readonly on: 'local' | 'aws';
  readonly stateMachineArn?: string;
  readonly json?: boolean;
}

/** What the source keeps while the pipeline's mappings are disabled. */
export const RETENTION_NOTE = [
  'While the mappings are disabled, nothing is read and the source keeps the records:',
  '  Kinesis: its retention period (24 hours by default, up to 365 days);',
  '  Kafka (MSK): the topic retention (retention.ms); past it, records are deleted before they are read;',
  '  the database: a PostgreSQL replication slot keeps its WAL (watch the disk), a MySQL binlog its expire_logs setting.',
  'Resume before the oldest unread record ages out, or the connector must re-snapshot.',
];

const key = (cfg: TidemarkConfig, table: string) => ({ [STATUS_KEY.partition]: { S: tablePartition(cfg.name, table) }, [STATUS_KEY.row]: { S: STATUS_ROW } });

/** The tables a command names: `-t` (each configured) or `--all`. */
function tablesOf(cfg: TidemarkConfig, o: LifecycleCliOptions, verb: string): string[] {
  if (o.all) return cfg.tables.map((t) => t.source);
  const named = o.table ?? [];
  if (named.length === 0) throw new CliError(`name the tables to ${verb}`, `tidemark ${verb} -t ${cfg.tables[0]?.source ?? '<table>'}  (or --all; --pipeline for the deployed mappings)`);
  for (const t of named) tableOrThrow(cfg, t);
  return named;
}

/** A table's status row, read consistently. */
export async function lifecycleRow(dynamodb: DynamoDBClient, cfg: TidemarkConfig, table: string): Promise<Record<string, unknown> | undefined> {
  const res = await dynamodb.send(new GetItemCommand({ TableName: cfg.statusTable, Key: key(cfg, table), ConsistentRead: true }));
  return res.Item ? (unmarshall(res.Item) as Record<string, unknown>) : undefined;
}

export type SuspendResult = { readonly table: string; readonly state: TableLifecycle; readonly changed: boolean; readonly since?: number; readonly reason?: string };

/** Suspends a running table; a held one stays as it is. */
export async function suspendTable(dynamodb: DynamoDBClient, cfg: TidemarkConfig, table: string, reason: string | undefined, now: number): Promise<SuspendResult> {
  try {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: cfg.statusTable,
        Key: key(cfg, table),
        UpdateExpression: 'SET #s = :s, #at = :now, #by = :by, #from = :now, #why = :why',
        ConditionExpression: 'attribute_not_exists(#s) OR #s = :running',
        ExpressionAttributeNames: { '#s': LIFECYCLE.state, '#at': LIFECYCLE.at, '#by': LIFECYCLE.by, '#from': LIFECYCLE.heldFrom, '#why': LIFECYCLE.reason },
        ExpressionAttributeValues: { ':s': { S: 'suspended' }, ':now': { N: String(now) }, ':by': { S: 'operator' }, ':why': { S: (reason ?? 'suspended by an operator').slice(0, 1000) }, ':running': { S: 'running' } },
      }),
    );
    // The registry lists the table even before its first batch.
    await dynamodb.send(new PutItemCommand({ TableName: cfg.statusTable, Item: { [STATUS_KEY.partition]: { S: tableRegistryPartition(cfg.name, table) }, [STATUS_KEY.row]: { S: table } } }));
    return { table, state: 'suspended', changed: true, since: now };
  } catch (e) {
    if (!(e instanceof ConditionalCheckFailedException)) throw e;
    const row = await lifecycleRow(dynamodb, cfg, table);
    return { table, state: lifecycleOf(row), changed: false, ...heldFacts(row) };
  }
}

function heldFacts(row: Record<string, unknown> | undefined): { since?: number; reason?: string } {
  const since = row?.[LIFECYCLE.at];
  const reason = row?.[LIFECYCLE.reason];
  return { ...(typeof since === 'number' ? { since } : {}), ...(typeof reason === 'string' ? { reason } : {}) };
}

export interface Released {
  readonly table: string;
  /** The state it left; `running` when it was not held (nothing to catch up). */
  readonly was: TableLifecycle;
  /** From when its records may not have been applied (epoch ms). */
  readonly heldFrom?: number;
}

/** Returns a held table to `running`; refuses a table in error without `force`. */
export async function releaseTable(dynamodb: DynamoDBClient, cfg: TidemarkConfig, table: string, force: boolean, now: number): Promise<Released> {
  const row = await lifecycleRow(dynamodb, cfg, table);
  const was = lifecycleOf(row);
  if (was === 'running') return { table, was };
  if (was === 'error' && !force) {
    const { since, reason } = heldFacts(row);
    throw new CliError(
      `${table} stopped in error${since !== undefined ? ` ${humanDuration(now - since)} ago` : ''}: ${reason ?? 'no reason recorded'}`,
      `fix the cause, then: tidemark resume -t ${table} --force`,
    );
  }
  const heldFrom = Number(row?.[LIFECYCLE.heldFrom] ?? row?.[LIFECYCLE.at] ?? now);
  try {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: cfg.statusTable,
        Key: key(cfg, table),
        UpdateExpression: 'SET #s = :running, #at = :now, #by = :by, #resumed = :now REMOVE #why, #from, #pos, #fa, #fs',
        ConditionExpression: '#s = :was AND #at = :seenAt',
        ExpressionAttributeNames: {
          '#s': LIFECYCLE.state,
          '#at': LIFECYCLE.at,
          '#by': LIFECYCLE.by,
          '#resumed': 'lastResumedAt',
          '#why': LIFECYCLE.reason,
          '#from': LIFECYCLE.heldFrom,
          '#pos': LIFECYCLE.position,
          '#fa': LIFECYCLE.failAttempts,
          '#fs': LIFECYCLE.failSince,
        },
        ExpressionAttributeValues: { ':running': { S: 'running' }, ':now': { N: String(now) }, ':by': { S: 'operator' }, ':was': { S: was }, ':seenAt': { N: String(row?.[LIFECYCLE.at] ?? 0) } },
      }),
    );
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) throw new CliError(`${table} changed state while it was being resumed`, `tidemark status, then tidemark resume -t ${table} again`);
    throw e;
  }
  return { table, was, heldFrom: Number.isFinite(heldFrom) ? heldFrom : now };
}

/**
 * The raw a resume replays: landed from `heldFrom` less the ingest's timeout (a batch lands, then
 * reads the state), up to the end of the wait after which every container applies the table.
 */
export function catchUpWindow(cfg: TidemarkConfig, heldFrom: number, resumedAt: number, settleMs: number): { since: number; until: number } {
  return { since: heldRawSince(heldFrom, cfg.ingest.timeoutSeconds), until: resumedAt + settleMs };
}

async function setMappings(cfg: TidemarkConfig, enabled: boolean): Promise<string[]> {
  const { LambdaClient, ListEventSourceMappingsCommand, UpdateEventSourceMappingCommand } = await import('@aws-sdk/client-lambda');
  const lambda = new LambdaClient({});
  const changed: string[] = [];
  let marker: string | undefined;
  do {
    const page = await lambda.send(new ListEventSourceMappingsCommand({ FunctionName: `${cfg.name}-ingest`, Marker: marker }));
    for (const m of page.EventSourceMappings ?? []) {
      if (!m.UUID) continue;
      await lambda.send(new UpdateEventSourceMappingCommand({ UUID: m.UUID, Enabled: enabled }));
      changed.push(`${m.UUID} (${m.EventSourceArn ?? 'source'})`);
    }
    marker = page.NextMarker;
  } while (marker);
  return changed;
}

function pipelineOnAws(o: LifecycleCliOptions, verb: string): void {
  if (o.on !== 'aws') throw new CliError(`--pipeline ${verb}s the deployed event source mappings`, `tidemark ${verb} --pipeline --on aws   (locally: stop \`tidemark run\`, or ${verb} every table with --all)`);
}

/** `tidemark suspend` */
export async function suspendCommand(o: LifecycleCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  if (o.pipeline) {
    pipelineOnAws(o, 'suspend');
    const changed = await setMappings(cfg, false);
    for (const m of changed) out(`disabled ${m}`);
    for (const line of RETENTION_NOTE) err(line);
    return;
  }
  const tables = tablesOf(cfg, o, 'suspend');
  const c = await clients(cfg);
  const now = Date.now();
  for (const table of tables) {
    const r = await suspendTable(c.dynamodb, cfg, table, o.reason, now);
    if (o.json) out(JSON.stringify(r));
    else if (r.changed) out(`${table}: suspended; its records land in raw and are not applied (every container holds it within ${cfg.ingest.statusMaxAgeSeconds} s)`);
    else out(`${table}: already ${r.state === 'error' ? 'stopped in error' : 'suspended'}${r.since !== undefined ? ` since ${isoSeconds(r.since)}` : ''}${r.reason ? `: ${r.reason}` : ''}`);
  }
}

/** `tidemark resume` */
export async function resumeCommand(o: LifecycleCliOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  if (o.pipeline) {
    pipelineOnAws(o, 'resume');
    for (const m of await setMappings(cfg, true)) out(`enabled ${m}`);
    return;
  }
  const tables = tablesOf(cfg, o, 'resume');
  const c = await clients(cfg);
  const resumedAt = Date.now();
  const released: Released[] = [];
  for (const table of tables) released.push(await releaseTable(c.dynamodb, cfg, table, o.force === true, resumedAt));
  for (const r of released) if (r.was === 'running') out(`${r.table}: not suspended or in error; nothing to resume`);
  const held = released.filter((r) => r.was !== 'running');
  if (held.length === 0) return;
  const settleMs = (o.settleSeconds ?? cfg.ingest.statusMaxAgeSeconds + 5) * 1000;
  const window = catchUpWindow(cfg, Math.min(...held.map((r) => r.heldFrom ?? resumedAt)), resumedAt, settleMs);
  for (const r of held) out(`${r.table}: running again (was ${r.was === 'error' ? 'in error' : 'suspended'})`);
  if (o.catchUp === false) {
    err(`tidemark: no catch-up; apply what was held with: tidemark replay ${held.map((r) => `-t ${r.table}`).join(' ')} --since ${new Date(window.since).toISOString()} --until ${new Date(window.until).toISOString()}`);
    return;
  }
  const wait = window.until - Date.now();
  if (wait > 0) {
    err(`tidemark: waiting ${Math.ceil(wait / 1000)} s until every container applies ${held.length === 1 ? 'it' : 'them'} live, then replaying what was held`);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  const { replayCommand } = await import('./replay.js');
  await replayCommand({
    config: o.config,
    table: held.map((r) => r.table),
    since: new Date(window.since).toISOString(),
    until: new Date(window.until).toISOString(),
    into: 'live',
    on: o.on,
    ...(o.force ? { force: true } : {}),
    ...(o.stateMachineArn ? { stateMachineArn: o.stateMachineArn } : {}),
    ...(o.json ? { json: true } : {}),
  });
}
