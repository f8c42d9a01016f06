/**
 * AWS DMS with a Kinesis or Kafka target (`MessageFormat: json`):
 * `{data, metadata, [<BeforeImageSettings.FieldName>]}` and `{control, metadata}`.
 *
 * - Table: `<schema-name>.<table-name>`.
 * - Ops: `load` → `r` (snapshot), `insert` → `c`, `update` → `u`, `delete` → `d`. For an update
 *   `after` is `data` and `before` is the before-image attribute when enabled: depending on the source
 *   engine it holds only the PK columns (PostgreSQL), only changed columns (Oracle) or the full row
 *   (MySQL). A PK change arrives as one update with the old key only in the before image: the
 *   Normalizer then tombstones the old key at the same position (see normalize.ts). For a delete,
 *   `before` is `data` (as complete as the source supplied it).
 * - Control records → ControlEvent `schema`; `truncate-table` → a `t` ChangeEvent for that table.
 * - Position: DMS carries no comparable position (`stream-position` is opaque and engine-specific),
 *   so every event takes transport order (shard / partition): weak ordering, duplicates happen.
 * - commitTs: `metadata.commit-timestamp` (only with IncludeTransactionDetails), else null.
 * - Transaction: `transaction-id` and, with IncludeTransactionDetails, `transaction-record-id` and
 *   the `prev-transaction-*` pair, which says the previous transaction is complete (core/transactions.ts).
 *   `metadata.timestamp` is when DMS built the message and is never used.
 * - Key: built from the configured key columns when the table is configured (values from `data`,
 *   then the before image); DMS messages do not name their PK columns.
 */
import { isJsonObject, type JsonObject } from '../json.js';
import type { DecodeContext, FormatDecoder, InboundMessage, NormalizedEvent, RowOp, TxMember } from '../types.js';
import { txOrder } from './debezium-control.js';
import { changeEvent, controlEvent, decodeError, keyFromImages, lookup, textOf, transportOrder, truncateEvent } from './kit.js';

const FORMAT = 'dms';
const DATA_OPS: Readonly<Record<string, RowOp>> = { load: 'r', insert: 'c', update: 'u', delete: 'd' };
const TRUNCATE_OPS = new Set(['truncate-table', 'TruncateTable', 'truncate']);

/**
 * Parses a DMS timestamp (`2024-07-29T00:58:17.974340Z`, or with a space and no zone, read as UTC)
 * into epoch ms; fractions beyond milliseconds are truncated.
 */
export function parseDmsTimestamp(text: string): number {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/.exec(text.trim());
  if (!m) throw decodeError('bad-field', `dms "metadata.commit-timestamp" must be an ISO-8601 timestamp, got "${text}"`);
  const ms = (m[3] ?? '').padEnd(3, '0').slice(0, 3);
  const parsed = Date.parse(`${m[1]}T${m[2]}.${ms}${m[4] ?? 'Z'}`);
  if (Number.isNaN(parsed)) throw decodeError('bad-field', `dms "metadata.commit-timestamp" is not a valid time: "${text}"`);
  return parsed;
}

function tableOf(meta: JsonObject): string {
  const table = meta['table-name'];
  const schema = meta['schema-name'];
  if (typeof table !== 'string' || table === '') {
    throw decodeError('missing-field', 'dms "metadata.table-name" must be a non-empty string');
  }
  return typeof schema === 'string' && schema !== '' ? `${schema}.${table}` : table;
}

function commitTsOf(meta: JsonObject): number | null {
  const ts = meta['commit-timestamp'];
  if (ts === undefined || ts === null) return null;
  if (typeof ts !== 'string') throw decodeError('bad-field', 'dms "metadata.commit-timestamp" must be a timestamp string');
  return parseDmsTimestamp(ts);
}

/**
 * The record's transaction with `IncludeTransactionDetails`: `transaction-id`, the record's offset in
 * it (`transaction-record-id`, 1-based in the documented examples) and, when it names them, the
 * previous transaction and the offset of that one's last record (`prev-transaction-id`,
 * `prev-transaction-record-id`): the previous transaction is then complete. Null without a
 * transaction id.
 */
function transactionOf(meta: JsonObject): TxMember | null {
  const id = textOf(meta['transaction-id']);
  if (id === null) return null;
  const previousId = textOf(meta['prev-transaction-id']);
  const lastOrder = txOrder(meta['prev-transaction-record-id']);
  return {
    id,
    order: txOrder(meta['transaction-record-id']),
    collectionOrder: null,
    ...(previousId !== null && lastOrder !== null ? { previous: { id: previousId, lastOrder } } : {}),
  };
}

function controlRecord(message: InboundMessage, value: JsonObject, meta: JsonObject): NormalizedEvent {
  const operation = textOf(meta.operation) ?? 'unknown';
  const table = typeof meta['table-name'] === 'string' ? tableOf(meta) : null;
  const txid = textOf(meta['transaction-id']);
  if (TRUNCATE_OPS.has(operation)) {
    if (table === null) throw decodeError('missing-field', 'dms truncate-table control record has no "metadata.table-name"');
    return truncateEvent({ format: FORMAT, table, position: transportOrder(message), txid, commitTs: commitTsOf(meta) });
  }
  const detail: JsonObject = { operation };
  const control = value.control;
  if (isJsonObject(control) && isJsonObject(control['table-def']) && Array.isArray(control['table-def']['primary-key'])) {
    detail.primaryKey = control['table-def']['primary-key'];
  }
  return controlEvent({ format: FORMAT, control: 'schema', table, position: transportOrder(message), txid, commitTs: commitTsOf(meta), detail });
}

/** Decoder for AWS DMS JSON records on Kinesis or Kafka. */
export const dms: FormatDecoder = {
  name: FORMAT,
  ordering: 'transport',
  shape: '{data: {row}, metadata: {record-type, operation, schema-name, table-name, …}, [<before image field>]} | {control, metadata}',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    if (!isJsonObject(v) || !isJsonObject(v.metadata)) return false;
    const meta = v.metadata;
    return ('data' in v || 'control' in v) && ('record-type' in meta || 'operation' in meta);
  },
  decode(message: InboundMessage, ctx: DecodeContext): NormalizedEvent[] {
    const value = message.value;
    if (!isJsonObject(value) || !isJsonObject(value.metadata)) {
      throw decodeError('missing-field', 'dms message must be an object with a "metadata" object');
    }
    const meta = value.metadata;
    if (meta['record-type'] === 'control' || 'control' in value) return [controlRecord(message, value, meta)];
    const operation = meta.operation;
    const op = lookup(DATA_OPS, operation);
    if (op === undefined) {
      throw decodeError('bad-op', `dms "metadata.operation" must be load, insert, update or delete; got ${JSON.stringify(operation ?? null)}`);
    }
    const data = value.data;
    if (!isJsonObject(data)) throw decodeError('missing-field', `dms ${operation} record must carry a "data" row object`);
    const table = tableOf(meta);
    const imageField = value[ctx.dmsBeforeImageField];
    const beforeImage = isJsonObject(imageField) ? imageField : null;
    const before = op === 'd' ? data : op === 'u' ? beforeImage : null;
    const after = op === 'd' ? null : data;
    return [
      changeEvent({
        format: FORMAT,
        op,
        table,
        key: keyFromImages(table, ctx, [after, before]),
        before,
        after,
        position: transportOrder(message),
        txid: textOf(meta['transaction-id']),
        commitTs: commitTsOf(meta),
        tx: transactionOf(meta),
      }),
    ];
  },
};
