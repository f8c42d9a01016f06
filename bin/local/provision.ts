/**
 * Creates (idempotently) and deletes the AWS resources a pipeline needs outside CDK: the Kinesis
 * stream, the target tables (key schema from `keyLayout`, TTL on `__expiresAt`), the status table
 * (TTL on `__expiresAt` for its per-hour rows) and the raw bucket. Used by `tidemark local` and by the integration tests on any target.
 */
import { STATUS_KEY } from '../../functions/telemetry/status-layout.js';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type KeySchemaElement,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateStreamCommand, DeleteStreamCommand, DescribeStreamSummaryCommand } from '@aws-sdk/client-kinesis';
import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  type CreateBucketCommandInput,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';
import type { Clients } from './clients.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { type KeyAttribute, keyLayout } from '../../functions/core/keys.js';

import { EXPIRES_AT_ATTRIBUTE } from '../../functions/telemetry/contract.js';

/** The TTL attribute of every table (tombstones, per-hour status rows; epoch seconds). */
export { EXPIRES_AT_ATTRIBUTE };

/** One resource and what `provision` / `deprovision` did with it. */
export interface ResourceResult {
  kind: 'stream' | 'table' | 'bucket';
  name: string;
  action: 'created' | 'present' | 'updated' | 'deleted' | 'absent';
  /** e.g. `TTL enabled on __expiresAt` for an existing table that lacked it. */
  detail?: string;
}

/** What `provision` did, per resource. */
export interface ProvisionReport {
  streamName: string;
  resources: ResourceResult[];
  /** True when anything was created or updated. */
  changed: boolean;
}

/** Options of `provision`. */
export interface ProvisionOptions {
  /** Overrides the stream name derived from the config. */
  streamName?: string;
  /** Overrides the shard count (default: the config's, at least 1). */
  shardCount?: number;
  log?: (line: string) => void;
  /** How long to wait for the stream and tables to become ACTIVE. @default 120000 */
  timeoutMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const errorName = (err: unknown): string => (err instanceof Error ? err.name : '');

/** The Kinesis stream of a config: `source.streamName` for a Kinesis source, else `<name>-cdc`. */
export function streamNameOf(config: TidemarkConfig): string {
  return config.source?.type === 'kinesis' ? config.source.streamName : `${config.name}-cdc`;
}

async function waitFor(what: string, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; !(await ready()); delay = Math.min(delay * 2, 2000)) {
    if (Date.now() > deadline) throw new Error(`${what} did not become ACTIVE within ${timeoutMs / 1000} s`);
    await sleep(delay);
  }
}

async function ensureStream(clients: Clients, name: string, shardCount: number, timeoutMs: number): Promise<ResourceResult> {
  let action: ResourceResult['action'] = 'created';
  try {
    await clients.kinesis.send(new CreateStreamCommand({ StreamName: name, ShardCount: shardCount }));
  } catch (err) {
    if (errorName(err) !== 'ResourceInUseException') throw err;
    action = 'present';
  }
  await waitFor(`Kinesis stream ${name}`, timeoutMs, async () => {
    const { StreamDescriptionSummary: s } = await clients.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: name }));
    return s?.StreamStatus === 'ACTIVE';
  });
  return { kind: 'stream', name, action, ...(action === 'created' ? { detail: `${shardCount} shard(s)` } : {}) };
}

async function describeTable(clients: Clients, name: string) {
  try {
    return (await clients.dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table ?? null;
  } catch (err) {
    if (errorName(err) === 'ResourceNotFoundException') return null;
    throw err;
  }
}

function keySchemaText(schema: readonly KeySchemaElement[] | undefined): string {
  return (schema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
}

async function ensureTable(
  clients: Clients,
  name: string,
  partitionKey: KeyAttribute,
  sortKey: KeyAttribute | null,
  ttl: boolean,
  timeoutMs: number,
): Promise<ResourceResult> {
  const keys = [partitionKey, ...(sortKey !== null ? [sortKey] : [])];
  const schema: KeySchemaElement[] = keys.map((k, i) => ({ AttributeName: k.name, KeyType: i === 0 ? 'HASH' : 'RANGE' }));
  let action: ResourceResult['action'] = 'present';
  const existing = await describeTable(clients, name);
  if (existing === null) {
    try {
      await clients.dynamodb.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: schema,
          AttributeDefinitions: keys.map((k) => ({ AttributeName: k.name, AttributeType: k.type })),
        }),
      );
      action = 'created';
    } catch (err) {
      if (errorName(err) !== 'ResourceInUseException') throw err;
    }
  } else if (keySchemaText(existing.KeySchema) !== keySchemaText(schema)) {
    throw new Error(`table ${name} exists with key schema ${keySchemaText(existing.KeySchema)}, expected ${keySchemaText(schema)}`);
  }
  await waitFor(`DynamoDB table ${name}`, timeoutMs, async () => (await describeTable(clients, name))?.TableStatus === 'ACTIVE');
  let detail: string | undefined;
  if (ttl) {
    const { TimeToLiveDescription: d } = await clients.dynamodb.send(new DescribeTimeToLiveCommand({ TableName: name }));
    const enabled = (d?.TimeToLiveStatus === 'ENABLED' || d?.TimeToLiveStatus === 'ENABLING') && d.AttributeName === EXPIRES_AT_ATTRIBUTE;
    if (!enabled) {
      await clients.dynamodb.send(
        new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: EXPIRES_AT_ATTRIBUTE, Enabled: true } }),
      );
      detail = `TTL enabled on ${EXPIRES_AT_ATTRIBUTE}`;
      if (action === 'present') action = 'updated';
    }
  }
  return { kind: 'table', name, action, ...(detail !== undefined ? { detail } : {}) };
}

async function ensureBucket(clients: Clients, name: string): Promise<ResourceResult> {
  try {
    await clients.s3.send(new HeadBucketCommand({ Bucket: name }));
    return { kind: 'bucket', name, action: 'present' };
  } catch (err) {
    if (errorName(err) !== 'NotFound' && errorName(err) !== 'NoSuchBucket') throw err;
  }
  const region = await clients.s3.config.region();
  const input: CreateBucketCommandInput = { Bucket: name };
  if (region !== 'us-east-1') input.CreateBucketConfiguration = { LocationConstraint: region as BucketLocationConstraint };
  try {
    await clients.s3.send(new CreateBucketCommand(input));
  } catch (err) {
    if (errorName(err) === 'BucketAlreadyOwnedByYou') return { kind: 'bucket', name, action: 'present' };
    throw err;
  }
  return { kind: 'bucket', name, action: 'created' };
}

/**
 * Idempotently creates the stream (waiting until ACTIVE), every target table (PAY_PER_REQUEST,
 * key schema from `keyLayout`, TTL on `__expiresAt`), the status table (`pipeline` S + `table` S, same TTL)
 * and the raw bucket. A second run changes nothing and reports every resource as `present`.
 */
export async function provision(config: TidemarkConfig, clients: Clients, opts: ProvisionOptions = {}): Promise<ProvisionReport> {
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const streamName = opts.streamName ?? streamNameOf(config);
  const configuredShards = config.source?.type === 'kinesis' ? config.source.shardCount : 1;
  const shardCount = opts.shardCount ?? Math.max(1, configuredShards);
  const note = (r: ResourceResult): ResourceResult => {
    log(`${r.kind} ${r.name}: ${r.action === 'present' ? 'already present' : r.action}${r.detail !== undefined ? ` (${r.detail})` : ''}`);
    return r;
  };

  const results = await Promise.all([
    ensureStream(clients, streamName, shardCount, timeoutMs).then(note),
    ...config.tables.map((table) => {
      const layout = keyLayout(table);
      return ensureTable(clients, table.target, layout.partitionKey, layout.sortKey, true, timeoutMs).then(note);
    }),
    // TTL on the status table too: its per-hour counter rows expire (as in the CDK stack).
    ensureTable(clients, config.statusTable, { name: STATUS_KEY.partition, type: 'S' }, { name: STATUS_KEY.row, type: 'S' }, true, timeoutMs).then(note),
    ensureBucket(clients, config.raw.bucket).then(note),
  ]);
  return { streamName, resources: results, changed: results.some((r) => r.action !== 'present') };
}

async function emptyBucket(clients: Clients, bucket: string): Promise<void> {
  for (;;) {
    const page = await clients.s3.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1000 }));
    const keys = (page.Contents ?? []).flatMap((o) => (o.Key !== undefined ? [{ Key: o.Key }] : []));
    if (keys.length === 0) return;
    await clients.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
  }
}

async function ignoreMissing(kind: ResourceResult['kind'], name: string, names: string[], remove: () => Promise<unknown>): Promise<ResourceResult> {
  try {
    await remove();
    return { kind, name, action: 'deleted' };
  } catch (err) {
    if (names.includes(errorName(err))) return { kind, name, action: 'absent' };
    throw err;
  }
}

/**
 * Deletes what `provision` creates: the stream, target and status tables, and the raw bucket with
 * every object in it. Missing resources are reported `absent`. Used by tests for cleanup.
 */
export async function deprovision(config: TidemarkConfig, clients: Clients, opts: Pick<ProvisionOptions, 'streamName'> = {}): Promise<ResourceResult[]> {
  const streamName = opts.streamName ?? streamNameOf(config);
  const tables = [...config.tables.map((t) => t.target), config.statusTable];
  return Promise.all([
    ignoreMissing('stream', streamName, ['ResourceNotFoundException'], () =>
      clients.kinesis.send(new DeleteStreamCommand({ StreamName: streamName, EnforceConsumerDeletion: true })),
    ),
    ...tables.map((name) =>
      ignoreMissing('table', name, ['ResourceNotFoundException'], () => clients.dynamodb.send(new DeleteTableCommand({ TableName: name }))),
    ),
    ignoreMissing('bucket', config.raw.bucket, ['NoSuchBucket', 'NotFound'], async () => {
      await emptyBucket(clients, config.raw.bucket);
      await clients.s3.send(new DeleteBucketCommand({ Bucket: config.raw.bucket }));
    }),
  ]);
}
