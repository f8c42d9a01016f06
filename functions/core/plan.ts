/**
 * planBatch: decide, for one batch of normalized change events, the one write per (table, key)
 * that current state needs (docs/contract.md, "the merge rule"). Pure: no I/O, inputs never mutated.
 *
 * Per key, events are taken in position order (arrival order breaks ties):
 * - equal position and equal content: a duplicate, dropped and counted;
 * - equal position and different content: a conflict, the later arrival is dropped, counted and
 *   reported — never applied silently;
 * - the rest fold forward (see effect.ts), so a winning update that carries placeholders or is a
 *   patch takes the missing columns from earlier events of the same batch. Every event but the
 *   highest-positioned one is counted as superseded.
 * A truncate becomes a table watermark: events of that table below it are superseded.
 *
 * With cut points (transactions applied whole, core/transactions.ts), a key's chain is cut after
 * each cut position: the key gets one write per segment, each folding only its own segment's
 * events (from the segment's last full row or delete), to be applied in order. Every kept event
 * but each segment's newest is superseded.
 */
import * as crypto from 'node:crypto';
import { composeEffects, type Effect, eventEffect } from './effect.js';
import { canonicalJson } from './json.js';
import { compareTuples, encodePosition, type Position } from './position.js';
import type { CutPoints } from './transactions.js';
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
  /** Columns the chain carries as exact decimal text (over 38 significant digits): stored as `__decimalText`. */
  readonly decimalText?: readonly string[];
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

/** The identity of events already computed (the ingest computes both for the raw lines): planBatch reuses them. */
export interface KnownIdentity {
  keyId(index: number): string | undefined;
  hash(index: number): string | undefined;
}

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

/** Characters of the stored digest: 22 base64url characters, the first 132 bits of SHA-256. */
export const CONTENT_HASH_LENGTH = 22;
/** Length of the digests stored before they were shortened (all 256 bits, 43 characters). */
const LEGACY_HASH_LENGTH = 43;

/**
 * The canonical JSON of the content two deliveries of the same change share (position and
 * transport excluded): `canonicalJson({op, before, after, patch, placeholders: sorted})`, written
 * directly in its sorted key order. Byte-identical to the object form, so digests of stored rows
 * stay comparable.
 */
export function contentCanonical(event: ChangeEvent): string {
  const placeholders = event.placeholders.length < 2 ? event.placeholders : [...event.placeholders].sort();
  return `{"after":${canonicalJson(event.after)},"before":${canonicalJson(event.before)},"op":${canonicalJson(event.op)},"patch":${canonicalJson(event.patch)},"placeholders":${canonicalJson(placeholders)}}`;
}

/**
 * A digest of the content two deliveries of the same change share: the SHA-256 of
 * {@link contentCanonical}, base64url, cut to its first 22 characters (132 bits: a collision needs
 * about 2^66 events of one key at one position). Equal digests mean a duplicate; different ones at
 * one position mean a conflict. Stored as `__hash` on every item, so it is kept short; it is a
 * prefix of the 43-character digest stored before, see {@link sameContent}.
 */
export function contentHash(event: ChangeEvent): string {
  return sha256Base64url(contentCanonical(event)).slice(0, CONTENT_HASH_LENGTH);
}

type OneShotHash = (algorithm: string, data: string, encoding: 'base64url') => string;
/** `crypto.hash` (Node ≥ 20.12, 22): one call, no Hash object per digest. */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;
const sha256Base64url = (text: string): string => (oneShot ? oneShot('sha256', text, 'base64url') : crypto.createHash('sha256').update(text).digest('base64url'));

/**
 * Whether a stored `__hash` and a planned one name the same content. A row stored before the
 * digest was shortened holds all 43 characters, of which the short digest is the prefix.
 */
export function sameContent(stored: string, planned: string): boolean {
  if (stored === planned) return true;
  return stored.length === LEGACY_HASH_LENGTH && planned.length === CONTENT_HASH_LENGTH && stored.startsWith(planned);
}

interface Candidate {
  readonly index: number;
  readonly event: ChangeEvent;
  /** The content digest, computed only when needed: for a write's winner or a position tie. */
  hash: string | null;
}

const hashOf = (c: Candidate): string => {
  if (c.hash === null) c.hash = contentHash(c.event);
  return c.hash;
};

const byPosition = (a: Candidate, b: Candidate): number => compareTuples(a.event.position.tuple, b.event.position.tuple);

/** Whether items are already in position order (the common case: a shard delivers in order). */
function inPositionOrder(items: readonly Candidate[]): boolean {
  for (let i = 1; i < items.length; i++) if (byPosition(items[i - 1] as Candidate, items[i] as Candidate) > 0) return false;
  return true;
}

interface Group {
  readonly table: string;
  readonly keyId: string;
  readonly items: Candidate[];
}

/**
 * Plans one batch.
 *
 * @example
 *   const plan = planBatch(events, (e) => keyId(tableConfig(e.table), e.key));
 *   for (const w of plan.writes) await writer.write(w);
 */
export function planBatch(events: readonly ChangeEvent[], identify: KeyIdentity, known?: KnownIdentity, cuts?: CutPoints): BatchPlan {
  const counts = new Map<string, TableCounts>();
  const truncates = new Map<string, TruncateGroup>();
  // Groups by table, then by key id (no joined string per event); `groups` keeps first-arrival order.
  const byTable = new Map<string, Map<string, Group>>();
  const groups: Group[] = [];

  for (let index = 0; index < events.length; index++) {
    const event = events[index] as ChangeEvent;
    countEvent(countsFor(counts, event.table), event);
    const candidate: Candidate = { index, event, hash: known?.hash(index) ?? null };
    if (event.op === 't') addTruncate(truncates, candidate);
    else addToGroup(byTable, groups, candidate, known?.keyId(index) ?? identify(event));
  }

  const plannedTruncates: PlannedTruncate[] = [];
  for (const [table, t] of truncates) {
    countsFor(counts, table).superseded += t.sources.length - 1;
    plannedTruncates.push(plannedTruncate(table, t));
  }

  const writes: PlannedWrite[] = [];
  const conflicts: Conflict[] = [];
  for (const g of groups) {
    const truncate = truncates.get(g.table)?.winner.event.position.tuple;
    const cutAt = cuts?.(g.table, g.keyId);
    if (cutAt !== undefined && cutAt.size > 0) writes.push(...planSegments(g, countsFor(counts, g.table), truncate, conflicts, cutAt));
    else {
      const write = planGroup(g, countsFor(counts, g.table), truncate, conflicts);
      if (write) writes.push(write);
    }
  }
  return { writes, truncates: plannedTruncates, conflicts, counts };
}

/** The truncates of one table in a batch: the latest wins, every one is a source. */
interface TruncateGroup {
  winner: Candidate;
  sources: number[];
}

function countsFor(counts: Map<string, TableCounts>, table: string): TableCounts {
  let c = counts.get(table);
  if (!c) {
    c = emptyCounts();
    counts.set(table, c);
  }
  return c;
}

function countEvent(c: TableCounts, event: ChangeEvent): void {
  c.events++;
  c.byOp[event.op]++;
  if (event.snapshot) c.snapshot++;
  if (event.patch || event.placeholders.length > 0) c.placeholders++;
  if (event.op === 'u' && event.before === null) c.beforeNullUpdates++;
}

function addTruncate(truncates: Map<string, TruncateGroup>, candidate: Candidate): void {
  const { event, index } = candidate;
  const t = truncates.get(event.table);
  if (!t) {
    truncates.set(event.table, { winner: candidate, sources: [index] });
    return;
  }
  t.sources.push(index);
  if (compareTuples(event.position.tuple, t.winner.event.position.tuple) > 0) t.winner = candidate;
}

function addToGroup(byTable: Map<string, Map<string, Group>>, groups: Group[], candidate: Candidate, id: string): void {
  const table = candidate.event.table;
  let perKey = byTable.get(table);
  if (perKey === undefined) {
    perKey = new Map();
    byTable.set(table, perKey);
  }
  const g = perKey.get(id);
  if (g) {
    g.items.push(candidate);
    return;
  }
  const group: Group = { table, keyId: id, items: [candidate] };
  perKey.set(id, group);
  groups.push(group);
}

function plannedTruncate(table: string, t: TruncateGroup): PlannedTruncate {
  return {
    table,
    position: t.winner.event.position,
    encodedPosition: encodePosition(t.winner.event.position.tuple),
    commitTs: t.winner.event.commitTs,
    sources: t.sources,
  };
}

/** The one write of a key, or null when a truncate of the batch supersedes all its events. */
function planGroup(g: Group, c: TableCounts, truncate: readonly bigint[] | undefined, conflicts: Conflict[]): PlannedWrite | null {
  const kept = keepDistinct(g, positionOrdered(g), c, truncate, conflicts);
  if (kept.length === 0) return null;
  c.superseded += kept.length - 1;
  const sources: number[] = new Array(g.items.length);
  for (let i = 0; i < g.items.length; i++) sources[i] = (g.items[i] as Candidate).index;
  return segmentWrite(g, kept, sources);
}

/** Stable sort: equal positions keep arrival order. `items` itself stays in arrival order. */
const positionOrdered = (g: Group): readonly Candidate[] => (g.items.length === 1 || inPositionOrder(g.items) ? g.items : [...g.items].sort(byPosition));

/**
 * A key's writes when its chain is cut: one per segment, a segment ending at each cut position (and
 * the last one at the newest event). Each write's sources are the events at its segment's
 * positions, duplicates and conflicts included; events a truncate superseded go with the first.
 */
function planSegments(g: Group, c: TableCounts, truncate: readonly bigint[] | undefined, conflicts: Conflict[], cutAt: ReadonlySet<string>): PlannedWrite[] {
  const kept = keepDistinct(g, positionOrdered(g), c, truncate, conflicts);
  const segments: Candidate[][] = [];
  let current: Candidate[] = [];
  for (const item of kept) {
    current.push(item);
    if (cutAt.has(encodePosition(item.event.position.tuple))) {
      segments.push(current);
      current = [];
    }
  }
  if (current.length > 0) segments.push(current);
  c.superseded += kept.length - segments.length;
  const ends = segments.map((s) => (s[s.length - 1] as Candidate).event.position.tuple);
  const sources: number[][] = segments.map(() => []);
  for (const item of g.items) {
    const at = ends.findIndex((end) => compareTuples(item.event.position.tuple, end) <= 0);
    sources[at === -1 ? sources.length - 1 : at]?.push(item.index);
  }
  return segments.map((s, i) => segmentWrite(g, s, sources[i] ?? []));
}

/** The write of position-ordered distinct events `kept` (not empty): only the last full row or delete and what follows it contribute. */
function segmentWrite(g: Group, kept: readonly Candidate[], sources: readonly number[]): PlannedWrite {
  const winner = kept[kept.length - 1] as Candidate;
  const anchor = anchorOf(kept);
  const chain: ChainLink[] = [];
  const decimalText = new Set<string>();
  for (let i = anchor; i < kept.length; i++) {
    const e = (kept[i] as Candidate).event;
    chain.push({ encodedPosition: encodePosition(e.position.tuple), effect: eventEffect(e) });
    for (const column of e.decimalText ?? []) decimalText.add(column);
  }
  const last = chain[chain.length - 1] as ChainLink;
  return {
    table: g.table,
    keyId: g.keyId,
    key: winner.event.key,
    effect: chain.length === 1 ? last.effect : foldChain(chain),
    position: winner.event.position,
    encodedPosition: last.encodedPosition,
    basePosition: (chain[0] as ChainLink).encodedPosition,
    chain,
    op: winner.event.op,
    commitTs: winner.event.commitTs,
    txid: winner.event.txid,
    snapshot: winner.event.snapshot,
    contentHash: hashOf(winner),
    sources,
    ...(decimalText.size > 0 ? { decimalText: [...decimalText].sort() } : {}),
  };
}

/**
 * The events of a key in position order without those a truncate of the batch supersedes, and one
 * event per position: a same-content repeat is a duplicate, a different one a conflict (first kept).
 */
function keepDistinct(g: Group, ordered: readonly Candidate[], c: TableCounts, truncate: readonly bigint[] | undefined, conflicts: Conflict[]): Candidate[] {
  const kept: Candidate[] = [];
  for (const item of ordered) {
    if (truncate && compareTuples(item.event.position.tuple, truncate) < 0) {
      c.truncated++;
      continue;
    }
    const prev = kept[kept.length - 1];
    if (prev && compareTuples(prev.event.position.tuple, item.event.position.tuple) === 0) {
      if (hashOf(prev) === hashOf(item)) c.duplicates++;
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
  return kept;
}

/** The index of the last full row or delete in `kept` (0 when every event is partial). */
function anchorOf(kept: readonly Candidate[]): number {
  for (let i = kept.length - 1; i >= 0; i--) {
    const e = (kept[i] as Candidate).event;
    if (e.op === 'd' || (!e.patch && e.placeholders.length === 0)) return i;
  }
  return 0;
}

function foldChain(chain: readonly ChainLink[]): Effect {
  let effect: Effect | null = null;
  for (const link of chain) effect = composeEffects(effect, link.effect);
  if (effect === null) throw new RangeError('a write chain holds at least one event');
  return effect;
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
  return { ...write, chain, effect: foldChain(chain), basePosition: (chain[0] as ChainLink).encodedPosition };
}
