/**
 * Alibaba Canal flat messages (`canal.mq.flatMessage=true`).
 *
 * - One message is one binlog rows event and may carry many rows: one ChangeEvent per `data[i]`.
 * - All column values are strings (or null) and are kept as delivered; key values are coerced to
 *   the declared key type later, by the caller.
 * - Ops: `INSERT` → `c`; `UPDATE` → `u` with `before = {...data[i], ...old[i]}` (`old[i]` holds only
 *   the changed columns); `DELETE` → `d` with `before = data[i]`. `isDdl: true` → ControlEvent
 *   `schema`, except `TRUNCATE`, which becomes a `t` ChangeEvent for the table (MySQL emits no row
 *   events for a truncate). Canal has no snapshot reads.
 * - Position: Canal carries no binlog position (the maintainers say to rely on MQ partition order),
 *   so events take `transportPosition(offset, rowIndex)`: weak ordering.
 * - commitTs: `es` (binlog time, ms with second resolution; `ts` is Canal's build time). txid: `gtid`
 *   when non-empty.
 */
import { DecodeError } from '../errors.js';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue } from '../json.js';
import { transportPosition } from '../position.js';
import { transportSequence } from './shared.js';
import type { ChangeEvent, ControlEvent, FormatDecoder, InboundMessage, Key, NormalizedEvent, RowOp } from '../types.js';

const FORMAT = 'canal';
const ROW_OPS: Readonly<Record<string, RowOp>> = { INSERT: 'c', UPDATE: 'u', DELETE: 'd' };

function msOf(v: JsonValue | undefined): number | null {
  if (typeof v === 'number') return v;
  if (isLosslessNumber(v)) return Number(v.value);
  return null;
}

function keyOf(pkNames: JsonValue | undefined, row: JsonObject): Key {
  const key: Key = {};
  if (!Array.isArray(pkNames)) return key;
  for (const col of pkNames) {
    if (typeof col === 'string' && row[col] !== undefined) key[col] = row[col]!;
  }
  return key;
}

function rowAt(list: JsonValue | undefined, i: number, field: string): JsonObject | null {
  if (list === undefined || list === null) return null;
  if (!Array.isArray(list)) throw new DecodeError('bad-field', `canal "${field}" must be an array of row objects`);
  const row = list[i];
  if (row === undefined || row === null) return null;
  if (!isJsonObject(row)) throw new DecodeError('bad-field', `canal "${field}[${i}]" must be a row object`);
  return row;
}

/** Decoder for Canal flat JSON messages. */
export const canal: FormatDecoder = {
  name: FORMAT,
  ordering: 'transport',
  shape: '{id, database, table, pkNames, isDdl, type: INSERT|UPDATE|DELETE|…, es, ts, data: [{…}], old: [{…}]|null, gtid?}',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    return isJsonObject(v) && typeof v.isDdl === 'boolean' && typeof v.type === 'string' && typeof v.database === 'string' && 'table' in v;
  },
  decode(message: InboundMessage): NormalizedEvent[] {
    const value = message.value;
    if (!isJsonObject(value)) throw new DecodeError('bad-shape', 'canal message value must be a JSON object');
    const { database, table: tableName, type } = value;
    if (typeof database !== 'string' || typeof type !== 'string') {
      throw new DecodeError('missing-field', 'canal message must have string "database" and "type"');
    }
    const table = typeof tableName === 'string' && tableName !== '' ? `${database}.${tableName}` : null;
    const seq = transportSequence(message);
    const commitTs = msOf(value.es);
    const txid = typeof value.gtid === 'string' && value.gtid !== '' ? value.gtid : null;

    if (value.isDdl === true) {
      if (type === 'TRUNCATE' && table !== null) {
        const truncate: ChangeEvent = {
          kind: 'change',
          format: FORMAT,
          op: 't',
          table,
          key: {},
          before: null,
          after: null,
          patch: null,
          placeholders: [],
          position: transportPosition(seq, 0n),
          txid,
          commitTs,
          snapshot: false,
        };
        return [truncate];
      }
      const detail: JsonObject = { type };
      if (typeof value.sql === 'string') detail.sql = value.sql;
      const ddl: ControlEvent = { kind: 'control', format: FORMAT, control: 'schema', table, position: transportPosition(seq, 0n), txid, commitTs, detail };
      return [ddl];
    }

    const op = ROW_OPS[type];
    if (op === undefined) throw new DecodeError('bad-op', `canal row message "type" must be INSERT, UPDATE or DELETE; got "${type}"`);
    if (table === null) throw new DecodeError('missing-field', `canal ${type} message must name its "table"`);
    const data = value.data;
    if (!Array.isArray(data) || data.length === 0) {
      throw new DecodeError('missing-field', `canal ${type} message must carry a non-empty "data" array of rows`);
    }
    return data.map((_, i): ChangeEvent => {
      const row = rowAt(data, i, 'data');
      if (row === null) throw new DecodeError('bad-field', `canal "data[${i}]" must be a row object`);
      let before: JsonObject | null = null;
      if (op === 'd') before = row;
      else if (op === 'u') {
        const old = rowAt(value.old, i, 'old');
        before = old === null ? null : { ...row, ...old };
      }
      return {
        kind: 'change',
        format: FORMAT,
        op,
        table,
        key: keyOf(value.pkNames, row),
        before,
        after: op === 'd' ? null : row,
        patch: null,
        placeholders: [],
        position: transportPosition(seq, BigInt(i)),
        txid,
        commitTs,
        snapshot: false,
      };
    });
  },
};
