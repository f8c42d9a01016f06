/**
 * Applies the writes of one source transaction as one DynamoDB `TransactWriteItems`, so that no
 * reader sees half of it (docs/writes.md, "Transactions applied whole"). Each item keeps the guard
 * of the per-key write, and every decision goes through `resolveAgainstStored` (core/stored.ts):
 *
 * 1. Settle what the stored rows already decide, at no write cost: with a pre-read (the `auto`
 *    policy: any write at or below its table's high-water mark) writes the stored row is at or past
 *    are stale, duplicate or conflict, and writes whose chain it holds part of are rebased. A patch
 *    reads its row (consistently) and becomes the merged row (`nextItem`), put under "the row is
 *    still the one read", as the per-key read-merge-put does.
 * 2. Send the rest as one transaction: a `Put` per row under `attribute_not_exists(<pk>) OR
 *    #pos < :base` (merged patches: `#pos = :stored`, or `attribute_not_exists(<pk>)`), each with
 *    `ReturnValuesOnConditionCheckFailure: ALL_OLD`.
 * 3. A cancellation names, per item, why. An item whose guard failed is resolved against the stored
 *    row it returns (or that is read back): stale, duplicate and conflict are settled — the stored
 *    row is newer or the same, so leaving it is what the per-key write would do — and a row the
 *    stored one holds part of is rebased. The rest is sent again as one transaction: items never
 *    apply singly, so a reader sees the transaction's remaining rows change together, and the settled
 *    rows already show it or something newer. A transaction conflict or throttling is retried with
 *    backoff; anything else DynamoDB refuses (a validation error) falls back to per-key writes.
 * 4. One row left is one write (atomic by itself): it goes through the per-key writer.
 *
 * What cannot be one transaction goes through the per-key writer, in order, and says why
 * (`too-large`): more bytes than `maxBytes`, a row over `apply.maxItemBytes` (it is spilled), or a
 * patch on a spilled row. A transactional write costs 2 write units per KB per item; a cancelled
 * attempt returns no consumed capacity and is counted at that rate for its items, an upper bound.
 */
import {
  type ConsumedCapacity,
  type DynamoDBClient,
  GetItemCommand,
  type TransactWriteItem,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import { asError, WriteError } from '../core/errors.js';
import type { PlannedWrite } from '../core/plan.js';
import { nextItem, outcomeOf, type Resolution, resolveAgainstStored } from '../core/stored.js';
import type { TxFallbackReason } from '../core/transactions.js';
import type { DynamoWriter, PreReadPolicy, WriteOutcome, WriteResult } from './dynamo-writer.js';
import { type PutCondition, putCommand } from './guard.js';
import { type DecodedItem, decodeItem, estimateItemBytes, keyAttributes } from './item-codec.js';
import { readStoredPositions } from './stored-positions.js';

export interface TransactWriterOptions {
  readonly client: DynamoDBClient;
  readonly tables: readonly TableConfig[];
  /** Rows above this many bytes are spilled, which a transaction does not do: they go per key. */
  readonly maxItemBytes: number;
  /** Bytes one TransactWriteItems may carry (DynamoDB: 4 MB). */
  readonly maxBytes: number;
  /** The per-key writer: one row left, and units that cannot be one transaction, go through it. Its high-water marks drive the pre-read. */
  readonly perKey: Pick<DynamoWriter, 'write' | 'seedHighWater' | 'highWaterOf'>;
  readonly now?: () => number;
  /** Attempts per unit (cancellations resolved, conflicts and throttling retried). @default 8 */
  readonly maxAttempts?: number;
  /** Injected for tests. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface UnitResult {
  /** `transaction`: applied as one (or settled by the stored rows); `per-key`: sent row by row, for `reason`. */
  readonly mode: 'transaction' | 'per-key';
  readonly reason?: Extract<TxFallbackReason, 'too-large' | 'refused'>;
  /** One per write, in the order given. */
  readonly results: readonly WriteResult[];
  readonly readUnits: number;
  readonly readRequests: number;
  /** TransactWriteItems sent (attempts included). */
  readonly transactRequests: number;
}

/** Cancellation codes worth another attempt after a pause. */
const RETRYABLE = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);
const TRANSACTIONAL_UNITS_PER_KB = 2;

const units = (c: ConsumedCapacity | undefined) => c?.CapacityUnits ?? c?.WriteCapacityUnits ?? 0;
const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Cost {
  readUnits: number;
  readRequests: number;
  transactRequests: number;
  /** Write units charged for cancelled attempts. */
  cancelledUnits: number;
}

/** One write of the unit while it is being applied. */
interface Slot {
  write: PlannedWrite;
  /** The stored row, once read or returned by a failed guard (patches need it). */
  stored?: { readonly item: DecodedItem | undefined };
  result?: WriteResult;
}

const settled = (outcome: WriteOutcome, writeUnits = 0, error?: Error): WriteResult => ({ outcome, writeUnits, requests: 0, missing: [], spilled: false, ...(error ? { error } : {}) });

class Fallback extends Error {
  constructor(readonly reason: Extract<TxFallbackReason, 'too-large' | 'refused'>, message: string) {
    super(message);
    this.name = 'Fallback';
  }
}

export class TransactWriter {
  private readonly tables: Map<string, TableConfig>;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: TransactWriterOptions) {
    this.tables = new Map(options.tables.map((t) => [t.source, t]));
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
  }

  /** Applies one transaction's writes (distinct rows). Never throws: failures are `failed` results. */
  async applyUnit(writes: readonly PlannedWrite[], preRead: PreReadPolicy = 'auto'): Promise<UnitResult> {
    const slots: Slot[] = writes.map((write) => ({ write }));
    const cost: Cost = { readUnits: 0, readRequests: 0, transactRequests: 0, cancelledUnits: 0 };
    let mode: UnitResult['mode'] = 'transaction';
    let reason: UnitResult['reason'];
    try {
      for (const s of slots) if (!this.tables.has(s.write.table)) throw new WriteError(`table ${s.write.table} is not configured`, { context: { table: s.write.table } });
      await this.preRead(slots, preRead, cost);
      await this.transact(slots, cost);
    } catch (err) {
      if (err instanceof Fallback) {
        // Rows the transaction cannot carry: each through the per-key writer, in order.
        mode = 'per-key';
        reason = err.reason;
        for (const s of slots) if (s.result === undefined) s.result = await this.options.perKey.write(s.write);
      } else {
        const error = new WriteError(`transaction of ${writes.length} rows failed: ${asError(err).message}`, { cause: err, context: { table: writes[0]?.table } });
        for (const s of slots) s.result ??= settled('failed', 0, error);
      }
    }
    const results = slots.map((s) => s.result ?? settled('failed'));
    // Cancelled attempts are charged to the unit's first row, so each table's total stays whole.
    if (cost.cancelledUnits > 0 && results[0]) results[0] = { ...results[0], writeUnits: results[0].writeUnits + cost.cancelledUnits };
    const { cancelledUnits: _, ...counts } = cost;
    return { mode, ...(reason ? { reason } : {}), results, ...counts };
  }

  private resolve(slot: Slot, resolution: Resolution): void {
    if (resolution.kind === 'apply') return;
    if (resolution.kind === 'rebase') slot.write = resolution.write;
    else slot.result = settled(outcomeOf(resolution));
  }

  /** Settles the writes stored positions already decide; reads the rows patches build on. */
  private async preRead(slots: Slot[], policy: PreReadPolicy, cost: Cost): Promise<void> {
    const highWater = (s: Slot) => this.options.perKey.highWaterOf(s.write.table) ?? '';
    if (policy === 'always' || (policy === 'auto' && slots.some((s) => s.write.encodedPosition <= highWater(s)))) {
      const byTable = new Map<string, Slot[]>();
      for (const s of slots) {
        const list = byTable.get(s.write.table);
        if (list) list.push(s);
        else byTable.set(s.write.table, [s]);
      }
      for (const [source, group] of byTable) await this.readPositions(source, group, cost);
    }
    await Promise.all(slots.filter((s) => s.result === undefined && s.write.effect.kind === 'patch').map((s) => this.readRow(s, cost)));
  }

  /** Stored positions of one table's slots, each resolved; a failed read only costs the saving. */
  private async readPositions(source: string, group: readonly Slot[], cost: Cost): Promise<void> {
    const table = this.tables.get(source) as TableConfig;
    const stored = await readStoredPositions(this.options.client, table, group.map((s) => s.write)).catch(() => null);
    if (stored === null) return;
    cost.readUnits += stored.readUnits;
    cost.readRequests += stored.requests;
    for (const s of group) {
      if (stored.unread.has(s.write.keyId)) continue;
      const mark = stored.byKey.get(s.write.keyId);
      this.resolve(s, resolveAgainstStored(mark ? { position: mark.position, contentHash: mark.hash } : undefined, s.write));
    }
  }

  /** A consistent read of the slot's row, resolved against its write. */
  private async readRow(slot: Slot, cost: Cost): Promise<void> {
    const table = this.tables.get(slot.write.table) as TableConfig;
    const res = await this.options.client.send(new GetItemCommand({ TableName: table.target, Key: keyAttributes(table, slot.write.key), ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    cost.readRequests++;
    cost.readUnits += units(res.ConsumedCapacity);
    const item = res.Item ? decodeItem(table, res.Item) : undefined;
    slot.stored = { item };
    this.resolve(slot, resolveAgainstStored(item, slot.write));
  }

  /** The transaction item of a slot: its guarded Put, or for a patch the merged row under "still the one read". */
  private item(slot: Slot, now: number): TransactWriteItem {
    const table = this.tables.get(slot.write.table) as TableConfig;
    let write = slot.write;
    let condition: PutCondition = { kind: 'guard' };
    if (write.effect.kind === 'patch') {
      const stored = slot.stored?.item;
      if (stored?.spill != null && !stored.deleted) throw new Fallback('too-large', 'a patch on a spilled row is merged with its spilled copy row by row');
      const next = nextItem(stored && !stored.deleted ? stored : undefined, write);
      write = { ...write, effect: { kind: 'put', row: next.row, missing: next.missing, partial: next.partial } };
      condition = stored ? { kind: 'exact', position: stored.position } : { kind: 'absent' };
    }
    const cmd = putCommand(table.target, write, { table, now }, condition);
    if (estimateItemBytes(cmd.Item ?? {}) > this.options.maxItemBytes) throw new Fallback('too-large', 'a row over apply.maxItemBytes is spilled row by row');
    return {
      Put: {
        TableName: cmd.TableName,
        Item: cmd.Item,
        ConditionExpression: cmd.ConditionExpression,
        ExpressionAttributeNames: cmd.ExpressionAttributeNames,
        ExpressionAttributeValues: cmd.ExpressionAttributeValues,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** Sends the unsettled rows as one transaction until every row is settled. */
  private async transact(slots: Slot[], cost: Cost): Promise<void> {
    const maxAttempts = this.options.maxAttempts ?? 8;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const open = slots.filter((s) => s.result === undefined);
      if (open.length === 0) return;
      if (open.length === 1) {
        const [only] = open as [Slot];
        only.result = await this.options.perKey.write(only.write);
        return;
      }
      const now = this.now();
      const items = open.map((s) => this.item(s, now));
      const bytes = items.reduce((n, i) => n + estimateItemBytes(i.Put?.Item ?? {}), 0);
      if (bytes > this.options.maxBytes) throw new Fallback('too-large', `the transaction's rows hold about ${bytes} bytes, over transactions.maxBytes`);
      cost.transactRequests++;
      try {
        const out = await this.options.client.send(new TransactWriteItemsCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }));
        this.applied(open, out.ConsumedCapacity ?? []);
        return;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        await this.cancelled(open, items, err, attempt, cost);
      }
    }
    throw new WriteError('the transaction kept being cancelled', { context: { table: slots[0]?.write.table } });
  }

  /** Every open row applied: its table's consumed units go on the table's first row (totals per table stay exact). */
  private applied(open: readonly Slot[], consumed: readonly ConsumedCapacity[]): void {
    const left = new Map(consumed.map((c) => [c.TableName ?? '', units(c)]));
    for (const s of open) {
      const target = this.tables.get(s.write.table)?.target ?? '';
      const writeUnits = left.get(target) ?? 0;
      left.set(target, 0);
      const missing = s.write.effect.kind === 'put' ? s.write.effect.missing : [];
      s.result = { outcome: 'applied', writeUnits, requests: 1, missing, spilled: false };
      this.options.perKey.seedHighWater(s.write.table, s.write.encodedPosition);
    }
  }

  /** Resolves the rows whose guard failed; pauses before retrying a conflict; refuses what DynamoDB refused. */
  private async cancelled(open: readonly Slot[], items: readonly TransactWriteItem[], err: TransactionCanceledException, attempt: number, cost: Cost): Promise<void> {
    // No consumed capacity comes back with a cancellation: counted at the transactional rate, an upper bound.
    cost.cancelledUnits += items.reduce((n, i) => n + TRANSACTIONAL_UNITS_PER_KB * Math.max(1, Math.ceil(estimateItemBytes(i.Put?.Item ?? {}) / 1024)), 0);
    const reasons = err.CancellationReasons ?? [];
    const codes = open.map((_, i) => reasons[i]?.Code ?? (reasons.length === 0 ? 'ConditionalCheckFailed' : 'None'));
    const refused = codes.find((c) => c !== 'None' && c !== 'ConditionalCheckFailed' && !RETRYABLE.has(c));
    if (refused !== undefined) throw new Fallback('refused', `DynamoDB refused the transaction: ${refused}`);
    if (codes.some((c) => RETRYABLE.has(c))) {
      await this.sleep(Math.min(1000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
    await Promise.all(
      open.map(async (s, i) => {
        if (codes[i] !== 'ConditionalCheckFailed') return;
        const returned = reasons[i]?.Item;
        const table = this.tables.get(s.write.table) as TableConfig;
        if (returned) {
          const item = decodeItem(table, returned);
          s.stored = { item };
          this.resolve(s, resolveAgainstStored(item, s.write));
        } else await this.readRow(s, cost);
      }),
    );
  }
}
