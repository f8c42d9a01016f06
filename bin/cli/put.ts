/**
 * `tidemark put`: writes a JSON Lines file of messages onto a Kinesis stream with PutRecords, so
 * that `tidemark run` (or the deployed ingest) has something to read. Each message's partition key
 * is its table and row key as ingest decodes them, so one key's changes stay on one shard, in file
 * order, as a connector would send them; a line that does not decode gets a hash of its bytes (it
 * is quarantined by ingest, byte for byte). Calls hold at most 500 records and 5 MiB; records the
 * stream refused (throttling) are sent again with backoff.
 *
 *   const r = await putFile(config, kinesis, 'shop-cdc', 'changes.jsonl');
 *   // { records: 3000, keys: 800, retried: 0, undecodable: 2, calls: 6 }
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { Normalizer } from '../../functions/core/normalize.js';
import { CliError } from './errors.js';
import { readMessages } from './input.js';

export interface PutResult {
  readonly records: number;
  readonly keys: number;
  readonly retried: number;
  readonly undecodable: number;
  readonly calls: number;
}

const MAX_RECORDS = 500;
const MAX_CALL_BYTES = 5 * 1024 * 1024;
const MAX_ATTEMPTS = 8;
const hash = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

/** The partition key of one message: `<table>|<key>` as ingest reads it, else a hash of the bytes. */
function partitionKeyOf(normalizer: Normalizer, value: Uint8Array, line: number): string | null {
  const result = normalizer.normalize({ value, key: null, topic: null, headers: {}, transport: { kind: 'file', stream: 'put', shard: '0', sequence: String(line), partitionKey: null, arrivalTime: 0 } });
  if (!result.ok) return null;
  const change = result.events.find((e) => e.kind === 'change');
  const text = change ? `${change.table}|${normalizer.keyIdOf(change)}` : (result.events[0]?.table ?? null);
  if (text === null) return null;
  // Kinesis takes at most 256 characters.
  return text.length <= 256 ? text : hash(text);
}

/** Splits entries into PutRecords calls within the record and byte limits. */
function calls(entries: readonly PutRecordsRequestEntry[]): PutRecordsRequestEntry[][] {
  const out: PutRecordsRequestEntry[][] = [];
  let current: PutRecordsRequestEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    const size = (e.Data?.length ?? 0) + (e.PartitionKey?.length ?? 0);
    if (current.length > 0 && (current.length >= MAX_RECORDS || bytes + size > MAX_CALL_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Sends one call's records, again and again for those refused, until all are in. Returns the retries. */
async function send(kinesis: KinesisClient, stream: string, records: PutRecordsRequestEntry[]): Promise<number> {
  let pending = records;
  let retried = 0;
  for (let attempt = 1; pending.length > 0; attempt++) {
    const res = await kinesis.send(new PutRecordsCommand({ StreamName: stream, Records: pending }));
    const failed = (res.Records ?? []).flatMap((r, i) => (r.ErrorCode ? [{ entry: pending[i], code: r.ErrorCode }] : []));
    if (failed.length === 0) return retried;
    if (attempt >= MAX_ATTEMPTS) {
      throw new CliError(`Kinesis refused ${failed.length} records of stream ${stream} ${attempt} times (${failed[0]?.code})`, 'run it again in a minute: records already written are applied once (the position guard)');
    }
    retried += failed.length;
    pending = failed.flatMap((f) => (f.entry ? [f.entry] : []));
    await sleep(Math.min(2000, 100 * 2 ** attempt));
  }
  return retried;
}

export async function putFile(config: TidemarkConfig, kinesis: KinesisClient, stream: string, path: string, onProgress?: (done: number, total: number) => void): Promise<PutResult> {
  if (config.source.type !== 'kinesis') {
    throw new CliError(`put writes to a Kinesis stream, and this pipeline reads MSK (${config.source.topics.join(', ')})`, 'produce to the topic with a Kafka client, or try the pipeline with tidemark apply -i <file>');
  }
  const normalizer = new Normalizer(config);
  const { messages } = readMessages(path, 'value');
  const keys = new Set<string>();
  let undecodable = 0;
  const entries = messages.map((m): PutRecordsRequestEntry => {
    const value = m.value ?? new Uint8Array();
    const key = partitionKeyOf(normalizer, value, m.line);
    if (key === null) undecodable++;
    else keys.add(key);
    return { Data: value, PartitionKey: key ?? hash(value) };
  });
  let done = 0;
  let retried = 0;
  const batches = calls(entries);
  for (const batch of batches) {
    retried += await send(kinesis, stream, batch);
    done += batch.length;
    onProgress?.(done, entries.length);
  }
  return { records: entries.length, keys: keys.size, retried, undecodable, calls: batches.length };
}
