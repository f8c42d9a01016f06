/**
 * One status row per (pipeline, table), like Firebolt's `cdc_ingests`: counters are added per batch,
 * the rest describes the latest batch. `tidemark status` reads these rows.
 *
 * Next to each status row, the same counters are added to a per-hour row in the same table
 * (partition `pipeline`, sort key `hour#<YYYY-MM-DDTHH>#<source table>`, `__expiresAt` 35 days
 * out), which the anomaly-detection job compares hour by hour. The ingest only loads its tables'
 * rows and updates them; listing and hour-row queries are the jobs' and the CLI's
 * (status-reader.ts), so the ingest's role holds no `dynamodb:Query`.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type Counter, EXPIRES_AT_ATTRIBUTE, HOUR_ROW_TTL_DAYS, hourRowKey, STATUS_KEY } from '../telemetry/contract.js';

export type { Counter } from '../telemetry/contract.js';
/** Status rows for records whose table is unknown or not configured. */
export { UNKNOWN_TABLE } from '../telemetry/contract.js';

export interface StatusUpdate {
  readonly counters: Partial<Record<Counter, number>>;
  readonly state: 'RUNNING' | 'ERROR';
  readonly phase?: 'snapshot' | 'streaming';
  readonly lastPosition?: string;
  readonly lastCommitTs?: number;
  readonly lagMs?: number;
  readonly lastError?: string;
  readonly resolvedWatermark?: string;
  readonly orderingStrength?: string;
  readonly format?: string;
  /** The highest snapshot-read position seen (tells a redelivered snapshot from a new one). */
  readonly lastSnapshotPosition?: string;
  /** The DDL of the last schema-change message. */
  readonly lastDdl?: string;
  /** The batch held Debezium flattened records of the table (kept once set: `kafkaTombstones: auto` reads it). */
  readonly carriesFlattened?: boolean;
  readonly now: number;
}

export interface StatusRow {
  readonly pipeline: string;
  readonly table: string;
  readonly state?: string;
  readonly phase?: string;
  readonly lastPosition?: string;
  readonly lastCommitTs?: number;
  readonly lastAppliedAt?: number;
  readonly lagMs?: number;
  readonly lastError?: string;
  readonly lastErrorAt?: number;
  readonly resolvedWatermark?: string;
  readonly truncateWatermark?: string;
  readonly orderingStrength?: string;
  readonly format?: string;
  readonly lastSnapshotPosition?: string;
  readonly lastDdl?: string;
  readonly lastDdlAt?: number;
  /** The table has carried Debezium flattened records. */
  readonly carriesFlattened?: boolean;
  readonly [counter: string]: unknown;
}


export class StatusStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  private key(table: string): Record<string, AttributeValue> {
    return { [STATUS_KEY.pipeline]: { S: this.pipeline }, [STATUS_KEY.table]: { S: table } };
  }

  async load(tables: readonly string[]): Promise<Map<string, StatusRow>> {
    const out = new Map<string, StatusRow>();
    for (let i = 0; i < tables.length; i += 100) {
      const keys = tables.slice(i, i + 100).map((t) => this.key(t));
      let request: Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead: boolean }> | undefined = { [this.tableName]: { Keys: keys, ConsistentRead: true } };
      for (let round = 0; request && round < 8; round++) {
        const res: BatchGetItemCommandOutput = await this.client.send(new BatchGetItemCommand({ RequestItems: request }));
        for (const item of res.Responses?.[this.tableName] ?? []) {
          const row = unmarshall(item) as StatusRow;
          out.set(row.table, row);
        }
        const left: Record<string, AttributeValue>[] | undefined = res.UnprocessedKeys?.[this.tableName]?.Keys;
        request = left && left.length > 0 ? { [this.tableName]: { Keys: left, ConsistentRead: true } } : undefined;
      }
    }
    return out;
  }

  /** Adds a batch's counters to the table's status row and its per-hour row, and sets the row's latest facts. */
  async record(table: string, update: StatusUpdate): Promise<void> {
    const status = new UpdateBuilder();
    status.addCounters(update.counters);
    const s = (x: string | undefined) => (x === undefined ? undefined : { S: x });
    const n = (x: number | undefined) => (x === undefined ? undefined : { N: String(x) });
    status.set('state', s(update.state));
    status.set('phase', s(update.phase));
    status.set('lastPosition', s(update.lastPosition));
    status.set('lastCommitTs', n(update.lastCommitTs));
    status.set('lagMs', n(update.lagMs));
    status.set('lastAppliedAt', n(update.now));
    status.set('resolvedWatermark', s(update.resolvedWatermark));
    status.set('orderingStrength', s(update.orderingStrength));
    status.set('format', s(update.format));
    status.set('lastSnapshotPosition', s(update.lastSnapshotPosition));
    if (update.carriesFlattened === true) status.set('carriesFlattened', { BOOL: true });
    if (update.lastDdl !== undefined) {
      status.set('lastDdl', s(update.lastDdl.slice(0, 4000)));
      status.set('lastDdlAt', n(update.now));
    }
    if (update.lastError) {
      status.set('lastError', s(update.lastError.slice(0, 1000)));
      status.set('lastErrorAt', n(update.now));
    }
    const hour = new UpdateBuilder();
    if (hour.addCounters(update.counters)) hour.set(EXPIRES_AT_ATTRIBUTE, n(Math.floor(update.now / 1000) + HOUR_ROW_TTL_DAYS * 86_400));
    await Promise.all([this.update(table, status), this.update(hourRowKey(update.now, table), hour)]);
  }

  private async update(sortKey: string, u: UpdateBuilder): Promise<void> {
    const expression = u.expression();
    if (!expression) return;
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: this.key(sortKey),
        UpdateExpression: expression,
        ExpressionAttributeNames: u.names,
        ExpressionAttributeValues: u.values,
      }),
    );
  }

  /** Raises the table's truncate watermark; returns false when a newer one is already recorded. */
  async raiseTruncateWatermark(table: string, position: string): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(table),
          UpdateExpression: 'SET #w = :w',
          ConditionExpression: 'attribute_not_exists(#w) OR #w < :w',
          ExpressionAttributeNames: { '#w': 'truncateWatermark' },
          ExpressionAttributeValues: { ':w': { S: position } },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}

/** Assembles one `SET … ADD …` update expression with placeholder names and values. */
class UpdateBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, AttributeValue> = {};
  private readonly sets: string[] = [];
  private readonly adds: string[] = [];
  private i = 0;

  private placeholders(field: string, value: AttributeValue): [string, string] {
    const k = this.i++;
    this.names[`#n${k}`] = field;
    this.values[`:v${k}`] = value;
    return [`#n${k}`, `:v${k}`];
  }

  set(field: string, value: AttributeValue | undefined): void {
    if (!value) return;
    const [name, v] = this.placeholders(field, value);
    this.sets.push(`${name} = ${v}`);
  }

  /** ADDs every non-zero counter; returns whether there was any. */
  addCounters(counters: Partial<Record<Counter, number>>): boolean {
    for (const [counter, n] of Object.entries(counters)) {
      if (!n) continue;
      const [name, v] = this.placeholders(counter, { N: String(n) });
      this.adds.push(`${name} ${v}`);
    }
    return this.adds.length > 0;
  }

  expression(): string {
    return [this.sets.length ? `SET ${this.sets.join(', ')}` : '', this.adds.length ? `ADD ${this.adds.join(', ')}` : ''].filter(Boolean).join(' ');
  }
}
