/**
 * Replay into a fresh table: create it with the live table's key schema (and TTL on `__expiresAt`),
 * replay everything into it, then verify it by a full diff against the live table and say how to
 * switch readers over. Nothing here touches the live table except reading it.
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
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  ScanCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import { asError, TidemarkError } from '../core/errors.js';
import { keyLayout } from '../core/keys.js';
import { META } from '../adapters/item-codec.js';

export class FreshTableError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'FreshTableError';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function describe(client: DynamoDBClient, name: string) {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: name }))).Table ?? null;
  } catch (err) {
    if (err instanceof ResourceNotFoundException || asError(err).name === 'ResourceNotFoundException') return null;
    throw err;
  }
}

const schemaText = (s: readonly { AttributeName?: string; KeyType?: string }[] | undefined) => (s ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');

/**
 * Creates `fresh` with the key schema of `live.target` (read from DynamoDB, so it is exactly the
 * live one), on-demand, TTL on `__expiresAt`; waits until ACTIVE. An existing fresh table with the
 * same key schema is reused (a resumed replay); with another schema it is refused.
 */
export async function createFreshTable(client: DynamoDBClient, live: TableConfig, fresh: string, timeoutMs = 120_000): Promise<'created' | 'present'> {
  const source = await describe(client, live.target);
  if (!source) throw new FreshTableError(`live table ${live.target} does not exist: cannot copy its key schema`);
  const existing = await describe(client, fresh);
  let action: 'created' | 'present' = 'present';
  if (existing) {
    if (schemaText(existing.KeySchema) !== schemaText(source.KeySchema)) {
      throw new FreshTableError(`table ${fresh} exists with key schema ${schemaText(existing.KeySchema)}, not ${schemaText(source.KeySchema)} of ${live.target}`);
    }
  } else {
    const keyNames = new Set((source.KeySchema ?? []).map((k) => k.AttributeName));
    await client.send(
      new CreateTableCommand({
        TableName: fresh,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: source.KeySchema,
        AttributeDefinitions: (source.AttributeDefinitions ?? []).filter((a) => keyNames.has(a.AttributeName)),
        DeletionProtectionEnabled: false,
      }),
    );
    action = 'created';
  }
  const deadline = Date.now() + timeoutMs;
  while ((await describe(client, fresh))?.TableStatus !== 'ACTIVE') {
    if (Date.now() > deadline) throw new FreshTableError(`table ${fresh} did not become ACTIVE within ${timeoutMs} ms`);
    await sleep(250);
  }
  const ttl = (await client.send(new DescribeTimeToLiveCommand({ TableName: fresh }))).TimeToLiveDescription;
  if (ttl?.TimeToLiveStatus !== 'ENABLED' && ttl?.TimeToLiveStatus !== 'ENABLING') {
    await client.send(new UpdateTimeToLiveCommand({ TableName: fresh, TimeToLiveSpecification: { AttributeName: META.expiresAt, Enabled: true } }));
  }
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

/** What an operator does next to move readers to the rebuilt table. */
export function switchSteps(table: TableConfig, fresh: string, report: DiffReport): string[] {
  const differing = report.counts.onlyLive + report.counts.onlyFresh + report.counts.freshNewer + report.counts.conflict;
  return [
    `1. Review the diff: ${report.counts.same} keys agree, ${differing} differ where the rebuild is meant to correct the live table, ${report.counts.liveNewer} are newer live (changes that arrived after the replay read raw).`,
    `2. Catch the rebuild up: run \`tidemark replay --table ${table.source} --into fresh:${fresh} --since <the replay's start time>\` once more; the pre-read makes it cheap.`,
    `3. Point readers at ${fresh}: in tidemark.config.json set tables[source=${table.source}].target to "${fresh}" and deploy (\`cdk deploy\`), so ingest writes there too.`,
    `4. Replay the window between the catch-up and the deploy into ${fresh} (--since the catch-up time); the guard makes overlaps no-ops.`,
    `5. Keep ${table.target} until readers are verified on ${fresh}, then delete it (it is retained by the stack's removal policy).`,
  ];
}
