/**
 * Test doubles for the split-record step: an in-memory pending-parts store with the semantics of
 * DynamoSplitPartsStore (one slot per part, a different fragment text for a held slot is a conflict, first
 * arrival opens the wait, claims with a lease, done once), and a writer over MemoryStore (the guarded
 * write semantics of the DynamoDB writer) so a batch's target state can be read back.
 * test/integration/split-records.test.ts runs the real store against the emulators.
 */
import type { DynamoWriter, WriteAllResult, WriteResult } from '../../functions/adapters/dynamo-writer.js';
import type { ChunkState, PartOrigin, PutOutcome, SplitPartsStore, StoredPart } from '../../functions/adapters/split-parts-store.js';
import { MemoryStore } from '../../functions/core/memory-store.js';
import type { PlannedWrite } from '../../functions/core/plan.js';

interface Held {
  firstSeenMs: number;
  deadlineMs: number;
  main: (StoredPart & { table: string | null }) | null;
  parts: Map<number, StoredPart>;
  doneMs: number | null;
  claimUntil: number | null;
}

export class MemorySplitParts implements SplitPartsStore {
  readonly sets = new Map<string, Held>();
  readonly texts = new Map<string, string>();
  /** Calls by name, to assert what the step asked for. */
  readonly calls: string[] = [];
  /** When set, the next call of this name throws (once). */
  failNext: string | null = null;

  private fail(name: string): void {
    this.calls.push(name);
    if (this.failNext === name) {
      this.failNext = null;
      throw new Error(`${name} unavailable`);
    }
  }

  private open(chunkId: string, origin: PartOrigin): Held {
    let held = this.sets.get(chunkId);
    if (!held) {
      held = { firstSeenMs: origin.nowMs, deadlineMs: origin.deadlineMs, main: null, parts: new Map(), doneMs: null, claimUntil: null };
      this.sets.set(chunkId, held);
    }
    return held;
  }

  private ref(chunkId: string, slot: string, text: string): string {
    const ref = `${chunkId}/${slot}/${text.length}/${[...this.texts.keys()].filter((k) => k.startsWith(`${chunkId}/${slot}/`)).length}`;
    for (const [k, v] of this.texts) if (k.startsWith(`${chunkId}/${slot}/`) && v === text) return k;
    this.texts.set(ref, text);
    return ref;
  }

  async putMain(chunkId: string, text: string, table: string | null, origin: PartOrigin): Promise<PutOutcome> {
    this.fail('putMain');
    const ref = this.ref(chunkId, 'main', text);
    const h = this.open(chunkId, origin);
    h.main ??= { ref, bytes: Buffer.byteLength(text), shard: origin.shard, sequence: origin.sequence, table };
    return { ok: true, state: this.state(chunkId, h) };
  }

  async putFragment(chunkId: string, index: number, data: string, origin: PartOrigin): Promise<PutOutcome> {
    this.fail('putFragment');
    const ref = this.ref(chunkId, `p${index}`, data);
    const held = this.sets.get(chunkId)?.parts.get(index);
    if (held && held.ref !== ref) return { ok: false, conflict: true };
    const h = this.open(chunkId, origin);
    if (!h.parts.has(index)) h.parts.set(index, { ref, bytes: Buffer.byteLength(data), shard: origin.shard, sequence: origin.sequence });
    return { ok: true, state: this.state(chunkId, h) };
  }

  async get(chunkId: string): Promise<ChunkState | null> {
    this.fail('get');
    const h = this.sets.get(chunkId);
    return h ? this.state(chunkId, h) : null;
  }

  async read(ref: string): Promise<string> {
    this.fail('read');
    const t = this.texts.get(ref);
    if (t === undefined) throw new Error(`no text ${ref}`);
    return t;
  }

  async expired(nowMs: number, limit: number): Promise<ChunkState[]> {
    this.fail('expired');
    return [...this.sets.entries()]
      .filter(([, h]) => h.deadlineMs <= nowMs && h.doneMs === null && (h.claimUntil === null || h.claimUntil < nowMs))
      .slice(0, limit)
      .map(([id, h]) => this.state(id, h));
  }

  async claim(chunkId: string, nowMs: number, leaseMs: number): Promise<boolean> {
    this.fail('claim');
    const h = this.sets.get(chunkId);
    if (!h || h.doneMs !== null || (h.claimUntil !== null && h.claimUntil >= nowMs)) return false;
    h.claimUntil = nowMs + leaseMs;
    return true;
  }

  async markDone(chunkId: string, nowMs: number): Promise<void> {
    this.fail('markDone');
    const h = this.sets.get(chunkId);
    if (h) h.doneMs ??= nowMs;
  }

  private state(chunkId: string, h: Held): ChunkState {
    return { chunkId, firstSeenMs: h.firstSeenMs, deadlineMs: h.deadlineMs, main: h.main, parts: new Map(h.parts), doneMs: h.doneMs };
  }
}

/** A writer with the guard's semantics over a MemoryStore; `store` is the target state. */
export function memoryWriter(store = new MemoryStore()): Pick<DynamoWriter, 'write' | 'writeAll' | 'seedHighWater'> & { readonly store: MemoryStore; readonly writes: PlannedWrite[] } {
  const writes: PlannedWrite[] = [];
  const write = async (w: PlannedWrite): Promise<WriteResult> => {
    writes.push(w);
    return { outcome: store.apply(w), writeUnits: 1, requests: 1, missing: [], spilled: false };
  };
  return {
    store,
    writes,
    write,
    seedHighWater: () => {},
    async writeAll(ws: readonly PlannedWrite[]): Promise<WriteAllResult> {
      const results = [];
      for (const w of ws) results.push(await write(w));
      const totals = { writes: ws.length, applied: 0, stale: 0, duplicate: 0, conflict: 0, failed: 0, quarantined: 0, spilled: 0, preRead: 0, skipped: 0, readFailures: 0, readUnits: 0, readRequests: 0, writeUnits: ws.length, writeRequests: ws.length };
      for (const r of results) totals[r.outcome]++;
      return { results, totals };
    },
  };
}
