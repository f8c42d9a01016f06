/**
 * One status row per (pipeline, table), like Firebolt's `cdc_ingests`: counters are added per batch,
 * the rest describes the latest batch. `tidemark status` reads these rows.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** Counters added per batch. */
export const COUNTERS = [
  'applied',
  'stale',
  'superseded',
  'duplicates',
  'conflicts',
  'placeholders',
  'missingColumns',
  'quarantined',
  'spilled',
  'errors',
  'opC',
  'opU',
  'opD',
  'opR',
  'opT',
  'snapshotEvents',
  'beforeNullUpdates',
  'resnapshots',
  'writeUnits',
  'rawBytes',
] as const;
export type Counter = (typeof COUNTERS)[number];

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
  readonly [counter: string]: unknown;
}

/** Status rows for quarantined records whose table is unknown. */
export const UNKNOWN_TABLE = '*';

export class StatusStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  private key(table: string): Record<string, AttributeValue> {
    return { pipeline: { S: this.pipeline }, table: { S: table } };
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

  async list(): Promise<StatusRow[]> {
    const rows: StatusRow[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': 'pipeline' },
          ExpressionAttributeValues: { ':p': { S: this.pipeline } },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of res.Items ?? []) rows.push(unmarshall(item) as StatusRow);
      start = res.LastEvaluatedKey;
    } while (start);
    return rows;
  }

  async record(table: string, update: StatusUpdate): Promise<void> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    const adds: string[] = [];
    const sets: string[] = [];
    let i = 0;
    const name = (n: string) => {
      const k = `#n${i++}`;
      names[k] = n;
      return k;
    };
    for (const [counter, n] of Object.entries(update.counters)) {
      if (!n) continue;
      const v = `:v${i}`;
      adds.push(`${name(counter)} ${v}`);
      values[v] = { N: String(n) };
    }
    const setValue = (field: string, value: AttributeValue | undefined) => {
      if (!value) return;
      const v = `:v${i}`;
      sets.push(`${name(field)} = ${v}`);
      values[v] = value;
    };
    const s = (x: string | undefined) => (x === undefined ? undefined : { S: x });
    const n = (x: number | undefined) => (x === undefined ? undefined : { N: String(x) });
    setValue('state', s(update.state));
    setValue('phase', s(update.phase));
    setValue('lastPosition', s(update.lastPosition));
    setValue('lastCommitTs', n(update.lastCommitTs));
    setValue('lagMs', n(update.lagMs));
    setValue('lastAppliedAt', n(update.now));
    setValue('resolvedWatermark', s(update.resolvedWatermark));
    setValue('orderingStrength', s(update.orderingStrength));
    setValue('format', s(update.format));
    if (update.lastError) {
      setValue('lastError', s(update.lastError.slice(0, 1000)));
      setValue('lastErrorAt', n(update.now));
    }
    const expression = [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : ''].filter(Boolean).join(' ');
    if (!expression) return;
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: this.key(table),
        UpdateExpression: expression,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
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
