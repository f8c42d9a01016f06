/**
 * One status row per (pipeline, table), like Firebolt's `cdc_ingests`, in the table's own partition
 * (status-layout.ts): counters are added per batch, the rest describes the latest batch.
 *
 * **One write per table per batch.** `record` is a single UpdateItem: the batch's counters added to
 * the running totals and to the open hour's counters (`h_<counter>`, `hour`, `hourBatches`), the
 * latest facts set, and the row as it was before returned (ALL_OLD, which costs no read units), so
 * the caller learns the table's watermarks without reading. The update holds only while the row's
 * open hour is the batch's hour. The first batch of a new hour finds the condition false, and
 * closes the previous hour instead, once per table per hour:
 *
 *   1. the failed update returned the row (ReturnValuesOnConditionCheckFailure ALL_OLD);
 *   2. PutItem `hour#<previous>` with those counters, unless a copy with as many batches is there;
 *   3. the update again, resetting the open hour to this batch's counters, only if the row still
 *      holds the hour and batch count read in 1 (else back to 1 with what it holds now).
 *
 * A batch whose clock is behind the row's hour adds to the row's hour. So every batch's counters
 * are added exactly once to the totals and to exactly one hour, whatever the concurrency: a
 * `record` that throws added nothing, and may be retried.
 *
 * The first write of a table's status row (ALL_OLD empty) also puts its registry row
 * (`<pipeline>#tables#<nn>`, one of REGISTRY_SHARDS), so that listing a pipeline's tables is a few Queries of small partitions; the
 * ingest itself never lists, so its role holds no `dynamodb:Query` (status-reader.ts lists).
 */
import { LIFECYCLE } from '../core/lifecycle.js';
import { LAG_BUCKETS, lagAttribute } from '../core/lag-histogram.js';
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type Counter, EXPIRES_AT_ATTRIBUTE } from '../telemetry/contract.js';
import {
  HOUR_BATCHES,
  HOUR_COUNTERS,
  HOUR_ROW_PREFIX,
  HOUR_ROW_TTL_DAYS,
  hourLabel,
  OPEN_HOUR,
  STATUS_KEY,
  STATUS_ROW,
  tablePartition,
  tableRegistryPartition,
} from '../telemetry/status-layout.js';

export type { Counter } from '../telemetry/contract.js';
/** Status rows for records whose table is unknown or not configured. */
export { UNKNOWN_TABLE } from '../telemetry/contract.js';

export interface StatusUpdate {
  readonly counters: Partial<Record<Counter, number>>;
  readonly state: 'RUNNING' | 'ERROR';
  readonly phase?: 'snapshot' | 'streaming';
  readonly lastPosition?: string;
  readonly lastCommitTs?: number;
  readonly lagMs?: number;
  readonly lastError?: string;
  readonly resolvedWatermark?: string;
  readonly orderingStrength?: string;
  readonly format?: string;
  /** The highest snapshot-read position seen (tells a redelivered snapshot from a new one). */
  readonly lastSnapshotPosition?: string;
  /** The DDL of the last schema-change message. */
  readonly lastDdl?: string;
  /** The batch held Debezium flattened records of the table (kept once set: `kafkaTombstones: auto` reads it). */
  readonly carriesFlattened?: boolean;
  /** The table stopped in error in this batch (core/lifecycle.ts): why, by what, and when its failures began. */
  readonly enteredError?: { readonly reason: string; readonly by: 'budget' | 'permanent'; readonly from: number; readonly position?: string };
  /** One more failing batch in the table's failure streak, or the streak cleared by a batch that applied. */
  readonly streak?: 'add' | 'clear';
  /** The batch's commit-to-apply lags, counted per bucket (core/lag-histogram.ts), added to the open hour. */
  readonly lagHistogram?: readonly number[];
  readonly now: number;
}

export interface StatusRow {
  readonly pipeline: string;
  readonly table: string;
  readonly state?: string;
  readonly phase?: string;
  readonly lastPosition?: string;
  readonly lastCommitTs?: number;
  readonly lastAppliedAt?: number;
  readonly lagMs?: number;
  readonly lastError?: string;
  readonly lastErrorAt?: number;
  readonly resolvedWatermark?: string;
  readonly truncateWatermark?: string;
  readonly orderingStrength?: string;
  readonly format?: string;
  readonly lastSnapshotPosition?: string;
  readonly lastDdl?: string;
  readonly lastDdlAt?: number;
  /** The table has carried Debezium flattened records. */
  readonly carriesFlattened?: boolean;
  /** The open hour (`YYYY-MM-DDTHH`) whose counters the row holds as `h_<counter>`. */
  readonly hour?: string;
  readonly hourBatches?: number;
  readonly [counter: string]: unknown;
}

/** What one `record` did: the row as it was before the batch (none for a new row), and the requests it took. */
export interface RecordResult {
  readonly before: StatusRow | undefined;
  readonly requests: number;
}

export interface LoadOptions {
  /** Strongly consistent reads (twice the read units). @default false */
  readonly consistent?: boolean;
}

/** Rounds of closing an hour against concurrent writers before `record` gives up (and adds nothing). */
const MAX_ROUNDS = 6;

const s = (x: string | undefined): AttributeValue | undefined => (x === undefined ? undefined : { S: x });
const n = (x: number | undefined): AttributeValue | undefined => (x === undefined ? undefined : { N: String(x) });
const expiresAt = (now: number) => Math.floor(now / 1000) + HOUR_ROW_TTL_DAYS * 86_400;

export class StatusStore {
  /** Called when a table's registry row could not be written (the table is still read through the config). */
  onRegistryFailure?: (table: string, err: unknown) => void;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  private key(table: string, row: string = STATUS_ROW): Record<string, AttributeValue> {
    return { [STATUS_KEY.partition]: { S: tablePartition(this.pipeline, table) }, [STATUS_KEY.row]: { S: row } };
  }

  /** The status rows of `tables` (absent ones left out), keyed by table. */
  async load(tables: readonly string[], options: LoadOptions = {}): Promise<Map<string, StatusRow>> {
    const out = new Map<string, StatusRow>();
    const consistent = options.consistent === true;
    for (let i = 0; i < tables.length; i += 100) {
      const chunk = tables.slice(i, i + 100);
      const byPartition = new Map(chunk.map((t) => [tablePartition(this.pipeline, t), t]));
      let keys: Record<string, AttributeValue>[] | undefined = chunk.map((t) => this.key(t));
      for (let round = 0; keys && keys.length > 0 && round < 8; round++) {
        const res: BatchGetItemCommandOutput = await this.client.send(new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: consistent } } }));
        for (const item of res.Responses?.[this.tableName] ?? []) {
          const table = byPartition.get(item[STATUS_KEY.partition]?.S ?? '');
          if (table !== undefined) out.set(table, this.rowOf(table, item));
        }
        keys = res.UnprocessedKeys?.[this.tableName]?.Keys;
      }
    }
    return out;
  }

  /** A stored status item as a StatusRow: `pipeline` and `table` name the pipeline and the source table. */
  private rowOf(table: string, item: Record<string, AttributeValue>): StatusRow {
    return { ...(unmarshall(item) as Record<string, unknown>), pipeline: this.pipeline, table };
  }

  /**
   * Adds a batch's counters to the table's status row (totals and open hour) and sets its latest
   * facts, in one UpdateItem (three requests once per table per hour, see the header). Returns the
   * row as it was before. Throws only when nothing was added.
   */
  async record(table: string, update: StatusUpdate): Promise<RecordResult> {
    let hour = hourLabel(update.now);
    let requests = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      requests++;
      const first = await this.conditional(() => this.client.send(new UpdateItemCommand(this.addCommand(table, update, hour))));
      if (first.kind === 'done') {
        const before = first.attributes ? this.rowOf(table, first.attributes) : undefined;
        if (!before) requests += await this.register(table);
        return { before, requests };
      }
      const open = first.item ? this.rowOf(table, first.item) : undefined;
      const openHour = typeof open?.hour === 'string' ? open.hour : undefined;
      if (open === undefined || openHour === undefined) continue; // removed meanwhile: add again
      if (openHour > hour) {
        hour = openHour; // this container's clock is behind the row's: add to the row's hour
        continue;
      }
      const closed = await this.closeAndReset(table, update, hour, open, openHour);
      requests += closed.requests;
      if (closed.before) return { before: closed.before, requests };
    }
    throw new Error(`status row of ${table}: the hour changed under ${MAX_ROUNDS} rounds of concurrent writers`);
  }

  /** Steps 2 and 3 of an hour change: the closed hour's row, then the update that starts `hour` (undefined `before`: the row moved on, try again). */
  private async closeAndReset(table: string, update: StatusUpdate, hour: string, open: StatusRow, openHour: string): Promise<{ before: StatusRow | undefined; requests: number }> {
    await this.closeHour(table, open, openHour, update.now);
    const reset = await this.conditional(() => this.client.send(new UpdateItemCommand(this.resetCommand(table, update, hour, open, openHour))));
    if (reset.kind === 'failed') return { before: undefined, requests: 2 };
    return { before: reset.attributes ? this.rowOf(table, reset.attributes) : open, requests: 2 };
  }

  /** The batch's update, valid while the row's open hour is `hour` (or the row has none). */
  private addCommand(table: string, update: StatusUpdate, hour: string) {
    const u = factsOf(update);
    u.addCounters(update.counters);
    u.addCounters(hourCounters(update.counters), OPEN_HOUR.counterPrefix);
    for (const [i, n] of (update.lagHistogram ?? []).entries()) u.add(lagAttribute(i, OPEN_HOUR.counterPrefix), n);
    u.add(OPEN_HOUR.batches, 1);
    const label = u.set(OPEN_HOUR.label, { S: hour });
    return {
      TableName: this.tableName,
      Key: this.key(table),
      UpdateExpression: u.expression(),
      ConditionExpression: `attribute_not_exists(${label.name}) OR ${label.name} = ${label.value}`,
      ExpressionAttributeNames: u.names,
      ExpressionAttributeValues: u.values,
      ReturnValues: 'ALL_OLD' as const,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  }

  /** The batch's update that also starts `hour`, valid while the row still holds `open` as read. */
  private resetCommand(table: string, update: StatusUpdate, hour: string, open: StatusRow, openHour: string) {
    const u = factsOf(update);
    u.addCounters(update.counters);
    const counters = hourCounters(update.counters);
    for (const c of HOUR_COUNTERS) {
      const v = counters[c];
      if (v) u.set(`${OPEN_HOUR.counterPrefix}${c}`, { N: String(v) });
      else if (open[`${OPEN_HOUR.counterPrefix}${c}`] !== undefined) u.remove(`${OPEN_HOUR.counterPrefix}${c}`);
    }
    for (let i = 0; i < LAG_BUCKETS; i++) {
      const name = lagAttribute(i, OPEN_HOUR.counterPrefix);
      const v = update.lagHistogram?.[i] ?? 0;
      if (v) u.set(name, { N: String(v) });
      else if (open[name] !== undefined) u.remove(name);
    }
    u.set(OPEN_HOUR.batches, { N: '1' });
    const label = u.set(OPEN_HOUR.label, { S: hour });
    const seen = u.value({ S: openHour });
    const batches = u.placeholder(OPEN_HOUR.batches);
    const seenBatches = u.value({ N: String(Number(open.hourBatches ?? 0)) });
    return {
      TableName: this.tableName,
      Key: this.key(table),
      UpdateExpression: u.expression(),
      ConditionExpression: `${label.name} = ${seen} AND ${batches} = ${seenBatches}`,
      ExpressionAttributeNames: u.names,
      ExpressionAttributeValues: u.values,
      ReturnValues: 'ALL_OLD' as const,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  }

  /** Puts the closed hour's row, unless a copy holding as many batches is there already. */
  private async closeHour(table: string, open: StatusRow, openHour: string, now: number): Promise<void> {
    const item: Record<string, AttributeValue> = { ...this.key(table, `${HOUR_ROW_PREFIX}${openHour}`), [HOUR_BATCHES]: { N: String(Number(open.hourBatches ?? 0)) } };
    for (const c of HOUR_COUNTERS) {
      const v = Number(open[`${OPEN_HOUR.counterPrefix}${c}`] ?? 0);
      if (v) item[c] = { N: String(v) };
    }
    for (let i = 0; i < LAG_BUCKETS; i++) {
      const v = Number(open[lagAttribute(i, OPEN_HOUR.counterPrefix)] ?? 0);
      if (v) item[lagAttribute(i)] = { N: String(v) };
    }
    item[EXPIRES_AT_ATTRIBUTE] = { N: String(expiresAt(now)) };
    await this.conditional(() =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(#b) OR #b < :b',
          ExpressionAttributeNames: { '#b': HOUR_BATCHES },
          ExpressionAttributeValues: { ':b': item[HOUR_BATCHES] as AttributeValue },
        }),
      ),
    );
  }

  /** Puts the table's registry row; a failure is reported, not thrown (the counters are already added). */
  private async register(table: string): Promise<number> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.tableName, Item: { [STATUS_KEY.partition]: { S: tableRegistryPartition(this.pipeline, table) }, [STATUS_KEY.row]: { S: table } } }));
    } catch (err) {
      this.onRegistryFailure?.(table, err);
    }
    return 1;
  }

  /** Sends a conditional write: its old item when it held, the stored item when its condition failed. */
  private async conditional(send: () => Promise<{ Attributes?: Record<string, AttributeValue> }>): Promise<
    { kind: 'done'; attributes: Record<string, AttributeValue> | undefined } | { kind: 'failed'; item: Record<string, AttributeValue> | undefined }
  > {
    try {
      const out = await send();
      return { kind: 'done', attributes: out.Attributes && Object.keys(out.Attributes).length > 0 ? out.Attributes : undefined };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return { kind: 'failed', item: err.Item };
      throw err;
    }
  }

  /** Raises the table's truncate watermark; returns false when a newer one is already recorded. */
  async raiseTruncateWatermark(table: string, position: string): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(table),
          UpdateExpression: 'SET #w = :w',
          ConditionExpression: 'attribute_not_exists(#w) OR #w < :w',
          ExpressionAttributeNames: { '#w': 'truncateWatermark' },
          ExpressionAttributeValues: { ':w': { S: position } },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}

/** The batch's counters that the open hour keeps. */
function hourCounters(counters: Partial<Record<Counter, number>>): Partial<Record<Counter, number>> {
  const out: Partial<Record<Counter, number>> = {};
  for (const c of HOUR_COUNTERS) if (counters[c]) out[c] = counters[c];
  return out;
}

/** The SET clauses of a batch's latest facts. */
function factsOf(update: StatusUpdate): UpdateBuilder {
  const u = new UpdateBuilder();
  u.set('state', s(update.state));
  u.set('phase', s(update.phase));
  u.set('lastPosition', s(update.lastPosition));
  u.set('lastCommitTs', n(update.lastCommitTs));
  u.set('lagMs', n(update.lagMs));
  u.set('lastAppliedAt', n(update.now));
  u.set('resolvedWatermark', s(update.resolvedWatermark));
  u.set('orderingStrength', s(update.orderingStrength));
  u.set('format', s(update.format));
  u.set('lastSnapshotPosition', s(update.lastSnapshotPosition));
  if (update.carriesFlattened === true) u.set('carriesFlattened', { BOOL: true });
  if (update.lastDdl !== undefined) {
    u.set('lastDdl', s(update.lastDdl.slice(0, 4000)));
    u.set('lastDdlAt', n(update.now));
  }
  if (update.lastError) {
    u.set('lastError', s(update.lastError.slice(0, 1000)));
    u.set('lastErrorAt', n(update.now));
  }
  lifecycleFacts(u, update);
  return u;
}

/** The lifecycle's part of a status write: a table stopping in error, its failure streak. */
function lifecycleFacts(u: UpdateBuilder, update: StatusUpdate): void {
  const e = update.enteredError;
  if (e) {
    u.set(LIFECYCLE.state, { S: 'error' });
    u.set(LIFECYCLE.reason, { S: e.reason.slice(0, 1000) });
    u.set(LIFECYCLE.at, { N: String(update.now) });
    u.set(LIFECYCLE.by, { S: e.by });
    u.set(LIFECYCLE.heldFrom, { N: String(e.from) });
    u.set(LIFECYCLE.position, s(e.position));
  }
  if (update.streak === 'add') {
    u.add(LIFECYCLE.failAttempts, 1);
    u.setIfAbsent(LIFECYCLE.failSince, { N: String(update.now) });
  } else if (update.streak === 'clear') {
    u.remove(LIFECYCLE.failAttempts);
    u.remove(LIFECYCLE.failSince);
  }
}

/** Assembles one `SET … REMOVE … ADD …` update expression with placeholder names and values. */
export class UpdateBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, AttributeValue> = {};
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly adds: string[] = [];
  private i = 0;

  /** A name placeholder for `field` (one per field). */
  placeholder(field: string): string {
    for (const [k, v] of Object.entries(this.names)) if (v === field) return k;
    const k = `#n${this.i++}`;
    this.names[k] = field;
    return k;
  }

  /** A value placeholder. */
  value(v: AttributeValue): string {
    const k = `:v${this.i++}`;
    this.values[k] = v;
    return k;
  }

  /** SETs `field` (nothing when `value` is undefined); returns its placeholders. */
  set(field: string, value: AttributeValue): { name: string; value: string };
  set(field: string, value: AttributeValue | undefined): { name: string; value: string } | undefined;
  set(field: string, value: AttributeValue | undefined): { name: string; value: string } | undefined {
    if (!value) return undefined;
    const name = this.placeholder(field);
    const v = this.value(value);
    this.sets.push(`${name} = ${v}`);
    return { name, value: v };
  }

  /** SETs `field` unless the item already has it. */
  setIfAbsent(field: string, value: AttributeValue): void {
    const name = this.placeholder(field);
    this.sets.push(`${name} = if_not_exists(${name}, ${this.value(value)})`);
  }

  remove(field: string): void {
    this.removes.push(this.placeholder(field));
  }

  add(field: string, n: number): void {
    if (!n) return;
    this.adds.push(`${this.placeholder(field)} ${this.value({ N: String(n) })}`);
  }

  /** ADDs every non-zero counter, under `prefix` + its name. */
  addCounters(counters: Partial<Record<Counter, number>>, prefix = ''): void {
    for (const [counter, v] of Object.entries(counters)) if (v) this.add(`${prefix}${counter}`, v);
  }

  expression(): string {
    return [this.sets.length ? `SET ${this.sets.join(', ')}` : '', this.removes.length ? `REMOVE ${this.removes.join(', ')}` : '', this.adds.length ? `ADD ${this.adds.join(', ')}` : '']
      .filter(Boolean)
      .join(' ');
  }
}
