/**
 * `tidemark apply`: pushes a file of messages through the handler's own code path, in batches
 * shaped like the Lambda event source would deliver them (Kinesis for `value` lines, MSK for
 * `record` lines, which carry a key and topic), against whatever endpoints are configured.
 *
 * Bad lines never stop a file: the pipeline quarantines them. A line whose write keeps failing is
 * retried `maxRetries` times, then reported as a problem (it is already in raw) and the run goes on;
 * only a batch that cannot land in raw at all stops the run, since skipping it would lose records.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BatchError, errorMessage } from '../../functions/core/errors.js';
import { handleEvent } from '../../functions/ingest.js';
import { addSummary, type BatchSummary, emptySummary, type IngestDeps } from '../../functions/ingest/process-batch.js';
import { type InputMessage, type InputProblem, type InputShape, parseMessages } from './input.js';
import { kinesisEvent, mskEvent } from './kinesis-shape.js';

export interface ApplyOptions {
  readonly path: string;
  readonly shape: InputShape;
  readonly batchSize: number;
  readonly maxRetries: number;
  readonly onBatch?: (done: number, total: number, totals: BatchSummary) => void;
}

export async function runApply(deps: IngestDeps, opts: ApplyOptions): Promise<{ totals: BatchSummary; problems: InputProblem[]; retries: number }> {
  const bytes = readFileSync(opts.path);
  const { messages, problems } = parseMessages(bytes, opts.shape);
  // The shard id names raw objects: derived from the file's content, so two different files never
  // share raw object keys and a re-run of the same file rewrites the same objects.
  const shardId = `shardId-apply-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}`;
  const totals = emptySummary();
  let retries = 0;
  const attempts = new Map<number, number>();
  for (let start = 0; start < messages.length; ) {
    const batch = messages.slice(start, start + opts.batchSize);
    const attempt = await sendBatch(deps, opts.shape, shardId, batch);
    addSummary(totals, attempt.summary);
    if (attempt.failedAt === undefined) {
      start += batch.length;
      opts.onBatch?.(start, messages.length, totals);
      continue;
    }
    retries++;
    start += advanceAfterFailure(batch, { ...attempt, failedAt: attempt.failedAt }, attempts, opts.maxRetries, problems, shardId);
  }
  problems.sort((a, b) => a.line - b.line);
  return { totals, problems, retries };
}

/** One batch through the handler: its summary, and the index in the batch of the first failed line. */
interface Attempt {
  readonly summary: BatchSummary;
  readonly failedAt: number | undefined;
  readonly error: string;
}

const seq = (line: number) => String(line).padStart(12, '0');

async function sendBatch(deps: IngestDeps, shape: InputShape, shardId: string, batch: readonly InputMessage[]): Promise<Attempt> {
  let summary = emptySummary();
  const withSummary: IngestDeps = { ...deps, onSummary: (s) => (summary = s) };
  try {
    const failedAt = shape === 'value' ? await sendAsKinesis(withSummary, shardId, batch) : await sendAsMsk(withSummary, batch);
    return { summary, failedAt, error: 'the write failed (see the log)' };
  } catch (err) {
    // An MSK batch fails as a whole; its error names the first failed offset, which is the line number.
    const error = errorMessage(err);
    const offset = /from offset (\d+)/.exec(error)?.[1];
    const at = offset === undefined ? -1 : batch.findIndex((m) => m.line === Number(offset));
    return { summary, failedAt: Math.max(0, at), error };
  }
}

async function sendAsKinesis(deps: IngestDeps, shardId: string, batch: readonly InputMessage[]): Promise<number | undefined> {
  const event = kinesisEvent(
    'tidemark-apply',
    shardId,
    batch.map((m) => ({ data: m.value ?? new Uint8Array(), partitionKey: String(m.line), sequenceNumber: seq(m.line), arrival: new Date() })),
  );
  const res = await handleEvent(event, deps);
  const failed = res.batchItemFailures?.[0]?.itemIdentifier;
  return failed === undefined ? undefined : Math.max(0, batch.findIndex((m) => seq(m.line) === failed));
}

async function sendAsMsk(deps: IngestDeps, batch: readonly InputMessage[]): Promise<number | undefined> {
  const now = Date.now();
  const res = await handleEvent(mskEvent(batch.map((m) => ({ topic: m.topic ?? 'tidemark-apply', partition: 0, offset: m.line, key: m.key, value: m.value, timestamp: now }))), deps);
  // Kafka's partial-batch response names the lowest failed offset per topic-partition (here: the line number).
  const offsets = res.batchItemFailures.map((f) => f.itemIdentifier.offset);
  return offsets.length > 0 ? batch.findIndex((m) => m.line === Math.min(...offsets)) : undefined;
}

/**
 * How far to move on after a failed batch: retry from the failed line, or, once its retries are
 * spent, report it and skip it. Throws when even raw landing failed, since skipping would lose it.
 */
function advanceAfterFailure(
  batch: readonly InputMessage[],
  attempt: Attempt & { readonly failedAt: number },
  attempts: Map<number, number>,
  maxRetries: number,
  problems: InputProblem[],
  shardId: string,
): number {
  const { summary, failedAt, error } = attempt;
  const line = batch[failedAt]?.line ?? -1;
  const n = (attempts.get(line) ?? 0) + 1;
  attempts.set(line, n);
  if (n <= maxRetries) return failedAt;
  // No summary (the handler threw before finishing) or nothing landed in raw: skipping would lose
  // the record, so the run stops here instead.
  const rawFailed = summary.records === 0 || (summary.s3Puts === 0 && summary.failed === summary.records);
  if (rawFailed) {
    throw new BatchError(`giving up at line ${line}: raw landing failed ${n} times; nothing from this line on was applied`, {
      context: { stream: 'tidemark-apply', shard: shardId, sequence: seq(line) },
    });
  }
  problems.push({ line, reason: `not applied after ${n} attempts: ${error}; the record is in raw, apply it again once the cause is fixed` });
  return failedAt + 1;
}
