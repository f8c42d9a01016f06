/**
 * Sends planned writes to DynamoDB. A failed guard is a normal outcome (the stored row is newer or
 * equal): it becomes `stale`, `duplicate` or `conflict`. A stored row inside the write's chain
 * rebases the write. Throttling and 5xx are retried by the SDK client (its `maxAttempts`, with
 * backoff); what still fails is returned as `failed` so the caller reports it in batchItemFailures.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../commons/config.js';
import type { PatchEffect } from '../core/effect.js';
import { patchMissing } from '../core/effect.js';
import { guardOutcome } from '../core/memory-store.js';
import { type PlannedWrite, rebaseWrite } from '../core/plan.js';
import { decodeItem, estimateItemBytes, META } from './item-codec.js';
import { markMissingCommand, patchCommand, putCommand, type WriteContext } from './guard.js';

export type WriteOutcome = 'applied' | 'stale' | 'duplicate' | 'conflict' | 'failed' | 'quarantined';

export interface WriteResult {
  readonly outcome: WriteOutcome;
  readonly writeUnits: number;
  readonly requests: number;
  /** Columns left missing because no stored row could supply them. */
  readonly missing: readonly string[];
  readonly spilled: boolean;
  readonly error?: Error;
}

/** Stores a row too large for DynamoDB elsewhere and returns a pointer (e.g. an s3:// URI). */
export type SpillRow = (write: PlannedWrite) => Promise<string>;

export interface DynamoWriterOptions {
  readonly client: DynamoDBClient;
  readonly tables: readonly TableConfig[];
  readonly maxItemBytes: number;
  readonly spill?: SpillRow;
  readonly now?: () => number;
}

const MAX_REBASES = 8;
const units = (c: ConsumedCapacity | undefined) => c?.CapacityUnits ?? c?.WriteCapacityUnits ?? 0;

export class DynamoWriter {
  private readonly tables: Map<string, TableConfig>;
  private readonly now: () => number;

  constructor(private readonly options: DynamoWriterOptions) {
    this.tables = new Map(options.tables.map((t) => [t.source, t]));
    this.now = options.now ?? Date.now;
  }

  async write(planned: PlannedWrite): Promise<WriteResult> {
    const table = this.tables.get(planned.table);
    if (!table) return { outcome: 'failed', writeUnits: 0, requests: 0, missing: [], spilled: false, error: new Error(`table ${planned.table} is not configured`) };
    let write: PlannedWrite = planned;
    let writeUnits = 0;
    let requests = 0;
    let spilled = false;
    try {
      for (let attempt = 0; attempt <= MAX_REBASES; attempt++) {
        const ctx: WriteContext = { table, now: this.now() };
        requests++;
        try {
          if (write.effect.kind === 'patch') {
            const patch = write as PlannedWrite & { effect: PatchEffect };
            const cmd = patchCommand(table.target, patch, ctx);
            const res = await this.options.client.send(new UpdateItemCommand(cmd));
            writeUnits += units(res.ConsumedCapacity);
            const follow = await this.followUpMissing(table, patch, ctx, res.Attributes);
            writeUnits += follow.writeUnits;
            requests += follow.requests;
            return { outcome: 'applied', writeUnits, requests, missing: follow.missing, spilled };
          }
          let cmd = putCommand(table.target, write, ctx);
          if (estimateItemBytes(cmd.Item!) > this.options.maxItemBytes) {
            if (!this.options.spill) return { outcome: 'quarantined', writeUnits, requests: requests - 1, missing: [], spilled, error: new Error('item exceeds the DynamoDB item size limit') };
            const pointer = await this.options.spill(write);
            spilled = true;
            const slim: PlannedWrite = { ...write, effect: { kind: 'put', row: {}, missing: [], partial: false } };
            cmd = putCommand(table.target, slim, { ...ctx, extra: { [META.spill]: { S: pointer } } });
          }
          const res = await this.options.client.send(new PutItemCommand(cmd));
          writeUnits += units(res.ConsumedCapacity);
          const missing = write.effect.kind === 'put' ? write.effect.missing : [];
          return { outcome: 'applied', writeUnits, requests, missing, spilled };
        } catch (err) {
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
          writeUnits += 1; // a failed conditional write still consumes a write unit
          const stored = err.Item ? decodeItem(table, err.Item) : undefined;
          if (!stored) return { outcome: 'stale', writeUnits, requests, missing: [], spilled };
          const outcome = guardOutcome(stored, write);
          if (outcome !== 'applied') return { outcome, writeUnits, requests, missing: [], spilled };
          const rebased = rebaseWrite(write, stored.position);
          if (!rebased) return { outcome: 'stale', writeUnits, requests, missing: [], spilled };
          write = rebased;
        }
      }
      return { outcome: 'failed', writeUnits, requests, missing: [], spilled, error: new Error('write kept losing to concurrent writers') };
    } catch (err) {
      return { outcome: 'failed', writeUnits, requests, missing: [], spilled, error: err as Error };
    }
  }

  /** A patch on nothing or a tombstone starts a partial row; keep `__missing`/`__partial` exact. */
  private async followUpMissing(
    table: TableConfig,
    write: PlannedWrite & { effect: PatchEffect },
    ctx: WriteContext,
    old: Record<string, AttributeValue> | undefined,
  ): Promise<{ missing: string[]; writeUnits: number; requests: number }> {
    const stored = old ? decodeItem(table, old) : undefined;
    const base = stored && !stored.deleted ? stored : undefined;
    const missing = base ? patchMissing(base, write.effect) : [...write.effect.unresolved].sort();
    const partial = base ? base.partial : true;
    const unchanged = base !== undefined && base.partial === partial && base.missing.join() === missing.join();
    if (unchanged) return { missing, writeUnits: 0, requests: 0 };
    try {
      const res = await this.options.client.send(new UpdateItemCommand(markMissingCommand(table.target, write, ctx, missing, partial)));
      return { missing, writeUnits: units(res.ConsumedCapacity), requests: 1 };
    } catch (err) {
      // A newer write got there first; its own follow-up is authoritative.
      if (err instanceof ConditionalCheckFailedException) return { missing, writeUnits: 1, requests: 1 };
      throw err;
    }
  }
}
