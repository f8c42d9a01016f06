/**
 * Positions of the Debezium connectors for distributed databases, where no single log orders every
 * change: each is ordered only by what its connector documents, and falls back to transport order
 * (the Kafka offset: weak ordering) where that is nothing.
 *
 * | connector   | tuple                                                              | strength  |
 * |-------------|--------------------------------------------------------------------|-----------|
 * | vitess      | [transaction_epoch, transaction_rank, total_order] (ordered transaction metadata) | source (one shard) |
 * | vitess      | [offset] without ordered transaction metadata: VGTIDs are per shard | transport |
 * | spanner     | [commit time ns, record_sequence, mod_number]                       | source    |
 * | cockroachdb | [HLC wall ns, logical] from `source.ts_hlc`                         | source    |
 * | cockroachdb | [offset] when `ts_hlc` is null, as the connector writes it today    | transport |
 *
 * Example: Spanner `{ts_ns: 1670955531785000000, sequence: "1", mod_number: 0}` → [1670955531785000000, 1, 0].
 */
import { PositionError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { parseHlc, type Position, sourcePosition } from '../position.js';
import type { InboundMessage } from '../types.js';
import { decodeError, describe, readUnsigned, readUnsignedOrZero, transportOrder } from './kit.js';
import { totalOrderOf } from './debezium-positions-commit.js';

/** Base64 of a Kafka Connect `Decimal` (scale 0): big-endian two's-complement bytes, at most 32 of them. */
const DECIMAL_BYTES = /^[A-Za-z0-9+/]{1,44}={0,2}$/;

/**
 * `transaction_rank`, a Kafka Connect `Decimal` of scale 0: a JSON number with
 * `decimal.format=NUMERIC`, else (JsonConverter's default) base64 of its unscaled bytes.
 * `68` and `"RA=="` both read as 68.
 */
function rankOf(value: JsonValue | undefined): bigint {
  if (typeof value !== 'string') return readUnsigned(value, 'transaction.transaction_rank', '68');
  if (!DECIMAL_BYTES.test(value) || value.length % 4 !== 0) {
    throw decodeError('bad-position', `expected transaction.transaction_rank to be a number or base64 Decimal bytes (e.g. 68 or "RA=="), got ${describe(value)}`);
  }
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length === 0 || ((bytes[0] ?? 0) & 0x80) !== 0) {
    throw decodeError('bad-position', `expected transaction.transaction_rank to be an unsigned Decimal, got ${describe(value)}`);
  }
  return BigInt(`0x${bytes.toString('hex')}`);
}

/**
 * Vitess. A VGTID holds one GTID set per shard, so it orders nothing across shards. With
 * `transaction.metadata.factory=VitessOrderedTransactionMetadataFactory` the connector adds
 * `transaction_epoch` and `transaction_rank` (the sum of the shard's GTID sequence numbers), and its
 * documentation orders two events of one key on one shard by (epoch, rank, total_order). That is
 * the position then; without those fields it is the transport order.
 */
export function vitessPosition(transaction: JsonValue | undefined, message: InboundMessage): Position {
  if (!isJsonObject(transaction) || transaction.transaction_rank === undefined || transaction.transaction_rank === null) return transportOrder(message);
  return sourcePosition(
    readUnsigned(transaction.transaction_epoch, 'transaction.transaction_epoch', '0'),
    rankOf(transaction.transaction_rank),
    readUnsignedOrZero(totalOrderOf(transaction), 'transaction.total_order', '1'),
  );
}

/**
 * The commit time in nanoseconds: `source.ts_ns`, else `ts_us` × 1000 (Debezium 2.6+ writes both),
 * else `ts_ms` × 10^6 (older connectors: two commits of one key in the same millisecond then tie
 * on the first element and are told apart by record_sequence only).
 */
function commitNanos(source: JsonObject): bigint {
  if (source.ts_ns !== undefined && source.ts_ns !== null) return readUnsigned(source.ts_ns, 'source.ts_ns', '1670955531785000000');
  if (source.ts_us !== undefined && source.ts_us !== null) return readUnsigned(source.ts_us, 'source.ts_us', '1670955531785000') * 1000n;
  if (source.ts_ms !== undefined && source.ts_ms !== null) return readUnsigned(source.ts_ms, 'source.ts_ms', '1670955531785') * 1_000_000n;
  throw decodeError('missing-field', 'expected source.ts_ns (the Spanner commit timestamp, e.g. 1670955531785000000) on a Debezium Spanner event, found none');
}

/**
 * Spanner: [commit time ns, record_sequence, mod_number]. Transactions that write the same key are
 * serialized and get increasing commit timestamps, and a key's change records are in one change
 * stream partition at a time; inside a transaction the record sequence (`source.sequence`, unique
 * and increasing for one commit timestamp in a partition) and the mod's index in its record order
 * the changes.
 */
export function spannerPosition(source: JsonObject): Position {
  if (source.sequence === null || source.sequence === undefined) {
    throw decodeError('missing-field', 'expected source.sequence (the Spanner record_sequence, e.g. "1") on a Debezium Spanner event, found none');
  }
  return sourcePosition(
    commitNanos(source),
    readUnsigned(source.sequence, 'source.sequence (record_sequence)', '"1"'),
    readUnsignedOrZero(source.mod_number, 'source.mod_number', '0'),
  );
}

/**
 * The Debezium CockroachDB connector: `source.ts_hlc`, the row version's HLC "<wall ns>.<logical>",
 * when it is set. The connector declares the field but leaves it null today, and its `source.ts_ms`
 * is the last resolved timestamp, the same for every event between two resolved messages: so the
 * order is the transport order (the Kafka offset of the connector's per-key topic).
 */
export function cockroachPosition(source: JsonObject, message: InboundMessage): Position {
  const hlc = source.ts_hlc;
  if (hlc === null || hlc === undefined) return transportOrder(message);
  if (typeof hlc !== 'string' || hlc.length > 40) {
    throw decodeError('bad-position', `expected source.ts_hlc to be an HLC "<wall ns>.<logical>" (e.g. "1705312200000000000.0000000001"), got ${describe(hlc)}`);
  }
  try {
    return sourcePosition(...parseHlc(hlc));
  } catch (err) {
    if (err instanceof PositionError) throw decodeError('bad-position', `source.ts_hlc: ${err.message}`, { cause: err });
    throw err;
  }
}
