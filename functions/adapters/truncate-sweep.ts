/**
 * Enforces a truncate watermark: removes every row of a table whose position is below it.
 * Each delete is conditional (`#pos < :wm`), so a row rewritten by a newer event meanwhile is kept.
 * The decision (which rows a truncate covers) is the watermark itself; this adapter only does the I/O.
 */
import { type AttributeValue, ConditionalCheckFailedException, DeleteItemCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import { keyLayout } from '../core/keys.js';
import type { Key } from '../core/types.js';
import { keyAttributes, META } from './item-codec.js';

export class TruncateSweeper {
  constructor(private readonly client: DynamoDBClient) {}

  /** Deletes the rows of `table` below `watermark`; returns how many it removed. */
  async sweep(table: TableConfig, watermark: string): Promise<number> {
    const layout = keyLayout(table);
    const keyNames = [layout.partitionKey.name, ...(layout.sortKey ? [layout.sortKey.name] : [])];
    const below = { ExpressionAttributeNames: { '#pos': META.position }, ExpressionAttributeValues: { ':wm': { S: watermark } } };
    let removed = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(new ScanCommand({ TableName: table.target, FilterExpression: '#pos < :wm', ExclusiveStartKey: start, ...below }));
      for (const item of page.Items ?? []) {
        const key: Record<string, AttributeValue> = {};
        for (const k of keyNames) {
          const v = item[k];
          if (v !== undefined) key[k] = v;
        }
        if (await this.deleteBelow(table.target, key, below)) removed++;
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return removed;
  }

  /**
   * Deletes these keys' rows if they are below `watermark`: the rows an ingest batch wrote while its
   * copy of the watermark was older than the one another shard had raised (and swept) meanwhile.
   */
  async sweepKeys(table: TableConfig, keys: readonly Key[], watermark: string): Promise<number> {
    const below = { ExpressionAttributeNames: { '#pos': META.position }, ExpressionAttributeValues: { ':wm': { S: watermark } } };
    let removed = 0;
    for (const key of keys) if (await this.deleteBelow(table.target, keyAttributes(table, key), below)) removed++;
    return removed;
  }

  private async deleteBelow(tableName: string, key: Record<string, AttributeValue>, below: object): Promise<boolean> {
    try {
      await this.client.send(new DeleteItemCommand({ TableName: tableName, Key: key, ConditionExpression: '#pos < :wm', ...below }));
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}
