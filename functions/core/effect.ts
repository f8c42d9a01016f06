/**
 * What one change does to a key's row, and how successive changes compose.
 *
 * An event is one of: a full row image, a partial change (only some columns carried: a patch, or
 * a full image with "unchanged" placeholders), or a delete. Folding a key's events in position
 * order gives one {@link Effect}: the one write current state needs.
 */
import { cloneJson } from './json.js';
import type { ChangeEvent, Row } from './types.js';

/**
 * The row is replaced. `missing` lists columns whose value is unknown (a placeholder with no base).
 * `partial` is true when no full image anchors the row (it was rebuilt from partial changes after a
 * delete): columns it does not hold are unknown rather than absent.
 */
export interface PutEffect {
  readonly kind: 'put';
  readonly row: Row;
  readonly missing: readonly string[];
  readonly partial: boolean;
}

/** Only some columns are known; every other stored value must be kept. */
export interface PatchEffect {
  readonly kind: 'patch';
  readonly set: Row;
  readonly unset: readonly string[];
  /** Placeholder columns this batch could not resolve: left to the stored row. */
  readonly unresolved: readonly string[];
}

export interface TombstoneEffect {
  readonly kind: 'tombstone';
}

export type Effect = PutEffect | PatchEffect | TombstoneEffect;

/** The effect of a single event, before any folding. Does not mutate the event. */
export function eventEffect(event: ChangeEvent): Effect {
  if (event.op === 'd') return { kind: 'tombstone' };
  const placeholders = new Set(event.placeholders);
  if (event.patch) {
    const set = withoutColumns(event.patch.set, placeholders);
    return { kind: 'patch', set, unset: [...event.patch.unset], unresolved: [...placeholders] };
  }
  const after = event.after ?? {};
  if (placeholders.size > 0) {
    return { kind: 'patch', set: withoutColumns(after, placeholders), unset: [], unresolved: [...placeholders] };
  }
  return { kind: 'put', row: cloneJson(after), missing: [], partial: false };
}

function withoutColumns(row: Row, drop: ReadonlySet<string>): Row {
  const out: Row = {};
  for (const [col, value] of Object.entries(row)) {
    // defineProperty, not assignment: a column named `__proto__` would otherwise set the prototype.
    if (!drop.has(col)) Object.defineProperty(out, col, { value: cloneJson(value), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const minus = (cols: Iterable<string>, ...drop: Iterable<string>[]): string[] => {
  const dropSet = new Set<string>();
  for (const d of drop) for (const c of d) dropSet.add(c);
  return [...new Set(cols)].filter((c) => !dropSet.has(c)).sort();
};

/**
 * Applies `next` on top of `base` (which may be null: nothing known yet).
 * - a full row or a delete replaces whatever came before;
 * - a partial change on a replaced row fills the row; on a tombstone it starts a new, partial row
 *   (the re-insert was never seen) whose unresolved placeholders are missing; on an unknown base it
 *   stays a patch.
 */
export function composeEffects(base: Effect | null, next: Effect): Effect {
  if (next.kind !== 'patch' || base === null) return next;
  switch (base.kind) {
    case 'put': {
      const row: Row = { ...base.row, ...next.set };
      for (const col of next.unset) delete row[col];
      return { kind: 'put', row, missing: patchMissing(base, next), partial: base.partial };
    }
    case 'tombstone': {
      const row: Row = { ...next.set };
      return { kind: 'put', row, missing: minus(next.unresolved, Object.keys(row)), partial: true };
    }
    case 'patch': {
      const set: Row = { ...base.set, ...next.set };
      for (const col of next.unset) delete set[col];
      const unset = minus([...base.unset, ...next.unset], Object.keys(next.set));
      // A placeholder the earlier events already carried is resolved; one they did not stays open.
      const unresolved = minus([...base.unresolved, ...minus(next.unresolved, Object.keys(base.set))], Object.keys(next.set), next.unset);
      return { kind: 'patch', set, unset, unresolved };
    }
  }
}

/**
 * Missing columns after a patch on a row: the row's own missing columns the patch does not touch,
 * plus — when no full image anchors the row — the patch's unresolved placeholders that the row,
 * after the patch's removals, does not hold.
 */
export function patchMissing(
  base: { readonly row: Row; readonly missing: readonly string[]; readonly partial: boolean },
  patch: PatchEffect,
): string[] {
  const unset = new Set(patch.unset);
  const opened = base.partial ? patch.unresolved.filter((c) => !(c in patch.set) && (unset.has(c) || !(c in base.row))) : [];
  return [...new Set([...minus(base.missing, Object.keys(patch.set), patch.unset), ...opened])].sort();
}
