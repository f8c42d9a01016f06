/**
 * A deterministic CDC workload for the benchmark: Debezium 3.x PostgreSQL JSON messages (bare
 * payload, with the `ts_us` / `ts_ns` fields every Debezium message carries since 2.6, so each one
 * holds integers beyond 2^53) on one Kinesis shard, over a Zipf-skewed key set, with at-least-once redelivery of earlier
 * windows of the stream. Everything derives from one seed (no Math.random), so two runs with the
 * same parameters produce byte-identical records.
 */
import type { RawRecord } from '../../functions/core/normalize.js';

/** Workload parameters. */
export interface WorkloadOptions {
  /** Original change events (redelivered copies come on top). */
  readonly events: number;
  /** Distinct keys (`order_id` 1..keys, permuted). */
  readonly keys: number;
  /** Records per batch. */
  readonly batch: number;
  /** Zipf exponent of the key distribution. */
  readonly zipf: number;
  /** Share of redelivered copies, relative to `events`. */
  readonly redelivery: number;
  readonly seed: number;
  /** Length range of the free-text `note` column (default 150..190: rows of about 300 bytes). */
  readonly noteLength?: readonly [number, number];
}

/** The generated stream and what went into it. */
export interface Workload {
  readonly options: WorkloadOptions;
  /** Every delivered record, in arrival order. */
  readonly records: readonly RawRecord[];
  /** `records` split into batches of `options.batch`. */
  readonly batches: readonly (readonly RawRecord[])[];
  readonly ops: { c: number; u: number; d: number };
  readonly redelivered: number;
  readonly distinctKeys: number;
  /** Average serialized row size (the `after` image), bytes. */
  readonly avgRowBytes: number;
}

import { prng } from '../../bin/cli/demo-workload.js';

export { prng };

/** A sampler of ranks 0..n-1 with P(rank k) ∝ 1 / (k+1)^s, by binary search over the CDF. */
export function zipfSampler(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += 1 / (k + 1) ** s;
    cdf[k] = sum;
  }
  return () => {
    const u = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const STATUSES = ['pending', 'paid', 'packed', 'shipped', 'delivered', 'returned'] as const;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF'] as const;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789 ';

interface Row {
  order_id: number;
  customer_id: number;
  status: string;
  amount_minor: number;
  currency: string;
  note: string;
  updated_at: number;
}

const BASE_TS = 1_735_732_800_000;
/** JSON.stringify cannot print a bigint: it is written as a marked string, then unquoted. */
const bigNumber = (n: bigint): string => `@big:${n}`;
const BIG_NUMBER = /"@big:(\d+)"/g;
/** A 56-digit Kinesis-like sequence number to count up from. */
const BASE_SEQUENCE = BigInt(`4965831${'0'.repeat(49)}`);

/** Builds the workload. Pure apart from CPU time. */
export function generateWorkload(options: WorkloadOptions): Workload {
  const random = prng(options.seed);
  const [noteMin, noteMax] = options.noteLength ?? [150, 190];
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const text = (n: number) => Array.from({ length: n }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]).join('');

  // Hot ranks map to scattered order ids, not to 1, 2, 3…
  const ids = Array.from({ length: options.keys }, (_, i) => i + 1);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  const rank = zipfSampler(options.keys, options.zipf, random);

  const rows = new Map<number, Row>();
  const touched = new Set<number>();
  const ops = { c: 0, u: 0, d: 0 };
  const originals: string[] = [];
  const partitionKeys: string[] = [];
  let rowBytes = 0;
  let lsn = 33_228_056n;
  let lastCommitLsn = 33_227_800n;
  let txId = 780;
  let txLeft = 0;
  let ts = BASE_TS;

  for (let i = 0; i < options.events; i++) {
    if (txLeft === 0) {
      txId++;
      txLeft = int(1, 4);
    }
    txLeft--;
    lsn += BigInt(int(40, 400));
    ts += int(0, 4);
    const orderId = ids[rank()]!;
    touched.add(orderId);
    const before = rows.get(orderId) ?? null;
    let op: 'c' | 'u' | 'd';
    let after: Row | null;
    if (before === null) {
      op = 'c';
      after = { order_id: orderId, customer_id: int(1, 90_000), status: 'pending', amount_minor: int(100, 500_000), currency: pick(CURRENCIES), note: text(int(noteMin, noteMax)), updated_at: ts };
      rows.set(orderId, after);
    } else if (random() < 0.1 / 0.85) {
      op = 'd';
      after = null;
      rows.delete(orderId);
    } else {
      op = 'u';
      after = { ...before, status: pick(STATUSES), amount_minor: before.amount_minor + int(-500, 500), updated_at: ts };
      if (random() < 0.3) after.note = text(int(noteMin, noteMax));
      rows.set(orderId, after);
    }
    ops[op]++;
    const source = {
      version: '3.4.0.Final',
      connector: 'postgresql',
      name: 'bench',
      ts_ms: ts,
      snapshot: 'false',
      db: 'shop',
      sequence: JSON.stringify([String(lastCommitLsn), String(lsn)]),
      ts_us: ts * 1000,
      ts_ns: bigNumber(BigInt(ts) * 1_000_000n),
      schema: 'public',
      table: 'orders',
      txId,
      lsn: Number(lsn),
    };
    if (after) rowBytes += JSON.stringify(after).length;
    const processed = ts + int(5, 60);
    const message = { before, after, source, op, ts_ms: processed, ts_us: processed * 1000, ts_ns: bigNumber(BigInt(processed) * 1_000_000n), transaction: null };
    originals.push(JSON.stringify(message).replace(BIG_NUMBER, '$1'));
    partitionKeys.push(String(orderId));
    if (txLeft === 0) lastCommitLsn = lsn + 8n; // the commit record follows the last change
  }

  // At-least-once redelivery: copies of earlier contiguous windows, re-sent a little later.
  const copiesAfter = new Map<number, number[]>();
  const wanted = Math.round(options.events * options.redelivery);
  let copied = 0;
  while (copied < wanted && options.events > 1) {
    const length = Math.min(int(20, 200), wanted - copied);
    const start = int(0, Math.max(0, options.events - length - 1));
    const at = Math.min(options.events - 1, start + length - 1 + int(0, 3 * options.batch));
    const list = copiesAfter.get(at) ?? [];
    for (let k = start; k < start + length && k < options.events; k++, copied++) list.push(k);
    copiesAfter.set(at, list);
  }

  const order: number[] = [];
  for (let i = 0; i < options.events; i++) {
    order.push(i);
    for (const k of copiesAfter.get(i) ?? []) order.push(k);
  }
  const utf8 = new TextEncoder();
  const records: RawRecord[] = order.map((k, n) => ({
    value: utf8.encode(originals[k]!),
    key: utf8.encode(partitionKeys[k]!),
    topic: null,
    headers: {},
    transport: {
      kind: 'kinesis',
      stream: 'bench',
      shard: 'shardId-000000000000',
      sequence: String(BASE_SEQUENCE + BigInt(n) * 1_000_003n),
      partitionKey: partitionKeys[k]!,
      arrivalTime: BASE_TS + 1_000 + n,
    },
  }));
  const batches: RawRecord[][] = [];
  for (let i = 0; i < records.length; i += options.batch) batches.push(records.slice(i, i + options.batch));
  return { options, records, batches, ops, redelivered: copied, distinctKeys: touched.size, avgRowBytes: Math.round(rowBytes / Math.max(1, ops.c + ops.u)) };
}
