/**
 * Raw landing, measured by running the ingest itself: `processBatch` (functions/ingest/process-batch.ts)
 * over the real wiring (`ingestDeps`, functions/composition.ts: the Normalizer, `RawStore.land`, the
 * guarded writer, the status store), with a DynamoDB client that accepts every write and an S3
 * client that counts every request, measures each object's bytes and keeps nothing. The first
 * layout's figure (one object per table per batch) is counted from the tables named in the lines
 * of the raw object the batch actually wrote.
 *
 *   const m = await measureLanding(batches, config);
 *   m.rawPuts / m.batches   // 1: one raw object per batch, whatever the tables
 */
import { gunzipSync } from 'node:zlib';
import { BatchGetItemCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { ingestDeps } from '../../../functions/composition.js';
import { CONTROL_TABLE } from '../../../functions/adapters/raw-store.js';
import type { Normalizer } from '../../../functions/core/normalize.js';
import { type Decoded, decode } from '../../../functions/ingest/decode.js';
import { processBatch } from '../../../functions/ingest/process-batch.js';
import { BatchTally } from '../../../functions/ingest/tally.js';
import { CollectingMetricSink, silentLog } from '../../../functions/telemetry/sinks.js';
import type { TidemarkConfig } from '../../../lib/config/config.js';
import type { ScaleBatch } from './workload.js';

/** What landing the batches cost, counted. */
export interface LandingFigures {
  readonly batches: number;
  /** Delivered records, and the change lines among them. */
  readonly records: number;
  readonly changeLines: number;
  readonly rawPuts: number;
  readonly quarantinePuts: number;
  /** S3 requests of any other kind or prefix the ingest sent (none expected). */
  readonly otherS3Requests: number;
  readonly quarantinedRecords: number;
  /** Records processBatch reported as failed (batchItemFailures): none expected. */
  readonly failedBatches: number;
  /** Objects the first layout wrote for the same batches: one per (batch, table), controls under `_control`. */
  readonly firstLayoutObjects: number;
  /** Bytes of the raw objects' NDJSON before and after gzip. */
  readonly ndjsonBytes: number;
  readonly gzipBytes: number;
  /** Largest number of tables in one batch. */
  readonly maxTablesPerBatch: number;
}

/** Counts of an S3 client the ingest writes through. */
export interface S3Counts {
  raw: number;
  quarantine: number;
  other: number;
  rawBytes: number;
  ndjsonBytes: number;
  /** Distinct tables (`_control` for control lines) in each raw object, in order. */
  readonly tablesPerRawObject: number[];
  changeLines: number;
}

/**
 * An S3 client that counts every request: PutObject by key prefix (raw bodies gunzipped to count
 * their lines and tables), anything else as `other`. Bodies are dropped.
 */
export function countingS3(rawPrefix: string, quarantinePrefix: string): { client: S3Client; counts: S3Counts; restore: () => void } {
  const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  const counts: S3Counts = { raw: 0, quarantine: 0, other: 0, rawBytes: 0, ndjsonBytes: 0, tablesPerRawObject: [], changeLines: 0 };
  mock.onAnyCommand().callsFake(() => {
    counts.other++;
    return {};
  });
  mock.on(PutObjectCommand).callsFake((input) => {
    const key = String(input.Key);
    const body = input.Body as Uint8Array;
    if (key.startsWith(quarantinePrefix)) counts.quarantine++;
    else if (key.startsWith(rawPrefix)) {
      counts.raw++;
      counts.rawBytes += body.length;
      const ndjson = gunzipSync(body);
      counts.ndjsonBytes += ndjson.length;
      const tables = new Set<string>();
      for (const l of ndjson.toString('utf8').split('\n')) {
        if (l === '') continue;
        const line = JSON.parse(l) as { table: string | null; kind: string };
        tables.add(line.table ?? CONTROL_TABLE);
        if (line.kind === 'change') counts.changeLines++;
      }
      counts.tablesPerRawObject.push(tables.size);
    } else counts.other++;
    return { ETag: '"x"' };
  });
  return { client, counts, restore: () => mock.restore() };
}

/** A DynamoDB client on which every guarded write and status update succeeds and no status row exists. */
function acceptingDynamoDb(): { client: DynamoDBClient; restore: () => void } {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  mock.on(BatchGetItemCommand).resolves({ Responses: {} });
  mock.on(UpdateItemCommand).resolves({});
  mock.on(PutItemCommand).resolves({});
  return { client, restore: () => mock.restore() };
}

/** Decodes a batch as the ingest does (no telemetry): history-load.ts lands its lines itself. */
export function decodeBatch(records: ScaleBatch['records'], config: TidemarkConfig, normalizer: Normalizer): Decoded {
  return decode(records, { config, normalizer, log: silentLog }, new BatchTally(records));
}

/** Runs every batch through processBatch and counts what it sent to S3. */
export async function measureLanding(batches: Iterable<ScaleBatch>, config: TidemarkConfig): Promise<LandingFigures> {
  const s3 = countingS3(config.raw.prefix, config.raw.quarantinePrefix);
  const ddb = acceptingDynamoDb();
  const deps = ingestDeps(config, { dynamodb: ddb.client, s3: s3.client }, { metrics: new CollectingMetricSink(), log: silentLog });
  let n = 0;
  let records = 0;
  let quarantined = 0;
  let failed = 0;
  try {
    for (const b of batches) {
      const before = s3.counts.raw;
      const result = await processBatch(b.records, deps);
      n++;
      records += b.records.length;
      quarantined += result.summary.quarantined;
      if (result.batchItemFailures.length > 0) failed++;
      if (s3.counts.raw - before > 1) throw new Error(`batch ${b.index}: ${s3.counts.raw - before} raw objects`);
    }
  } finally {
    s3.restore();
    ddb.restore();
  }
  const tables = s3.counts.tablesPerRawObject;
  return {
    batches: n,
    records,
    changeLines: s3.counts.changeLines,
    rawPuts: s3.counts.raw,
    quarantinePuts: s3.counts.quarantine,
    otherS3Requests: s3.counts.other,
    quarantinedRecords: quarantined,
    failedBatches: failed,
    firstLayoutObjects: tables.reduce((a, b) => a + b, 0),
    ndjsonBytes: s3.counts.ndjsonBytes,
    gzipBytes: s3.counts.rawBytes,
    maxTablesPerBatch: Math.max(0, ...tables),
  };
}
