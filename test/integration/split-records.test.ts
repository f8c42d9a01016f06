/**
 * Split Aurora DSQL records on the integration target (DynamoDB Local and s3rver by default), through
 * the ingest's own wiring: the parts' items in the status table (partition `<pipeline>#dsql-parts`,
 * one conditional write per part), their texts in S3 under `<raw prefix>dsql-parts/`, the row in the
 * target table. The record format is the Aurora DSQL user guide's ("Understanding CDC records",
 * "Handling oversized records",
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html#cdc-oversized-records).
 *
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/split-records.test.ts`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { localDeps } from '../../bin/cli/context.js';
import { kinesisEvent } from '../../bin/cli/kinesis-shape.js';
import { getRow } from '../../bin/cli/state.js';
import { recordsFromKinesis } from '../../functions/adapters/records.js';
import { crc32c } from '../../functions/core/formats/crc32c.js';
import { stringifyJson } from '../../functions/core/json.js';
import { type BatchResult, type IngestDeps, processBatch } from '../../functions/ingest/process-batch.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'split',
  format: 'aurora-dsql',
  tables: [{ source: 'public.order_items', target: 'split-order-items', key: ['order_id', 'item_id'], keyTypes: { order_id: 'number', item_id: 'number' } }],
  raw: { bucket: 'split-raw' },
  auroraDsql: { fragmentWaitSeconds: 60 },
});

const quietLog: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
/** The docs' INSERT example (its source.ts_ns, 1705318200000000000, is exact as a double). */
const insert = (): Record<string, unknown> => (JSON.parse(readFileSync(new URL('../fixtures/aurora-dsql/insert.json', import.meta.url), 'utf8')) as { message_value: Record<string, unknown> }).message_value;

/** The INSERT with a wide row, split: its main record and `count` fragments of its after image. */
function splitInsert(itemId: number, count: number, chunkId: string) {
  const after = { order_id: 1001, item_id: itemId, quantity: 5, price: '29.99', note: 'x'.repeat(5_000) };
  const afterText = stringifyJson(after);
  const size = Math.ceil(afterText.length / count);
  const fragments = Array.from({ length: count }, (_, index) => JSON.stringify({ type: 'fragment', chunk_id: chunkId, index, data: afterText.slice(index * size, (index + 1) * size) }));
  const main = JSON.stringify({ ...insert(), type: 'chunked', after: null, chunked: { after: { chunk_id: chunkId, total_fragments: count, crc32c: String(crc32c(new TextEncoder().encode(afterText))) } } });
  return { main, fragments, after };
}

describe(`split Aurora DSQL records on the integration target (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  let config: TidemarkConfig;
  let deps: IngestDeps;
  let now = Date.UTC(2026, 11, 2, 1, 0);
  let sequence = 49_700_000_000_000_000_000_000_000_000_000_000_000_000_000_000n;

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    deps = { ...localDeps(config, target.clients), log: quietLog, now: () => now };
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  async function batch(shard: string, texts: readonly string[]): Promise<BatchResult> {
    const event = kinesisEvent(
      'split',
      shard,
      texts.map((t) => {
        sequence += 1n;
        return { data: Buffer.from(t), partitionKey: `p-${sequence}`, sequenceNumber: String(sequence), arrival: new Date(now) };
      }),
    );
    const result = await processBatch(recordsFromKinesis(event), deps);
    assert.deepEqual(result.batchItemFailures, [], JSON.stringify(result.summary));
    return result;
  }

  const table = () => config.tables[0] as (typeof config.tables)[number];
  const part = (chunkId: string) =>
    target.clients.dynamodb.send(new GetItemCommand({ TableName: config.statusTable, Key: { pipeline: { S: `${config.name}#dsql-parts` }, table: { S: `chunk#${chunkId}` } }, ConsistentRead: true }));

  it('a record split in two, halves in different batches on different shards, is applied once and whole', async () => {
    const { main, fragments, after } = splitInsert(42, 2, 'it-chunk-a');
    const first = await batch('shardId-000000000000', [main, fragments[1] as string]);
    assert.equal(first.summary.applied, 0);
    assert.equal(await getRow(target.clients.dynamodb, table(), { order_id: 1001, item_id: 42 }), null);
    const held = (await part('it-chunk-a')).Item;
    assert.ok(held?.main?.M?.k?.S?.startsWith(`${config.raw.prefix}dsql-parts/`), 'the main record is in S3, the item holds its key');
    assert.ok(held?.p1 && !held.p0, 'fragment 1 held, fragment 0 not yet');

    const second = await batch('shardId-000000000003', [fragments[0] as string]);
    assert.equal(second.summary.applied, 1);
    const row = await getRow(target.clients.dynamodb, table(), { order_id: 1001, item_id: 42 });
    assert.equal(row?.note, after.note);
    assert.equal(row?.quantity, 5);
    assert.ok((await part('it-chunk-a')).Item?.doneMs, 'the set is done');

    const again = await batch('shardId-000000000001', [fragments[0] as string, fragments[1] as string]);
    assert.equal(again.summary.applied, 0);
    assert.equal(again.summary.duplicates, 1);
  });

  it('a set whose other half never arrives is quarantined as fragment-incomplete after the wait', async () => {
    const { main } = splitInsert(43, 2, 'it-chunk-lost');
    await batch('shardId-000000000002', [main]);
    now += 120_000;
    const { main: other, fragments } = splitInsert(44, 1, 'it-chunk-other');
    const late = await batch('shardId-000000000002', [other, ...fragments]);
    assert.equal(late.summary.applied, 1, 'the complete one is applied');
    assert.equal(late.summary.quarantined, 1, 'the incomplete one is quarantined');
    const listed = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: config.raw.quarantinePrefix }));
    const lines = [];
    for (const o of listed.Contents ?? []) {
      const body = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: o.Key }));
      const text = gunzipSync(Buffer.from(await (body.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toString('utf8');
      lines.push(...text.trimEnd().split('\n').map((l) => JSON.parse(l) as { reason: string; detail: string }));
    }
    assert.deepEqual(
      lines.map((l) => l.reason),
      ['fragment-incomplete'],
    );
    assert.match(lines[0]?.detail ?? '', /chunk it-chunk-lost misses fragments 0, 1/);
    assert.ok((await part('it-chunk-lost')).Item?.doneMs, 'done: it is not quarantined again');
    now += 120_000;
    const later = await batch('shardId-000000000002', [JSON.stringify(insert())]);
    assert.equal(later.summary.quarantined, 0);
  });
});
