/**
 * Raw objects in the batch layout of docs/history.md §1, built by hand for the SQL and engine tests
 * (until the ingest writes them): one object per batch, every table's lines, each line with the
 * top-level fields SQL reads.
 *
 *   const line = v2Line({ table: 'public.orders', key: { id: 1 }, op: 'c', position: 'a11', arrivalTs: t });
 *   const { key, body } = v2Object('raw/', { shard: 'shardId-0', firstSequence: '1', lastSequence: '2', firstArrival: t }, [line]);
 */
import { gzipSync } from 'node:zlib';
import { encodeSegment, hourPath } from '../../functions/adapters/raw-layout.js';
import { contentDigest } from '../../functions/adapters/raw-store.js';

/** A v2 raw line: every field present (null where absent), as JSON. */
export interface V2Line {
  readonly v: 2;
  readonly kind: 'change' | 'control';
  readonly format: string;
  readonly op: string | null;
  readonly control: string | null;
  readonly table: string | null;
  readonly keyId: string | null;
  readonly key: string | null;
  readonly position: string | null;
  readonly orderingStrength: string | null;
  readonly hash: string | null;
  readonly commitTs: number | null;
  readonly arrivalTs: number;
  readonly txid: string | null;
  readonly snapshot: boolean;
  readonly beforeNull: boolean;
  readonly partial: boolean;
  readonly transport: { kind: string; stream: string; shard: string; sequence: string; partitionKey: string | null; arrivalTime: number };
  readonly topic: string | null;
  readonly headers: Record<string, string>;
  readonly messageKey: string | null;
  readonly messageKeyBase64?: string;
  readonly message: string | null;
  readonly messageBase64?: string;
  readonly messageRef?: true;
}

export interface LineSpec {
  readonly table?: string | null;
  /** The key object; its key id is `["<value>", …]` in property order (keyId of a one-to-one table). */
  readonly key?: Record<string, string | number> | null;
  readonly op?: string | null;
  readonly position?: string | null;
  readonly hash?: string | null;
  readonly arrivalTs?: number;
  readonly commitTs?: number | null;
  readonly kind?: 'change' | 'control';
  readonly control?: string | null;
  readonly snapshot?: boolean;
  readonly beforeNull?: boolean;
  readonly partial?: boolean;
  readonly shard?: string;
  readonly sequence?: string;
  readonly message?: string | null;
  readonly messageBase64?: string;
  readonly messageRef?: boolean;
  readonly headers?: Record<string, string>;
}

/** The canonical key id of a key object, columns in property order (functions/core/keys.ts keyId). */
export const keyIdOf = (key: Record<string, string | number>): string => JSON.stringify(Object.values(key).map((v) => String(v)));

let nextSequence = 1000;

export function v2Line(s: LineSpec): V2Line {
  const arrival = s.arrivalTs ?? Date.UTC(2026, 10, 30, 6, 10);
  const kind = s.kind ?? 'change';
  const key = s.key === undefined ? (kind === 'change' ? { id: 1 } : null) : s.key;
  const sequence = s.sequence ?? String(nextSequence++);
  const message = s.messageRef ? null : s.message === undefined ? `{"seq":${sequence}}` : s.message;
  return {
    v: 2,
    kind,
    format: 'debezium-postgresql',
    op: kind === 'change' ? (s.op ?? 'c') : null,
    control: kind === 'control' ? (s.control ?? 'heartbeat') : null,
    table: s.table === undefined ? 'public.orders' : s.table,
    keyId: key ? keyIdOf(key) : null,
    key: key ? JSON.stringify(key) : null,
    position: s.position === undefined ? (kind === 'change' ? 'a11' : null) : s.position,
    orderingStrength: 'source',
    hash: s.hash === undefined ? (kind === 'change' ? `h-${sequence}` : null) : s.hash,
    commitTs: s.commitTs === undefined ? arrival - 5 : s.commitTs,
    arrivalTs: arrival,
    txid: null,
    snapshot: s.snapshot ?? s.op === 'r',
    beforeNull: s.beforeNull ?? false,
    partial: s.partial ?? false,
    transport: { kind: 'kinesis', stream: 'orders-stream', shard: s.shard ?? 'shardId-000000000000', sequence, partitionKey: 'pk', arrivalTime: arrival },
    topic: null,
    headers: s.headers ?? {},
    messageKey: 'pk',
    message,
    ...(s.messageBase64 !== undefined ? { messageBase64: s.messageBase64 } : {}),
    ...(s.messageRef ? { messageRef: true as const } : {}),
  };
}

export interface Batch {
  readonly shard: string;
  readonly firstSequence: string;
  readonly lastSequence: string;
  /** Epoch ms of the batch's first arrival: the object's hour. */
  readonly firstArrival: number;
}

/** One raw object of a batch: its key (`<raw>dt=…/hr=…/<shard>-<first>-<last>-<digest>.jsonl.gz`) and gzip body. */
export function v2Object(rawPrefix: string, batch: Batch, lines: readonly V2Line[]): { key: string; body: Buffer } {
  const ndjson = Buffer.from(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  const name = `${encodeSegment(batch.shard)}-${encodeSegment(batch.firstSequence)}-${encodeSegment(batch.lastSequence)}-${contentDigest(ndjson)}.jsonl.gz`;
  return { key: `${rawPrefix}${hourPath(batch.firstArrival)}/${name}`, body: gzipSync(ndjson) };
}

/** A batch object of the given lines in the hour of the first line's arrival. */
export function batchOf(rawPrefix: string, lines: readonly V2Line[], shard = 'shardId-000000000000'): { key: string; body: Buffer } {
  const first = lines[0];
  if (!first) throw new Error('a batch needs lines');
  const sequences = lines.map((l) => l.transport.sequence);
  return v2Object(rawPrefix, { shard, firstSequence: sequences[0] ?? '0', lastSequence: sequences[sequences.length - 1] ?? '0', firstArrival: Math.min(...lines.map((l) => l.arrivalTs)) }, lines);
}
