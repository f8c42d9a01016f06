/**
 * The local runner's batching against a scripted Kinesis shard: it must invoke on the event source
 * mapping's three triggers (BatchSize records, the batching window after the first record, the
 * 6 MB invocation payload) and never lose, duplicate or reorder a record while doing so.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient, ListShardsCommand } from '@aws-sdk/client-kinesis';
import type { KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import { eventBytes, MAX_PAYLOAD_BYTES, runnerFiles, runPoller, type RunnerOptions } from '../../../../bin/cli/runner.js';
import { silentLog } from '../../../../functions/telemetry/sinks.js';
import type { IngestDeps } from '../../../../functions/ingest/process-batch.js';

const SHARD = 'shardId-000000000000';

/** A record of the scripted shard: readable from `at` ms after the stream starts. */
interface Scripted {
  readonly data: Uint8Array;
  readonly at: number;
}

const sequenceOf = (i: number): string => String(49_000_000_000_000_000_000n + BigInt(i));

/**
 * One shard whose records become readable over time. The iterator is the index of the next record;
 * a `closed` shard returns no next iterator once everything was read (as a closed shard does).
 */
function scriptedKinesis(records: readonly Scripted[], closed: boolean): KinesisClient {
  const started = Date.now();
  const send = async (command: unknown): Promise<unknown> => {
    if (command instanceof ListShardsCommand) return { Shards: [{ ShardId: SHARD }] };
    if (command instanceof GetShardIteratorCommand) {
      const after = command.input.StartingSequenceNumber;
      const from = command.input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER' && after ? records.findIndex((_, i) => sequenceOf(i) === after) + 1 : 0;
      return { ShardIterator: String(from) };
    }
    if (command instanceof GetRecordsCommand) {
      const from = Number(command.input.ShardIterator);
      const limit = command.input.Limit ?? 10_000;
      const elapsed = Date.now() - started;
      let to = from;
      while (to < records.length && to - from < limit && (records[to]?.at ?? Number.POSITIVE_INFINITY) <= elapsed) to++;
      const out = records.slice(from, to).map((r, k) => ({ Data: r.data, PartitionKey: `k${(from + k) % 7}`, SequenceNumber: sequenceOf(from + k), ApproximateArrivalTimestamp: new Date() }));
      return { Records: out, NextShardIterator: closed && to === records.length ? undefined : String(to) };
    }
    throw new Error(`unexpected command ${String(command)}`);
  };
  return { send } as unknown as KinesisClient;
}

interface Invocation {
  readonly event: KinesisStreamEvent;
  readonly at: number;
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs the poller over the scripted shard with a handler that records every event it is given. */
async function run(
  records: readonly Scripted[],
  opts: { closed: boolean; batchSize: number; windowMs: number; fail?: (event: KinesisStreamEvent, n: number) => boolean; timeoutMs?: number },
): Promise<{ invocations: Invocation[]; stateDir: string; started: number }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'tidemark-runner-'));
  dirs.push(stateDir);
  const invocations: Invocation[] = [];
  const started = Date.now();
  const handler: RunnerOptions['handler'] = async (event): Promise<KinesisStreamBatchResponse> => {
    invocations.push({ event, at: Date.now() - started });
    if (opts.fail?.(event, invocations.length)) throw new Error('simulated crash');
    return { batchItemFailures: [] };
  };
  await runPoller({
    kinesis: scriptedKinesis(records, opts.closed),
    deps: { log: silentLog } as unknown as IngestDeps,
    streamName: 'runner-test',
    stateDir,
    batchSize: opts.batchSize,
    maxBatchingWindowMs: opts.windowMs,
    maxRetries: 3,
    stopWhenIdle: 2,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    handler,
  });
  return { invocations, stateDir, started };
}

const small = (n: number, at: (i: number) => number = () => 0): Scripted[] => Array.from({ length: n }, (_, i) => ({ data: Buffer.from(`{"i":${i}}`), at: at(i) }));
const sequencesOf = (event: KinesisStreamEvent): string[] => event.Records.map((r) => r.kinesis.sequenceNumber);

describe('tidemark run batching (the event source mapping semantics)', () => {
  it('invokes with exactly batchSize records when they are there, and the rest when the shard closes', async () => {
    const { invocations } = await run(small(2_500), { closed: true, batchSize: 1_000, windowMs: 60_000 });
    assert.deepEqual(
      invocations.map((i) => i.event.Records.length),
      [1_000, 1_000, 500],
    );
    assert.deepEqual(invocations.flatMap((i) => sequencesOf(i.event)), small(2_500).map((_, i) => sequenceOf(i)));
  });

  it('holds a partial batch until the window has passed since its first record, then invokes it', async () => {
    // 10 records every 20 ms for 1.2 s: batches close on the 250 ms window, never on the batch size.
    const records = small(600, (i) => Math.floor(i / 10) * 20);
    const { invocations } = await run(records, { closed: false, batchSize: 10_000, windowMs: 250 });
    assert.deepEqual(invocations.flatMap((i) => sequencesOf(i.event)), records.map((_, i) => sequenceOf(i)), 'every record once, in order');
    for (const { event, at } of invocations) {
      const first = Number(BigInt(event.Records[0]?.kinesis.sequenceNumber ?? '0') - 49_000_000_000_000_000_000n);
      const readable = records[first]?.at ?? 0;
      assert.ok(at - readable >= 250, `a batch was invoked ${at - readable} ms after its first record became readable`);
    }
    // About 1.2 s / 0.25 s = 5 batches; invoking per poll would make dozens, ignoring the window one.
    assert.ok(invocations.length >= 3 && invocations.length <= 8, `${invocations.length} batches`);
  });

  it('never hands an invocation more than 6 MB: the record that would not fit starts the next batch', async () => {
    // 700,000 bytes of data are 933,336 in base64: six records fit in 6 MB, seven do not.
    const big = Array.from({ length: 20 }, (_, i): Scripted => ({ data: new Uint8Array(700_000).fill(i), at: 0 }));
    const { invocations, stateDir } = await run(big, { closed: true, batchSize: 100, windowMs: 60_000 });
    assert.deepEqual(
      invocations.map((i) => i.event.Records.length),
      [6, 6, 6, 2],
    );
    for (const [n, { event }] of invocations.entries()) {
      const bytes = Buffer.byteLength(JSON.stringify(event));
      assert.equal(eventBytes(event.Records), bytes, 'the runner counts the bytes of the event it sends');
      assert.ok(bytes <= MAX_PAYLOAD_BYTES, `batch ${n} is ${bytes} bytes`);
      const next = invocations[n + 1]?.event.Records[0];
      if (next) assert.ok(eventBytes([...event.Records, next]) > MAX_PAYLOAD_BYTES, `batch ${n} stopped before it was full`);
    }
    assert.deepEqual(invocations.flatMap((i) => sequencesOf(i.event)), big.map((_, i) => sequenceOf(i)));
    const checkpoints = JSON.parse(readFileSync(runnerFiles(stateDir, 'runner-test').checkpoints, 'utf8')) as Record<string, string>;
    assert.equal(checkpoints[SHARD], sequenceOf(19));
  });

  it('retries a crashed batch from its first record without losing the records the payload limit held back', async () => {
    const big = Array.from({ length: 14 }, (_, i): Scripted => ({ data: new Uint8Array(700_000).fill(i), at: 0 }));
    const { invocations } = await run(big, { closed: true, batchSize: 100, windowMs: 60_000, fail: (_e, n) => n === 2 });
    const batches = invocations.map((i) => sequencesOf(i.event));
    assert.deepEqual(batches[2], batches[1], 'the crashed batch is invoked again as it was');
    const delivered = new Set(batches.filter((_, n) => n !== 1).flat());
    assert.deepEqual([...delivered].sort(), big.map((_, i) => sequenceOf(i)).sort());
    assert.equal(batches.filter((_, n) => n !== 1).flat().length, 14, 'no record twice once it succeeded');
  });
});
