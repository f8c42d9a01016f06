/**
 * The drift section's arithmetic (functions/jobs/snapshot/drift.ts) and how snapshot-check prints
 * it: changes since the previous report counted from the schema row's running counts, positions in
 * the source's notation, the incompatible change named.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { driftLines, snapshotJsonLines } from '../../../../../bin/cli/snapshot-check.js';
import { encodePosition } from '../../../../../functions/core/position.js';
import type { SchemaChange, SchemaState } from '../../../../../functions/core/schema-drift.js';
import { driftOf, driftSeenOf, schemaOfRow } from '../../../../../functions/jobs/snapshot/drift.js';
import type { SnapshotReport, TableSnapshotResult } from '../../../../../functions/jobs/snapshot/types.js';

const P = (lsn: number) => encodePosition([BigInt(lsn - 4), BigInt(lsn)]);
const change = (kind: SchemaChange['kind'], column: string, lsn: number, o: Partial<SchemaChange> = {}): SchemaChange => ({ kind, column, position: P(lsn), commitTs: 1_764_483_600_000 + lsn, basis: 'rows', holds: true, ...o });
const stateOf = (changes: SchemaChange[], total = changes.length, incompatible = changes.filter((c) => !c.holds).length): SchemaState => ({ since: P(8), columns: [], changes, ddl: [], total, incompatible });
const CHANGES = [change('added', 'coupon', 0x16b3748, { to: 'string' }), change('removed', 'coupon', 0x16b3750, { from: 'string' }), change('type-changed', 'total', 0x16b3758, { from: 'number', to: 'string', holds: false })];

describe('snapshot drift section', () => {
  it('reads the previous report counts and the schema row; refuses what it cannot read', () => {
    assert.equal(driftSeenOf(undefined), null);
    assert.equal(driftSeenOf({ runId: 'r', lastRunAt: 5 }), null, 'a row written before drift was reported');
    assert.deepEqual(driftSeenOf({ runId: 'r', lastRunAt: 5, schemaChanges: 2, schemaIncompatible: '1' }), { changes: 2, incompatible: 1, runId: 'r', at: 5 });
    assert.equal(driftSeenOf({ schemaChanges: -1, schemaIncompatible: 0 }), null);
    assert.equal(schemaOfRow({ schema: '{not json' }), undefined);
    assert.equal(schemaOfRow({ schema: '{"since":"x"}' }), undefined);
    assert.deepEqual(schemaOfRow({ schema: JSON.stringify(stateOf(CHANGES)) })?.total, 3);
  });

  it('lists the changes since the previous report, oldest first, and whether one the target cannot hold is among them', () => {
    const all = driftOf(stateOf(CHANGES), null);
    assert.deepEqual(all.changes.map((c) => c.kind), ['added', 'removed', 'type-changed']);
    assert.equal(all.hasIncompatible, true);
    assert.equal(all.changes[0]?.commitTime, new Date(1_764_483_600_000 + 0x16b3748).toISOString());
    const since = driftOf(stateOf(CHANGES), { changes: 1, incompatible: 0, runId: 'prev', at: 0 });
    assert.deepEqual(since.changes.map((c) => c.column + c.kind), ['couponremoved', 'totaltype-changed']);
    assert.deepEqual(since.previous, { runId: 'prev', at: new Date(0).toISOString() });
    const none = driftOf(stateOf(CHANGES), { changes: 3, incompatible: 1, runId: 'prev', at: null });
    assert.deepEqual([none.changes, none.unlisted, none.incompatible, none.hasIncompatible], [[], 0, 0, false]);
    const unrecorded = driftOf(undefined, null);
    assert.equal(unrecorded.recorded, false);
  });

  it('snapshot-check prints each change at its position in the source notation and names the incompatible one; --json has a line per change', () => {
    const t: TableSnapshotResult = {
      table: 'public.orders',
      resnapshotReads: 0,
      snapshot: null,
      orphans: { count: 0, tombstoned: 0, failed: 0, keys: [] },
      anomalies: [],
      readUnits: 0,
      held: null,
      drift: { ...driftOf(stateOf(CHANGES), null), notation: { format: 'debezium-postgresql', ordering: 'source' } },
    };
    const lines = driftLines(t);
    assert.match(lines[0] ?? '', /schema: 3 changes recorded so far \(first report\), 1 the target cannot hold/);
    assert.match(lines[1] ?? '', /added coupon string at LSN 0\/16B3748, committed /);
    assert.match(lines[2] ?? '', /removed coupon string at LSN 0\/16B3750/);
    assert.match(lines[3] ?? '', /type-changed total number -> string at LSN 0\/16B3758.*: the target cannot hold it as before/);
    const report: SnapshotReport = { job: 'snapshot', runId: 'r', startedAt: '', finishedAt: '', apply: false, tables: [t], findings: 1, drift: { changes: 3, incompatible: 1, tables: 1 }, held: [], report: 's3://b/k' };
    const json = snapshotJsonLines(report, 1).map((l) => JSON.parse(l) as { kind?: string; detail?: { change: string; at: string; holds: boolean }; summary?: { drift: unknown } });
    assert.deepEqual(json.slice(0, 3).map((l) => [l.kind, l.detail?.change, l.detail?.at, l.detail?.holds]), [
      ['schema-change', 'added', 'LSN 0/16B3748', true],
      ['schema-change', 'removed', 'LSN 0/16B3750', true],
      ['schema-change', 'type-changed', 'LSN 0/16B3758', false],
    ]);
    assert.deepEqual(json.at(-1)?.summary?.drift, { changes: 3, incompatible: 1, tables: 1 });
    assert.deepEqual(driftLines({ ...t, drift: driftOf(undefined, null) }), ['    schema: none recorded yet']);
  });
});
