/**
 * The DynamoDB commands for one planned write, with the guard built from named clauses:
 *
 *   keyAbsent        attribute_not_exists(<partition key>)
 *   storedIsOlder    #pos < :base
 *
 * `:base` is the write's base position (see plan.ts): the earliest event whose content it carries.
 */
import type { AttributeValue, PutItemCommandInput, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../commons/config.js';
import type { PatchEffect } from '../core/effect.js';
import { keyLayout } from '../core/keys.js';
import type { PlannedWrite } from '../core/plan.js';
import { keyAttributes, keyColumnAttributes, META, marshallRow, marshallValue } from './item-codec.js';

export const GUARD = {
  keyAbsent: 'attribute_not_exists(#pk)',
  storedIsOlder: '#pos < :base',
} as const;

export const guardExpression = `${GUARD.keyAbsent} OR ${GUARD.storedIsOlder}`;

export interface WriteContext {
  readonly table: TableConfig;
  readonly now: number;
  /** Extra attributes for the item, e.g. a spill pointer. */
  readonly extra?: Record<string, AttributeValue>;
}

function metaAttributes(w: PlannedWrite, now: number): Record<string, AttributeValue> {
  const meta: Record<string, AttributeValue> = {
    [META.position]: { S: w.encodedPosition },
    [META.op]: { S: w.op },
    [META.appliedAt]: { N: String(now) },
    [META.hash]: { S: w.contentHash },
  };
  if (w.commitTs !== null) meta[META.commitTs] = { N: String(w.commitTs) };
  if (w.txid !== null) meta[META.txid] = { S: w.txid };
  return meta;
}

function guardNames(ctx: WriteContext): Record<string, string> {
  return { '#pk': keyLayout(ctx.table).partitionKey.name, '#pos': META.position };
}

/** PutItem for a full row (replace) or a tombstone. */
export function putCommand(targetTable: string, w: PlannedWrite, ctx: WriteContext): PutItemCommandInput {
  const key = keyAttributes(ctx.table, w.key);
  let item: Record<string, AttributeValue>;
  if (w.effect.kind === 'tombstone') {
    const ttlSeconds = Math.floor(ctx.now / 1000) + Math.round(ctx.table.tombstoneTtlDays * 86_400);
    item = { ...keyColumnAttributes(ctx.table, w.key), ...key, ...metaAttributes(w, ctx.now), [META.deleted]: { BOOL: true }, [META.expiresAt]: { N: String(ttlSeconds) } };
  } else if (w.effect.kind === 'put') {
    item = { ...marshallRow(w.effect.row), ...keyColumnAttributes(ctx.table, w.key), ...key, ...metaAttributes(w, ctx.now), [META.deleted]: { BOOL: false } };
    if (w.effect.missing.length > 0) item[META.missing] = { SS: [...w.effect.missing] };
    if (w.effect.partial) item[META.partial] = { BOOL: true };
  } else {
    throw new TypeError('putCommand takes a put or tombstone effect');
  }
  return {
    TableName: targetTable,
    Item: { ...item, ...ctx.extra },
    ConditionExpression: guardExpression,
    ExpressionAttributeNames: guardNames(ctx),
    ExpressionAttributeValues: { ':base': { S: w.basePosition } },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  };
}

/** UpdateItem for a patch: SET the carried columns, REMOVE the removed ones, keep the rest. */
export function patchCommand(targetTable: string, w: PlannedWrite & { effect: PatchEffect }, ctx: WriteContext): UpdateItemCommandInput {
  const names = guardNames(ctx);
  const values: Record<string, AttributeValue> = { ':base': { S: w.basePosition } };
  const sets: string[] = [];
  // A patch that lands on a tombstone revives the key: the tombstone's expiry must go.
  const removes: string[] = ['#x'];
  names['#x'] = META.expiresAt;
  let i = 0;
  const setAttr = (name: string, value: AttributeValue) => {
    const n = `#a${i}`;
    const v = `:a${i}`;
    i++;
    names[n] = name;
    values[v] = value;
    sets.push(`${n} = ${v}`);
  };
  // Key attributes identify the item; DynamoDB refuses to SET them.
  const layout = keyLayout(ctx.table);
  const keyNames = new Set([layout.partitionKey.name, layout.sortKey?.name].filter((n): n is string => n !== undefined));
  for (const [col, value] of Object.entries(w.effect.set)) if (!keyNames.has(col)) setAttr(col, marshallValue(value));
  for (const [name, value] of Object.entries({ ...keyColumnAttributes(ctx.table, w.key), ...metaAttributes(w, ctx.now), [META.deleted]: { BOOL: false } })) setAttr(name, value);
  for (const [name, value] of Object.entries(ctx.extra ?? {})) setAttr(name, value);
  w.effect.unset.forEach((col, j) => {
    names[`#r${j}`] = col;
    removes.push(`#r${j}`);
  });
  return {
    TableName: targetTable,
    Key: keyAttributes(ctx.table, w.key),
    UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
    ConditionExpression: guardExpression,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  };
}

/** After a patch: record which columns are missing and whether the row is partial, if that changed. */
export function markMissingCommand(
  targetTable: string,
  w: PlannedWrite,
  ctx: WriteContext,
  missing: readonly string[],
  partial: boolean,
): UpdateItemCommandInput {
  const values: Record<string, AttributeValue> = { ':pos': { S: w.encodedPosition }, ':partial': { BOOL: partial } };
  if (missing.length > 0) values[':missing'] = { SS: [...missing] };
  const update = missing.length > 0 ? 'SET #p = :partial, #m = :missing' : 'SET #p = :partial REMOVE #m';
  return {
    TableName: targetTable,
    Key: keyAttributes(ctx.table, w.key),
    UpdateExpression: update,
    ConditionExpression: '#pos = :pos',
    ExpressionAttributeNames: { '#pos': META.position, '#m': META.missing, '#p': META.partial },
    ExpressionAttributeValues: values,
    ReturnConsumedCapacity: 'TOTAL',
  };
}
