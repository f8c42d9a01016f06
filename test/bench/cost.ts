/**
 * Goal 7: what a million events cost on AWS, for tidemark, for one conditional write per event,
 * and for a Powertools-style BatchProcessor that runs the same guarded write per record.
 *
 * Request counts and request units come from replaying the workload through an in-memory store
 * with the guard's exact semantics (a failed conditional write still consumes write units, sized
 * by the larger of the stored and the new item). Lambda GB-seconds come from measured CPU: a
 * CPU-bound lower bound, at 1,769 MB (one full vCPU), I/O waits excluded. Kinesis is the same for
 * all three and left out.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../../lib/config/config.js';
import { putCommand } from '../../functions/adapters/guard.js';
import { marshallRow } from '../../functions/adapters/item-codec.js';
import { MemoryStore } from '../../functions/core/memory-store.js';
import { type KeyIdentity, planBatch } from '../../functions/core/plan.js';
import { encodePosition } from '../../functions/core/position.js';
import type { ChangeEvent } from '../../functions/core/types.js';

/** On-demand list prices, us-east-1 (DynamoDB after the November 2024 reduction). */
export const PRICES = {
  writeRequestUnit: 0.625 / 1e6,
  readRequestUnit: 0.125 / 1e6,
  s3Put: 0.005 / 1e3,
  lambdaGbSecond: 0.0000166667,
  lambdaRequest: 0.2 / 1e6,
  lambdaMemoryGb: 1769 / 1024,
  s3StandardGbMonth: 0.023,
  s3InfrequentGbMonth: 0.0125,
} as const;

/** DynamoDB's item size: attribute names plus values (numbers: about one byte per two digits). */
export function itemBytes(item: Record<string, AttributeValue>): number {
  let n = 0;
  for (const [name, value] of Object.entries(item)) n += Buffer.byteLength(name, 'utf8') + valueBytes(value);
  return n;
}

function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return Math.ceil(v.N.replace(/^-|\.|^0+/g, '').length / 2) + 1;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((a, s) => a + Buffer.byteLength(s, 'utf8'), 0);
  if (v.L !== undefined) return 3 + v.L.reduce((a, x) => a + 1 + valueBytes(x), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((a, [k, x]) => a + 1 + Buffer.byteLength(k, 'utf8') + valueBytes(x), 0);
  if (v.B !== undefined) return v.B.length;
  return 1;
}

const units = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

/** Requests and request units of one run, per delivered record. */
export interface Usage {
  readonly records: number;
  readonly batches: number;
  readonly writeRequests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly s3Puts: number;
  /** Average item size written, bytes. */
  readonly avgItemBytes: number;
}

/**
 * tidemark: planBatch per batch, every planned write through the guard (applied or not), plus per
 * batch one status read and one status write per table and one raw object.
 */
export function tidemarkUsage(batches: readonly (readonly ChangeEvent[])[], identify: KeyIdentity, table: TableConfig): Usage {
  const store = new MemoryStore();
  const sizes = new Map<string, number>();
  let writeRequests = 0;
  let writeUnits = 0;
  let bytes = 0;
  for (const batch of batches) {
    for (const w of planBatch(batch, identify).writes) {
      const size = w.effect.kind === 'patch' ? itemBytes(marshallRow(w.effect.set)) + 120 : itemBytes(putCommand(table.target, w, { table, now: 1_735_732_801_000 }).Item ?? {});
      const old = sizes.get(w.keyId) ?? 0;
      writeRequests++;
      writeUnits += units(Math.max(size, old));
      bytes += size;
      if (store.apply(w) === 'applied') sizes.set(w.keyId, size);
    }
  }
  const records = batches.reduce((n, b) => n + b.length, 0);
  // Status rows: one read (strongly consistent, < 4 KB) and one update per table and batch.
  return { records, batches: batches.length, writeRequests: writeRequests + batches.length, writeUnits: writeUnits + batches.length, readUnits: batches.length, s3Puts: batches.length, avgItemBytes: bytes / Math.max(1, writeRequests) };
}

/**
 * One guarded PutItem per record (the obvious build and the Powertools BatchProcessor alike): the
 * after row or a tombstone, guarded on the event's own position.
 */
export function perRecordUsage(batches: readonly (readonly ChangeEvent[])[], identify: KeyIdentity): Usage {
  const stored = new Map<string, { position: string; size: number }>();
  let writeUnits = 0;
  let bytes = 0;
  let records = 0;
  for (const batch of batches) {
    for (const e of batch) {
      records++;
      const id = identify(e);
      const position = encodePosition(e.position.tuple);
      const size = itemBytes(marshallRow(e.after ?? e.key)) + 60;
      const old = stored.get(id);
      writeUnits += units(Math.max(size, old?.size ?? 0));
      bytes += size;
      if (old === undefined || old.position < position) stored.set(id, { position, size });
    }
  }
  return { records, batches: batches.length, writeRequests: records, writeUnits, readUnits: 0, s3Puts: 0, avgItemBytes: bytes / Math.max(1, records) };
}

/** One column of the cost table. */
export interface CostColumn {
  readonly name: string;
  readonly usage: Usage;
  /** Measured CPU per delivered record, µs. */
  readonly cpuMicros: number;
}

export interface PerMillion {
  readonly wru: number;
  readonly rru: number;
  readonly s3Puts: number;
  readonly gbSeconds: number;
  readonly invocations: number;
  readonly dollars: number;
}

export function perMillion(c: CostColumn): PerMillion {
  const scale = 1e6 / c.usage.records;
  const wru = c.usage.writeUnits * scale;
  const rru = c.usage.readUnits * scale;
  const s3Puts = c.usage.s3Puts * scale;
  const gbSeconds = c.cpuMicros * PRICES.lambdaMemoryGb; // µs per record × 1e6 records = seconds
  const invocations = c.usage.batches * scale;
  const dollars = wru * PRICES.writeRequestUnit + rru * PRICES.readRequestUnit + s3Puts * PRICES.s3Put + gbSeconds * PRICES.lambdaGbSecond + invocations * PRICES.lambdaRequest;
  return { wru, rru, s3Puts, gbSeconds, invocations, dollars };
}

const cell = (s: string, w: number) => s.padStart(w);
const num = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The printed table: one row per quantity, one column per build. */
export function costTable(columns: readonly CostColumn[]): string[] {
  const pm = columns.map(perMillion);
  const w = 26;
  const line = (label: string, f: (p: PerMillion, c: CostColumn) => string) => `${label.padEnd(34)}${columns.map((c, i) => cell(f(pm[i] as PerMillion, c), w)).join('')}`;
  const base = pm[0] as PerMillion;
  return [
    `${''.padEnd(34)}${columns.map((c) => cell(c.name, w)).join('')}`,
    line('DynamoDB write request units', (p) => num(p.wru)),
    line('DynamoDB read request units', (p) => num(p.rru)),
    line('S3 PUTs', (p) => num(p.s3Puts)),
    line('CPU per record (µs, measured)', (_, c) => num(c.cpuMicros, 1)),
    line('Lambda GB-s (CPU-bound, 1769 MB)', (p) => num(p.gbSeconds, 1)),
    line('Lambda invocations', (p) => num(p.invocations)),
    line('dollars per million records', (p) => `$${num(p.dollars, 3)}`),
    line('cost ratio (this / tidemark)', (p) => `${num(p.dollars / base.dollars, 2)}x`),
  ];
}
