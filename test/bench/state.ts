/**
 * The expected final state of a workload, folded in memory (highest position per key wins; a
 * delete leaves a tombstone), and a comparison against what a DynamoDB table actually holds.
 */
import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import type { TableConfig } from '../../lib/config/config.js';
import { decodeItem } from '../../functions/adapters/item-codec.js';
import { canonicalJson } from '../../functions/core/json.js';
import { compareTuples, encodePosition } from '../../functions/core/position.js';
import type { ChangeEvent } from '../../functions/core/types.js';

/** One key's expected final row. */
export interface ExpectedRow {
  readonly position: readonly bigint[];
  readonly deleted: boolean;
  /** canonicalJson of the after image, or null for a tombstone. */
  readonly row: string | null;
}

/** keyId → expected final row. */
export type ExpectedState = Map<string, ExpectedRow>;

/** Folds change events (any order, duplicates allowed) into the final state per key. */
export function expectedState(events: readonly ChangeEvent[], identify: (e: ChangeEvent) => string): ExpectedState {
  const state: ExpectedState = new Map();
  for (const e of events) {
    const id = identify(e);
    const prev = state.get(id);
    if (prev && compareTuples(prev.position, e.position.tuple) >= 0) continue;
    state.set(id, { position: e.position.tuple, deleted: e.op === 'd', row: e.op === 'd' ? null : canonicalJson(e.after) });
  }
  return state;
}

/** The outcome of comparing a table with the expected state. */
export interface StateCheck {
  readonly matches: boolean;
  readonly items: number;
  readonly expected: number;
  /** Up to five human-readable differences. */
  readonly differences: string[];
}

/** Scans `target` and compares every item (position, tombstone flag, source columns) with `expected`. */
export async function checkState(client: DynamoDBClient, table: TableConfig, expected: ExpectedState, keyOf: (row: Record<string, unknown>) => string): Promise<StateCheck> {
  const differences: string[] = [];
  const seen = new Set<string>();
  let items = 0;
  let wrong = 0;
  const note = (text: string) => {
    wrong++;
    if (differences.length < 5) differences.push(text);
  };
  for await (const page of paginateScan({ client }, { TableName: table.target, ConsistentRead: true })) {
    for (const item of page.Items ?? []) {
      items++;
      const decoded = decodeItem(table, item);
      const id = keyOf(decoded.row);
      seen.add(id);
      const want = expected.get(id);
      if (!want) {
        note(`${id}: stored but never written`);
        continue;
      }
      const wantPos = encodePosition(want.position);
      if (decoded.position !== wantPos) note(`${id}: position ${decoded.position}, expected ${wantPos}`);
      else if (decoded.deleted !== want.deleted) note(`${id}: deleted=${decoded.deleted}, expected ${want.deleted}`);
      else if (!want.deleted && canonicalJson(decoded.row) !== want.row) note(`${id}: row differs`);
    }
  }
  for (const id of expected.keys()) if (!seen.has(id)) note(`${id}: missing`);
  return { matches: wrong === 0, items, expected: expected.size, differences: wrong > differences.length ? [...differences, `… ${wrong} differences in all`] : differences };
}
