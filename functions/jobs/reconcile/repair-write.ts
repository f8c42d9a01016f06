/**
 * Repairing a `mismatch`: the stored row is at raw's winning position with other content. The
 * ingest guard (`stored < base`) rightly refuses equal positions, so this write uses the same
 * command builders (guard.ts: item, tombstone, patch) with one other named guard clause:
 *
 *   sameBadRow    #pos = :pos AND #hash = :stored
 *
 * It replaces exactly the row reconcile saw (same position, the content hash it found) and nothing
 * that changed since: a concurrent newer write moves `__pos`, and the condition fails (`stale`).
 */
import { ConditionalCheckFailedException, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { PatchEffect } from '../../core/effect.js';
import type { PlannedWrite } from '../../core/plan.js';
import { patchCommand, putCommand, type WriteContext } from '../../adapters/guard.js';
import { META } from '../../adapters/item-codec.js';
import { type JobDeps, tableConfig } from '../deps.js';

/** The guard clause of a mismatch repair. */
export const SAME_BAD_ROW = '#pos = :pos AND #hash = :stored';

export async function replaceMismatch(deps: JobDeps, write: PlannedWrite, storedHash: string): Promise<string> {
  const table = tableConfig(deps.config, write.table);
  const ctx: WriteContext = { table, now: deps.now() };
  const guard = <T extends { ConditionExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, { S: string } | object> }>(cmd: T): T => {
    const names = { ...(cmd.ExpressionAttributeNames ?? {}) };
    const values = { ...(cmd.ExpressionAttributeValues ?? {}) };
    delete names['#pk'];
    delete values[':base'];
    return {
      ...cmd,
      ConditionExpression: SAME_BAD_ROW,
      ExpressionAttributeNames: { ...names, '#pos': META.position, '#hash': META.hash },
      ExpressionAttributeValues: { ...values, ':pos': { S: write.encodedPosition }, ':stored': { S: storedHash } },
    };
  };
  try {
    if (write.effect.kind === 'patch') {
      await deps.dynamodb.send(new UpdateItemCommand(guard(patchCommand(table.target, write as PlannedWrite & { effect: PatchEffect }, ctx))));
    } else {
      await deps.dynamodb.send(new PutItemCommand(guard(putCommand(table.target, write, ctx))));
    }
    return 'applied';
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return 'stale';
    throw err;
  }
}
