/**
 * The local stand-in for the Lambda Kinesis event source mapping: polls every shard and invokes the
 * handler when a batch is ready, on the mapping's three triggers: `batchSize` records gathered
 * (`BatchSize`), `maxBatchingWindowMs` passed since the batch's first record
 * (`MaximumBatchingWindowInSeconds`), or the event reaching Lambda's 6 MB invocation payload limit
 * (records that would push it over wait for the next batch). It invokes the handler code with
 * Kinesis-shaped events, honours batchItemFailures (checkpoint just before the lowest failed
 * sequence and retry with backoff), and keeps checkpoints on disk (atomically) so a restart resumes.
 * After `maxRetries` it writes the failed part of the batch, whole records included, to a local
 * on-failure file in the shape Lambda writes to an S3 on-failure destination, and moves on.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient, ListShardsCommand, type _Record } from '@aws-sdk/client-kinesis';
import type { KinesisStreamBatchResponse, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { DEFAULT_BATCHING_WINDOW_SECONDS } from '../../lib/config/config.js';
import { errorMessage } from '../../functions/core/errors.js';
import { handleEvent } from '../../functions/ingest.js';
import { addSummary, type BatchSummary, emptySummary, type IngestDeps } from '../../functions/ingest/process-batch.js';
import { CheckpointFile, type Checkpoints } from '../local/checkpoints.js';
import { onFailureRecord } from '../local/on-failure.js';
import { kinesisEvent } from './kinesis-shape.js';

export interface RunnerOptions {
  readonly kinesis: KinesisClient;
  readonly deps: IngestDeps;
  readonly streamName: string;
  readonly stateDir: string;
  /** Records per invocation at most (the mapping's `BatchSize`). */
  readonly batchSize: number;
  /** How long to keep gathering after the first record of a batch (the mapping's batching window). @default DEFAULT_BATCHING_WINDOW_SECONDS × 1000 */
  readonly maxBatchingWindowMs?: number;
  /** Largest event, in bytes of its JSON, handed to one invocation. @default MAX_PAYLOAD_BYTES (6 MB) */
  readonly maxPayloadBytes?: number;
  readonly maxRetries: number;
  /** Stop after this many consecutive empty polls of every shard (for demos and tests). */
  readonly stopWhenIdle?: number;
  readonly signal?: AbortSignal;
  readonly onBatch?: (shard: string, summary: BatchSummary, totals: BatchSummary) => void;
  /** Test hook: called before each handler invocation; may throw to simulate a crash. */
  readonly beforeInvoke?: (shard: string, records: readonly _Record[]) => void | Promise<void>;
  /** The handler invoked with each event. @default handleEvent (the ingest Lambda's own code) */
  readonly handler?: (event: KinesisStreamEvent, deps: IngestDeps) => Promise<KinesisStreamBatchResponse>;
}

/**
 * Lambda's payload limit for a synchronous invocation, which the Kinesis event source mapping also
 * applies to a batch: it invokes as soon as the next record would not fit, whatever `BatchSize` says.
 */
export const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** `{"Records":[` and `]}` around the records, less the comma the first record does not need. */
const EVENT_ENVELOPE_BYTES = '{"Records":[]}'.length - 1;

/** Bytes of an event's JSON holding `records` (each counted with its comma). */
export function eventBytes(records: readonly KinesisStreamRecord[]): number {
  return records.reduce((sum, r) => sum + recordBytes(r), EVENT_ENVELOPE_BYTES);
}

/** Bytes one record adds to an event's JSON: the record and its comma. */
function recordBytes(record: KinesisStreamRecord): number {
  return Buffer.byteLength(JSON.stringify(record)) + 1;
}

/** For callers that pass no window: the config's default `ingest.maxBatchingWindowSeconds`. */
const DEFAULT_WINDOW_MS = DEFAULT_BATCHING_WINDOW_SECONDS * 1000;
const IDLE_SLEEP_MS = 200;

/** Where `tidemark run` keeps its state for a stream. */
export function runnerFiles(stateDir: string, streamName: string): { checkpoints: string; onFailure: string } {
  return { checkpoints: join(stateDir, 'checkpoints', `${streamName}.json`), onFailure: join(stateDir, 'on-failure', `${streamName}.jsonl`) };
}

export async function runPoller(opts: RunnerOptions): Promise<BatchSummary> {
  const files = runnerFiles(opts.stateDir, opts.streamName);
  mkdirSync(dirname(files.onFailure), { recursive: true });
  const store = new CheckpointFile(files.checkpoints, (m, e) => opts.deps.log.warn(m, e));
  const checkpoints = store.load();
  const totals = emptySummary();
  const listed = (await opts.kinesis.send(new ListShardsCommand({ StreamName: opts.streamName }))).Shards ?? [];
  const shards = listed.flatMap((s) => (s.ShardId ? [new ShardPoller(s.ShardId, opts, checkpoints, files.onFailure, totals)] : []));
  for (const shard of shards) await shard.open();
  let idleRounds = 0;
  while (!opts.signal?.aborted) {
    let arrived = false;
    let invoked = false;
    for (const shard of shards) {
      if (opts.signal?.aborted) break;
      const step = await shard.step();
      if (step.invoked) store.save(checkpoints);
      arrived ||= step.arrived;
      invoked ||= step.invoked;
    }
    const pending = shards.some((s) => s.pending);
    idleRounds = arrived || pending ? 0 : idleRounds + 1;
    if (opts.stopWhenIdle !== undefined && idleRounds >= opts.stopWhenIdle) break;
    // Nothing new on any shard: wait before polling again (Kinesis allows 5 GetRecords a second per shard).
    if (!arrived && !invoked) await sleep(IDLE_SLEEP_MS);
  }
  store.save(checkpoints);
  return totals;
}

/** A record read from the shard, with its place in the event and the bytes it adds to it. */
interface Buffered {
  readonly record: _Record;
  readonly shaped: KinesisStreamRecord;
  readonly bytes: number;
}

/** One shard: its iterator, the records gathered and not yet invoked, and its retry count. */
class ShardPoller {
  private iterator: string | undefined;
  private buffer: Buffered[] = [];
  private bufferBytes = EVENT_ENVELOPE_BYTES;
  private firstAt = 0;
  private attempts = 0;

  constructor(
    private readonly shardId: string,
    private readonly opts: RunnerOptions,
    private readonly checkpoints: Checkpoints,
    private readonly failureFile: string,
    private readonly totals: BatchSummary,
  ) {}

  async open(): Promise<void> {
    const after = this.checkpoints[this.shardId];
    const res = await this.opts.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: this.opts.streamName,
        ShardId: this.shardId,
        ShardIteratorType: after ? 'AFTER_SEQUENCE_NUMBER' : 'TRIM_HORIZON',
        StartingSequenceNumber: after,
      }),
    );
    this.iterator = res.ShardIterator;
    this.buffer = [];
    this.bufferBytes = EVENT_ENVELOPE_BYTES;
  }

  /** Records gathered and not yet handed to the handler. */
  get pending(): boolean {
    return this.buffer.length > 0;
  }

  private get maxPayloadBytes(): number {
    return this.opts.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
  }

  /**
   * Polls once, and invokes when the batch is full (`batchSize` records, or the next record would
   * take the event past the payload limit) or its batching window has passed.
   */
  async step(): Promise<{ arrived: boolean; invoked: boolean }> {
    const arrived = (await this.poll()) > 0;
    const windowMs = this.opts.maxBatchingWindowMs ?? DEFAULT_WINDOW_MS;
    const count = this.fitting();
    const full = count >= this.opts.batchSize || count < this.buffer.length;
    const due = this.buffer.length > 0 && (Date.now() - this.firstAt >= windowMs || this.iterator === undefined);
    if (!full && !due) return { arrived, invoked: false };
    const batch = this.buffer.splice(0, count);
    for (const b of batch) this.bufferBytes -= b.bytes;
    // Records left over by the payload limit start the next batch (and its window) now.
    if (this.buffer.length > 0) this.firstAt = Date.now();
    await this.invoke(batch);
    return { arrived, invoked: true };
  }

  /** How many records from the head of the buffer one invocation takes (at least one). */
  private fitting(): number {
    const limit = Math.min(this.buffer.length, this.opts.batchSize);
    let bytes = EVENT_ENVELOPE_BYTES;
    for (let i = 0; i < limit; i++) {
      bytes += this.buffer[i]?.bytes ?? 0;
      if (bytes > this.maxPayloadBytes) return Math.max(1, i);
    }
    return limit;
  }

  private async poll(): Promise<number> {
    const room = this.opts.batchSize - this.buffer.length;
    if (!this.iterator || room <= 0 || this.bufferBytes >= this.maxPayloadBytes) return 0;
    const res = await this.opts.kinesis.send(new GetRecordsCommand({ ShardIterator: this.iterator, Limit: room }));
    this.iterator = res.NextShardIterator;
    const records = res.Records ?? [];
    if (records.length === 0) return 0;
    if (this.buffer.length === 0) this.firstAt = Date.now();
    const shaped = kinesisEvent(
      this.opts.streamName,
      this.shardId,
      records.map((r) => ({ data: r.Data ?? new Uint8Array(), partitionKey: r.PartitionKey ?? '', sequenceNumber: r.SequenceNumber ?? '', arrival: r.ApproximateArrivalTimestamp ?? new Date() })),
    ).Records;
    records.forEach((record, i) => {
      const s = shaped[i];
      if (s === undefined) return;
      const bytes = recordBytes(s);
      this.buffer.push({ record, shaped: s, bytes });
      this.bufferBytes += bytes;
    });
    return records.length;
  }

  private async invoke(batch: readonly Buffered[]): Promise<void> {
    const records = batch.map((b) => b.record);
    const event: KinesisStreamEvent = { Records: batch.map((b) => b.shaped) };
    let summary = emptySummary();
    let failedFrom: string | undefined;
    let error: string | undefined;
    try {
      await this.opts.beforeInvoke?.(this.shardId, records);
      const handler = this.opts.handler ?? handleEvent;
      const response = await handler(event, { ...this.opts.deps, onSummary: (s) => (summary = s) });
      failedFrom = response.batchItemFailures?.[0]?.itemIdentifier;
    } catch (err) {
      // A crashed invocation: the whole batch is retried, as Lambda would.
      failedFrom = records[0]?.SequenceNumber;
      error = errorMessage(err);
      this.opts.deps.log.error('handler invocation failed', { shard: this.shardId, error });
    }
    addSummary(this.totals, summary);
    if (failedFrom === undefined) this.succeeded(records);
    else await this.failed(event, records, failedFrom, error);
    this.opts.onBatch?.(this.shardId, summary, this.totals);
  }

  private succeeded(records: readonly _Record[]): void {
    const last = records[records.length - 1]?.SequenceNumber;
    if (last) this.checkpoints[this.shardId] = last;
    this.attempts = 0;
  }

  /** Retries from the lowest failed record; after `maxRetries` keeps its whole records on file and moves on. */
  private async failed(event: KinesisStreamEvent, records: readonly _Record[], failedFrom: string, error: string | undefined): Promise<void> {
    this.attempts++;
    const failedIndex = Math.max(0, records.findIndex((r) => r.SequenceNumber === failedFrom));
    if (this.attempts > this.opts.maxRetries) {
      const failedPart: KinesisStreamEvent = { Records: event.Records.slice(failedIndex) };
      appendFileSync(this.failureFile, `${JSON.stringify(onFailureRecord(failedPart, this.attempts, error ?? 'BatchItemFailures'))}\n`);
      this.succeeded(records);
    } else {
      const before = records[failedIndex - 1]?.SequenceNumber;
      if (before) this.checkpoints[this.shardId] = before;
      await sleep(Math.min(2000, 50 * 2 ** this.attempts));
    }
    await this.open();
  }
}
