/**
 * `tidemark status-migrate`: moves a pipeline's status rows from layout 1 (every row in the
 * partition `<pipeline>`) to layout 2 (one partition per table, functions/telemetry/status-layout.ts)
 * in the same status table, so that no counter is lost and none is counted twice:
 *
 * - A layout-1 row's counters move as a delta: one transaction adds (counters − what was moved
 *   before) to the layout-2 row and records on the layout-1 row what has been moved
 *   (`migrated_<counter>`), on the condition that the layout-1 row's `received` is still what was
 *   read (every batch of the old version adds to it). So a run may be repeated at any time: what the
 *   old version added since the last run moves, nothing moves twice.
 * - Facts the new version may already have written win (`if_not_exists`); the watermarks keep the
 *   higher value (a conditional raise). A truncate watermark raised this way on a table the new
 *   version already wrote to is swept at once (its writes were not held against it).
 * - Hours move to `hour#<hour>#v1` rows (readers add them to the layout-2 hour of the same name),
 *   jobs' rows to `job#…` (the later run wins), fresh replays' watermarks to their layout-2 key,
 *   recorded schemas to the table's `schema` row (if it has none yet), and every table gets its
 *   registry row.
 *
 * Layout-1 rows stay (marked) until `--delete-old`, which deletes only rows whose counters have all
 * been moved. docs/operations.md, "Upgrading the status table", gives the order of steps.
 *
 *   npx tidemark status-migrate [--dry-run] [--delete-old]
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  type ScanCommandOutput,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { COUNTER_NAMES, EXPIRES_AT_ATTRIBUTE, SCHEMA_ROW_PREFIX } from '../../functions/telemetry/contract.js';
import { HOUR_ROW_PREFIX, jobRowKey, SCHEMA_ROW, STATUS_KEY, STATUS_ROW, tablePartition, tableRegistryPartition } from '../../functions/telemetry/status-layout.js';
import { TruncateSweeper } from '../../functions/adapters/truncate-sweep.js';
import { clients, config as loadConfig } from './context.js';

/** What one run did. */
export interface MigrationReport {
  /** Layout-1 rows read (status, hour, job and fresh-replay rows of this pipeline). */
  readonly rows: number;
  /** Rows whose counters (a non-zero delta) were moved by this run. */
  readonly moved: number;
  /** Rows with nothing left to move. */
  readonly current: number;
  /** Counter units moved, summed over counters (0 on a run after a complete one). */
  readonly units: number;
  readonly jobRows: number;
  readonly watermarksRaised: number;
  /** Rows removed by truncate sweeps of watermarks raised on tables already written to. */
  readonly swept: number;
  readonly deleted: number;
  /** Rows skipped because they changed while being moved (run again). */
  readonly retryLater: number;
}

export interface MigrationOptions {
  readonly dryRun?: boolean;
  readonly deleteOld?: boolean;
}

const MIGRATED = 'migrated_';
/** Facts of a status row, kept when layout 2 already has them. */
const FACTS = ['state', 'phase', 'lastPosition', 'lastCommitTs', 'lagMs', 'lastAppliedAt', 'lastError', 'lastErrorAt', 'resolvedWatermark', 'orderingStrength', 'format', 'lastDdl', 'lastDdlAt'] as const;
/** Facts whose higher value wins. */
const RISING = ['truncateWatermark', 'lastSnapshotPosition'] as const;
const COUNTERS = new Set<string>(COUNTER_NAMES);

type Item = Record<string, AttributeValue>;
type Kind = { kind: 'status'; table: string } | { kind: 'hour'; table: string; hour: string } | { kind: 'job'; table: string; job: 'reconcile' | 'snapshot' } | { kind: 'fresh'; partition: string; table: string } | { kind: 'schema'; table: string };

/** What a layout-1 item of `pipeline` is, or null when it is not one. */
export function layoutOneKind(pipeline: string, item: Item): Kind | null {
  const partition = item[STATUS_KEY.partition]?.S ?? '';
  const row = item[STATUS_KEY.row]?.S ?? '';
  if (partition.startsWith(`${pipeline}#fresh:`) && !partition.includes('/')) return { kind: 'fresh', partition, table: row };
  if (partition !== pipeline) return null;
  const hour = /^hour#(\d{4}-\d{2}-\d{2}T\d{2})#(.+)$/.exec(row);
  if (hour?.[1] && hour[2]) return { kind: 'hour', hour: hour[1], table: hour[2] };
  if (row.startsWith(SCHEMA_ROW_PREFIX) && row.length > SCHEMA_ROW_PREFIX.length) return { kind: 'schema', table: row.slice(SCHEMA_ROW_PREFIX.length) };
  const job = /^(reconcile|snapshot)#(.+)$/.exec(row);
  if (job?.[1] && job[2]) return { kind: 'job', job: job[1] as 'reconcile' | 'snapshot', table: job[2] };
  return { kind: 'status', table: row };
}

const num = (v: AttributeValue | undefined) => Number(v?.N ?? 0);

export async function migrateStatus(client: DynamoDBClient, config: TidemarkConfig, options: MigrationOptions = {}): Promise<MigrationReport> {
  const report = { rows: 0, moved: 0, current: 0, units: 0, jobRows: 0, watermarksRaised: 0, swept: 0, deleted: 0, retryLater: 0 };
  const m = new Migrator(client, config, options, report);
  for await (const item of layoutOneItems(client, config)) {
    const kind = layoutOneKind(config.name, item);
    if (kind === null) continue;
    report.rows++;
    await m.migrate(item, kind);
  }
  return report;
}

async function* layoutOneItems(client: DynamoDBClient, config: TidemarkConfig): AsyncGenerator<Item> {
  let start: Item | undefined;
  do {
    const page: ScanCommandOutput = await client.send(
      new ScanCommand({
        TableName: config.statusTable,
        FilterExpression: '#p = :name OR begins_with(#p, :fresh)',
        ExpressionAttributeNames: { '#p': STATUS_KEY.partition },
        ExpressionAttributeValues: { ':name': { S: config.name }, ':fresh': { S: `${config.name}#fresh:` } },
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    yield* page.Items ?? [];
    start = page.LastEvaluatedKey;
  } while (start);
}

class Migrator {
  private readonly registered = new Set<string>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly config: TidemarkConfig,
    private readonly options: MigrationOptions,
    private readonly report: { -readonly [K in keyof MigrationReport]: MigrationReport[K] },
  ) {}

  private key(partition: string, row: string): Item {
    return { [STATUS_KEY.partition]: { S: partition }, [STATUS_KEY.row]: { S: row } };
  }

  async migrate(item: Item, kind: Kind): Promise<void> {
    switch (kind.kind) {
      case 'status':
        await this.counters(item, this.key(tablePartition(this.config.name, kind.table), STATUS_ROW), true);
        await this.rising(item, tablePartition(this.config.name, kind.table), kind.table);
        await this.register(kind.table);
        return;
      case 'hour':
        await this.counters(item, this.key(tablePartition(this.config.name, kind.table), `${HOUR_ROW_PREFIX}${kind.hour}#v1`), false);
        return;
      case 'job':
        await this.job(item, kind.table, kind.job);
        return;
      case 'schema':
        await this.schema(item, kind.table);
        return;
      case 'fresh':
        await this.rising(item, tablePartition(kind.partition, kind.table), null);
        if (this.options.deleteOld && !this.options.dryRun) await this.delete(item, []);
        return;
    }
  }

  /** Moves the counters not yet moved, in one transaction with the record of what has been moved. */
  private async counters(item: Item, to: Item, facts: boolean): Promise<void> {
    const counters = Object.keys(item).filter((a) => COUNTERS.has(a) && item[a]?.N !== undefined);
    const delta = counters.map((c) => [c, num(item[c]) - num(item[`${MIGRATED}${c}`])] as const).filter(([, d]) => d !== 0);
    if (delta.length === 0) {
      this.report.current++;
      if (this.options.deleteOld && !this.options.dryRun) await this.delete(item, counters);
      return;
    }
    const units = delta.reduce((n, [, d]) => n + Math.abs(d), 0);
    if (this.options.dryRun) {
      this.report.moved++;
      this.report.units += units;
      return;
    }
    const addition = this.addition(item, to, delta, facts);
    const from = this.mark(item, counters);
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [{ Update: addition }, { Update: from }],
        }),
      );
      this.report.moved++;
      this.report.units += units;
    } catch (err) {
      // The old version added to the row meanwhile: nothing moved; the next run moves it.
      if (!(err instanceof TransactionCanceledException)) throw err;
      this.report.retryLater++;
    }
  }

  /** The layout-2 side: the delta added, the facts set where layout 2 has none. */
  private addition(item: Item, to: Item, delta: readonly (readonly [string, number])[], facts: boolean) {
    const e = new Expression();
    const adds = delta.map(([c, d]) => `${e.name(c)} ${e.value({ N: String(d) })}`);
    const sets: string[] = [];
    const keep = (f: string) => sets.push(`${e.name(f)} = if_not_exists(${e.name(f)}, ${e.value(item[f] as AttributeValue)})`);
    if (facts) for (const f of FACTS) if (item[f] !== undefined) keep(f);
    if (facts && item.carriesFlattened?.BOOL === true) sets.push(`${e.name('carriesFlattened')} = ${e.value({ BOOL: true })}`);
    if (!facts && item[EXPIRES_AT_ATTRIBUTE] !== undefined) sets.push(`${e.name(EXPIRES_AT_ATTRIBUTE)} = ${e.value(item[EXPIRES_AT_ATTRIBUTE] as AttributeValue)}`);
    return {
      TableName: this.config.statusTable,
      Key: to,
      UpdateExpression: [sets.length > 0 ? `SET ${sets.join(', ')}` : '', `ADD ${adds.join(', ')}`].filter(Boolean).join(' '),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
    };
  }

  /** The layout-1 side: what has been moved, recorded only if the row is still as read. */
  private mark(item: Item, counters: readonly string[]) {
    const e = new Expression();
    const marks = counters.map((c) => `${e.name(`${MIGRATED}${c}`)} = ${e.value(item[c] as AttributeValue)}`);
    const equalOrAbsent = (attribute: string) => {
      const v = item[attribute];
      return v ? `${e.name(attribute)} = ${e.value(v)}` : `attribute_not_exists(${e.name(attribute)})`;
    };
    return {
      TableName: this.config.statusTable,
      Key: this.key(item[STATUS_KEY.partition]?.S ?? '', item[STATUS_KEY.row]?.S ?? ''),
      UpdateExpression: `SET ${marks.join(', ')}`,
      ConditionExpression: `${equalOrAbsent('received')} AND ${equalOrAbsent(`${MIGRATED}received`)}`,
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
    };
  }

  /** Raises the layout-2 row's watermarks to the layout-1 row's; sweeps a truncate the new version did not hold its writes against. */
  private async rising(item: Item, partition: string, table: string | null): Promise<void> {
    for (const f of RISING) {
      const v = item[f]?.S;
      if (v === undefined || this.options.dryRun) continue;
      try {
        const res = await this.client.send(
          new UpdateItemCommand({
            TableName: this.config.statusTable,
            Key: this.key(partition, STATUS_ROW),
            UpdateExpression: 'SET #f = :v',
            ConditionExpression: 'attribute_not_exists(#f) OR #f < :v',
            ExpressionAttributeNames: { '#f': f },
            ExpressionAttributeValues: { ':v': { S: v } },
            ReturnValues: 'ALL_OLD',
          }),
        );
        if (f !== 'truncateWatermark') continue;
        this.report.watermarksRaised++;
        const wroteBefore = res.Attributes?.hourBatches !== undefined;
        const target = table === null ? undefined : this.config.tables.find((t) => t.source === table);
        if (wroteBefore && target) this.report.swept += await new TruncateSweeper(this.client).sweep(target, v);
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }
  }

  private async job(item: Item, table: string, job: 'reconcile' | 'snapshot'): Promise<void> {
    if (this.options.dryRun) return;
    const { [STATUS_KEY.partition]: _p, [STATUS_KEY.row]: _r, ...rest } = item;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.config.statusTable,
          Item: { ...rest, ...this.key(tablePartition(this.config.name, table), jobRowKey(job)) },
          ConditionExpression: 'attribute_not_exists(#at) OR #at < :at',
          ExpressionAttributeNames: { '#at': 'lastRunAt' },
          ExpressionAttributeValues: { ':at': item.lastRunAt ?? { N: '0' } },
        }),
      );
      this.report.jobRows++;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
    if (this.options.deleteOld) await this.delete(item, []);
  }

  /** Copies a recorded schema where layout 2 has none yet (the new version learns from then on). */
  private async schema(item: Item, table: string): Promise<void> {
    if (this.options.dryRun) return;
    const { [STATUS_KEY.partition]: _p, [STATUS_KEY.row]: _r, ...rest } = item;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.config.statusTable,
          Item: { ...rest, ...this.key(tablePartition(this.config.name, table), SCHEMA_ROW) },
          ConditionExpression: 'attribute_not_exists(#v)',
          ExpressionAttributeNames: { '#v': 'version' },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
    if (this.options.deleteOld) await this.delete(item, []);
  }

  private async register(table: string): Promise<void> {
    if (this.options.dryRun || this.registered.has(table)) return;
    this.registered.add(table);
    await this.client.send(new PutItemCommand({ TableName: this.config.statusTable, Item: this.key(tableRegistryPartition(this.config.name, table), table) }));
  }

  /** Deletes a layout-1 row whose counters have all been moved (and that nobody added to since). */
  private async delete(item: Item, counters: readonly string[]): Promise<void> {
    const e = new Expression();
    const conditions = counters.map((c) => `${e.name(c)} = ${e.value(item[c] as AttributeValue)}`);
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.config.statusTable,
          Key: this.key(item[STATUS_KEY.partition]?.S ?? '', item[STATUS_KEY.row]?.S ?? ''),
          ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND '), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values } : {}),
        }),
      );
      this.report.deleted++;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      this.report.retryLater++;
    }
  }
}

/** Placeholder names and values of one expression. */
class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, AttributeValue> = {};
  private i = 0;
  private readonly byName = new Map<string, string>();

  name(attribute: string): string {
    let k = this.byName.get(attribute);
    if (k === undefined) {
      k = `#a${this.byName.size}`;
      this.byName.set(attribute, k);
      this.names[k] = attribute;
    }
    return k;
  }

  value(v: AttributeValue): string {
    const k = `:v${this.i++}`;
    this.values[k] = v;
    return k;
  }
}

/** Adds `tidemark status-migrate` to the program. */
/** `tidemark status-migrate` (registered lazily in program.ts). */
export async function statusMigrateCommand(o: { config: string; dryRun?: boolean; deleteOld?: boolean }): Promise<void> {
  const cfg = loadConfig(o.config);
  const c = await clients(cfg);
  const report = await migrateStatus(c.dynamodb, cfg, { dryRun: o.dryRun === true, deleteOld: o.deleteOld === true });
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (report.retryLater > 0) process.stderr.write('tidemark: some rows changed while they were moved (the old version is still writing): run status-migrate again\n');
}
