/**
 * A small in-memory DynamoDB for unit tests of the writer and the status store: PutItem, UpdateItem
 * (SET, REMOVE and ADD of numbers), GetItem, BatchGetItem and Query (one page) with the semantics they rely on,
 * evaluated the way DynamoDB does:
 * - condition expressions (`attribute_not_exists`, `attribute_exists`, `=`, `<`, `<=`, `>`, `>=`,
 *   `BETWEEN`, `AND`, `OR`, parentheses) on the stored item, strings compared by their UTF-8 bytes;
 * - a failed condition throws ConditionalCheckFailedException carrying the stored item when
 *   `ReturnValuesOnConditionCheckFailure` is `ALL_OLD`, and costs one write unit;
 * - the validation errors a wrong command gets: a path set twice or set and removed ("Two document
 *   paths overlap"), a key attribute in SET, an expression over 4 KB, an item over 400 KB;
 * - consumed capacity: 1 WCU per KB written, 1 RCU per 4 KB read consistently (half eventually);
 * - TransactWriteItems of Puts: all conditions are evaluated first, and if any fails nothing is
 *   written and TransactionCanceledException lists a reason per item (`ConditionalCheckFailed` with
 *   the stored item under ALL_OLD, else `None`); at most 100 items, no two on one item, 4 MB in all;
 *   2 WCU per KB per item.
 * `fault` lets a test fail any command before it runs; `afterWrite` sees every state a write
 * leaves (a reader between requests). Pass it wherever a DynamoDBClient is expected: `fake.client`.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandInput,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  DynamoDBServiceException,
  GetItemCommand,
  type GetItemCommandInput,
  PutItemCommand,
  type PutItemCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../../lib/config/config.js';
import { keyLayout } from '../../functions/core/keys.js';

type Item = Record<string, AttributeValue>;

export const MAX_ITEM_BYTES = 400 * 1024;

export class ValidationException extends DynamoDBServiceException {
  constructor(message: string) {
    super({ name: 'ValidationException', $fault: 'client', message, $metadata: {} });
  }
}

/** DynamoDB's item size: attribute name bytes plus value bytes. */
export function itemSize(item: Item): number {
  let n = 0;
  for (const [name, value] of Object.entries(item)) n += Buffer.byteLength(name, 'utf8') + valueSize(value);
  return n;
}

function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return Math.ceil(v.N.replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.L !== undefined) return 3 + v.L.reduce((n, x) => n + 1 + valueSize(x), 0);
  if (v.M !== undefined) return 3 + itemSize(v.M);
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
  return 1;
}

const clone = (item: Item): Item => structuredClone(item);

/** Assignment would turn a `__proto__` attribute into a prototype change. */
function setOwn(target: Item, name: string, value: AttributeValue): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

export interface FakeOptions {
  /** Leave this many keys of each BatchGetItem unprocessed, for the next `n` BatchGetItem calls. */
  unprocessedBatchGets?: number;
  /** Called before each command runs; an error it returns is thrown instead (nothing is written). */
  fault?: (name: string, input: unknown) => Error | undefined;
  /** Called after each write that changed the store (PutItem, UpdateItem, TransactWriteItems). */
  afterWrite?: (fake: FakeDynamoDB) => void;
}

export class FakeDynamoDB {
  readonly tables = new Map<string, Map<string, Item>>();
  private readonly keyNames = new Map<string, string[]>();
  /** Every command sent, by name, in order. */
  readonly calls: { name: string; input: unknown }[] = [];
  readonly client: DynamoDBClient;
  unprocessedBatchGets: number;
  private readonly options: FakeOptions;

  constructor(tables: readonly TableConfig[], options: FakeOptions = {}) {
    this.options = options;
    for (const t of tables) {
      const layout = keyLayout(t);
      this.keyNames.set(t.target, layout.sortKey ? [layout.partitionKey.name, layout.sortKey.name] : [layout.partitionKey.name]);
      this.tables.set(t.target, new Map());
    }
    this.unprocessedBatchGets = options.unprocessedBatchGets ?? 0;
    this.client = { send: (cmd: unknown) => this.send(cmd) } as unknown as DynamoDBClient;
  }

  /** The stored item of a key, e.g. `fake.get('orders', { id: { N: '1' } })`. */
  get(target: string, key: Item): Item | undefined {
    return this.tables.get(target)?.get(this.keyOf(target, key));
  }

  items(target: string): Item[] {
    return [...(this.tables.get(target)?.values() ?? [])];
  }

  count(name: string): number {
    return this.calls.filter((c) => c.name === name).length;
  }

  async send(cmd: unknown): Promise<unknown> {
    await Promise.resolve();
    if (cmd instanceof PutItemCommand) return this.record('PutItem', cmd.input, () => this.putItem(cmd.input));
    if (cmd instanceof UpdateItemCommand) return this.record('UpdateItem', cmd.input, () => this.updateItem(cmd.input));
    if (cmd instanceof GetItemCommand) return this.record('GetItem', cmd.input, () => this.getItem(cmd.input));
    if (cmd instanceof BatchGetItemCommand) return this.record('BatchGetItem', cmd.input, () => this.batchGetItem(cmd.input));
    if (cmd instanceof QueryCommand) return this.record('Query', cmd.input, () => this.query(cmd.input));
    if (cmd instanceof TransactWriteItemsCommand) return this.record('TransactWriteItems', cmd.input, () => this.transactWriteItems(cmd.input));
    throw new Error(`fake DynamoDB does not implement ${String((cmd as object)?.constructor?.name)}`);
  }

  private record<T>(name: string, input: unknown, run: () => T): T {
    this.calls.push({ name, input });
    const fault = this.options.fault?.(name, input);
    if (fault) throw fault;
    const out = run();
    if (name === 'PutItem' || name === 'UpdateItem' || name === 'TransactWriteItems') this.options.afterWrite?.(this);
    return out;
  }

  private transactWriteItems(input: TransactWriteItemsCommandInput) {
    const actions = input.TransactItems ?? [];
    if (actions.length === 0 || actions.length > 100) throw new ValidationException('Member must have length less than or equal to 100');
    const puts = actions.map((a) => {
      if (!a.Put) throw new ValidationException('fake DynamoDB transactions take Put actions only');
      return a.Put;
    });
    const ids = puts.map((p) => `${p.TableName}\u0000${this.keyOf(p.TableName ?? '', p.Item ?? {})}`);
    if (new Set(ids).size !== ids.length) throw new ValidationException('Transaction request cannot include multiple operations on one item');
    if (puts.reduce((n, p) => n + itemSize(p.Item ?? {}), 0) > 4 * 1024 * 1024) throw new ValidationException('Transaction request size has exceeded the maximum allowed size');
    const reasons = puts.map((p) => {
      checkExpression(p.ConditionExpression);
      if (itemSize(p.Item ?? {}) > MAX_ITEM_BYTES) return { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' };
      const old = this.table(p.TableName).get(this.keyOf(p.TableName ?? '', p.Item ?? {}));
      if (p.ConditionExpression === undefined || evaluate(p.ConditionExpression, old ?? {}, p.ExpressionAttributeNames ?? {}, p.ExpressionAttributeValues ?? {})) return { Code: 'None' };
      return { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...(p.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && old ? { Item: clone(old) } : {}) };
    });
    if (reasons.some((r) => r.Code !== 'None')) {
      throw new TransactionCanceledException({ message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`, $metadata: {}, CancellationReasons: reasons });
    }
    const consumed = new Map<string, number>();
    for (const p of puts) {
      const table = this.table(p.TableName);
      const id = this.keyOf(p.TableName ?? '', p.Item ?? {});
      const old = table.get(id);
      table.set(id, clone(p.Item ?? {}));
      consumed.set(p.TableName ?? '', (consumed.get(p.TableName ?? '') ?? 0) + 2 * writeUnits(old, p.Item ?? {}));
    }
    return { ConsumedCapacity: [...consumed].map(([TableName, CapacityUnits]) => ({ TableName, CapacityUnits })) };
  }

  private table(name: string | undefined): Map<string, Item> {
    const t = name === undefined ? undefined : this.tables.get(name);
    if (!t) throw new ValidationException(`Requested resource not found: ${name}`);
    return t;
  }

  private keyOf(target: string, item: Item): string {
    const names = this.keyNames.get(target) ?? [];
    return JSON.stringify(
      names.map((n) => {
        const v = item[n];
        if (!v) throw new ValidationException(`One of the required keys was not given a value: ${n}`);
        return v;
      }),
    );
  }

  private putItem(input: PutItemCommandInput) {
    const table = this.table(input.TableName);
    const item = input.Item ?? {};
    checkExpression(input.ConditionExpression);
    checkAllUsed(input, [input.ConditionExpression]);
    if (itemSize(item) > MAX_ITEM_BYTES) throw new ValidationException('Item size has exceeded the maximum allowed size');
    const id = this.keyOf(input.TableName ?? '', item);
    const old = table.get(id);
    this.check(input, old);
    table.set(id, clone(item));
    return { ConsumedCapacity: { TableName: input.TableName, CapacityUnits: writeUnits(old, item) } };
  }

  private updateItem(input: UpdateItemCommandInput) {
    const table = this.table(input.TableName);
    const target = input.TableName ?? '';
    checkExpression(input.UpdateExpression);
    checkExpression(input.ConditionExpression);
    checkAllUsed(input, [input.UpdateExpression, input.ConditionExpression]);
    const id = this.keyOf(target, input.Key ?? {});
    const old = table.get(id);
    const { sets, removes, adds } = parseUpdate(input.UpdateExpression ?? '', input.ExpressionAttributeNames ?? {}, input.ExpressionAttributeValues ?? {});
    for (const name of sets.keys()) if (this.keyNames.get(target)?.includes(name)) throw new ValidationException(`Cannot update attribute ${name}. This attribute is part of the key`);
    this.check(input, old);
    const next: Item = { ...(old ? clone(old) : {}), ...clone(input.Key ?? {}) };
    for (const [name, value] of sets) setOwn(next, name, structuredClone(value));
    for (const name of removes) delete next[name];
    for (const [name, value] of adds) {
      const before = next[name];
      if (before !== undefined && before.N === undefined) throw new ValidationException(`An operand in the update expression has an incorrect data type: ${name}`);
      setOwn(next, name, { N: String(Number(before?.N ?? 0) + Number(value.N)) });
    }
    if (itemSize(next) > MAX_ITEM_BYTES) throw new ValidationException('Item size to update has exceeded the maximum allowed size');
    table.set(id, next);
    const attributes = input.ReturnValues === 'ALL_OLD' && old ? { Attributes: clone(old) } : {};
    return { ...attributes, ConsumedCapacity: { TableName: target, CapacityUnits: writeUnits(old, next) } };
  }

  private getItem(input: GetItemCommandInput) {
    const table = this.table(input.TableName);
    const item = table.get(this.keyOf(input.TableName ?? '', input.Key ?? {}));
    const units = readUnits(item, input.ConsistentRead === true);
    return { ...(item ? { Item: clone(item) } : {}), ConsumedCapacity: { TableName: input.TableName, CapacityUnits: units } };
  }

  private batchGetItem(input: BatchGetItemCommandInput) {
    const responses: Record<string, Item[]> = {};
    const unprocessed: NonNullable<BatchGetItemCommandInput['RequestItems']> = {};
    const consumed: { TableName: string; CapacityUnits: number }[] = [];
    const leaveOut = this.unprocessedBatchGets > 0 ? 1 : 0;
    this.unprocessedBatchGets = Math.max(0, this.unprocessedBatchGets - 1);
    for (const [target, req] of Object.entries(input.RequestItems ?? {})) {
      const table = this.table(target);
      const keys = req.Keys ?? [];
      if (keys.length > 100) throw new ValidationException('Too many items requested for the BatchGetItem call');
      if (new Set(keys.map((k) => this.keyOf(target, k))).size !== keys.length) throw new ValidationException('Provided list of item keys contains duplicates');
      const served = keys.slice(0, keys.length - leaveOut);
      if (served.length < keys.length) unprocessed[target] = { ...req, Keys: keys.slice(served.length) };
      const found = served.flatMap((k) => {
        const item = table.get(this.keyOf(target, k));
        return item ? [project(item, req.ProjectionExpression, req.ExpressionAttributeNames ?? {})] : [];
      });
      responses[target] = found;
      const units = served.reduce((n, k) => n + readUnits(table.get(this.keyOf(target, k)), req.ConsistentRead === true), 0);
      consumed.push({ TableName: target, CapacityUnits: units });
    }
    return { Responses: responses, UnprocessedKeys: unprocessed, ConsumedCapacity: consumed };
  }

  /** Every item matching the key condition, in sort-key order (one page). */
  private query(input: QueryCommandInput) {
    const target = input.TableName ?? '';
    const names = this.keyNames.get(target) ?? [];
    const sortKey = names[1];
    const items = [...this.table(target).values()]
      .filter((i) => evaluate(input.KeyConditionExpression ?? '', i, input.ExpressionAttributeNames ?? {}, input.ExpressionAttributeValues ?? {}))
      .sort((a, b) => (sortKey === undefined ? 0 : Buffer.compare(Buffer.from(a[sortKey]?.S ?? ''), Buffer.from(b[sortKey]?.S ?? ''))))
      .map(clone);
    return { Items: items, Count: items.length, ScannedCount: items.length };
  }

  private check(input: { ConditionExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Item; ReturnValuesOnConditionCheckFailure?: string; TableName?: string }, old: Item | undefined): void {
    if (input.ConditionExpression === undefined) return;
    const ok = evaluate(input.ConditionExpression, old ?? {}, input.ExpressionAttributeNames ?? {}, input.ExpressionAttributeValues ?? {});
    if (ok) return;
    const item = input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && old ? { Item: clone(old) } : {};
    throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {}, ...item });
  }
}

const writeUnits = (old: Item | undefined, next: Item) => Math.max(1, Math.ceil(Math.max(old ? itemSize(old) : 0, itemSize(next)) / 1024));

function readUnits(item: Item | undefined, consistent: boolean): number {
  const units = Math.max(1, Math.ceil((item ? itemSize(item) : 0) / 4096));
  return consistent ? units : units / 2;
}

/** DynamoDB refuses names and values that no expression of the request uses. */
function checkAllUsed(input: { ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Item }, expressions: readonly (string | undefined)[]): void {
  const text = expressions.filter((e) => e !== undefined).join(' ');
  const used = (token: string) => new RegExp(`${token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`).test(text);
  for (const name of Object.keys(input.ExpressionAttributeNames ?? {})) if (!used(name)) throw new ValidationException(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${name}}`);
  for (const value of Object.keys(input.ExpressionAttributeValues ?? {})) if (!used(value)) throw new ValidationException(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${value}}`);
}

function checkExpression(expr: string | undefined): void {
  if (expr !== undefined && Buffer.byteLength(expr, 'utf8') > 4096) throw new ValidationException('Invalid expression: Expression size has exceeded the maximum allowed size');
}

function project(item: Item, projection: string | undefined, names: Record<string, string>): Item {
  if (projection === undefined) return clone(item);
  const out: Item = {};
  for (const token of projection.split(',').map((t) => t.trim())) {
    const name = token.startsWith('#') ? names[token] : token;
    const v = name === undefined ? undefined : item[name];
    if (name !== undefined && v) setOwn(out, name, structuredClone(v));
  }
  return out;
}

function parseUpdate(expr: string, names: Record<string, string>, values: Item): { sets: Map<string, AttributeValue>; removes: string[]; adds: Map<string, AttributeValue> } {
  const sets = new Map<string, AttributeValue>();
  const removes: string[] = [];
  const adds = new Map<string, AttributeValue>();
  const seen = new Set<string>();
  const resolve = (token: string): string => {
    const name = token.startsWith('#') ? names[token] : token;
    if (name === undefined) throw new ValidationException(`An expression attribute name used in the document path is not defined; attribute name: ${token}`);
    if (seen.has(name)) throw new ValidationException(`Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${name}], path two: [${name}]`);
    seen.add(name);
    return name;
  };
  const parts = expr.split(/\b(SET|REMOVE|ADD)\b/).map((p) => p.trim());
  for (let i = 1; i < parts.length; i += 2) {
    const clauses = (parts[i + 1] ?? '').split(',').map((c) => c.trim()).filter((c) => c !== '');
    for (const clause of clauses) {
      if (parts[i] === 'REMOVE') removes.push(resolve(clause));
      else if (parts[i] === 'ADD') {
        const [path, value] = clause.split(/\s+/);
        const v = value === undefined ? undefined : values[value];
        if (path === undefined || v?.N === undefined) throw new ValidationException(`bad ADD clause ${clause} (numbers only here)`);
        adds.set(resolve(path), v);
      } else {
        const [path, value] = clause.split('=').map((x) => x.trim());
        const v = value === undefined ? undefined : values[value];
        if (path === undefined || v === undefined) throw new ValidationException(`bad SET clause ${clause}`);
        sets.set(resolve(path), v);
      }
    }
  }
  return { sets, removes, adds };
}

/** Evaluates a condition expression on `item` (empty when the key has no item). */
export function evaluate(expr: string, item: Item, names: Record<string, string>, values: Item): boolean {
  const tokens = expr.match(/\(|\)|<=|>=|<>|=|<|>|[#:]?[A-Za-z_][A-Za-z0-9_]*/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = () => tokens[i++] ?? '';
  const operand = (token: string): AttributeValue | undefined => {
    if (token.startsWith(':')) return values[token];
    const name = token.startsWith('#') ? names[token] : token;
    return name === undefined ? undefined : item[name];
  };
  const factor = (): boolean => {
    const t = take();
    if (t === '(') {
      const v = or();
      take();
      return v;
    }
    if (t === 'attribute_not_exists' || t === 'attribute_exists') {
      take();
      const present = operand(take()) !== undefined;
      take();
      return t === 'attribute_exists' ? present : !present;
    }
    const op = take();
    if (op === 'BETWEEN') {
      const low = operand(take());
      take(); // AND
      const high = operand(take());
      const v = operand(t);
      return compare(v, '>=', low) && compare(v, '<=', high);
    }
    return compare(operand(t), op, operand(take()));
  };
  const and = (): boolean => {
    let v = factor();
    while (peek() === 'AND') {
      take();
      v = factor() && v;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (peek() === 'OR') {
      take();
      v = and() || v;
    }
    return v;
  };
  return or();
}

function compare(a: AttributeValue | undefined, op: string, b: AttributeValue | undefined): boolean {
  if (a === undefined || b === undefined) return op === '<>';
  let c: number;
  if (a.S !== undefined && b.S !== undefined) c = Buffer.compare(Buffer.from(a.S, 'utf8'), Buffer.from(b.S, 'utf8'));
  else if (a.N !== undefined && b.N !== undefined) c = Math.sign(Number(a.N) - Number(b.N));
  else c = JSON.stringify(a) === JSON.stringify(b) ? 0 : Number.NaN;
  switch (op) {
    case '=':
      return c === 0;
    case '<>':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    default:
      throw new ValidationException(`unsupported comparator ${op}`);
  }
}
