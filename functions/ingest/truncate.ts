/**
 * Enforces a truncate watermark: removes every row of the table whose position is below it.
 * Each delete is conditional (`#pos < :wm`), so a row rewritten by a newer event is kept.
 */
import { type AttributeValue, ConditionalCheckFailedException, DeleteItemCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../commons/config.js';
import { keyLayout } from '../core/keys.js';
import { META } from '../adapters/item-codec.js';

export async function sweepTruncated(client: DynamoDBClient, table: TableConfig, watermark: string): Promise<number> {
  const layout = keyLayout(table);
  const keyNames = [layout.partitionKey.name, ...(layout.sortKey ? [layout.sortKey.name] : [])];
  let removed = 0;
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table.target,
        FilterExpression: '#pos < :wm',
        ExpressionAttributeNames: { '#pos': META.position },
        ExpressionAttributeValues: { ':wm': { S: watermark } },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const key = Object.fromEntries(keyNames.map((k) => [k, item[k]!]));
      try {
        await client.send(
          new DeleteItemCommand({
            TableName: table.target,
            Key: key,
            ConditionExpression: '#pos < :wm',
            ExpressionAttributeNames: { '#pos': META.position },
            ExpressionAttributeValues: { ':wm': { S: watermark } },
          }),
        );
        removed++;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return removed;
}
