/**
 * Alibaba Canal flat messages (`canal.mq.flatMessage=true`).
 *
 * - One message is one binlog rows event and may carry many rows: one ChangeEvent per `data[i]`.
 * - Column values are strings (or null). Columns whose `mysqlType` is numeric (`int`, `bigint`,
 *   `decimal(10,2)`, `double`, …) become numbers, exactly from their text, so a decimal lands the
 *   same as from Debezium or CockroachDB (docs/formats.md, "Decimals"); every other column stays text.
 * - Ops: `INSERT` → `c`; `UPDATE` → `u` with `before = {...data[i], ...old[i]}` (`old[i]` holds only
 *   the changed columns); `DELETE` → `d` with `before = data[i]`; `INIT` (the initial load that
 *   Canal's adapters and Flink's canal-json emit) → `r`, a snapshot read. `isDdl: true` →
 *   ControlEvent `schema`, except `TRUNCATE`, which becomes a `t` ChangeEvent for the table (MySQL
 *   emits no row events for a truncate).
 * - Position: Canal carries no binlog position (the maintainers say to rely on MQ partition order),
 *   so events take `transportPosition(offset, rowIndex)`: weak ordering. `INIT` rows get no position
 *   at all (like Maxwell bootstrap rows): they only fill keys the stream has not touched.
 * - commitTs: `es` (binlog time, ms with second resolution; `ts` is Canal's build time). txid: `gtid`
 *   when non-empty.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { NO_POSITION, transportPosition } from '../position.js';
import type { ChangeEvent, FormatDecoder, InboundMessage, Key, NormalizedEvent, RowOp } from '../types.js';
import { changeEvent, controlEvent, decimalNumber, decodeError, describe, isDecimalText, lookup, msOf, put, transportSequence, truncateEvent } from './kit.js';

const FORMAT = 'canal';
const ROW_OPS: Readonly<Record<string, RowOp>> = { INSERT: 'c', UPDATE: 'u', DELETE: 'd', INIT: 'r' };
/** MySQL column types read as numbers: `int(11)`, `bigint unsigned`, `decimal(10,2)`, `double`, … */
const NUMERIC_TYPE = /^(tinyint|smallint|mediumint|int|integer|bigint|decimal|numeric|dec|fixed|float|double|real)\b/i;

function keyOf(pkNames: JsonValue | undefined, row: JsonObject): Key {
  const key: Key = {};
  if (!Array.isArray(pkNames)) return key;
  for (const col of pkNames) {
    const v = typeof col === 'string' && Object.hasOwn(row, col) ? row[col] : undefined;
    if (typeof col === 'string' && v !== undefined) put(key, col, v);
  }
  return key;
}

function rowAt(list: JsonValue | undefined, i: number, field: string): JsonObject | null {
  if (list === undefined || list === null) return null;
  if (!Array.isArray(list)) throw decodeError('bad-field', `canal "${field}" must be an array of row objects`);
  const row = list[i];
  if (row === undefined || row === null) return null;
  if (!isJsonObject(row)) throw decodeError('bad-field', `canal "${field}[${i}]" must be a row object`);
  return row;
}

/** The columns `mysqlType` declares numeric. */
function numericColumns(mysqlType: JsonValue | undefined): ReadonlySet<string> {
  const out = new Set<string>();
  if (!isJsonObject(mysqlType)) return out;
  for (const [column, type] of Object.entries(mysqlType)) if (typeof type === 'string' && NUMERIC_TYPE.test(type.trim())) out.add(column);
  return out;
}

/** A row with its numeric columns' text turned into exact numbers; text that is not a number is kept. */
function typedRow(row: JsonObject, numeric: ReadonlySet<string>): JsonObject {
  if (numeric.size === 0) return row;
  const out: JsonObject = {};
  for (const [column, v] of Object.entries(row)) put(out, column, numeric.has(column) && typeof v === 'string' && isDecimalText(v.trim()) ? decimalNumber(v.trim()) : v);
  return out;
}

/** Decoder for Canal flat JSON messages. */
export const canal: FormatDecoder = {
  name: FORMAT,
  ordering: 'transport',
  shape: '{id, database, table, pkNames, isDdl, type: INSERT|UPDATE|DELETE|INIT|…, es, ts, mysqlType, data: [{…}], old: [{…}]|null, gtid?}',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    return isJsonObject(v) && typeof v.isDdl === 'boolean' && typeof v.type === 'string' && typeof v.database === 'string' && 'table' in v;
  },
  decode(message: InboundMessage): NormalizedEvent[] {
    const value = message.value;
    if (!isJsonObject(value)) throw decodeError('bad-shape', `canal message value must be a JSON object, got ${describe(value)}`);
    const { database, table: tableName, type } = value;
    if (typeof database !== 'string' || typeof type !== 'string') {
      throw decodeError('missing-field', 'canal message must have string "database" and "type"');
    }
    const table = typeof tableName === 'string' && tableName !== '' ? `${database}.${tableName}` : null;
    const seq = transportSequence(message);
    const commitTs = msOf(value.es);
    const txid = typeof value.gtid === 'string' && value.gtid !== '' ? value.gtid : null;

    if (value.isDdl === true) {
      const position = transportPosition(seq, 0n);
      if (type === 'TRUNCATE' && table !== null) return [truncateEvent({ format: FORMAT, table, position, txid, commitTs })];
      const detail: JsonObject = { type };
      if (typeof value.sql === 'string') detail.ddl = value.sql;
      return [controlEvent({ format: FORMAT, control: 'schema', table, position, txid, commitTs, detail })];
    }

    const op = lookup(ROW_OPS, type);
    if (op === undefined) throw decodeError('bad-op', `canal row message "type" must be INSERT, UPDATE, DELETE or INIT; got ${describe(type)}`);
    if (table === null) throw decodeError('missing-field', `canal ${type} message must name its "table"`);
    const data = value.data;
    if (!Array.isArray(data) || data.length === 0) {
      throw decodeError('missing-field', `canal ${type} message must carry a non-empty "data" array of rows`);
    }
    const numeric = numericColumns(value.mysqlType);
    return data.map((_, i): ChangeEvent => {
      const delivered = rowAt(data, i, 'data');
      if (delivered === null) throw decodeError('bad-field', `canal "data[${i}]" must be a row object`);
      const row = typedRow(delivered, numeric);
      let before: JsonObject | null = null;
      if (op === 'd') before = row;
      else if (op === 'u') {
        const old = rowAt(value.old, i, 'old');
        before = old === null ? null : { ...row, ...typedRow(old, numeric) };
      }
      return changeEvent({
        format: FORMAT,
        op,
        table,
        key: keyOf(value.pkNames, row),
        before,
        after: row,
        position: op === 'r' ? NO_POSITION : transportPosition(seq, BigInt(i)),
        txid,
        commitTs,
      });
    });
  },
};
