/**
 * The JSON sources the statements read: raw lines (the batch layout of docs/history.md §1), the
 * first layout's raw events, quarantine lines, the table side reconcile reads from DynamoDB, and the
 * keys of an erase run.
 * Each column names the JSON field it maps (`field`) when that is not its own name.
 *
 *   RAW_LINES.columns.find((c) => c.name === 'key_id')   // { name: 'key_id', field: 'keyId', type: 'string', … }
 */
import type { Column, ColumnType, TableSchema } from './schema-types.js';

const col = <N extends string>(name: N, type: ColumnType, comment: string, field?: string): Column & { readonly name: N } =>
  field === undefined ? { name, type, comment } : { name, type, comment, field };

/** `transport` as raw writes it (functions/core/types.ts TransportMeta). */
export const TRANSPORT_TYPE: ColumnType = {
  struct: [
    { name: 'kind', type: 'string' },
    { name: 'stream', type: 'string' },
    { name: 'shard', type: 'string' },
    { name: 'sequence', type: 'string' },
    { name: 'partitionKey', type: 'string' },
    { name: 'arrivalTime', type: 'bigint' },
  ],
};

const DT = col('dt', 'string', "the batch's first arrival day, YYYY-MM-DD (UTC)");
const HR = col('hr', 'int', "the batch's first arrival hour, 0-23 (UTC)");

/** Fields of both raw layouts. */
const COMMON = {
  kind: col('kind', 'string', 'change or control'),
  format: col('format', 'string', 'the decoder'),
  op: col('op', 'string', 'c, u, d, r or t (changes)'),
  control: col('control', 'string', 'the control kind (controls)'),
  table: col('table', 'string', 'source table'),
  key: col('key', 'string', 'the normalized key, JSON'),
  position: col('position', 'string', 'encoded position'),
  orderingStrength: col('ordering_strength', 'string', 'source, transport or none', 'orderingStrength'),
  commitTs: col('commit_ts', 'bigint', 'source commit time, epoch ms', 'commitTs'),
  txid: col('txid', 'string', 'source transaction id'),
  snapshot: col('snapshot', 'boolean', 'a snapshot read'),
  transport: col('transport', TRANSPORT_TYPE, 'stream or topic, shard or partition, sequence or offset, partition key, arrival (epoch ms)'),
  topic: col('topic', 'string', 'Kafka topic'),
  headers: col('headers', { map: 'string' }, 'Kafka headers'),
  messageKey: col('message_key', 'string', 'the delivered key as text', 'messageKey'),
  messageKeyBase64: col('message_key_base64', 'string', 'the delivered key, base64, when not UTF-8', 'messageKeyBase64'),
  message: col('message', 'string', 'the delivered value as text (null on a messageRef line)'),
  messageBase64: col('message_base64', 'string', 'the delivered value, base64, when not UTF-8', 'messageBase64'),
  messageRef: col('message_ref', 'boolean', "true: the message is on the first line of the same record (stream, shard, sequence) in this object", 'messageRef'),
} as const;

/** Raw lines, one object per batch: `<raw>dt=…/hr=…/<shard>-<first>-<last>-<digest>.jsonl.gz`. `"$path"` names the object. */
export const RAW_LINES = {
  name: 'raw_lines',
  format: 'json',
  columns: [
    col('v', 'int', 'layout version: 2'),
    COMMON.kind,
    COMMON.format,
    COMMON.op,
    COMMON.control,
    COMMON.table,
    col('key_id', 'string', 'canonical key text', 'keyId'),
    COMMON.key,
    COMMON.position,
    COMMON.orderingStrength,
    col('hash', 'string', 'content hash of the event'),
    COMMON.commitTs,
    col('arrival_ts', 'bigint', 'arrival at the stream, epoch ms', 'arrivalTs'),
    COMMON.txid,
    COMMON.snapshot,
    col('before_null', 'boolean', 'an update without a before image', 'beforeNull'),
    col('partial', 'boolean', 'carries placeholders or is a patch'),
    COMMON.transport,
    COMMON.topic,
    COMMON.headers,
    COMMON.messageKey,
    COMMON.messageKeyBase64,
    COMMON.message,
    COMMON.messageBase64,
    COMMON.messageRef,
  ],
  partitionKeys: [DT, HR],
} as const satisfies TableSchema;

/** Raw of the first layout, one object per table per batch: `<raw>table=<segment>/dt=…/hr=…/…` (`source_table` is the segment). */
export const RAW_EVENTS = {
  name: 'raw_events',
  format: 'json',
  columns: [
    COMMON.kind,
    COMMON.format,
    COMMON.op,
    COMMON.control,
    COMMON.table,
    COMMON.key,
    COMMON.position,
    COMMON.orderingStrength,
    COMMON.commitTs,
    COMMON.txid,
    COMMON.snapshot,
    COMMON.transport,
    COMMON.topic,
    COMMON.headers,
    COMMON.messageKey,
    COMMON.messageKeyBase64,
    COMMON.message,
    COMMON.messageRef,
    COMMON.messageBase64,
  ],
  partitionKeys: [{ ...col('source_table', 'string', 'the table segment of the path (percent-encoded)'), segment: 'table' }, DT, HR],
} as const satisfies TableSchema;

/** Quarantined records: `<quarantine>dt=…/hr=…/…` (functions/adapters/raw-store.ts QuarantineLine). */
export const QUARANTINE_LINES = {
  name: 'quarantine_lines',
  format: 'json',
  columns: [
    col('reason', 'string', 'machine-readable reason'),
    col('detail', 'string', 'what was wrong'),
    COMMON.table,
    COMMON.transport,
    COMMON.topic,
    COMMON.headers,
    col('value_base64', 'string', 'the original value bytes, base64', 'valueBase64'),
    col('key_base64', 'string', 'the original key bytes, base64', 'keyBase64'),
  ],
  partitionKeys: [DT, HR],
} as const satisfies TableSchema;

/**
 * What reconcile reads of the DynamoDB table, one line per item (written from an export or a
 * BatchGetItem by a Lambda, gzip JSON Lines): `<prefix>run_id=<run>/…`.
 */
export const TABLE_SIDE = {
  name: 'table_side',
  format: 'json',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', "canonical key text of the item's key"),
    col('key_json', 'string', 'the key, JSON'),
    col('position', 'string', '__pos'),
    col('deleted', 'boolean', '__deleted: a tombstone'),
    col('erased', 'boolean', 'the item carries __erased: erase left it'),
    col('hash', 'string', '__hash'),
    col('applied_at', 'bigint', '__appliedAt, epoch ms'),
  ],
  partitionKeys: [col('run_id', 'string', 'the reconcile run that wrote the lines')],
} as const satisfies TableSchema;

/**
 * The keys one erase run erases, one line per key (written by the run's Begin step, gzip JSON
 * Lines, deleted with every version when the run ends): `<prefix>run_id=<run>/keys.jsonl.gz`. The
 * statements join it rather than carry key values in their text, which Athena keeps in its query
 * history for 45 days; they name only the run.
 */
export const ERASE_KEYS = {
  name: 'erase_keys',
  format: 'json',
  columns: [
    col('source_table', 'string', 'source table'),
    col('key_id', 'string', 'canonical key text of a key to erase (functions/core/keys.ts keyId)'),
    col('key_hash', 'string', "the ledger's keyed hash of the key (functions/core/key-hash.ts): what outputs name it by"),
    col('request', 'string', "the erase request the key came from: its index among the run's requests (no key material)"),
  ],
  partitionKeys: [col('run_id', 'string', 'the erase run that wrote the lines')],
} as const satisfies TableSchema;
