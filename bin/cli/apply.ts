/**
 * `tidemark apply`: pushes a file of messages through the handler's own code path, in batches
 * shaped like the Lambda event source would deliver them (Kinesis for `value` lines, MSK for
 * `record` lines, which carry a key and topic), against whatever endpoints are configured.
 */
import { handleEvent } from '../../functions/ingest.js';
import { addSummary, type BatchSummary, emptySummary, type IngestDeps } from '../../functions/ingest/process-batch.js';
import { type InputProblem, type InputShape, readMessages } from './input.js';
import { kinesisEvent, mskEvent } from './kinesis-shape.js';

export interface ApplyOptions {
  readonly path: string;
  readonly shape: InputShape;
  readonly batchSize: number;
  readonly maxRetries: number;
  readonly onBatch?: (done: number, total: number, totals: BatchSummary) => void;
}

export async function runApply(deps: IngestDeps, opts: ApplyOptions): Promise<{ totals: BatchSummary; problems: InputProblem[]; retries: number }> {
  const { messages, problems } = readMessages(opts.path, opts.shape);
  const totals = emptySummary();
  let retries = 0;
  const seq = (line: number) => String(line).padStart(12, '0');
  for (let start = 0; start < messages.length; ) {
    const batch = messages.slice(start, start + opts.batchSize);
    let summary = emptySummary();
    const withSummary: IngestDeps = { ...deps, onSummary: (s) => (summary = s) };
    let failedAt: number | undefined;
    try {
      if (opts.shape === 'value') {
        const event = kinesisEvent(
          'tidemark-apply',
          'shardId-000000000000',
          batch.map((m) => ({ data: m.value ?? new Uint8Array(), partitionKey: String(m.line), sequenceNumber: seq(m.line), arrival: new Date() })),
        );
        const res = await handleEvent(event, withSummary);
        const failed = res.batchItemFailures?.[0]?.itemIdentifier;
        if (failed !== undefined) failedAt = batch.findIndex((m) => seq(m.line) === failed);
      } else {
        const now = Date.now();
        const res = await handleEvent(mskEvent(batch.map((m) => ({ topic: m.topic ?? 'tidemark-apply', partition: 0, offset: m.line, key: m.key, value: m.value, timestamp: now }))), withSummary);
        // Kafka's partial-batch response names the lowest failed offset per topic-partition (here: the line number).
        const offsets = res.batchItemFailures.map((f) => f.itemIdentifier.offset);
        if (offsets.length > 0) failedAt = batch.findIndex((m) => m.line === Math.min(...offsets));
      }
    } catch {
      failedAt = 0;
    }
    addSummary(totals, summary);
    if (failedAt !== undefined && failedAt >= 0) {
      retries++;
      if (retries > opts.maxRetries * Math.ceil(messages.length / opts.batchSize)) throw new Error(`giving up after ${retries} retries at line ${batch[failedAt]?.line}`);
      start += failedAt;
      continue;
    }
    start += batch.length;
    opts.onBatch?.(start, messages.length, totals);
  }
  return { totals, problems, retries };
}
