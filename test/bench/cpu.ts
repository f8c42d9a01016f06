/**
 * CPU-only measurements (no emulator): decode + normalize + plan against the bare
 * `base64 + JSON.parse` of the same records, and raw landing (gzip) per level.
 *
 * Every figure is process CPU time, a median over rounds in which the compared sides alternate
 * batch by batch, so that load from other processes on the machine hits both sides alike; ratios
 * are what to compare, not absolute times.
 */
import { gzipSync } from 'node:zlib';
import { ndjsonBytes, RAW_GZIP } from '../../functions/adapters/raw-store.js';
import type { Normalizer, RawRecord } from '../../functions/core/normalize.js';
import { planBatch } from '../../functions/core/plan.js';
import type { ChangeEvent } from '../../functions/core/types.js';

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** CPU time of this process (user + system), ms: unlike wall time, it does not count the time
 * other processes on a busy machine hold the cores. */
export const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * Runs every side `rounds` times after one untimed warm-up each, and returns each side's median
 * CPU ms per round. A side is a list of chunks (e.g. one per batch); the sides alternate chunk by
 * chunk (A1 B1 A2 B2 …), so a change of machine load hits every side alike.
 */
export function interleaved(sides: readonly (readonly (() => void)[] | (() => void))[], rounds: number): number[] {
  const chunked = sides.map((s) => (typeof s === 'function' ? [s] : s));
  for (const side of chunked) for (const chunk of side) chunk();
  const times = chunked.map(() => [] as number[]);
  const longest = Math.max(...chunked.map((s) => s.length));
  for (let r = 0; r < rounds; r++) {
    const sums = chunked.map(() => 0);
    for (let c = 0; c < longest; c++) {
      chunked.forEach((side, i) => {
        const chunk = side[c];
        if (!chunk) return;
        const started = cpuNow();
        chunk();
        sums[i] = (sums[i] as number) + cpuNow() - started;
      });
    }
    sums.forEach((ms, i) => {
      (times[i] as number[]).push(ms);
    });
  }
  return times.map(median);
}

/** A Kinesis record as the Lambda event carries it: the value base64-encoded. */
export interface Base64Record {
  readonly data: string;
  readonly record: RawRecord;
}

export const toBase64Records = (batches: readonly (readonly RawRecord[])[]): Base64Record[][] =>
  batches.map((b) => b.map((record) => ({ data: Buffer.from(record.value ?? new Uint8Array()).toString('base64'), record })));

export interface DecodePlanCost {
  readonly records: number;
  /** µs per record of `JSON.parse(Buffer.from(data, 'base64').toString())`. */
  readonly bareMicros: number;
  /** µs per record of base64 decode + Normalizer.normalize + planBatch. */
  readonly pipelineMicros: number;
  /** pipeline rate / bare rate (goal: ≥ 0.25). */
  readonly ratio: number;
  /** µs per record of the parts, measured alone: base64 + normalize (no plan), plan (on normalized events). */
  readonly normalizeMicros: number;
  readonly planMicros: number;
}

/**
 * One closure per batch that does what the ingest does before landing: base64 decode, normalize,
 * plan. Goal 2 times raw landing against it in the same interleaved rounds.
 */
export function decodePlanChunks(batches: readonly (readonly Base64Record[])[], normalizer: Normalizer): (() => void)[] {
  let sink = 0;
  const identify = (e: ChangeEvent) => normalizer.keyIdOf(e);
  return batches.map((b) => () => {
    const events: ChangeEvent[] = [];
    for (const r of b) {
      const res = normalizer.normalize({ ...r.record, value: Buffer.from(r.data, 'base64') });
      if (!res.ok) throw new Error(`bench record did not decode: ${res.reason}: ${res.detail}`);
      for (const e of res.events) if (e.kind === 'change') events.push(e);
    }
    sink += planBatch(events, identify).writes.length;
    if (sink < 0) throw new Error('unreachable'); // keeps the work observable
  });
}

/** Goal 1: decode + normalize + plan against the bare parse of the same records. */
export function measureDecodePlan(batches: readonly (readonly Base64Record[])[], normalizer: Normalizer, rounds = 7): DecodePlanCost {
  const records = batches.reduce((n, b) => n + b.length, 0);
  let sink = 0;
  const bare = batches.map((b) => () => {
    for (const r of b) sink += (JSON.parse(Buffer.from(r.data, 'base64').toString('utf8')) as unknown) === null ? 1 : 0;
  });
  const decode = (b: readonly Base64Record[]): ChangeEvent[] => {
    const out: ChangeEvent[] = [];
    for (const r of b) {
      const res = normalizer.normalize({ ...r.record, value: Buffer.from(r.data, 'base64') });
      if (!res.ok) throw new Error(`bench record did not decode: ${res.reason}: ${res.detail}`);
      for (const e of res.events) if (e.kind === 'change') out.push(e);
    }
    return out;
  };
  const identify = (e: ChangeEvent) => normalizer.keyIdOf(e);
  const pipeline = batches.map((b) => () => {
    sink += planBatch(decode(b), identify).writes.length;
  });
  const normalizeOnly = batches.map((b) => () => {
    sink += decode(b).length;
  });
  const planOnly = batches.map(decode).map((events) => () => {
    sink += planBatch(events, identify).writes.length;
  });
  const [bareMs, pipelineMs, normalizeMs, planMs] = interleaved([bare, pipeline, normalizeOnly, planOnly], rounds) as [number, number, number, number];
  if (sink < 0) throw new Error('unreachable'); // keeps the work observable
  const us = (ms: number) => (ms * 1000) / records;
  return { records, bareMicros: us(bareMs), pipelineMicros: us(pipelineMs), ratio: bareMs / pipelineMs, normalizeMicros: us(normalizeMs), planMicros: us(planMs) };
}

export interface GzipLevelCost {
  readonly level: number;
  /** µs per record to serialize the batch's raw lines as NDJSON and gzip them at this level. */
  readonly micros: number;
  /** µs per record of the serialization alone (the same for every level). */
  readonly serializeMicros: number;
  /** Compressed bytes per record. */
  readonly compressedBytes: number;
  /** compressed bytes / uncompressed bytes. */
  readonly compression: number;
  /** µs per record of decode + normalize + plan of the same batches, in the same rounds. */
  readonly decodePlanMicros: number;
  /** raw landing time / (decode + normalize + plan) time (goal 2: ≤ 1). */
  readonly vsDecodePlan: number;
}

/**
 * Goal 2: raw landing CPU per gzip level: serialize each batch's raw lines (built as the ingest
 * builds them, with `rawLinesFor`) as NDJSON and gzip the body, against the serialization alone
 * and against decode + normalize + plan of the same batches (`decodePlan`, one closure per batch),
 * all in the same interleaved rounds, so the ratio compares work done under the same heap and load.
 */
export function measureGzipLevels<B>(
  batches: readonly B[],
  buildLines: (batch: B) => readonly unknown[],
  records: number,
  decodePlan: readonly (() => void)[],
  levels: readonly number[],
  rounds: number,
): GzipLevelCost[] {
  // Timed from the normalized events: the raw lines are built (as the ingest builds them), then
  // serialized as NDJSON (raw-store's ndjsonBytes), then gzipped.
  const body = (batch: B) => ndjsonBytes(buildLines(batch)).bytes;
  const serializeOnly = batches.map((batch) => () => void body(batch));
  // Each level with the Lambda's other settings (memory level, chunk size).
  const sides = levels.map((level) => batches.map((batch) => () => void gzipSync(body(batch), { ...RAW_GZIP, level })));
  const [decodePlanMs, serializeMs, ...times] = interleaved([decodePlan, serializeOnly, ...sides], rounds) as [number, number, ...number[]];
  const lineBatches = batches.map(buildLines);
  const plain = lineBatches.reduce((n, lines) => n + ndjsonBytes(lines).bytes.length, 0);
  return levels.map((level, i) => {
    const compressed = lineBatches.reduce((n, lines) => n + gzipSync(ndjsonBytes(lines).bytes, { ...RAW_GZIP, level }).length, 0);
    const micros = ((times[i] as number) * 1000) / records;
    const serializeMicros = (serializeMs * 1000) / records;
    const decodePlanMicros = (decodePlanMs * 1000) / records;
    return { level, micros, serializeMicros, decodePlanMicros, compressedBytes: compressed / records, compression: compressed / plain, vsDecodePlan: micros / decodePlanMicros };
  });
}
