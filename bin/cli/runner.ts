/**
 * The local stand-in for the Lambda Kinesis event source mapping: polls every shard, invokes the
 * handler code with Kinesis-shaped events, honours batchItemFailures (checkpoint just before the
 * lowest failed sequence and retry with backoff), keeps checkpoints on disk so a restart resumes,
 * and after `maxRetries` sends the batch's coordinates to a local on-failure file (like the
 * mapping's on-failure destination) and moves on.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient, ListShardsCommand, type _Record } from '@aws-sdk/client-kinesis';
import { handleEvent } from '../../functions/ingest.js';
import { addSummary, type BatchSummary, emptySummary, type IngestDeps } from '../../functions/ingest/process-batch.js';
import { kinesisEvent } from './kinesis-shape.js';

export interface RunnerOptions {
  readonly kinesis: KinesisClient;
  readonly deps: IngestDeps;
  readonly streamName: string;
  readonly stateDir: string;
  readonly batchSize: number;
  readonly maxRetries: number;
  /** Stop after this many consecutive empty polls of every shard (for demos and tests). */
  readonly stopWhenIdle?: number;
  readonly signal?: AbortSignal;
  readonly onBatch?: (shard: string, summary: BatchSummary, totals: BatchSummary) => void;
  /** Test hook: called before each handler invocation; may throw to simulate a crash. */
  readonly beforeInvoke?: (shard: string, records: readonly _Record[]) => void | Promise<void>;
}

type Checkpoints = Record<string, string>;

export async function runPoller(opts: RunnerOptions): Promise<BatchSummary> {
  const checkpointFile = join(opts.stateDir, 'checkpoints', `${opts.streamName}.json`);
  const failureFile = join(opts.stateDir, 'on-failure', `${opts.streamName}.jsonl`);
  mkdirSync(dirname(checkpointFile), { recursive: true });
  mkdirSync(dirname(failureFile), { recursive: true });
  const checkpoints: Checkpoints = existsSync(checkpointFile) ? JSON.parse(readFileSync(checkpointFile, 'utf8')) : {};
  const save = () => writeFileSync(checkpointFile, JSON.stringify(checkpoints, null, 2));
  const totals = emptySummary();

  const shards = (await opts.kinesis.send(new ListShardsCommand({ StreamName: opts.streamName }))).Shards ?? [];
  const iterators = new Map<string, string | undefined>();
  const iteratorFor = async (shardId: string): Promise<string | undefined> => {
    const after = checkpoints[shardId];
    const res = await opts.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: opts.streamName,
        ShardId: shardId,
        ShardIteratorType: after ? 'AFTER_SEQUENCE_NUMBER' : 'TRIM_HORIZON',
        StartingSequenceNumber: after,
      }),
    );
    return res.ShardIterator;
  };
  for (const s of shards) iterators.set(s.ShardId!, await iteratorFor(s.ShardId!));
  const attempts = new Map<string, number>();
  let idleRounds = 0;

  while (!opts.signal?.aborted) {
    let sawRecords = false;
    for (const [shardId, iterator] of iterators) {
      if (!iterator || opts.signal?.aborted) continue;
      const res = await opts.kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: opts.batchSize }));
      const records = res.Records ?? [];
      iterators.set(shardId, res.NextShardIterator);
      if (records.length === 0) continue;
      sawRecords = true;
      const event = kinesisEvent(
        opts.streamName,
        shardId,
        records.map((r) => ({ data: r.Data!, partitionKey: r.PartitionKey!, sequenceNumber: r.SequenceNumber!, arrival: r.ApproximateArrivalTimestamp ?? new Date() })),
      );
      let failedFrom: string | undefined;
      let summary = emptySummary();
      try {
        await opts.beforeInvoke?.(shardId, records);
        const response = await handleEvent(event, { ...opts.deps, onSummary: (s) => (summary = s) });
        failedFrom = response.batchItemFailures?.[0]?.itemIdentifier;
      } catch (err) {
        // A crashed invocation: the whole batch is retried, as Lambda would.
        failedFrom = records[0]!.SequenceNumber!;
        opts.deps.log.error('handler invocation failed', { shard: shardId, error: (err as Error).message });
      }
      addSummary(totals, summary);
      if (failedFrom === undefined) {
        checkpoints[shardId] = records[records.length - 1]!.SequenceNumber!;
        attempts.delete(shardId);
      } else {
        const n = (attempts.get(shardId) ?? 0) + 1;
        attempts.set(shardId, n);
        const failedIndex = records.findIndex((r) => r.SequenceNumber === failedFrom);
        if (n > opts.maxRetries) {
          appendFileSync(failureFile, `${JSON.stringify({ stream: opts.streamName, shard: shardId, startSequence: failedFrom, endSequence: records[records.length - 1]!.SequenceNumber, attempts: n, at: new Date().toISOString() })}\n`);
          checkpoints[shardId] = records[records.length - 1]!.SequenceNumber!;
          attempts.delete(shardId);
        } else if (failedIndex > 0) checkpoints[shardId] = records[failedIndex - 1]!.SequenceNumber!;
        await sleep(Math.min(2000, 50 * 2 ** n));
        iterators.set(shardId, await iteratorFor(shardId));
      }
      save();
      opts.onBatch?.(shardId, summary, totals);
    }
    if (sawRecords) idleRounds = 0;
    else {
      idleRounds++;
      if (opts.stopWhenIdle !== undefined && idleRounds >= opts.stopWhenIdle) break;
      await sleep(200);
    }
  }
  save();
  return totals;
}
