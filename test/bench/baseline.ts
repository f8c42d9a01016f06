/**
 * The obvious build, as a baseline: one conditional PutItem per event, in arrival order, guarded
 * on the same encoded position tidemark uses (`attribute_not_exists(#pk) OR #pos < :pos`); no
 * collapsing and no raw landing. Keys of a batch run in parallel (at most `concurrency` at a time),
 * each key's events sequentially, which is already generous to the baseline.
 */
import { type AttributeValue, ConditionalCheckFailedException, type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../../lib/config/config.js';
import { keyAttributes, META, marshallRow } from '../../functions/adapters/item-codec.js';
import { encodePosition } from '../../functions/core/position.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { mapLimit } from '../../functions/core/concurrency.js';

/** Totals of a baseline run. */
export interface BaselineResult {
  requests: number;
  writeUnits: number;
  applied: number;
  rejected: number;
  failed: number;
  wallMs: number;
}

/** The item the baseline stores for one event: the after row, or a tombstone. */
function itemFor(table: TableConfig, e: ChangeEvent, position: string): Record<string, AttributeValue> {
  const meta: Record<string, AttributeValue> = { [META.position]: { S: position }, [META.op]: { S: e.op } };
  if (e.op === 'd') return { ...keyAttributes(table, e.key), ...meta, [META.deleted]: { BOOL: true } };
  return { ...marshallRow(e.after ?? {}), ...keyAttributes(table, e.key), ...meta, [META.deleted]: { BOOL: false } };
}

/**
 * Writes every event of every batch. `batches` hold already-normalized change events in arrival
 * order; `identify` groups them per key.
 */
export async function runBaseline(
  client: DynamoDBClient,
  table: TableConfig,
  batches: readonly (readonly ChangeEvent[])[],
  identify: (e: ChangeEvent) => string,
  concurrency = 16,
): Promise<BaselineResult> {
  const result: BaselineResult = { requests: 0, writeUnits: 0, applied: 0, rejected: 0, failed: 0, wallMs: 0 };
  const pk = table.key[0]!;
  const put = async (e: ChangeEvent): Promise<void> => {
    const position = encodePosition(e.position.tuple);
    result.requests++;
    try {
      const res = await client.send(
        new PutItemCommand({
          TableName: table.target,
          Item: itemFor(table, e, position),
          ConditionExpression: 'attribute_not_exists(#pk) OR #pos < :pos',
          ExpressionAttributeNames: { '#pk': pk, '#pos': META.position },
          ExpressionAttributeValues: { ':pos': { S: position } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      result.writeUnits += res.ConsumedCapacity?.CapacityUnits ?? 1;
      result.applied++;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) {
        result.failed++;
        throw err;
      }
      result.writeUnits += 1; // a failed conditional write still consumes a write unit
      result.rejected++;
    }
  };
  const started = performance.now();
  for (const batch of batches) {
    const perKey = new Map<string, ChangeEvent[]>();
    for (const e of batch) {
      const id = identify(e);
      const list = perKey.get(id);
      if (list) list.push(e);
      else perKey.set(id, [e]);
    }
    await mapLimit([...perKey.values()], concurrency, async (events) => {
      for (const e of events) await put(e);
    });
  }
  result.wallMs = performance.now() - started;
  return result;
}
