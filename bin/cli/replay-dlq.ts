/**
 * `tidemark replay --from-dlq [file]`: applies exactly the failed batches again: the local
 * on-failure file(s) of `tidemark run`, an SQS on-failure queue (`--queue-url`, its coordinates are
 * replayed from raw) and the S3 on-failure objects Lambda wrote. Exit 1 when a batch still fails or
 * a record could not be read. `--json` ends with `{"summary":{…}}`. Not the replay state machine:
 * whole failed records never reached raw or history, so no selection query finds them; they go
 * through the ingest path (functions/replay/from-dlq.ts, docs/replay.md).
 *
 *   tidemark replay --from-dlq                         (.tidemark/on-failure/*.jsonl and the S3 prefix)
 *   tidemark replay --from-dlq --queue-url https://sqs…/shop-ingest-dlq
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { buildStorage } from '../../functions/adapters/storage.js';
import { ingestDeps } from '../../functions/composition.js';
import { buildReplayEngine, ledgerViewFor, replayTables } from '../../functions/replay/deps.js';
import { type DlqProblem, parseFailedBatchLines } from '../../functions/replay/dlq.js';
import { type DlqItem, readOnFailureObjects, readQueue, replayFailedBatches } from '../../functions/replay/from-dlq.js';
import { checkReplaySafety } from '../../functions/replay/safety.js';
import { CollectingMetricSink } from '../../functions/telemetry/sinks.js';
import { annotateErrors } from '../local/call-context.js';
import { cliLog, clients, STATE_DIR } from './context.js';
import { withLedgerKeyHint } from './ledger-key.js';
import { err, out, progress, summaryLine } from './output.js';
import type { ReplayCliOptions } from './replay.js';

function onFailureFiles(arg: string | boolean | undefined): string[] {
  if (typeof arg === 'string') return [arg];
  const dir = join(STATE_DIR, 'on-failure');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.jsonl')).map((f) => join(dir, f)) : [];
}

export async function fromDlq(cfg: TidemarkConfig, o: ReplayCliOptions): Promise<void> {
  const c = await clients(cfg);
  const log = cliLog();
  const problems: DlqProblem[] = [];
  const items: DlqItem[] = [];
  for (const file of onFailureFiles(o.fromDlq)) {
    const parsed = parseFailedBatchLines(readFileSync(file, 'utf8'), file);
    items.push(...parsed.batches.map((batch) => ({ batch })));
    problems.push(...parsed.problems);
  }
  if (o.queueUrl) items.push(...(await readQueue(annotateErrors(new SQSClient({}), 'SQS', undefined), o.queueUrl, problems)));
  items.push(...(await readOnFailureObjects(c.s3, cfg.replay.onFailureBucket ?? cfg.raw.bucket, o.onFailurePrefix ?? cfg.replay.onFailurePrefix, problems)));
  const tables = cfg.tables.map((t) => t.source);
  const oldest = Math.min(...items.flatMap((i) => (i.batch.range?.firstArrival !== undefined && i.batch.range?.firstArrival !== null ? [i.batch.range.firstArrival] : [])));
  checkReplaySafety({ config: cfg, tables, target: { kind: 'live' }, oldestLanding: Number.isFinite(oldest) ? oldest : null, now: Date.now(), force: o.force === true });
  const ledger = await ledgerViewFor(cfg, c.dynamodb, tables).catch((e: unknown) => {
    throw withLedgerKeyHint(cfg, e);
  });
  const engine = buildReplayEngine(buildStorage(cfg, c), { tables: replayTables(cfg, tables, { kind: 'live' }), target: { kind: 'live' }, ledger, log });
  const ingest = ingestDeps(cfg, c, { metrics: new CollectingMetricSink(), log });
  const bar = progress('replay --from-dlq', items.length, 'failed batches', { quiet: o.json === true || items.length === 0 });
  const report = await replayFailedBatches(items, { config: cfg, s3: c.s3, ingest, engine, ledger, kinesis: c.kinesis, onBatch: (d) => bar.update(d) });
  bar.stop();
  for (const p of problems) err(`${p.source}: ${p.detail}`);
  const summary = { command: 'replay', source: 'dlq', ...report, problems: problems.length };
  if (o.json) out(summaryLine(summary, summary));
  else {
    out(`replay --from-dlq: ${report.batches} failed batches (${report.reingested} whole, re-ingested; ${report.fromRaw} ranges from raw and ${report.fromStream} records from the stream), ${report.records} records`);
    out(`  ${report.missing} missing, ${report.failedBatches} still failing, ${report.acknowledged} queue messages deleted`);
    out(`  ingest: applied ${report.ingest.applied}, stale ${report.ingest.stale}, duplicates ${report.ingest.duplicates}, quarantined ${report.ingest.quarantined}, failed ${report.ingest.failed}`);
    out(`  from raw: applied ${report.replay.applied}, skipped by the pre-read ${report.replay.skippedByPreRead}, ${report.replay.readUnits} read units, ${report.replay.writeUnits} write units`);
    if (report.ingest.quarantined > 0) out(`  quarantined ${report.ingest.quarantined} records → s3://${cfg.raw.bucket}/${cfg.raw.quarantinePrefix}`);
  }
  if (report.failedBatches > 0 || problems.length > 0) process.exitCode = 1;
}
