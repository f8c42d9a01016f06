/** Factories for normalized change events in tests. */
import { sourcePosition } from '../../functions/core/position.js';
import type { ChangeEvent } from '../../functions/core/types.js';

export function change(overrides: Partial<ChangeEvent> & Pick<ChangeEvent, 'op'>): ChangeEvent {
  return {
    kind: 'change',
    format: 'test',
    table: 'public.t',
    key: { id: 1 },
    before: null,
    after: overrides.op === 'd' ? null : { id: 1 },
    patch: null,
    placeholders: [],
    position: sourcePosition(1n),
    txid: null,
    commitTs: 1_700_000_000_000,
    snapshot: false,
    ...overrides,
  };
}

export const pos = (...tuple: number[]) => sourcePosition(...tuple.map(BigInt));
