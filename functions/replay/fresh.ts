/**
 * Replay into a fresh table: create it with the live table's key schema (and TTL on `__expiresAt`),
 * replay everything into it, then verify it by a full diff against the live table and say how to
 * switch readers over. Nothing here touches the live table except reading it.
 *
 * A fresh table is as strong as the live one: its encryption (the pipeline's customer-managed key
 * under `encryption: kms`, the AWS managed key otherwise), point-in-time recovery (with its
 * recovery period) and deletion protection are copied from the live table, read with DescribeTable
 * and DescribeContinuousBackups.
 *
 * And it is only ever a table the replay created. It is tagged at creation with
 * `tidemark:pipeline` = the pipeline and `tidemark:fresh-run` = the run id. An existing table of
 * that name is reused only if it carries the tags of this run (a retried plan step) or of the run
 * named by `fresh:<table>@<run>` (a catch-up of that run's rebuild); anything else is refused, so
 * a replay never fills, scans or samples a table someone else made:
 *
 *   createFreshTable(ddb, { config, live, target: { kind: 'fresh', target: 'shop-fresh-orders' }, runId: 'replay-1' })
 *   // 'created'; again with runId 'replay-1': 'present'; with runId 'replay-2': FreshTableError
 *
 * The diff compares what readers see (tombstones count as absent) by stored position and content
 * hash, key by key:
 *   same | onlyLive | onlyFresh | liveNewer | freshNewer | conflict (same position, other content)
 * `liveNewer` is expected for changes that landed after the replay read raw; `onlyLive` and
 * `freshNewer` are what a rebuild is for: the live table lost or missed something.
 */
import {
  type AttributeValue,
  CreateTableCommand,
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ListTagsOfResourceCommand,
  type PointInTimeRecoverySpecification,
  ResourceNotFoundException,
  ScanCommand,
  type SSESpecification,
  type TableDescription,
  UpdateContinuousBackupsCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { freshTablePrefix, type TableConfig, type TidemarkConfig } from '../config/types.js';
import { asError, errorMessage, TidemarkError } from '../core/errors.js';
import { keyLayout } from '../core/keys.js';
import { META } from '../adapters/item-codec.js';
import type { ReplayTarget } from './safety.js';

export class FreshTableError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'FreshTableError';
  }
}

/** The tags a fresh table is created with: which pipeline and which replay run made it. */
export const FRESH_TABLE_TAGS = { pipeline: 'tidemark:pipeline', run: 'tidemark:fresh-run' } as const;

/** What a fresh table is made from. */
export interface FreshTableRequest {
  /** The pipeline's name (its tag) and `encryption` (which key the live table is under). */
  readonly config: Pick<TidemarkConfig, 'name' | 'encryption'>;
  /** The live table: its key schema and protections are copied. */
  readonly live: TableConfig;
  /** The fresh target as parsed; `createdBy` when this run continues that run's rebuild. */
  readonly target: Extract<ReplayTarget, { kind: 'fresh' }>;
  /** This run: the `tidemark:fresh-run` tag of a table it creates. */
  readonly runId: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const errorNamed = (err: unknown, name: string) => asError(err).name === name;

async function describe(client: DynamoDBClient, name: string) {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: name }))).Table ?? null;
  } catch (err) {
    if (err instanceof ResourceNotFoundException || errorNamed(err, 'ResourceNotFoundException')) return null;
    throw err;
  }
}

const schemaText = (s: readonly { AttributeName?: string; KeyType?: string }[] | undefined) => (s ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');

/**
 * The live table's encryption, for CreateTable. Under `kms` the live table is under the pipeline's
 * customer-managed key, named in its SSEDescription; a live table without one is refused rather
 * than copied into a weaker table. Otherwise the AWS managed key (SSE KMS without a key id) when
 * the live table uses it, and the default (AWS owned) key when it does not.
 */
function encryptionOf(source: TableDescription, encryption: TidemarkConfig['encryption'], fresh: string): SSESpecification | undefined {
  const sse = source.SSEDescription;
  const on = sse?.SSEType === 'KMS' && sse.Status !== 'DISABLED' && sse.Status !== 'DISABLING';
  if (encryption === 'kms') {
    if (!on || !sse.KMSMasterKeyArn) {
      throw new FreshTableError(`live table ${source.TableName} reports no customer-managed key although encryption is "kms": refusing to create ${fresh} with weaker encryption`);
    }
    return { Enabled: true, SSEType: 'KMS', KMSMasterKeyId: sse.KMSMasterKeyArn };
  }
  return on ? { Enabled: true, SSEType: 'KMS' } : undefined;
}

/**
 * The live table's point-in-time recovery, or null when it has none. An endpoint that does not
 * implement continuous backups at all (DynamoDB Local answers UnknownOperationException) has no
 * PITR on the live table either: there is nothing to copy.
 */
async function recoveryOf(client: DynamoDBClient, live: string): Promise<PointInTimeRecoverySpecification | null> {
  let status: { PointInTimeRecoveryStatus?: string; RecoveryPeriodInDays?: number } | undefined;
  try {
    status = (await client.send(new DescribeContinuousBackupsCommand({ TableName: live }))).ContinuousBackupsDescription?.PointInTimeRecoveryDescription;
  } catch (err) {
    if (errorNamed(err, 'UnknownOperationException')) return null;
    throw err;
  }
  if (status?.PointInTimeRecoveryStatus !== 'ENABLED') return null;
  return { PointInTimeRecoveryEnabled: true, ...(status.RecoveryPeriodInDays ? { RecoveryPeriodInDays: status.RecoveryPeriodInDays } : {}) };
}

async function tagsOf(client: DynamoDBClient, arn: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await client.send(new ListTagsOfResourceCommand({ ResourceArn: arn, NextToken: token }));
    for (const t of page.Tags ?? []) if (t.Key !== undefined && t.Value !== undefined) out.set(t.Key, t.Value);
    token = page.NextToken;
  } while (token);
  return out;
}

/** Throws unless `existing` carries the tags of the run this one may fill: itself, or the one it continues. */
async function checkOrigin(client: DynamoDBClient, existing: TableDescription, req: FreshTableRequest): Promise<void> {
  const fresh = req.target.target;
  const expected = req.target.createdBy ?? req.runId;
  const refuse = (why: string) =>
    new FreshTableError(`table ${fresh} exists ${why}: a fresh replay fills only a table it created. Name a new table under ${freshTablePrefix(req.config.name)}`);
  if (!existing.TableArn) throw refuse('and DynamoDB gave no ARN to read its tags by');
  let tags: Map<string, string>;
  try {
    tags = await tagsOf(client, existing.TableArn);
  } catch (err) {
    throw refuse(`and its tags cannot be read (${errorMessage(err)}), so nothing shows this run made it`);
  }
  const pipeline = tags.get(FRESH_TABLE_TAGS.pipeline);
  const run = tags.get(FRESH_TABLE_TAGS.run);
  if (pipeline === req.config.name && run === expected) return;
  if (pipeline !== req.config.name || run === undefined) throw refuse(`and was not created by a replay of pipeline ${req.config.name} (no ${FRESH_TABLE_TAGS.pipeline}=${req.config.name} and ${FRESH_TABLE_TAGS.run} tags)`);
  throw refuse(`and was created by run ${run}, not ${expected}; to catch that rebuild up, replay --into fresh:${fresh}@${run}`);
}

/** Creates `fresh` with the live key schema, this run's tags and the live table's protections; false when it appeared meanwhile. */
async function create(client: DynamoDBClient, source: TableDescription, req: FreshTableRequest): Promise<boolean> {
  const keyNames = new Set((source.KeySchema ?? []).map((k) => k.AttributeName));
  const sse = encryptionOf(source, req.config.encryption, req.target.target);
  try {
    await client.send(
      new CreateTableCommand({
        TableName: req.target.target,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: source.KeySchema,
        AttributeDefinitions: (source.AttributeDefinitions ?? []).filter((a) => keyNames.has(a.AttributeName)),
        DeletionProtectionEnabled: source.DeletionProtectionEnabled === true,
        ...(sse ? { SSESpecification: sse } : {}),
        Tags: [
          { Key: FRESH_TABLE_TAGS.pipeline, Value: req.config.name },
          { Key: FRESH_TABLE_TAGS.run, Value: req.runId },
        ],
      }),
    );
    return true;
  } catch (err) {
    // Another attempt of this plan step created it first: its origin is checked like any existing table's.
    if (errorNamed(err, 'ResourceInUseException')) return false;
    throw err;
  }
}

/** Turns on point-in-time recovery as the live table has it; retried while DynamoDB is still preparing backups of a new table. */
async function ensureRecovery(client: DynamoDBClient, fresh: string, recovery: PointInTimeRecoverySpecification | null, deadline: number): Promise<void> {
  if (!recovery) return;
  const current = (await client.send(new DescribeContinuousBackupsCommand({ TableName: fresh }))).ContinuousBackupsDescription?.PointInTimeRecoveryDescription;
  if (current?.PointInTimeRecoveryStatus === 'ENABLED') return;
  for (;;) {
    try {
      await client.send(new UpdateContinuousBackupsCommand({ TableName: fresh, PointInTimeRecoverySpecification: recovery }));
      return;
    } catch (err) {
      if (!errorNamed(err, 'ContinuousBackupsUnavailableException') || Date.now() > deadline) throw err;
      await sleep(1000);
    }
  }
}

async function waitActive(client: DynamoDBClient, name: string, deadline: number, timeoutMs: number): Promise<TableDescription> {
  for (;;) {
    const table = await describe(client, name);
    if (table?.TableStatus === 'ACTIVE') return table;
    if (Date.now() > deadline) throw new FreshTableError(`table ${name} did not become ACTIVE within ${timeoutMs} ms`);
    await sleep(250);
  }
}

/**
 * Creates the fresh table of `req` with the key schema of the live table (read from DynamoDB, so
 * it is exactly the live one), on-demand, TTL on `__expiresAt`, the live table's encryption,
 * point-in-time recovery and deletion protection, and this run's tags; waits until ACTIVE. An
 * existing table is reused only when its tags show this run (or the run it continues) created it
 * and its key schema is the live one; otherwise FreshTableError.
 */
export async function createFreshTable(client: DynamoDBClient, req: FreshTableRequest, timeoutMs = 120_000): Promise<'created' | 'present'> {
  const { live, target } = req;
  const fresh = target.target;
  const source = await describe(client, live.target);
  if (!source) throw new FreshTableError(`live table ${live.target} does not exist: cannot copy its key schema`);
  const recovery = await recoveryOf(client, live.target);
  const existing = await describe(client, fresh);
  if (!existing && target.createdBy) throw new FreshTableError(`table ${fresh} does not exist: there is no rebuild of run ${target.createdBy} to continue (drop @${target.createdBy} to create it)`);
  const action: 'created' | 'present' = !existing && (await create(client, source, req)) ? 'created' : 'present';
  // Waiting reads nothing but the table's status; an existing table's tags are read once it is
  // ACTIVE (a retried plan step may find the table it created still CREATING).
  const deadline = Date.now() + timeoutMs;
  const active = await waitActive(client, fresh, deadline, timeoutMs);
  if (action === 'present') {
    await checkOrigin(client, active, req);
    if (schemaText(active.KeySchema) !== schemaText(source.KeySchema)) {
      throw new FreshTableError(`table ${fresh} exists with key schema ${schemaText(active.KeySchema)}, not ${schemaText(source.KeySchema)} of ${live.target}`);
    }
  }
  const ttl = (await client.send(new DescribeTimeToLiveCommand({ TableName: fresh }))).TimeToLiveDescription;
  if (ttl?.TimeToLiveStatus !== 'ENABLED' && ttl?.TimeToLiveStatus !== 'ENABLING') {
    await client.send(new UpdateTimeToLiveCommand({ TableName: fresh, TimeToLiveSpecification: { AttributeName: META.expiresAt, Enabled: true } }));
  }
  await ensureRecovery(client, fresh, recovery, deadline);
  return action;
}

export type DiffClass = 'same' | 'onlyLive' | 'onlyFresh' | 'liveNewer' | 'freshNewer' | 'conflict';

export interface DiffReport {
  readonly live: string;
  readonly fresh: string;
  readonly counts: Record<DiffClass, number>;
  /** Up to 20 keys per class that is not `same` (canonical key text, never values). */
  readonly samples: Partial<Record<DiffClass, string[]>>;
  readonly readUnits: number;
}

interface Seen {
  readonly position: string;
  readonly hash: string;
}

async function visible(client: DynamoDBClient, table: TableConfig, name: string, units: { n: number }): Promise<Map<string, Seen>> {
  const layout = keyLayout(table);
  const keyNames = [layout.partitionKey.name, ...(layout.sortKey ? [layout.sortKey.name] : [])];
  const out = new Map<string, Seen>();
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: name, ExclusiveStartKey: start, ReturnConsumedCapacity: 'TOTAL' }));
    units.n += page.ConsumedCapacity?.CapacityUnits ?? 0;
    for (const item of page.Items ?? []) {
      if (item[META.deleted]?.BOOL === true) continue;
      const id = JSON.stringify(keyNames.map((k) => item[k]?.S ?? item[k]?.N ?? ''));
      out.set(id, { position: item[META.position]?.S ?? '', hash: item[META.hash]?.S ?? '' });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Full diff of the live and the fresh table, by position and content hash per key. */
export async function diffTables(client: DynamoDBClient, table: TableConfig, fresh: string): Promise<DiffReport> {
  const units = { n: 0 };
  const live = await visible(client, table, table.target, units);
  const rebuilt = await visible(client, table, fresh, units);
  const counts: Record<DiffClass, number> = { same: 0, onlyLive: 0, onlyFresh: 0, liveNewer: 0, freshNewer: 0, conflict: 0 };
  const samples: Partial<Record<DiffClass, string[]>> = {};
  const note = (c: DiffClass, key: string) => {
    counts[c]++;
    if (c === 'same') return;
    const list = samples[c] ?? [];
    if (list.length < 20) list.push(key);
    samples[c] = list;
  };
  for (const [key, l] of live) {
    const f = rebuilt.get(key);
    if (!f) note('onlyLive', key);
    else if (l.position === f.position) note(l.hash === f.hash ? 'same' : 'conflict', key);
    else note(l.position > f.position ? 'liveNewer' : 'freshNewer', key);
  }
  for (const key of rebuilt.keys()) if (!live.has(key)) note('onlyFresh', key);
  return { live: table.target, fresh, counts, samples, readUnits: units.n };
}

/**
 * What an operator does next to move readers to the rebuilt table. `createdBy` is the run that
 * created `fresh`: the catch-up replays name it (`fresh:<table>@<run>`), as only that run's table
 * may be filled again.
 */
export function switchSteps(table: TableConfig, fresh: string, report: DiffReport, createdBy: string): string[] {
  const differing = report.counts.onlyLive + report.counts.onlyFresh + report.counts.freshNewer + report.counts.conflict;
  return [
    `1. Review the diff: ${report.counts.same} keys agree, ${differing} differ where the rebuild is meant to correct the live table, ${report.counts.liveNewer} are newer live (changes that arrived after the replay read raw).`,
    `2. Catch the rebuild up: run \`tidemark replay --table ${table.source} --into fresh:${fresh}@${createdBy} --since <the replay's start time>\` once more; the pre-read makes it cheap.`,
    `3. Point readers at ${fresh}: in tidemark.config.json set tables[source=${table.source}].target to "${fresh}" and deploy (\`cdk deploy\`), so ingest writes there too.`,
    `4. Replay the window between the catch-up and the deploy into ${fresh}, now the live target (--into live --since the catch-up time); the guard makes overlaps no-ops.`,
    `5. Keep ${table.target} until readers are verified on ${fresh}, then delete it (it is retained by the stack's removal policy).`,
  ];
}
