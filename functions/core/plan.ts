/**
 * planBatch: decide, for one batch of normalized change events, the one write per (table, key)
 * that current state needs (PIPELINE.md, "the merge rule"). Pure: no I/O, inputs never mutated.
 *
 * Per key, events are taken in position order (arrival order breaks ties):
 * - equal position and equal content: a duplicate, dropped and counted;
 * - equal position and different content: a conflict, the later arrival is dropped, counted and
 *   reported — never applied silently;
 * - the rest fold forward (see effect.ts), so a winning update that carries placeholders or is a
 *   patch takes the missing columns from earlier events of the same batch. Every event but the
 *   highest-positioned one is counted as superseded.
 * A truncate becomes a table watermark: events of that table below it are superseded.
 */
import { createHash } from 'node:crypto';
import { composeEffects, type Effect, eventEffect } from './effect.js';
import { canonicalJson } from './json.js';
import { compareTuples, encodePosition, type Position } from './position.js';
import type { ChangeEvent, Key, RowOp } from './types.js';

/** One event of a write's fold chain: enough to rebuild the write on top of a newer stored row. */
export interface ChainLink {
  readonly encodedPosition: string;
  readonly effect: Effect;
}

export interface PlannedWrite {
  readonly table: string;
  /** Canonical key text (see keys.ts `keyId`): the grouping key. */
  readonly keyId: string;
  readonly key: Key;
  readonly effect: Effect;
  /** The winning (highest) event's position and its encoded, order-preserving form. */
  readonly position: Position;
  readonly encodedPosition: string;
  /**
   * Position of the earliest event whose content the write carries (the last full row or delete
   * of the batch, or the first partial change). The guard is `stored < basePosition`: a stored row
   * between base and winner already holds part of the chain, and the write must be rebased.
   */
  readonly basePosition: string;
  /** The events folded into `effect`, oldest first. */
  readonly chain: readonly ChainLink[];
  readonly op: RowOp;
  readonly commitTs: number | null;
  readonly txid: string | null;
  readonly snapshot: boolean;
  /** Canonical content hash of the winning event, to tell a duplicate from a conflict later. */
  readonly contentHash: string;
  /** Indexes (into the planned array) of every event this write covers. */
  readonly sources: readonly number[];
}

export interface PlannedTruncate {
  readonly table: string;
  readonly position: Position;
  readonly encodedPosition: string;
  readonly commitTs: number | null;
  readonly sources: readonly number[];
}

export interface Conflict {
  readonly table: string;
  readonly keyId: string;
  readonly encodedPosition: string;
  /** Index of the event kept, and of the one dropped. */
  readonly kept: number;
  readonly dropped: number;
}

export interface TableCounts {
  events: number;
  byOp: Record<RowOp, number>;
  superseded: number;
  duplicates: number;
  conflicts: number;
  /** Events that carried placeholders or were patches. */
  placeholders: number;
  snapshot: number;
  /** Updates delivered without a before image. */
  beforeNullUpdates: number;
  /** Events dropped because a truncate in the batch is newer. */
  truncated: number;
}

export interface BatchPlan {
  readonly writes: readonly PlannedWrite[];
  readonly truncates: readonly PlannedTruncate[];
  readonly conflicts: readonly Conflict[];
  readonly counts: ReadonlyMap<string, TableCounts>;
}

/** What planBatch needs to group events: the canonical key text of an event's key. */
export type KeyIdentity = (event: ChangeEvent) => string;

export const emptyCounts = (): TableCounts => ({
  events: 0,
  byOp: { c: 0, u: 0, d: 0, r: 0, t: 0 },
  superseded: 0,
  duplicates: 0,
  conflicts: 0,
  placeholders: 0,
  snapshot: 0,
  beforeNullUpdates: 0,
  truncated: 0,
});

/**
 * A digest of the content two deliveries of the same change share (position and transport excluded):
 * SHA-256 of the canonical JSON, base64url. Equal digests mean a duplicate; different ones at one
 * position mean a conflict. Stored as `__hash`, so it must stay small.
 */
export function contentHash(event: ChangeEvent): string {
  const canonical = canonicalJson({
    op: event.op,
    before: event.before,
    after: event.after,
    patch: event.patch,
    placeholders: [...event.placeholders].sort(),
  });
  return createHash('sha256').update(canonical).digest('base64url');
}

interface Candidate {
  readonly index: number;
  readonly event: ChangeEvent;
  readonly hash: string;
}

/**
 * Plans one batch.
 *
 * @example
 *   const plan = planBatch(events, (e) => keyId(tableConfig(e.table), e.key));
 *   for (const w of plan.writes) await writer.write(w);
 */
export function planBatch(events: readonly ChangeEvent[], identify: KeyIdentity): BatchPlan {
  const counts = new Map<string, TableCounts>();
  const countsFor = (table: string): TableCounts => {
    let c = counts.get(table);
    if (!c) {
      c = emptyCounts();
      counts.set(table, c);
    }
    return c;
  };

  const truncates = new Map<string, { winner: Candidate; sources: number[] }>();
  const groups = new Map<string, { table: string; keyId: string; items: Candidate[] }>();

  events.forEach((event, index) => {
    const c = countsFor(event.table);
    c.events++;
    c.byOp[event.op]++;
    if (event.snapshot) c.snapshot++;
    if (event.patch || event.placeholders.length > 0) c.placeholders++;
    if (event.op === 'u' && event.before === null) c.beforeNullUpdates++;
    const candidate: Candidate = { index, event, hash: '' };
    if (event.op === 't') {
      const t = truncates.get(event.table);
      if (!t) truncates.set(event.table, { winner: candidate, sources: [index] });
      else {
        t.sources.push(index);
        if (compareTuples(event.position.tuple, t.winner.event.position.tuple) > 0) t.winner = candidate;
      }
      return;
    }
    const id = identify(event);
    const groupKey = `${event.table}\u0000${id}`;
    let g = groups.get(groupKey);
    if (!g) {
      g = { table: event.table, keyId: id, items: [] };
      groups.set(groupKey, g);
    }
    g.items.push({ index, event, hash: contentHash(event) });
  });

  const plannedTruncates: PlannedTruncate[] = [];
  for (const [table, t] of truncates) {
    countsFor(table).superseded += t.sources.length - 1;
    plannedTruncates.push({
      table,
      position: t.winner.event.position,
      encodedPosition: encodePosition(t.winner.event.position.tuple),
      commitTs: t.winner.event.commitTs,
      sources: t.sources,
    });
  }

  const writes: PlannedWrite[] = [];
  const conflicts: Conflict[] = [];
  for (const g of groups.values()) {
    const c = countsFor(g.table);
    const truncate = truncates.get(g.table)?.winner.event.position.tuple;
    // Stable sort: equal positions keep arrival order.
    const ordered = [...g.items].sort((a, b) => compareTuples(a.event.position.tuple, b.event.position.tuple));
    const kept: Candidate[] = [];
    for (const item of ordered) {
      if (truncate && compareTuples(item.event.position.tuple, truncate) < 0) {
        c.truncated++;
        continue;
      }
      const prev = kept[kept.length - 1];
      if (prev && compareTuples(prev.event.position.tuple, item.event.position.tuple) === 0) {
        if (prev.hash === item.hash) c.duplicates++;
        else {
          c.conflicts++;
          conflicts.push({
            table: g.table,
            keyId: g.keyId,
            encodedPosition: encodePosition(item.event.position.tuple),
            kept: prev.index,
            dropped: item.index,
          });
        }
        continue;
      }
      kept.push(item);
    }
    if (kept.length === 0) continue;
    c.superseded += kept.length - 1;
    // Only the last full row or delete and what follows it contribute.
    let anchor = 0;
    kept.forEach((item, i) => {
      if (item.event.op === 'd' || (!item.event.patch && item.event.placeholders.length === 0)) anchor = i;
    });
    const chain: ChainLink[] = kept.slice(anchor).map((item) => ({
      encodedPosition: encodePosition(item.event.position.tuple),
      effect: eventEffect(item.event),
    }));
    const winner = kept[kept.length - 1]!;
    writes.push({
      table: g.table,
      keyId: g.keyId,
      key: winner.event.key,
      effect: foldChain(chain),
      position: winner.event.position,
      encodedPosition: chain[chain.length - 1]!.encodedPosition,
      basePosition: chain[0]!.encodedPosition,
      chain,
      op: winner.event.op,
      commitTs: winner.event.commitTs,
      txid: winner.event.txid,
      snapshot: winner.event.snapshot,
      contentHash: winner.hash,
      sources: g.items.map((i) => i.index),
    });
  }
  return { writes, truncates: plannedTruncates, conflicts, counts };
}

function foldChain(chain: readonly ChainLink[]): Effect {
  let effect: Effect | null = null;
  for (const link of chain) effect = composeEffects(effect, link.effect);
  return effect!;
}

/**
 * Rebuilds a write for a stored row whose position lies inside its chain
 * (`basePosition <= stored < encodedPosition`): only the events newer than the stored row are
 * folded, so nothing the stored row already superseded comes back. Returns null when nothing in
 * the chain is newer than what is stored.
 */
export function rebaseWrite(write: PlannedWrite, storedPosition: string): PlannedWrite | null {
  const chain = write.chain.filter((link) => link.encodedPosition > storedPosition);
  if (chain.length === 0) return null;
  return { ...write, chain, effect: foldChain(chain), basePosition: chain[0]!.encodedPosition };
}
