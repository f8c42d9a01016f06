/**
 * The reference every convergence property compares with: a key's events applied one at a time,
 * in position order, from nothing, with the merge rule written out plainly (no planBatch, no
 * stored-row rule), so the properties prove the production code against an independent fold.
 */
import type { ChangeEvent, Row } from '../../functions/core/types.js';

export interface State {
  row: Row;
  deleted: boolean;
  missing: string[];
  partial: boolean;
  position: bigint[];
}

/** The reference: apply a key's events one at a time, in position order, from nothing. */
export function sequentialFold(events: ChangeEvent[]): State | null {
  let st: State | null = null;
  for (const e of events) {
    const position = [...e.position.tuple];
    if (e.op === 'd') {
      st = { row: {}, deleted: true, missing: [], partial: false, position };
      continue;
    }
    const carried: Row = e.patch ? { ...e.patch.set } : { ...(e.after ?? {}) };
    for (const c of e.placeholders) delete carried[c];
    const unset = e.patch ? e.patch.unset : [];
    if (!e.patch && e.placeholders.length === 0) {
      st = { row: carried, deleted: false, missing: [], partial: false, position };
    } else if (st === null || st.deleted) {
      const missing = e.placeholders.filter((c) => !(c in carried)).sort();
      st = { row: carried, deleted: false, missing, partial: true, position };
    } else {
      const row: Row = { ...st.row, ...carried };
      for (const c of unset) delete row[c];
      const drop = new Set([...Object.keys(carried), ...unset]);
      const missing: Set<string> = new Set(st.missing.filter((c) => !drop.has(c)));
      if (st.partial) for (const c of e.placeholders) if (!(c in st.row) && !drop.has(c)) missing.add(c);
      st = { row, deleted: false, missing: [...missing].sort(), partial: st.partial, position };
    }
  }
  return st;
}
