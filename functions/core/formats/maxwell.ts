/**
 * Maxwell's daemon (MySQL binlog → JSON).
 *
 * - Table: `<database>.<table>`.
 * - Ops: `insert` → `c`, `update` → `u` with `before = {...data, ...old}` (`old` holds the previous
 *   values of the changed columns only), `delete` → `d` with `before = data`. `bootstrap-insert` → `r`
 *   (snapshot); `bootstrap-start` / `bootstrap-complete` → ControlEvent `control`; DDL types
 *   (`table-create`, `table-alter`, `database-create`, …) → ControlEvent `schema`.
 * - Position: with `output_binlog_position=true`, `position` = `"<binlog file>:<offset>"` gives the
 *   source order `(file number, offset, xoffset)`; `xoffset` (row index inside the transaction,
 *   `output_xoffset=true`) is absent on the commit row and then counts as 0. Without `position`
 *   (Maxwell's default) the event falls back to transport order (weak). Bootstrap rows get no
 *   position (NO_POSITION): they only fill keys the stream has not touched.
 *   The file number only orders events of one MySQL server: a failover to another server breaks it.
 * - commitTs: `ts` (binlog time, seconds) × 1000. txid: `xid` as text.
 * - Key: `primary_key` + `primary_key_columns` (output_primary_key), else the Kafka key: the default
 *   object form `{"database","table","pk.<col>":v}` (the `pk.` prefix is stripped; `_uuid` of a
 *   PK-less table is ignored) or the array form `["db","table",[{col:v}]]`.
 */
import { isJsonObject, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import { MAX_ELEMENT_DIGITS, NO_POSITION, type Position, sourcePosition } from '../position.js';
import type { FormatDecoder, InboundMessage, Key, NormalizedEvent, RowOp } from '../types.js';
import { binlogFileNo, changeEvent, controlEvent, decodeError, describe, lookup, msOf, put, textOf, transportOrder } from './kit.js';

const isDigits = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
};

const FORMAT = 'maxwell';
const ROW_OPS: Readonly<Record<string, RowOp>> = { insert: 'c', update: 'u', delete: 'd', 'bootstrap-insert': 'r' };
const BOOTSTRAP_CONTROL = new Set(['bootstrap-start', 'bootstrap-complete']);
const DDL_TYPE = /^(table|database|view)-[a-z]+$/;

/** Source position `(file#, offset, xoffset)` from `position: "master.000006:800911"`, or null when absent. */
function binlogPosition(value: JsonObject): Position | null {
  const position = value.position;
  if (position === undefined || position === null) return null;
  const cut = typeof position === 'string' ? position.lastIndexOf(':') : -1;
  const fileName = typeof position === 'string' && cut > 0 ? position.slice(0, cut) : undefined;
  const offset = typeof position === 'string' && cut > 0 ? position.slice(cut + 1) : undefined;
  if (fileName === undefined || offset === undefined || offset === '' || offset.length > MAX_ELEMENT_DIGITS || !isDigits(offset)) {
    throw decodeError('bad-position', `maxwell "position" must be "<binlog file>:<offset>", got ${describe(position)}`);
  }
  const file = binlogFileNo(fileName, 'the maxwell "position" file');
  if (file === null) throw decodeError('bad-position', `maxwell "position": binlog file name has no numeric suffix: ${describe(fileName)}`);
  let xoffset = 0n;
  if (value.xoffset !== undefined && value.xoffset !== null) {
    const x = toBigInt(value.xoffset);
    if (x === undefined || x < 0n) throw decodeError('bad-position', `maxwell "xoffset" must be an unsigned integer, got ${JSON.stringify(value.xoffset)}`);
    xoffset = x;
  }
  return sourcePosition(file, BigInt(offset), xoffset);
}

/** `ts` in seconds → ms. A value ≥ 10^11 can only be milliseconds already and is kept. */
function commitTsOf(ts: JsonValue | undefined): number | null {
  const n = msOf(ts);
  if (n === null) return null;
  return n >= 1e11 ? Math.trunc(n) : Math.trunc(n * 1000);
}

function keyOf(value: JsonObject, messageKey: JsonValue | null): Key {
  const cols = value.primary_key_columns;
  const vals = value.primary_key;
  if (Array.isArray(cols) && Array.isArray(vals) && cols.length === vals.length) {
    const key: Key = {};
    cols.forEach((c, i) => {
      const v = vals[i];
      if (typeof c === 'string' && v !== undefined) put(key, c, v);
    });
    return key;
  }
  if (isJsonObject(messageKey)) {
    const key: Key = {};
    for (const [k, v] of Object.entries(messageKey)) if (k.startsWith('pk.')) put(key, k.slice(3), v);
    return key;
  }
  if (Array.isArray(messageKey) && Array.isArray(messageKey[2])) {
    const key: Key = {};
    for (const part of messageKey[2]) if (isJsonObject(part)) for (const [k, v] of Object.entries(part)) put(key, k, v);
    return key;
  }
  return {};
}

function rowImage(v: JsonValue | undefined, field: string, type: string): JsonObject {
  if (!isJsonObject(v)) throw decodeError('missing-field', `maxwell ${type} must carry "${field}" as a row object`);
  return v;
}

/** Decoder for Maxwell JSON rows, bootstrap markers and DDL records. */
/** A bootstrap or DDL message's detail: its type, and the DDL text when there is one. */
function controlDetail(value: JsonObject, type: string): JsonObject {
  const detail: JsonObject = { type };
  if (typeof value.sql === 'string') detail.ddl = value.sql;
  return detail;
}

/** The row before the change: `data` with `old`'s previous values for an update, `data` for a delete. */
function beforeImage(op: RowOp, data: JsonObject, old: JsonValue | undefined): JsonObject | null {
  if (op === 'd') return data;
  if (op !== 'u') return null;
  if (old !== undefined && old !== null && !isJsonObject(old)) throw decodeError('bad-field', 'maxwell "old" must be an object of previous column values');
  return { ...data, ...(old ?? {}) };
}

export const maxwell: FormatDecoder = {
  name: FORMAT,
  ordering: 'source',
  shape: '{database, table, type, ts (s), xid, xoffset?, commit?, position?: "file:offset", gtid?, data, old?, primary_key?}',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    if (!isJsonObject(v)) return false;
    if (typeof v.database !== 'string' || typeof v.type !== 'string' || !('ts' in v)) return false;
    return !('isDdl' in v) && !('es' in v) && !('source' in v);
  },
  decode(message: InboundMessage): NormalizedEvent[] {
    const value = message.value;
    if (!isJsonObject(value)) throw decodeError('bad-shape', 'maxwell message value must be a JSON object');
    const { database, table: tableName, type } = value;
    if (typeof database !== 'string' || typeof type !== 'string') {
      throw decodeError('missing-field', 'maxwell message must have string "database" and "type"');
    }
    const table = typeof tableName === 'string' && tableName !== '' ? `${database}.${tableName}` : null;
    const commitTs = commitTsOf(value.ts);
    const txid = textOf(value.xid);
    if (BOOTSTRAP_CONTROL.has(type) || DDL_TYPE.test(type)) {
      return [controlEvent({ format: FORMAT, control: BOOTSTRAP_CONTROL.has(type) ? 'control' : 'schema', table, position: binlogPosition(value) ?? transportOrder(message), txid, commitTs, detail: controlDetail(value, type) })];
    }
    const op = lookup(ROW_OPS, type);
    if (op === undefined) {
      throw decodeError('bad-op', `maxwell "type" must be insert, update, delete, bootstrap-*, or a DDL type; got "${type}"`);
    }
    if (table === null) throw decodeError('missing-field', `maxwell ${type} must name its "table"`);
    const data = rowImage(value.data, 'data', type);
    const before = beforeImage(op, data, value.old);
    return [
      changeEvent({
        format: FORMAT,
        op,
        table,
        key: keyOf(value, message.key),
        before,
        after: data,
        // Bootstrap rows carry no binlog position. A transport offset would be compared against the
        // live rows' binlog tuples and could beat a newer row, so they get no position at all: they
        // only fill keys the stream has not touched (the same rule as Debezium incremental snapshots).
        position: op === 'r' ? NO_POSITION : (binlogPosition(value) ?? transportOrder(message)),
        txid,
        commitTs,
      }),
    ];
  },
};
