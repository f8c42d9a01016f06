/**
 * A batch step between landing and planning: split Aurora DSQL records reassembled across batches
 * and shards (Aurora DSQL user guide, "Understanding CDC records", "Handling oversized records",
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html#cdc-oversized-records:
 * a record over the Kinesis size limit is split into a main record `type: "chunked"` naming
 * `{chunk_id, total_fragments, crc32c}` per split image and fragments `{type: "fragment",
 * chunk_id, index, data}`, on any shard, in any order, at least once).
 *
 * Each part has already landed in raw as received (a `chunked` or `fragment` control line). Here:
 * 1. every part of the batch is stored in the pending-parts store (split-parts-store.ts), one
 *    conditional write per part; a different text for a slot already held is `fragment-invalid`;
 * 2. a set this batch completed (its main record and every fragment of every chunk it names) is
 *    read back, assembled by `assembleFragments` (order, CRC32C), and its full record goes through
 *    the Normalizer like any record: its change joins this batch's changes and is applied under
 *    the guard (a redelivered part assembles it again: a duplicate at the same position);
 * 3. at most once a minute per container, sets past their deadline are swept: each is claimed,
 *    quarantined as `fragment-incomplete` (what it holds and what it misses), then marked done.
 *
 * Counting: a part is a control message when it arrives; the split record is one more received
 * unit when it resolves, with the outcome of its change (applied, stale, …) or `quarantined`.
 * A store error fails the part's record, so the batch is retried from it; nothing is marked done
 * before its quarantine object has landed.
 */
import type { TidemarkConfig } from '../config/types.js';
import { DecodeError, errorMessage } from '../core/errors.js';
import { assembleFragments, chunkRefs, type FragmentPart, fragmentPart, isFragmentRecord } from '../core/formats/aurora-dsql-fragments.js';
import { isJsonObject, type JsonObject, parseJson, stringifyJson } from '../core/json.js';
import type { Normalizer, RawRecord } from '../core/normalize.js';
import { contentHash } from '../core/plan.js';
import type { ChangeEvent } from '../core/types.js';
import type { QuarantineLine, RawStore } from '../adapters/raw-store.js';
import { type ChunkState, MAX_SPLIT_FRAGMENTS, type SplitPartsStore } from '../adapters/split-parts-store.js';
import { UNKNOWN_TABLE } from '../telemetry/contract.js';
import type { Log } from '../telemetry/sinks.js';
import { type Decoded, noteChange } from './decode.js';
import { batchCoordinates } from './land.js';
import { refusedLineFor } from './raw-lines.js';
import type { BatchTally } from './tally.js';

/** The largest split record reassembled in memory (its main record and fragments, UTF-8). */
export const MAX_SPLIT_RECORD_BYTES = 64 * 1024 * 1024;
/** How often one container sweeps for expired sets. */
export const SWEEP_EVERY_MS = 60_000;
/** Sets swept per batch at most; the rest wait for the next sweep. */
const SWEEP_LIMIT = 25;
/** How long a sweeper holds a set it quarantines. */
const CLAIM_LEASE_MS = 120_000;
const FORMAT = 'aurora-dsql';

export interface SplitPartsDeps {
  /** Absent when the configured format cannot be Aurora DSQL: the step then does nothing. */
  readonly splitParts?: SplitPartsStore;
  readonly config: Pick<TidemarkConfig, 'tables' | 'auroraDsql'>;
  readonly normalizer: Pick<Normalizer, 'normalize' | 'inbound' | 'keyIdOf'>;
  readonly raw: Pick<RawStore, 'quarantine'>;
  readonly log: Log;
}

/** When each container last swept, per store. */
const lastSweep = new WeakMap<SplitPartsStore, number>();

interface Part {
  readonly record: number;
  readonly value: JsonObject;
  readonly fragment: boolean;
}

/** What one batch's step builds: the assembled changes (and the record each came in with) and the quarantine lines. */
class Work {
  readonly changes: ChangeEvent[] = [];
  readonly changeRecords: number[] = [];
  readonly quarantined: { line: QuarantineLine; table: string; done: readonly string[]; record: number | null }[] = [];
  readonly done: string[] = [];
}

/**
 * Runs the step; returns `decoded` with the assembled records' changes appended (the same object
 * when there was nothing to add).
 */
export async function withSplitRecords(records: readonly RawRecord[], decoded: Decoded, deps: SplitPartsDeps, tally: BatchTally, nowMs: number): Promise<Decoded> {
  const store = deps.splitParts;
  if (store === undefined) return decoded;
  const parts = partsOf(records, decoded, deps);
  // Only a container that has seen Aurora DSQL records sweeps: under `format: auto` a stream without them never queries.
  if (!lastSweep.has(store) && decoded.lines.some((l) => l.format === FORMAT)) lastSweep.set(store, Number.NEGATIVE_INFINITY);
  const sweepDue = nowMs - (lastSweep.get(store) ?? nowMs) >= SWEEP_EVERY_MS;
  if (parts.length === 0 && !sweepDue) return decoded;
  const work = new Work();
  const ctx = { store, deps, tally, work, records, nowMs };
  const touched = await storeParts(parts, ctx);
  await completeTouched(touched, ctx);
  if (sweepDue) {
    lastSweep.set(store, nowMs);
    await sweep(ctx);
  }
  await landQuarantine(ctx);
  for (const chunkId of new Set(work.done)) await markDone(ctx, chunkId);
  for (const e of work.changes) {
    tally.summary.events++;
    noteChange(tally, e);
  }
  return work.changes.length === 0 ? decoded : extend(decoded, work);
}

type Ctx = { readonly store: SplitPartsStore; readonly deps: SplitPartsDeps; readonly tally: BatchTally; readonly work: Work; readonly records: readonly RawRecord[]; readonly nowMs: number };

/** The batch's main records and fragments, found by their raw control lines. */
function partsOf(records: readonly RawRecord[], decoded: Decoded, deps: SplitPartsDeps): Part[] {
  const at = new Map(records.map((r, i) => [`${r.transport.shard}/${r.transport.sequence}`, i]));
  const out: Part[] = [];
  for (const line of decoded.lines) {
    if (line.kind !== 'control' || line.format !== FORMAT || (line.control !== 'chunked' && line.control !== 'fragment')) continue;
    const index = at.get(`${line.transport.shard}/${line.transport.sequence}`);
    const record = index === undefined ? undefined : records[index];
    if (index === undefined || record === undefined) continue;
    const value = deps.normalizer.inbound(record).value;
    if (isJsonObject(value)) out.push({ record: index, value, fragment: isFragmentRecord(value) });
  }
  return out;
}

const tableOf = (ctx: Ctx, table: string | null): string => (table !== null && ctx.deps.config.tables.some((t) => t.source === table) ? table : UNKNOWN_TABLE);

function sourceTable(main: JsonObject): string | null {
  const s = main.source;
  return isJsonObject(s) && typeof s.schema === 'string' && typeof s.table === 'string' ? `${s.schema}.${s.table}` : null;
}

/** Quarantines a record of this batch as one resolved split-record unit. */
function quarantineRecord(ctx: Ctx, record: number, reason: string, detail: string, table: string | null, done: readonly string[] = []): void {
  const r = ctx.records[record];
  if (r !== undefined) queue(ctx, r, record, reason, detail, table, done);
}

type Touched = Map<string, { state: ChunkState; record: number }>;
type Origin = Parameters<SplitPartsStore['putMain']>[3];

/** Stores every part; returns, per chunk id this batch touched, its latest state and the record that touched it last. */
async function storeParts(parts: readonly Part[], ctx: Ctx): Promise<Touched> {
  const touched: Touched = new Map();
  const deadlineMs = ctx.nowMs + ctx.deps.config.auroraDsql.fragmentWaitSeconds * 1000;
  for (const p of parts) {
    const r = ctx.records[p.record];
    if (r === undefined) continue;
    const origin = { shard: r.transport.shard, sequence: r.transport.sequence, nowMs: ctx.nowMs, deadlineMs };
    const table = p.fragment ? null : sourceTable(p.value);
    try {
      await (p.fragment ? storeFragment(p, origin, ctx, touched) : storeMain(p, table, origin, ctx, touched));
    } catch (err) {
      if (err instanceof DecodeError) {
        quarantineRecord(ctx, p.record, err.reason, err.message, table);
        continue;
      }
      ctx.tally.fail(tableOf(ctx, table), [p.record], `split record part not stored: ${errorMessage(err)}`);
      ctx.deps.log.error('split record part not stored; the batch will be retried from it', { error: errorMessage(err), shard: r.transport.shard, sequence: r.transport.sequence });
    }
  }
  return touched;
}

async function storeFragment(p: Part, origin: Origin, ctx: Ctx, touched: Touched): Promise<void> {
  const part = fragmentPart(p.value);
  if (part.index >= MAX_SPLIT_FRAGMENTS) {
    quarantineRecord(ctx, p.record, 'fragment-too-large', `fragment ${part.index} of chunk ${part.chunkId}: tidemark holds at most ${MAX_SPLIT_FRAGMENTS} fragments per chunk`, null);
    return;
  }
  const put = await ctx.store.putFragment(part.chunkId, part.index, part.data, origin);
  if (!put.ok) quarantineRecord(ctx, p.record, 'fragment-invalid', `fragment ${part.index} of chunk ${part.chunkId} arrived twice with different data; the first is kept`, null);
  else touched.set(part.chunkId, { state: put.state, record: p.record });
}

async function storeMain(p: Part, table: string | null, origin: Origin, ctx: Ctx, touched: Touched): Promise<void> {
  const refs = chunkRefs(p.value);
  const big = refs.find((ref) => ref.totalFragments > MAX_SPLIT_FRAGMENTS);
  if (big !== undefined) {
    quarantineRecord(ctx, p.record, 'fragment-too-large', `chunk ${big.chunkId} has ${big.totalFragments} fragments; tidemark holds at most ${MAX_SPLIT_FRAGMENTS} per chunk`, table);
    return;
  }
  const text = stringifyJson(p.value);
  for (const ref of refs) {
    const put = await ctx.store.putMain(ref.chunkId, text, table, origin);
    if (put.ok) touched.set(ref.chunkId, { state: put.state, record: p.record });
  }
}

/** The indexes a chunk still misses, given its fragment count. */
export function missingIndexes(state: ChunkState | null, total: number): number[] {
  const missing: number[] = [];
  for (let i = 0; i < total; i++) if (!state?.parts.has(i)) missing.push(i);
  return missing;
}

/** Assembles every set this batch completed. */
async function completeTouched(touched: Touched, ctx: Ctx): Promise<void> {
  const seen = new Set<string>();
  for (const [chunkId, { state, record }] of touched) {
    if (seen.has(chunkId) || state.main === null) continue;
    try {
      const main = await readMain(ctx, state);
      const refs = chunkRefs(main.value);
      for (const ref of refs) seen.add(ref.chunkId);
      const states = new Map<string, ChunkState | null>();
      for (const ref of refs) states.set(ref.chunkId, ref.chunkId === chunkId ? state : (touched.get(ref.chunkId)?.state ?? (await ctx.store.get(ref.chunkId))));
      if (refs.some((ref) => missingIndexes(states.get(ref.chunkId) ?? null, ref.totalFragments).length > 0)) continue;
      await assemble(ctx, main, states, record, ctx.records[record] ?? null);
    } catch (err) {
      const r = ctx.records[record];
      ctx.tally.fail(tableOf(ctx, state.main.table), [record], `split record not assembled: ${errorMessage(err)}`);
      ctx.deps.log.error('split record not assembled; the batch will be retried', { error: errorMessage(err), shard: r?.transport.shard, sequence: r?.transport.sequence });
    }
  }
}

async function readMain(ctx: Ctx, state: ChunkState): Promise<{ text: string; value: JsonObject; bytes: number }> {
  if (state.main === null) throw new Error(`chunk ${state.chunkId} has no main record`);
  const text = await ctx.store.read(state.main.ref);
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new Error(`the stored main record of chunk ${state.chunkId} is not a JSON object`);
  return { text, value, bytes: state.main.bytes };
}

/**
 * Reads every fragment of a complete set, assembles the full record and normalizes it as a record
 * that arrived with `from` (the part that completed the set, or for a sweep the main record's
 * place): its changes join the batch, a rejection is quarantined. Either way the set is done.
 */
async function assemble(ctx: Ctx, main: { text: string; value: JsonObject; bytes: number }, states: ReadonlyMap<string, ChunkState | null>, record: number | null, from: RawRecord | null): Promise<void> {
  const refs = chunkRefs(main.value);
  const chunkIds = refs.map((r) => r.chunkId);
  const table = sourceTable(main.value);
  const wanted = refs.flatMap((ref) => Array.from({ length: ref.totalFragments }, (_, index) => ({ chunkId: ref.chunkId, index, stored: states.get(ref.chunkId)?.parts.get(index) })));
  const bytes = wanted.reduce((n, w) => n + (w.stored?.bytes ?? 0), main.bytes);
  const template = from ?? syntheticOrigin(states, main);
  if (bytes > MAX_SPLIT_RECORD_BYTES) {
    pushQuarantine(ctx, template, record, 'fragment-too-large', `the split record is ${bytes} bytes; tidemark reassembles at most ${MAX_SPLIT_RECORD_BYTES}`, table, chunkIds, main.text);
    return;
  }
  const parts: FragmentPart[] = [];
  for (const w of wanted) {
    if (w.stored === undefined) throw new Error(`fragment ${w.index} of chunk ${w.chunkId} is not stored`);
    parts.push({ chunkId: w.chunkId, index: w.index, data: await ctx.store.read(w.stored.ref) });
  }
  let full: JsonObject;
  try {
    const assembly = assembleFragments(main.value, parts);
    if (!assembly.complete) throw new Error('the set was complete when read, and is not when assembled');
    full = assembly.record;
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    pushQuarantine(ctx, template, record, err.reason, err.message, table, chunkIds, main.text);
    return;
  }
  const synthetic: RawRecord = { ...template, value: new TextEncoder().encode(stringifyJson(full)) };
  const result = ctx.deps.normalizer.normalize(synthetic);
  if (!result.ok) {
    pushQuarantine(ctx, template, record, result.reason, result.detail, result.table ?? table, chunkIds, stringifyJson(full));
    return;
  }
  for (const e of result.events) {
    if (e.kind !== 'change') continue;
    ctx.work.changes.push(e);
    ctx.work.changeRecords.push(record ?? -1);
  }
  ctx.work.done.push(...chunkIds);
}

/** The record a set is quarantined or assembled as when no record of this batch completed it (a sweep). */
function syntheticOrigin(states: ReadonlyMap<string, ChunkState | null>, main: { text: string } | null): RawRecord {
  const first = [...states.values()].find((s) => s !== null) ?? null;
  const at = first?.main ?? first?.parts.values().next().value ?? null;
  return {
    value: main === null ? null : new TextEncoder().encode(main.text),
    key: null,
    topic: null,
    headers: {},
    transport: { kind: 'kinesis', stream: '', shard: at?.shard ?? '', sequence: at?.sequence ?? '', partitionKey: null, arrivalTime: first?.firstSeenMs ?? 0 },
  };
}

function pushQuarantine(ctx: Ctx, from: RawRecord, record: number | null, reason: string, detail: string, table: string | null, done: readonly string[], text: string | null): void {
  const r: RawRecord = { ...from, value: text === null ? null : new TextEncoder().encode(text) };
  queue(ctx, r, record, reason, detail, table, done);
}

/** Queues a quarantine line for a split-record unit (landed together by {@link landQuarantine}). */
function queue(ctx: Ctx, r: RawRecord, record: number | null, reason: string, detail: string, table: string | null, done: readonly string[]): void {
  const t = tableOf(ctx, table);
  const line: QuarantineLine = { ...refusedLineFor(r, reason, detail, t), table: t === UNKNOWN_TABLE ? null : t };
  ctx.work.quarantined.push({ line, table: t, done, record });
}

/** Quarantines (or, if complete after all, assembles) the sets past their deadline. */
async function sweep(ctx: Ctx): Promise<void> {
  let expired: ChunkState[];
  try {
    expired = await ctx.store.expired(ctx.nowMs, SWEEP_LIMIT);
  } catch (err) {
    ctx.deps.log.warn('split record sweep failed; the next batch sweeps again', { error: errorMessage(err) });
    lastSweep.set(ctx.store, Number.NEGATIVE_INFINITY);
    return;
  }
  const windowMs = ctx.deps.config.auroraDsql.fragmentWaitSeconds * 1000;
  for (const state of expired) {
    try {
      if (!(await ctx.store.claim(state.chunkId, ctx.nowMs, CLAIM_LEASE_MS))) continue;
      if (state.main === null) {
        const detail = `a split Aurora DSQL record was not complete ${windowMs} ms after its first part: its main record never arrived (chunk ${state.chunkId}, ${state.parts.size} fragment${state.parts.size === 1 ? '' : 's'} held: ${heldAt(state)})`;
        pushQuarantine(ctx, syntheticOrigin(new Map([[state.chunkId, state]]), null), null, 'fragment-incomplete', detail, null, [state.chunkId], null);
        continue;
      }
      const main = await readMain(ctx, state);
      const refs = chunkRefs(main.value);
      const states = new Map<string, ChunkState | null>();
      for (const ref of refs) states.set(ref.chunkId, ref.chunkId === state.chunkId ? state : await ctx.store.get(ref.chunkId));
      const missing = refs.flatMap((ref) => {
        const m = missingIndexes(states.get(ref.chunkId) ?? null, ref.totalFragments);
        return m.length === 0 ? [] : [`chunk ${ref.chunkId} misses fragment${m.length === 1 ? '' : 's'} ${m.slice(0, 10).join(', ')}${m.length > 10 ? ', …' : ''}`];
      });
      if (missing.length === 0) {
        await assemble(ctx, main, states, null, null);
        continue;
      }
      const detail = `a split Aurora DSQL record was not complete ${windowMs} ms after its first part: ${missing.join('; ')} (held: main record, ${heldAt(state)})`;
      pushQuarantine(ctx, syntheticOrigin(states, main), null, 'fragment-incomplete', detail, state.main.table, [state.chunkId], main.text);
    } catch (err) {
      ctx.deps.log.warn('split record not swept; it is swept again when its claim lapses', { error: errorMessage(err) });
    }
  }
}

/** Where the fragments a set holds sit in raw (shard and sequence), at most 10. */
function heldAt(state: ChunkState): string {
  const parts = [...state.parts.entries()].sort((a, b) => a[0] - b[0]);
  const shown = parts.slice(0, 10).map(([i, p]) => `fragment ${i} at ${p.shard}/${p.sequence}`);
  return parts.length > 10 ? `${shown.join(', ')}, …` : shown.length > 0 ? shown.join(', ') : 'no fragments';
}

/** Lands the step's quarantine lines in one object; if that fails, the records involved are failed and nothing is marked done. */
async function landQuarantine(ctx: Ctx): Promise<void> {
  const q = ctx.work.quarantined;
  if (q.length === 0) return;
  try {
    await ctx.deps.raw.quarantine(batchCoordinates(ctx.records), q.map((x) => x.line));
    ctx.tally.summary.s3Puts++;
    for (const x of q) {
      ctx.tally.count(x.table, 'received');
      ctx.tally.count(x.table, 'quarantined');
      ctx.work.done.push(...x.done);
      ctx.deps.log.warn('split record quarantined', { reason: x.line.reason, table: x.table, shard: x.line.transport.shard, sequence: x.line.transport.sequence });
    }
  } catch (err) {
    for (const x of q) if (x.record !== null) ctx.tally.fail(x.table, [x.record], `quarantine failed: ${errorMessage(err)}`);
    ctx.deps.log.error('split record quarantine failed; it is retried', { error: errorMessage(err) });
  }
}

async function markDone(ctx: Ctx, chunkId: string): Promise<void> {
  try {
    await ctx.store.markDone(chunkId, ctx.nowMs);
  } catch (err) {
    // Not done: a later part or sweep assembles (a duplicate) or quarantines it again; never lost.
    ctx.deps.log.warn('split record not marked done', { error: errorMessage(err) });
  }
}

/** `decoded` with the assembled changes after its own (their record: the part that completed the set). */
function extend(decoded: Decoded, work: Work): Decoded {
  const n = decoded.changes.length;
  return {
    ...decoded,
    changes: [...decoded.changes, ...work.changes],
    identity: { keyId: (i) => (i < n ? decoded.identity.keyId(i) : undefined), hash: (i) => (i < n ? decoded.identity.hash(i) : contentHash(work.changes[i - n] as ChangeEvent)) },
    recordsOf: (indexes) => [...new Set([...decoded.recordsOf(indexes.filter((i) => i < n)), ...indexes.filter((i) => i >= n).map((i) => work.changeRecords[i - n] ?? -1)])].filter((i) => i >= 0),
  };
}
