/**
 * Positions of the Debezium connectors that read a database's transaction log in commit order and
 * stamp each change with its transaction's commit position and its own position in the log (like
 * SQL Server and Oracle in debezium-positions.ts). Ordered by commit first, so the changes of
 * transactions that ran concurrently never interleave; then by the change's own log position.
 *
 * | connector | tuple                                                          | example                                                 |
 * |-----------|----------------------------------------------------------------|---------------------------------------------------------|
 * | db2       | [commit_lsn, change_lsn] (hex LSNs, 10 or 16 bytes)            | "00000027:00000758:0005", "…:0003" → [0x…0005, 0x…0003] |
 * | informix  | [commit_lsn, change_lsn, transaction.total_order ?? 0]         | "627404540760620", "627404540485812" → [6274…620, 6274…812, 0] |
 * | yashandb  | [position_scn, group_lsn, group_offset, batch_row_id]          | 828249295637925888, 3692924, 220, 0                     |
 *
 * Snapshot rows carry the snapshot's own commit position and no change position: [commit, 0(, 0)].
 * Every element is read losslessly. docs/formats.md, "Debezium", says what makes each total.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { type Position, sourcePosition } from '../position.js';
import { decodeError, describe, readUnsigned, readUnsignedOrZero } from './kit.js';

/**
 * Parses a hex LSN `xxxxxxxx:xxxxxxxx:<tail>` (the text Debezium writes for SQL Server and Db2
 * LSNs, byte by byte) into one integer `(first << 32 + 4·w) | (second << 4·w) | tail`, w the tail's
 * width in hex digits, which orders exactly like the LSN's bytes for LSNs of one width. SQL Server's
 * tail is 4 digits (VLF : block : slot, 80 bits; shorter groups read as zero-padded):
 * `"00000027:00000758:0003"` → (0x27 << 48) | (0x758 << 16) | 3. With several widths (Db2: 4 or
 * 16), the tail must have one of them exactly.
 */
export function parseHexLsn(text: string, what: string, tails: readonly number[] = [4]): bigint {
  const m = /^([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,16})$/.exec(text.length > 64 ? '' : text.trim());
  const tail = m?.[3] ?? '';
  const only = tails.length === 1 ? tails[0] : undefined;
  const width = tails.find((w) => tail.length === w) ?? (only !== undefined && tail.length <= only ? only : undefined);
  if (!m || width === undefined || tail === '') {
    const shape = `xxxxxxxx:xxxxxxxx:${tails.map((n) => 'x'.repeat(n)).join(' or …:')}`;
    throw decodeError('bad-position', `expected ${what} to be a hex LSN like ${shape} (e.g. "00000027:00000758:0003"), got ${describe(text)}`);
  }
  const w = BigInt(4 * width);
  return (BigInt(`0x${m[1]}`) << (32n + w)) | (BigInt(`0x${m[2]}`) << w) | BigInt(`0x${tail}`);
}

/** `transaction.total_order`, the event's 1-based place in its transaction, when transaction metadata is on. */
export function totalOrderOf(transaction: JsonValue | undefined): JsonValue | undefined {
  return isJsonObject(transaction) ? transaction.total_order : undefined;
}

/** A Db2 LSN: the hex text of its 10 (Db2 for z/OS, older LUW) or 16 bytes, as Debezium's `Lsn.toString` writes it. */
function db2Lsn(value: JsonValue | undefined, what: string): bigint {
  if (typeof value !== 'string') {
    throw decodeError('missing-field', `expected ${what} to be a Db2 LSN like "00000027:00000758:0005", got ${describe(value)}`);
  }
  return parseHexLsn(value, what, [4, 16]);
}

/**
 * Db2: [commit_lsn, change_lsn], the order the connector itself reads the change tables in
 * (`TxLogPosition`: IBMSNAP_COMMITSEQ, then IBMSNAP_INTENTSEQ). An update's two change-table rows
 * become one event at the after row's LSN. Snapshot rows have the snapshot's max LSN as commit_lsn
 * and no change_lsn: [max LSN, 0].
 */
export function commitLsnPosition(source: JsonObject): Position {
  const commit = db2Lsn(source.commit_lsn, 'source.commit_lsn');
  const change = source.change_lsn === null || source.change_lsn === undefined ? 0n : db2Lsn(source.change_lsn, 'source.change_lsn');
  return sourcePosition(commit, change);
}

/**
 * Informix: [commit_lsn, change_lsn, total_order ?? 0]. The LSNs are the logical-log positions
 * `(loguniq << 32) + logpos` as decimal strings; transactions are emitted in commit order. Before
 * the fix of debezium/dbz#2336 (2026-08) the connector could repeat the change_lsn another,
 * concurrently committed transaction left behind on every event of a transaction: `total_order`
 * (with transaction metadata on) still tells those events apart; without it they tie and a
 * same-key tie is counted as a conflict, never applied silently.
 */
export function informixPosition(source: JsonObject, transaction: JsonValue | undefined): Position {
  if (source.commit_lsn === null || source.commit_lsn === undefined) {
    throw decodeError('missing-field', 'expected source.commit_lsn (an Informix LSN such as "627404540760620") on a Debezium Informix event, found none');
  }
  const commit = readUnsigned(source.commit_lsn, 'source.commit_lsn', '"627404540760620"');
  const change = readUnsignedOrZero(source.change_lsn, 'source.change_lsn', '"627404540485812"');
  return sourcePosition(commit, change, readUnsignedOrZero(totalOrderOf(transaction), 'transaction.total_order', '1'));
}

/**
 * YashanDB: [position_scn, group_lsn, group_offset, batch_row_id]: the commit SCN of the change's
 * transaction, then the change's place in the redo (log group, offset in the group, row of a batch
 * operation), the YStream position the connector records. Rows without `position_scn` (snapshot
 * rows may lack it) use `scn`.
 */
export function yashanPosition(source: JsonObject): Position {
  const commit = source.position_scn ?? source.scn;
  if (commit === null || commit === undefined) {
    throw decodeError('missing-field', 'expected source.position_scn (the commit SCN, e.g. 828249295637925888) on a Debezium YashanDB event, found none');
  }
  return sourcePosition(
    readUnsigned(commit, 'source.position_scn', '828249295637925888'),
    readUnsignedOrZero(source.group_lsn, 'source.group_lsn', '3692924'),
    readUnsignedOrZero(source.group_offset, 'source.group_offset', '220'),
    readUnsignedOrZero(source.batch_row_id, 'source.batch_row_id', '0'),
  );
}
