/**
 * Orphans after a complete snapshot (`detect-orphans` rows): each candidate's item is read (a
 * consistent GetItem: orphans are few), and one already gone or tombstoned at or above the
 * snapshot's end position is not an orphan any more (a run with `apply` tombstoned it, or a delete
 * arrived since); the rest are counted per table and, with `apply`,
 * tombstoned through the ingest's guarded writer at the snapshot's end position, so a row that
 * changed since (a higher position) is never touched and a redelivered older change cannot revive
 * the row.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { errorMessage } from '../../core/errors.js';
import { isJsonObject, type JsonObject, parseJson } from '../../core/json.js';
import { normalizeKey } from '../../core/keys.js';
import { decodeItem, keyAttributes } from '../../adapters/item-codec.js';
import { planBatch } from '../../core/plan.js';
import { decodePosition } from '../../core/position.js';
import type { ChangeEvent } from '../../core/types.js';
import { type JobDeps, tableConfig } from '../deps.js';
import type { TableSnapshotResult } from './types.js';

/** Keys of orphans listed in a report (the count is always complete). */
export const MAX_LISTED_KEYS = 1000;

export interface OrphanRow {
  readonly source_table: string;
  /** Null on the row that only names the table's snapshot. */
  readonly key_id: string | null;
  readonly key_json: string | null;
  readonly position: string | null;
  readonly snapshot_start: number | string;
  readonly snapshot_end_position: string;
  readonly snapshot_keys: number | string;
}

export interface TableOrphans {
  readonly snapshot: TableSnapshotResult['snapshot'];
  readonly orphans: { count: number; tombstoned: number; failed: number; keys: string[] };
  readUnits: number;
}

/** The stored item of a key: absent, or its position and tombstone flag. */
async function storedState(deps: JobDeps, source: string, keyText: string): Promise<{ gone: boolean; deleted: boolean; position: string; readUnits: number }> {
  const table = tableConfig(deps.config, source);
  const key = parseJson(keyText);
  if (!isJsonObject(key)) return { gone: false, deleted: false, position: '', readUnits: 0 };
  const got = await deps.dynamodb.send(new GetItemCommand({ TableName: table.target, Key: keyAttributes(table, normalizeKey(table, key as JsonObject)), ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
  const readUnits = got.ConsumedCapacity?.CapacityUnits ?? 0;
  if (!got.Item) return { gone: true, deleted: false, position: '', readUnits };
  const decoded = decodeItem(table, got.Item);
  return { gone: false, deleted: decoded.deleted, position: decoded.position, readUnits };
}

/** A delete of the key at `position`, planned and written by the guarded writer; its outcome. */
export async function tombstone(deps: JobDeps, source: string, keyText: string, position: string): Promise<string> {
  const key = parseJson(keyText);
  if (!isJsonObject(key)) return 'failed: key is not an object';
  const event: ChangeEvent = {
    kind: 'change',
    format: 'tidemark-orphan',
    op: 'd',
    table: source,
    key,
    before: null,
    after: null,
    patch: null,
    placeholders: [],
    position: { tuple: decodePosition(position), strength: 'source' },
    txid: null,
    commitTs: null,
    snapshot: true,
  };
  const write = planBatch([event], (e) => deps.normalizer.keyIdOf(e)).writes[0];
  if (!write) return 'failed: nothing planned';
  return (await deps.writer.write(write)).outcome;
}

export async function tombstoneOrphans(deps: JobDeps, run: { readonly apply: boolean; readonly runId: string }, rows: AsyncIterable<OrphanRow>): Promise<Map<string, TableOrphans>> {
  const out = new Map<string, TableOrphans>();
  for await (const row of rows) {
    let t = out.get(row.source_table);
    if (!t) {
      t = { snapshot: { startPosition: '', endPosition: row.snapshot_end_position, keys: Number(row.snapshot_keys) }, orphans: { count: 0, tombstoned: 0, failed: 0, keys: [] }, readUnits: 0 };
      out.set(row.source_table, t);
    }
    if (row.key_id === null || row.key_json === null) continue;
    const stored = await storedState(deps, row.source_table, row.key_json);
    t.readUnits += stored.readUnits;
    if (stored.gone || (stored.deleted && stored.position >= row.snapshot_end_position)) continue;
    t.orphans.count++;
    if (t.orphans.keys.length < MAX_LISTED_KEYS) t.orphans.keys.push(row.key_json);
    if (!run.apply) continue;
    const outcome = await tombstone(deps, row.source_table, row.key_json, row.snapshot_end_position).catch((err: unknown) => `failed: ${errorMessage(err)}`);
    if (outcome === 'applied') t.orphans.tombstoned++;
    else {
      t.orphans.failed++;
      deps.log.warn('orphan not tombstoned', { table: row.source_table, keyHash: deps.keyRef(row.source_table, row.key_id), position: row.snapshot_end_position, outcome });
    }
  }
  return out;
}
