/**
 * Sends planned writes to DynamoDB. What a write does against the stored row is decided by
 * `resolveAgainstStored` (core/stored.ts), the same function the in-memory store uses; this file
 * only turns its answers into commands:
 *
 * - A failed guard is a normal outcome: the stored item (ALL_OLD) is resolved into `stale`,
 *   `duplicate`, `conflict`, or a rebased write that is sent again.
 * - A patch that DynamoDB cannot take as an UpdateItem — its expression is over 4 KB (about 280
 *   columns), its carried columns exceed the item size limit, or the stored row is spilled to S3 —
 *   becomes a read-merge-put: the stored item is read (or taken from ALL_OLD), the patch is merged
 *   with `nextItem` (core), and the whole row is put under "the item is still the one read". A
 *   merged row too large for DynamoDB is spilled like any other.
 * - `writeAll` may first read the stored positions of writes that are likely stale (see
 *   {@link PreReadPolicy}) and write only keys whose stored row is older.
 *
 * Throttling and 5xx are retried by the SDK client (its `maxAttempts`, with backoff); what still
 * fails is returned as `failed` with a WriteError (table, key, position) so the caller reports it in
 * batchItemFailures.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../config/types.js';
import { Limiter } from '../core/concurrency.js';
import { type PatchEffect, patchMissing } from '../core/effect.js';
import { asError, WriteError } from '../core/errors.js';
import type { PlannedWrite } from '../core/plan.js';
import { nextItem, outcomeOf, type Resolution, resolveAgainstStored, type StoredRow } from '../core/stored.js';
import type { Row } from '../core/types.js';
import { expressionTooLarge, markMissingCommand, type PutCondition, patchCommand, putCommand, type WriteContext } from './guard.js';
import { type DecodedItem, decodeItem, estimateItemBytes, keyAttributes, META } from './item-codec.js';
import { readStoredPositions, type StoredPositions } from './stored-positions.js';

export type WriteOutcome = 'applied' | 'stale' | 'duplicate' | 'conflict' | 'failed' | 'quarantined';

export interface WriteResult {
  readonly outcome: WriteOutcome;
  readonly writeUnits: number;
  /** Read units of the write's own reads (a read-merge-put); pre-reads are counted in totals. */
  readonly readUnits?: number;
  /** DynamoDB requests the write sent (writes and its own reads). */
  readonly requests: number;
  /** Of `requests`, the reads (GetItem). */
  readonly readRequests?: number;
  /** Columns left missing because no stored row could supply them. */
  readonly missing: readonly string[];
  readonly spilled: boolean;
  readonly error?: Error;
  /** Why a `quarantined` write cannot be stored: its records belong in quarantine, not in a retry. */
  readonly reason?: WriteQuarantineReason;
}

/** `item-too-large`: the row exceeds the DynamoDB item size and no spill store is configured. */
export type WriteQuarantineReason = 'item-too-large';

/** Stores a row too large for DynamoDB elsewhere and returns a pointer (e.g. an s3:// URI). */
export type SpillRow = (write: PlannedWrite) => Promise<string>;
/** Reads back a row stored by {@link SpillRow}. */
export type ReadSpill = (pointer: string) => Promise<Row>;

export interface DynamoWriterOptions {
  readonly client: DynamoDBClient;
  readonly tables: readonly TableConfig[];
  readonly maxItemBytes: number;
  readonly spill?: SpillRow;
  /**
   * Lets a patch on a spilled row be merged with the spilled copy. Without it, such a patch is
   * applied to the stub and the item is marked `__partial` (its other columns are in the older
   * spilled copy that `__spill` still points to): never a silent loss of columns.
   */
  readonly readSpill?: ReadSpill;
  readonly now?: () => number;
  /** Starting high-water marks per source table for the `auto` pre-read (e.g. the status row's last position). */
  readonly highWater?: Readonly<Record<string, string>>;
}

/**
 * When `writeAll` reads stored positions before writing:
 * - `never`: every write is sent under its guard;
 * - `always`: every write is checked first, and only keys whose stored row is older are written;
 * - `auto`: writes at or below the table's high-water mark are checked first. The mark is the
 *   highest position this writer has applied to the table (or was seeded with), so a redelivered
 *   window is read, not written, while new changes go straight to their guarded write.
 */
export type PreReadPolicy = 'never' | 'always' | 'auto';

export interface WriteAllOptions {
  /** @default 'never' */
  readonly preRead?: PreReadPolicy;
  /** Writes in flight at once (ignored when a `limiter` is given). @default 16 */
  readonly concurrency?: number;
  /**
   * A bound shared with other work (the ingest's one bound per batch over every table's writes,
   * pre-reads and status updates): each write and each pre-read request holds one of its slots.
   */
  readonly limiter?: Limiter;
}

export interface WriteTotals {
  writes: number;
  applied: number;
  stale: number;
  duplicate: number;
  conflict: number;
  failed: number;
  quarantined: number;
  spilled: number;
  /** Writes whose stored position was read first. */
  preRead: number;
  /** Of those, writes never sent because the stored row was already at or past them. */
  skipped: number;
  /** Pre-reads that failed (their writes went out under the guard instead). */
  readFailures: number;
  readUnits: number;
  readRequests: number;
  writeUnits: number;
  writeRequests: number;
}

export interface WriteAllResult {
  /** One result per write, in the order given. */
  readonly results: readonly WriteResult[];
  readonly totals: WriteTotals;
}

const MAX_REBASES = 8;
const units = (c: ConsumedCapacity | undefined) => c?.CapacityUnits ?? c?.WriteCapacityUnits ?? c?.ReadCapacityUnits ?? 0;

type PatchWrite = PlannedWrite & { readonly effect: PatchEffect };
const isPatch = (w: PlannedWrite): w is PatchWrite => w.effect.kind === 'patch';

/** What the writer knows of the stored item: `unknown` until a read or a failed guard shows it. */
type Known = { readonly kind: 'unknown' } | { readonly kind: 'known'; readonly item: DecodedItem | undefined };
const UNKNOWN: Known = { kind: 'unknown' };

/** One attempt either finishes the write or shows the stored item it lost to. */
type Step = { readonly kind: 'done'; readonly outcome: WriteOutcome; readonly error?: Error } | { readonly kind: 'lost'; readonly stored: DecodedItem | undefined };

/** Costs and facts accumulated over one write's attempts. */
class Tally {
  writeUnits = 0;
  readUnits = 0;
  requests = 0;
  readRequests = 0;
  missing: readonly string[] = [];
  spilled = false;

  result(outcome: WriteOutcome, error?: Error): WriteResult {
    const r = { outcome, writeUnits: this.writeUnits, readUnits: this.readUnits, requests: this.requests, readRequests: this.readRequests, missing: this.missing, spilled: this.spilled };
    if (outcome === 'quarantined') return { ...r, error, reason: 'item-too-large' };
    return error ? { ...r, error } : r;
  }
}

const contextOf = (table: TableConfig, w: PlannedWrite) => ({ table: table.source, key: w.keyId, position: w.encodedPosition });

export class DynamoWriter {
  private readonly tables: Map<string, TableConfig>;
  private readonly now: () => number;
  private readonly highWater = new Map<string, string>();

  constructor(private readonly options: DynamoWriterOptions) {
    this.tables = new Map(options.tables.map((t) => [t.source, t]));
    this.now = options.now ?? Date.now;
    for (const [table, position] of Object.entries(options.highWater ?? {})) this.seedHighWater(table, position);
  }

  /** Raises a table's high-water mark for the `auto` pre-read (never lowers it). */
  seedHighWater(table: string, position: string): void {
    if (position > (this.highWater.get(table) ?? '')) this.highWater.set(table, position);
  }

  /** The highest position this writer applied to the table or was seeded with. */
  highWaterOf(table: string): string | undefined {
    return this.highWater.get(table);
  }

  /** Applies one planned write under its guard. Never throws: failures are a `failed` result. */
  async write(planned: PlannedWrite): Promise<WriteResult> {
    const table = this.tables.get(planned.table);
    const tally = new Tally();
    if (!table) return tally.result('failed', new WriteError(`table ${planned.table} is not configured`, { context: { table: planned.table, key: planned.keyId, position: planned.encodedPosition } }));
    try {
      const result = await this.converge(table, planned, tally);
      if (result.outcome === 'applied') this.seedHighWater(planned.table, planned.encodedPosition);
      return result;
    } catch (err) {
      const error = new WriteError(`writing to ${table.target} failed: ${asError(err).message}`, { cause: err, context: contextOf(table, planned) });
      return tally.result('failed', error);
    }
  }

  /**
   * Applies many writes (distinct keys, e.g. one batch plan), reading stored positions first as the
   * policy says. Returns one result per write plus totals, costs included.
   */
  async writeAll(writes: readonly PlannedWrite[], options: WriteAllOptions = {}): Promise<WriteAllResult> {
    const totals = emptyTotals(writes.length);
    const results: (WriteResult | undefined)[] = new Array(writes.length);
    const limiter = options.limiter ?? new Limiter(options.concurrency ?? 16);
    const toSend = await this.preRead(writes, options.preRead ?? 'never', results, totals, limiter);
    await limiter.map(toSend, async ({ index, write }) => {
      results[index] = await this.write(write);
    });
    const done = results.map((r, i) => r ?? new Tally().result('failed', new WriteError('write was not attempted', { context: { table: writes[i]?.table, key: writes[i]?.keyId } })));
    for (const r of done) addResult(totals, r);
    return { results: done, totals };
  }

  /**
   * Reads the stored positions of the writes the policy selects and settles those the stored row
   * already covers (their result is set, at no write cost). Returns the writes still to send:
   * rebased where the stored row holds part of their chain.
   */
  private async preRead(
    writes: readonly PlannedWrite[],
    policy: PreReadPolicy,
    results: (WriteResult | undefined)[],
    totals: WriteTotals,
    limiter: Limiter,
  ): Promise<{ index: number; write: PlannedWrite }[]> {
    const send: { index: number; write: PlannedWrite }[] = [];
    const check = new Map<string, number[]>();
    writes.forEach((w, index) => {
      if (!this.shouldPreRead(w, policy)) send.push({ index, write: w });
      else {
        const group = check.get(w.table);
        if (group) group.push(index);
        else check.set(w.table, [index]);
      }
    });
    for (const [source, indexes] of check) {
      const group = indexes.flatMap((index) => {
        const write = writes[index];
        return write ? [{ index, write }] : [];
      });
      const stored = await this.readPositions(source, group.map((g) => g.write), limiter);
      if (stored === null) totals.readFailures++;
      totals.readUnits += stored?.readUnits ?? 0;
      totals.readRequests += stored?.requests ?? 0;
      totals.preRead += group.length;
      for (const { index, write } of group) {
        const resolution = stored && !stored.unread.has(write.keyId) ? resolveFromPosition(stored, write) : null;
        if (resolution === null || resolution.kind === 'apply') send.push({ index, write });
        else if (resolution.kind === 'rebase') send.push({ index, write: resolution.write });
        else {
          totals.skipped++;
          results[index] = new Tally().result(outcomeOf(resolution));
        }
      }
    }
    return send.sort((a, b) => a.index - b.index);
  }

  private shouldPreRead(w: PlannedWrite, policy: PreReadPolicy): boolean {
    if (policy === 'never' || !this.tables.has(w.table)) return false;
    if (policy === 'always') return true;
    const mark = this.highWater.get(w.table);
    return mark !== undefined && w.encodedPosition <= mark;
  }

  /** A failed read only costs the optimization: the writes then go out under their guards. */
  private async readPositions(source: string, writes: readonly PlannedWrite[], limiter: Limiter): Promise<StoredPositions | null> {
    const table = this.tables.get(source);
    if (!table) return null;
    try {
      return await readStoredPositions(this.options.client, table, writes, { limiter });
    } catch {
      return null;
    }
  }

  /** Sends the write, and after each lost guard resolves the stored item and tries again. */
  private async converge(table: TableConfig, planned: PlannedWrite, tally: Tally): Promise<WriteResult> {
    let write = planned;
    let known: Known = UNKNOWN;
    for (let attempt = 0; attempt <= MAX_REBASES; attempt++) {
      const step = await this.attempt(table, write, known, tally);
      if (step.kind === 'done') return tally.result(step.outcome, step.error);
      const resolution = resolveAgainstStored(step.stored, write);
      if (resolution.kind !== 'apply' && resolution.kind !== 'rebase') return tally.result(outcomeOf(resolution));
      write = resolution.write;
      known = { kind: 'known', item: step.stored };
    }
    return tally.result('failed', new WriteError('write kept losing to concurrent writers', { context: contextOf(table, planned) }));
  }

  private attempt(table: TableConfig, write: PlannedWrite, known: Known, tally: Tally): Promise<Step> {
    const ctx: WriteContext = { table, now: this.now() };
    if (!isPatch(write)) return this.put(write, ctx, tally, { kind: 'guard' });
    const item = known.kind === 'known' ? known.item : undefined;
    const spilled = item !== undefined && item.spill !== null && !item.deleted;
    const cmd = patchCommand(ctx.table.target, write, ctx);
    if (!spilled && !this.tooLarge(cmd)) return this.patch(write, cmd, ctx, tally);
    // Read-merge-put: it needs the stored item, read consistently unless a lost guard just showed it.
    if (known.kind === 'unknown') return this.read(write, ctx, tally).then((stored): Step => ({ kind: 'lost', stored }));
    return this.mergePut(write, known.item, ctx, tally);
  }

  /** DynamoDB would refuse the UpdateItem: an expression over 4 KB, or more carried bytes than an item holds. */
  private tooLarge(cmd: UpdateItemCommandInput): boolean {
    return expressionTooLarge(cmd) || estimateItemBytes(cmd.ExpressionAttributeValues ?? {}) > this.options.maxItemBytes;
  }

  /** UpdateItem for a patch, then keeps `__missing`/`__partial` exact against the item it replaced. */
  private async patch(write: PatchWrite, cmd: UpdateItemCommandInput, ctx: WriteContext, tally: Tally): Promise<Step> {
    const sent = await this.guarded(write, ctx, tally, () => this.options.client.send(new UpdateItemCommand(cmd)));
    if (sent.kind === 'lost') return sent;
    await this.followUpMissing(write, ctx, tally, sent.output.Attributes);
    return { kind: 'done', outcome: 'applied' };
  }

  /**
   * A PutItem under `condition`; a row over the item size limit is spilled (the item keeps the key,
   * metadata and a `__spill` pointer) or, with no spill configured, quarantined.
   */
  private async put(write: PlannedWrite, ctx: WriteContext, tally: Tally, condition: PutCondition): Promise<Step> {
    let cmd = putCommand(ctx.table.target, write, ctx, condition);
    const effect = write.effect;
    if (effect.kind === 'put' && estimateItemBytes(cmd.Item ?? {}) > this.options.maxItemBytes) {
      if (!this.options.spill) return { kind: 'done', outcome: 'quarantined', error: new WriteError('item exceeds the DynamoDB item size limit and no spill store is configured', { context: contextOf(ctx.table, write) }) };
      const pointer = await this.options.spill(write);
      tally.spilled = true;
      const stub: PlannedWrite = { ...write, effect: { ...effect, row: {} } };
      cmd = putCommand(ctx.table.target, stub, { ...ctx, extra: { ...ctx.extra, [META.spill]: { S: pointer } } }, condition);
    }
    const sent = await this.guarded(write, ctx, tally, () => this.options.client.send(new PutItemCommand(cmd)));
    if (sent.kind === 'lost') return sent;
    tally.missing = effect.kind === 'put' ? effect.missing : [];
    return { kind: 'done', outcome: 'applied' };
  }

  /**
   * Read-merge-put of a patch on `stored` (the item as read, or as a lost guard returned it): the
   * merged row is put only if the item is still at the position read, so a concurrent write is
   * never overwritten, only resolved against on the next attempt.
   */
  private async mergePut(write: PatchWrite, stored: DecodedItem | undefined, ctx: WriteContext, tally: Tally): Promise<Step> {
    const { base, extra } = await this.mergeBase(stored);
    const next = nextItem(base, write);
    const merged: PlannedWrite = { ...write, effect: { kind: 'put', row: next.row, missing: next.missing, partial: next.partial } };
    const condition: PutCondition = stored ? { kind: 'exact', position: stored.position } : { kind: 'absent' };
    return this.put(merged, { ...ctx, extra }, tally, condition);
  }

  /**
   * The row a read-merge-put builds on. A spilled row's columns are in S3: merged from there when a
   * reader is configured; otherwise the item is marked partial and keeps the pointer to the older
   * full copy (documented in docs/writes.md), so no column is lost without a trace.
   */
  private async mergeBase(stored: DecodedItem | undefined): Promise<{ base: StoredRow | undefined; extra?: Record<string, AttributeValue> }> {
    if (!stored || stored.deleted || stored.spill === null) return { base: stored };
    if (this.options.readSpill) {
      const spilled = await this.options.readSpill(stored.spill);
      return { base: { ...stored, row: { ...spilled, ...stored.row } } };
    }
    return { base: { ...stored, partial: true }, extra: { [META.spill]: { S: stored.spill } } };
  }

  /** A consistent GetItem of the write's key. */
  private async read(write: PlannedWrite, ctx: WriteContext, tally: Tally): Promise<DecodedItem | undefined> {
    tally.requests++;
    tally.readRequests++;
    const res = await this.options.client.send(
      new GetItemCommand({ TableName: ctx.table.target, Key: keyAttributes(ctx.table, write.key), ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }),
    );
    tally.readUnits += units(res.ConsumedCapacity);
    return res.Item ? decodeItem(ctx.table, res.Item) : undefined;
  }

  /**
   * Sends one conditional write. A failed condition is not an error: it returns the stored item
   * (ALL_OLD; read back when the endpoint does not return it) and costs one write unit.
   */
  private async guarded<T extends { ConsumedCapacity?: ConsumedCapacity }>(
    write: PlannedWrite,
    ctx: WriteContext,
    tally: Tally,
    send: () => Promise<T>,
  ): Promise<{ kind: 'sent'; output: T } | { kind: 'lost'; stored: DecodedItem | undefined }> {
    tally.requests++;
    try {
      const output = await send();
      tally.writeUnits += units(output.ConsumedCapacity);
      return { kind: 'sent', output };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      tally.writeUnits += 1;
      const stored = err.Item ? decodeItem(ctx.table, err.Item) : await this.read(write, ctx, tally);
      return { kind: 'lost', stored };
    }
  }

  /** A patch on nothing or a tombstone starts a partial row; keep `__missing`/`__partial` exact. */
  private async followUpMissing(write: PatchWrite, ctx: WriteContext, tally: Tally, old: Record<string, AttributeValue> | undefined): Promise<void> {
    const stored = old ? decodeItem(ctx.table, old) : undefined;
    const base = stored && !stored.deleted ? stored : undefined;
    const missing = base ? patchMissing(base, write.effect) : [...write.effect.unresolved].sort();
    const partial = base ? base.partial : true;
    tally.missing = missing;
    if (base !== undefined && base.partial === partial && base.missing.join() === missing.join()) return;
    tally.requests++;
    try {
      const res = await this.options.client.send(new UpdateItemCommand(markMissingCommand(ctx.table.target, write, ctx, missing, partial)));
      tally.writeUnits += units(res.ConsumedCapacity);
    } catch (err) {
      // A newer write got there first; its own follow-up is authoritative.
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      tally.writeUnits += 1;
    }
  }
}

/** The pre-read answer for one write: the rule of core/stored.ts on the stored position and hash. */
function resolveFromPosition(stored: StoredPositions, w: PlannedWrite): Resolution {
  const mark = stored.byKey.get(w.keyId);
  return resolveAgainstStored(mark ? { position: mark.position, contentHash: mark.hash } : undefined, w);
}

function emptyTotals(writes: number): WriteTotals {
  return { writes, applied: 0, stale: 0, duplicate: 0, conflict: 0, failed: 0, quarantined: 0, spilled: 0, preRead: 0, skipped: 0, readFailures: 0, readUnits: 0, readRequests: 0, writeUnits: 0, writeRequests: 0 };
}

function addResult(totals: WriteTotals, r: WriteResult): void {
  totals[r.outcome]++;
  if (r.spilled) totals.spilled++;
  totals.writeUnits += r.writeUnits;
  totals.readUnits += r.readUnits ?? 0;
  totals.readRequests += r.readRequests ?? 0;
  totals.writeRequests += r.requests - (r.readRequests ?? 0);
}
