/**
 * Reads, for a set of keys, what the current-state table holds about each one's position: the
 * stored `__pos`, `__hash` and `__deleted`, and nothing else (a projection of the key attributes
 * plus those three, so a read costs at most 0.5 RCU per 4 KB of them, eventually consistent).
 *
 * Used before writing keys that may already be current (a redelivered window, a replay): a key
 * whose stored position is at or above a write's need not be written at all, and a read costs a
 * quarter of the conditional write that would fail. Eventually consistent is enough: a stale read
 * can only show an older position, which makes the caller write, and the write's guard decides.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type ConsumedCapacity,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import { Limiter } from '../core/concurrency.js';
import { canonicalDecimal, decimalParts } from '../core/decimal.js';
import { asError, WriteError } from '../core/errors.js';
import { type KeyAttribute, keyLayout } from '../core/keys.js';
import type { Key } from '../core/types.js';
import { keyAttributes } from './item-codec.js';

/** DynamoDB's BatchGetItem limit: at most 100 keys per request. */
export const BATCH_GET_LIMIT = 100;

/** What a stored item says about its position. */
export interface StoredPosition {
  /** The encoded position (`__pos`) of the last write applied to the key. */
  readonly position: string;
  /** The content hash (`__hash`) of that write: equal hashes at equal positions are duplicates. */
  readonly hash: string;
  /** True when the stored item is a tombstone. */
  readonly deleted: boolean;
}

export interface StoredPositions {
  /** Per canonical key text (keys.ts `keyId`): the stored position. A key with no item is absent. */
  readonly byKey: ReadonlyMap<string, StoredPosition>;
  /**
   * Keys DynamoDB left unprocessed after every retry. Nothing is known about them: the caller must
   * treat them as not read (write them under the guard).
   */
  readonly unread: ReadonlySet<string>;
  /** Read capacity units consumed, as DynamoDB reports them (ReturnConsumedCapacity TOTAL). */
  readonly readUnits: number;
  /** BatchGetItem requests sent. */
  readonly requests: number;
}

/** What a key to read needs: its canonical text and its normalized key columns. */
export interface KeyToRead {
  readonly keyId: string;
  readonly key: Key;
}

export interface ReadOptions {
  /** Rounds of retrying UnprocessedKeys. @default 8 */
  readonly maxAttempts?: number;
  /** First backoff delay in ms; doubled each round, with full jitter. @default 50 */
  readonly baseDelayMs?: number;
  /** @default 2000 */
  readonly maxDelayMs?: number;
  /** Injected for tests. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** Chunks are read in parallel, each request holding a slot of this bound. @default one chunk at a time */
  readonly limiter?: Limiter;
}

const POSITION = '__pos';
const HASH = '__hash';
const DELETED = '__deleted';

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Reads the stored position of every distinct key among `writes` from `table.target`.
 *
 * @example
 *   const stored = await readStoredPositions(client, table, writes);
 *   const skip = writes.filter((w) => (stored.byKey.get(w.keyId)?.position ?? '') >= w.encodedPosition);
 */
export async function readStoredPositions(
  client: DynamoDBClient,
  table: TableConfig,
  writes: readonly KeyToRead[],
  options: ReadOptions = {},
): Promise<StoredPositions> {
  const layout = keyLayout(table);
  const attrs = keyAttributeList(layout);
  const byRequestKey = new Map<string, string>();
  const keys: Record<string, AttributeValue>[] = [];
  for (const w of writes) {
    const attributes = keyAttributes(table, w.key);
    const id = requestKeyOf(attrs, attributes);
    if (byRequestKey.has(id)) continue; // BatchGetItem refuses duplicate keys in one request
    byRequestKey.set(id, w.keyId);
    keys.push(attributes);
  }
  const state = { byKey: new Map<string, StoredPosition>(), unread: new Set<string>(), readUnits: 0, requests: 0 };
  const reader = new ChunkReader(client, table, attrs, options);
  const chunks: Record<string, AttributeValue>[][] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) chunks.push(keys.slice(i, i + BATCH_GET_LIMIT));
  const limiter = options.limiter ?? new Limiter(1);
  const results = await Promise.all(chunks.map((chunk) => reader.read(chunk, limiter)));
  for (const result of results) {
    state.readUnits += result.readUnits;
    state.requests += result.requests;
    for (const item of result.items) {
      const id = byRequestKey.get(requestKeyOf(attrs, item));
      if (id !== undefined) state.byKey.set(id, storedPositionOf(item));
    }
    for (const key of result.unprocessed) {
      const id = byRequestKey.get(requestKeyOf(attrs, key));
      if (id !== undefined) state.unread.add(id);
    }
  }
  return state;
}

interface ChunkResult {
  items: Record<string, AttributeValue>[];
  unprocessed: Record<string, AttributeValue>[];
  readUnits: number;
  requests: number;
}

/** One chunk of at most 100 keys, with UnprocessedKeys retried under exponential backoff. */
class ChunkReader {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly names: Record<string, string>;
  private readonly projection: string;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: TableConfig,
    attrs: readonly KeyAttribute[],
    options: ReadOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.maxDelayMs = options.maxDelayMs ?? 2000;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    this.names = { '#pos': POSITION, '#hash': HASH, '#del': DELETED };
    attrs.forEach((a, i) => {
      this.names[`#k${i}`] = a.name;
    });
    this.projection = [...attrs.map((_a, i) => `#k${i}`), '#pos', '#hash', '#del'].join(', ');
  }

  async read(keys: Record<string, AttributeValue>[], limiter: Limiter): Promise<ChunkResult> {
    const out: ChunkResult = { items: [], unprocessed: [], readUnits: 0, requests: 0 };
    let pending = keys;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt >= this.maxAttempts) {
        out.unprocessed = pending;
        break;
      }
      if (attempt > 0) await this.sleep(this.backoff(attempt));
      const sending = pending;
      const res = await limiter.run(() => this.send(sending));
      out.requests++;
      out.readUnits += readUnitsOf(res.ConsumedCapacity, this.table.target);
      out.items.push(...(res.Responses?.[this.table.target] ?? []));
      pending = res.UnprocessedKeys?.[this.table.target]?.Keys ?? [];
    }
    return out;
  }

  private async send(keys: Record<string, AttributeValue>[]): Promise<BatchGetItemCommandOutput> {
    try {
      return await this.client.send(
        new BatchGetItemCommand({
          RequestItems: {
            [this.table.target]: { Keys: keys, ProjectionExpression: this.projection, ExpressionAttributeNames: this.names, ConsistentRead: false },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
    } catch (err) {
      throw new WriteError(`reading stored positions of ${keys.length} keys from ${this.table.target} failed: ${asError(err).message}`, {
        cause: err,
        context: { table: this.table.source },
      });
    }
  }

  /** Full jitter: a random delay up to base * 2^(attempt-1), capped. */
  private backoff(attempt: number): number {
    return Math.floor(this.random() * Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1)));
  }
}

function readUnitsOf(consumed: readonly ConsumedCapacity[] | undefined, target: string): number {
  let total = 0;
  for (const c of consumed ?? []) if (c.TableName === undefined || c.TableName === target) total += c.CapacityUnits ?? c.ReadCapacityUnits ?? 0;
  return total;
}

function keyAttributeList(layout: ReturnType<typeof keyLayout>): KeyAttribute[] {
  return layout.sortKey ? [layout.partitionKey, layout.sortKey] : [layout.partitionKey];
}

/**
 * A text identifying a key as DynamoDB returns it. DynamoDB normalizes numbers (`1.50` comes back
 * as `1.5`, `007` as `7`), so number key values are compared in a canonical decimal form.
 */
function requestKeyOf(attrs: readonly KeyAttribute[], item: Record<string, AttributeValue>): string {
  return JSON.stringify(
    attrs.map((a) => {
      const v = item[a.name];
      if (v?.N !== undefined) return `N${canonicalNumber(v.N)}`;
      return `S${v?.S ?? ''}`;
    }),
  );
}

/**
 * Canonical decimal text: one spelling per number value (`1.50`, `15e-1` → `15e-1`), text that is
 * not a decimal unchanged. Read in one linear pass (core/decimal.ts): a key's number text comes
 * from a record, and a pattern such as `/0+$/` is quadratic on a long run of zeros (issue 20, item 1).
 */
export function canonicalNumber(text: string): string {
  return decimalParts(text) === null ? text : canonicalDecimal(text);
}

function storedPositionOf(item: Record<string, AttributeValue>): StoredPosition {
  return {
    position: item[POSITION]?.S ?? '',
    hash: item[HASH]?.S ?? '',
    deleted: item[DELETED]?.BOOL === true,
  };
}
