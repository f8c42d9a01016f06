/**
 * The DynamoDB commands for one planned write, with the guard built from named clauses:
 *
 *   keyAbsent        attribute_not_exists(<partition key>)
 *   storedIsOlder    #pos < :base
 *
 * `:base` is the write's base position (see plan.ts): the earliest event whose content it carries.
 * A patch adds `notSpilled`: on a spilled row it would update only the stub in DynamoDB, so it fails
 * instead and the writer merges it with the spilled copy. A read-merge-put replaces the clauses by
 * `storedIs` (the exact position it read) or `keyAbsent` alone, so nothing written in between is lost.
 */
import type { AttributeValue, PutItemCommandInput, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import type { PatchEffect } from '../core/effect.js';
import { keyLayout } from '../core/keys.js';
import type { PlannedWrite } from '../core/plan.js';
import { keyAttributes, keyColumnAttributes, META, marshallRow, marshallValue } from './item-codec.js';

export const GUARD = {
  keyAbsent: 'attribute_not_exists(#pk)',
  storedIsOlder: '#pos < :base',
  notSpilled: 'attribute_not_exists(#spill)',
  storedIs: '#pos = :stored',
} as const;

export const guardExpression = `${GUARD.keyAbsent} OR ${GUARD.storedIsOlder}`;
const patchGuardExpression = `(${guardExpression}) AND ${GUARD.notSpilled}`;

/** DynamoDB refuses any expression string over 4 KB. */
export const MAX_EXPRESSION_BYTES = 4096;

/**
 * The condition of a put: the position guard, or — for a read-merge-put — "the item is still the
 * one read" (`exact`, its position) or "there is still no item" (`absent`).
 */
export type PutCondition = { readonly kind: 'guard' } | { readonly kind: 'exact'; readonly position: string } | { readonly kind: 'absent' };

const GUARDED: PutCondition = { kind: 'guard' };

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
  // Decimals too long for a DynamoDB number are stored as their exact text; this says which columns.
  if (w.decimalText !== undefined && w.decimalText.length > 0) meta[META.decimalText] = { SS: [...w.decimalText] };
  return meta;
}

function guardNames(ctx: WriteContext): Record<string, string> {
  return { '#pk': keyLayout(ctx.table).partitionKey.name, '#pos': META.position };
}

function putConditionParts(w: PlannedWrite, ctx: WriteContext, condition: PutCondition): Pick<PutItemCommandInput, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'> {
  switch (condition.kind) {
    case 'guard':
      return { ConditionExpression: guardExpression, ExpressionAttributeNames: guardNames(ctx), ExpressionAttributeValues: { ':base': { S: w.basePosition } } };
    case 'exact':
      return { ConditionExpression: GUARD.storedIs, ExpressionAttributeNames: { '#pos': META.position }, ExpressionAttributeValues: { ':stored': { S: condition.position } } };
    case 'absent':
      return { ConditionExpression: GUARD.keyAbsent, ExpressionAttributeNames: { '#pk': keyLayout(ctx.table).partitionKey.name } };
  }
}

/** PutItem for a full row (replace) or a tombstone. */
export function putCommand(targetTable: string, w: PlannedWrite, ctx: WriteContext, condition: PutCondition = GUARDED): PutItemCommandInput {
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
    ...putConditionParts(w, ctx, condition),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  };
}

/**
 * UpdateItem for a patch: SET the carried columns, REMOVE the removed ones, keep the rest.
 * Every attribute is named once: DynamoDB refuses an expression that sets a path twice or sets and
 * removes it ("Two document paths overlap"), which a patch carrying the key columns of a composite
 * key would otherwise do (they are both patch columns and key-column attributes).
 */
export function patchCommand(targetTable: string, w: PlannedWrite & { effect: PatchEffect }, ctx: WriteContext): UpdateItemCommandInput {
  const layout = keyLayout(ctx.table);
  // Key attributes identify the item; DynamoDB refuses to SET them.
  const keyNames = new Set([layout.partitionKey.name, layout.sortKey?.name].filter((n): n is string => n !== undefined));
  const sets = new Map<string, AttributeValue>();
  for (const col of Object.keys(w.effect.set)) {
    const value = w.effect.set[col];
    if (value !== undefined && !keyNames.has(col)) sets.set(col, marshallValue(value));
  }
  const fixed: Record<string, AttributeValue> = { ...keyColumnAttributes(ctx.table, w.key), ...metaAttributes(w, ctx.now), [META.deleted]: { BOOL: false }, ...ctx.extra };
  for (const name of Object.keys(fixed)) {
    const value = fixed[name];
    if (value !== undefined) sets.set(name, value);
  }
  // A patch that lands on a tombstone revives the key: the tombstone's expiry must go.
  const removes = [META.expiresAt, ...w.effect.unset].filter((name, i, all) => !sets.has(name) && !keyNames.has(name) && all.indexOf(name) === i);
  const names: Record<string, string> = { ...guardNames(ctx), '#spill': META.spill };
  const values: Record<string, AttributeValue> = { ':base': { S: w.basePosition } };
  const setClauses = [...sets].map(([name, value], i) => {
    names[`#a${i}`] = name;
    values[`:a${i}`] = value;
    return `#a${i} = :a${i}`;
  });
  const removeClauses = removes.map((name, j) => {
    names[`#r${j}`] = name;
    return `#r${j}`;
  });
  const update = `SET ${setClauses.join(', ')}${removeClauses.length > 0 ? ` REMOVE ${removeClauses.join(', ')}` : ''}`;
  return {
    TableName: targetTable,
    Key: keyAttributes(ctx.table, w.key),
    UpdateExpression: update,
    ConditionExpression: patchGuardExpression,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  };
}

/** True when DynamoDB would refuse the command for an expression over its 4 KB limit. */
export function expressionTooLarge(cmd: Pick<UpdateItemCommandInput, 'UpdateExpression' | 'ConditionExpression'>): boolean {
  return [cmd.UpdateExpression, cmd.ConditionExpression].some((e) => e !== undefined && Buffer.byteLength(e, 'utf8') > MAX_EXPRESSION_BYTES);
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
