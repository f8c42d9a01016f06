/**
 * The scale bench's stream: Debezium PostgreSQL messages (test/helpers/debezium.ts PgHistory) over
 * `tables` tables (`public.t0001` …), streamed one batch at a time so that a million events never
 * sit in memory together. Everything derives from one seed.
 *
 * Shape, per key: an initial snapshot read (`r`, every key once, in the first hours), then changes
 * to random keys (`u`, a `d` with probability `deleteShare`, a `c` when the key was deleted). Rows
 * are about `rowBytes` of JSON, their `note` drawn from a small vocabulary, so they compress like
 * text rather than like noise. One record in `badEvery` is not JSON at all: quarantined.
 *
 *   for (const batch of scaleBatches({ tables: 10, keys: 1000, events: 10_000, batch: 500, … })) …
 *   // batch.records: RawRecord[] on one shard, arrival times inside batch.hour
 */
import type { RawRecord } from '../../../functions/core/normalize.js';
import { parseConfig, type TidemarkConfig } from '../../../lib/config/config.js';
import { PgHistory } from '../../helpers/debezium.js';
import { prng } from '../workload.js';

export interface ScaleWorkloadOptions {
  readonly tables: number;
  /** Distinct keys in all (key k is id `floor(k / tables) + 1` of table `k % tables`). */
  readonly keys: number;
  /** Change events in all, the snapshot reads included (at least `keys`). */
  readonly events: number;
  /** Records per batch (one raw object each). */
  readonly batch: number;
  /** Shards the batches rotate over. @default 4 */
  readonly shards?: number;
  /** Epoch ms of the first hour (an hour start). */
  readonly start: number;
  /** Hours that receive events per day (from hour 0 of each day); the events spread evenly over days × hoursPerDay hours. @default 24 */
  readonly hoursPerDay?: number;
  /** Days the events spread over. @default 1 */
  readonly days?: number;
  /** Approximate size of a row's JSON, bytes. @default 1000 (the reference pipeline's rows) */
  readonly rowBytes?: number;
  /** Share of changes that delete their key. @default 0.1 */
  readonly deleteShare?: number;
  /** One record in this many is malformed (0: none). @default 10000 */
  readonly badEvery?: number;
  readonly seed?: number;
}

/** One batch: its records (one shard), the hour it lands in and how many events it carries. */
export interface ScaleBatch {
  readonly index: number;
  readonly hour: number;
  readonly records: RawRecord[];
}

const WORDS = ['order', 'shipped', 'delayed', 'customer', 'asked', 'for', 'gift', 'wrap', 'express', 'delivery', 'address', 'changed', 'door', 'code', 'leave', 'at', 'reception', 'fragile', 'two', 'boxes', 'invoice', 'to', 'company', 'refund', 'partial', 'item', 'missing', 'call', 'before', 'arrival'];
const STATUSES = ['pending', 'paid', 'packed', 'shipped', 'delivered', 'returned'];
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF'];
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** `public.t0001` … : the source table of table index `t`. */
export const tableName = (t: number): string => `t${String(t + 1).padStart(4, '0')}`;

/** A pipeline config with the workload's tables (key `id`, a number). */
export function scaleConfig(tables: number, bucket = 'scale-raw'): TidemarkConfig {
  return parseConfig({
    name: 'scale',
    format: 'debezium',
    tables: Array.from({ length: tables }, (_, t) => ({ source: `public.${tableName(t)}`, target: `scale-${tableName(t)}`, key: ['id'], keyTypes: { id: 'number' } })),
    raw: { bucket },
  });
}

/** The hour start of events-hour `i` (0-based) of the layout. */
function hourAt(o: ScaleWorkloadOptions, i: number): number {
  const perDay = o.hoursPerDay ?? 24;
  return o.start + Math.floor(i / perDay) * DAY_MS + (i % perDay) * HOUR_MS;
}

/** Every hour that receives events, in order. */
export function eventHours(o: ScaleWorkloadOptions): number[] {
  const n = (o.days ?? 1) * (o.hoursPerDay ?? 24);
  return Array.from({ length: n }, (_, i) => hourAt(o, i));
}

/** The batches of the workload, generated lazily. */
export function* scaleBatches(o: ScaleWorkloadOptions): Generator<ScaleBatch> {
  if (o.events < o.keys) throw new Error(`events (${o.events}) must cover one snapshot read per key (${o.keys})`);
  const random = prng(o.seed ?? 20_261_130);
  const rowBytes = o.rowBytes ?? 1000;
  const deleteShare = o.deleteShare ?? 0.1;
  const badEvery = o.badEvery ?? 10_000;
  const shards = o.shards ?? 4;
  const hours = eventHours(o);
  const perHour = Math.ceil(o.events / hours.length);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const note = (bytes: number) => {
    let s = '';
    while (s.length < bytes) s += `${pick(WORDS)} `;
    return s.trimEnd();
  };
  // The fixed columns are about 120 bytes of JSON; the note makes up the rest.
  const row = (id: number) => ({ id, customer_id: int(1, 5_000_000), status: pick(STATUSES), amount_minor: int(100, 500_000), currency: pick(CURRENCIES), note: note(Math.max(10, rowBytes - 120)), updated_at: 1_764_460_800_000 + int(0, 1e9) });
  const live = new Uint8Array(o.keys); // 0 never seen, 1 live, 2 deleted
  const history = new PgHistory();
  const sequences = new Array<bigint>(shards).fill(49_658_310_000_000_000_000_000_000n);
  let emitted = 0;
  let index = 0;
  for (let h = 0; h < hours.length && emitted < o.events; h++) {
    const inHour = Math.min(perHour, o.events - emitted);
    for (let done = 0; done < inHour; ) {
      const n = Math.min(o.batch, inHour - done);
      const shard = index % shards;
      const hour = hours[h] as number;
      const records: RawRecord[] = [];
      for (let i = 0; i < n; i++) {
        const k = emitted < o.keys ? emitted : int(0, o.keys - 1);
        const t = k % o.tables;
        const id = Math.floor(k / o.tables) + 1;
        const state = live[k] ?? 0;
        const op = state === 0 ? 'r' : state === 2 ? 'c' : random() < deleteShare ? 'd' : 'u';
        live[k] = op === 'd' ? 2 : 1;
        history.emit(tableName(t), op, { id }, op === 'd' ? null : row(id));
        emitted++;
      }
      // Drained after each batch, so the history holds one batch at a time.
      for (const e of history.events.splice(0)) {
        const at = sequences[shard] as bigint;
        sequences[shard] = at + 1_000_003n;
        const arrival = hour + Math.floor(((done + records.length) / inHour) * (HOUR_MS - 1));
        const bad = badEvery > 0 && (index * o.batch + records.length) % badEvery === badEvery - 1;
        records.push({
          value: Buffer.from(bad ? `not json: ${e.value.slice(0, 40)}` : e.value, 'utf8'),
          key: Buffer.from(e.partitionKey, 'utf8'),
          topic: null,
          headers: {},
          transport: { kind: 'kinesis', stream: 'scale', shard: `shardId-${String(shard).padStart(12, '0')}`, sequence: String(at), partitionKey: e.partitionKey, arrivalTime: arrival },
        });
      }
      done += n;
      yield { index: index++, hour, records };
    }
  }
}
