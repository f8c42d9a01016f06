/**
 * The real ingest wiring (`buildIngestDeps`) over mocked DynamoDB and S3 clients
 * (aws-sdk-client-mock): no network, every SDK call recorded. By default every call succeeds and the
 * status table holds no rows; tests override single commands.
 */
import { BatchGetItemCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { gunzipSync } from 'node:zlib';
import type { TidemarkConfig } from '../../lib/config/config.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { CollectingMetricSink, type Log } from '../../functions/telemetry/sinks.js';
import { ingestDeps } from '../../functions/composition.js';
import type { IngestDeps } from '../../functions/ingest/process-batch.js';

export const NOW = Date.UTC(2026, 10, 30, 6, 30);

/** A log that keeps what it is told, for assertions. */
export function memoryLog(): Log & { readonly lines: { level: string; message: string; extra?: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, extra?: Record<string, unknown>) => {
    lines.push({ level, message, ...(extra ? { extra } : {}) });
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), lines };
}

export function mockedDeps(config: TidemarkConfig) {
  const credentials = { accessKeyId: 'x', secretAccessKey: 'y' };
  const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials });
  const s3 = new S3Client({ region: 'us-east-1', credentials });
  const ddb = mockClient(dynamodb);
  const s3mock = mockClient(s3);
  ddb.on(BatchGetItemCommand).resolves({ Responses: {} });
  ddb.on(UpdateItemCommand).resolves({});
  ddb.on(PutItemCommand).resolves({});
  s3mock.on(PutObjectCommand).resolves({});
  const metrics = new CollectingMetricSink();
  const log = memoryLog();
  const deps: IngestDeps = { ...ingestDeps(config, { dynamodb, s3 }, { metrics, log, now: () => NOW }), landing: { budgetMs: 2_000, sleep: async () => {} } };
  return { deps, ddb, s3: s3mock, metrics, log, statusTable: config.statusTable };
}

/** Objects PUT to S3, decompressed into their JSON lines. */
export function putObjects(s3: ReturnType<typeof mockedDeps>['s3']): { key: string; lines: Record<string, unknown>[]; text: string }[] {
  return s3.commandCalls(PutObjectCommand).map((c) => {
    const text = gunzipSync(c.args[0].input.Body as Uint8Array).toString('utf8');
    return { key: c.args[0].input.Key ?? '', text, lines: text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
  });
}

/**
 * Counters ADDed to status rows (totals, not the open hour's `h_` counters), summed per table, read
 * back from the UpdateItem calls the status store made (`pipeline` = `<name>/<table>`, `table` = `status`).
 */
export function statusCounters(ddb: ReturnType<typeof mockedDeps>['ddb'], statusTable: string): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const call of ddb.commandCalls(UpdateItemCommand)) {
    const input = call.args[0].input;
    const partition = input.Key?.pipeline?.S ?? '';
    const table = partition.slice(partition.indexOf('/') + 1);
    if (input.TableName !== statusTable || input.Key?.table?.S !== 'status' || !partition.includes('/') || !input.UpdateExpression?.includes('ADD ')) continue;
    const row = out.get(table) ?? {};
    out.set(table, row);
    for (const clause of (input.UpdateExpression.split('ADD ')[1] ?? '').split(', ')) {
      const [n = '', v = ''] = clause.split(' ');
      const name = input.ExpressionAttributeNames?.[n] ?? n;
      if (name.startsWith('h_') || name === 'hourBatches') continue;
      row[name] = (row[name] ?? 0) + Number(input.ExpressionAttributeValues?.[v]?.N ?? 0);
    }
  }
  return out;
}

/** PutItem calls to tables other than the status table (row writes). */
export const rowPuts = (ddb: ReturnType<typeof mockedDeps>['ddb'], statusTable: string) => ddb.commandCalls(PutItemCommand).filter((c) => c.args[0].input.TableName !== statusTable);

/** Kinesis-style records with consecutive sequence numbers. */
export function records(values: readonly (string | Uint8Array | null)[], opts: { shard?: string; firstSequence?: number; keys?: readonly (Uint8Array | null)[] } = {}): RawRecord[] {
  return values.map((v, i) => ({
    value: v === null ? null : typeof v === 'string' ? Buffer.from(v, 'utf8') : v,
    key: opts.keys?.[i] ?? null,
    topic: null,
    headers: {},
    transport: {
      kind: 'kinesis' as const,
      stream: 'cdc',
      shard: opts.shard ?? 'shardId-000000000000',
      sequence: String((opts.firstSequence ?? 1000) + i),
      partitionKey: null,
      arrivalTime: NOW - 1000,
    },
  }));
}
