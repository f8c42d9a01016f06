/**
 * Source positions of Debezium events, one fixed tuple shape per connector so that any two
 * events of one connector compare element by element (docs/formats.md, "Debezium"):
 *
 * | connector      | tuple                                                        | strength                       |
 * |----------------|--------------------------------------------------------------|--------------------------------|
 * | postgresql     | [lastCommitLsn, lsn] from `source.sequence`                  | source                         |
 * | postgresql     | [0, lsn] when `sequence` is absent                           | transport (weak, see below)    |
 * | mysql, mariadb | [binlog file number, pos, row]                               | source (within one server_id)  |
 * | sqlserver      | [commit_lsn, change_lsn, event_serial_no]                    | source                         |
 * | oracle         | [commit_scn, scn, txSeq ?? total_order ?? 0]                 | source                         |
 * | db2, informix, yashandb | see debezium-positions-commit.ts                    | source                         |
 * | vitess, spanner, cockroachdb | see debezium-positions-distributed.ts          | source or transport            |
 *
 * Every element is read losslessly (BigInt from the JSON text, never through a float).
 * Incremental-snapshot reads get no position at all: see {@link debeziumPosition}.
 * Example: MySQL `{file: "mysql-bin.000003", pos: 154, row: 0}` → [3, 154, 0].
 */
import { type JsonObject, type JsonValue, parseJson } from '../json.js';
import type { InboundMessage } from '../types.js';
import { NO_POSITION, type Position, sourcePosition } from '../position.js';
import type { Connector } from './debezium-connectors.js';
import { commitLsnPosition, informixPosition, parseHexLsn, totalOrderOf, yashanPosition } from './debezium-positions-commit.js';
import { cockroachPosition, spannerPosition, vitessPosition } from './debezium-positions-distributed.js';
import { binlogFileNo, decodeError, describe, readUnsigned, readUnsignedOrZero } from './kit.js';

/**
 * Parses a Debezium PostgreSQL `source.sequence`, the JSON text `'["<lastCommitLsn>","<lsn>"]'`
 * (decimal strings; null entries read as 0), into [lastCommitLsn, lsn].
 */
/** The form Debezium writes, two decimal strings without spaces: read without a JSON parse. */
const PG_SEQUENCE = /^\["(\d{1,20})","(\d{1,20})"\]$/;

export function parsePgSequence(sequence: string): [bigint, bigint] {
  // Every PostgreSQL event carries it, so the common form skips the general parse below, which
  // reads it to exactly the same two integers.
  const common = PG_SEQUENCE.exec(sequence);
  if (common) return [BigInt(common[1] ?? ''), BigInt(common[2] ?? '')];
  let parsed: JsonValue;
  try {
    parsed = parseJson(sequence);
  } catch {
    parsed = sequence;
  }
  const example = '\'["33228056","33228232"]\'';
  if (!Array.isArray(parsed) || parsed.length !== 2) {
    throw decodeError('bad-position', `expected source.sequence to be a JSON array of two LSNs (e.g. ${example}), got ${JSON.stringify(sequence)}`);
  }
  return [readUnsignedOrZero(parsed[0], 'source.sequence[0]', '"33228056"'), readUnsignedOrZero(parsed[1], 'source.sequence[1]', '"33228232"')];
}

/**
 * PostgreSQL: `source.sequence` = [commit LSN of the previously committed transaction, lsn] is a
 * total order (constant within a transaction, increasing across them). Without `sequence` we fall
 * back to [0, lsn] marked `transport`-strength: `lsn` alone is NOT monotonic across transactions
 * (change LSNs of concurrent transactions interleave), so it is weak ordering only.
 */
function pgPosition(source: JsonObject): Position {
  if (typeof source.sequence === 'string') return sourcePosition(...parsePgSequence(source.sequence));
  if (source.lsn !== undefined && source.lsn !== null) {
    return { tuple: [0n, readUnsigned(source.lsn, 'source.lsn', '33228232')], strength: 'transport' };
  }
  throw decodeError('missing-field', 'expected source.sequence (e.g. \'["33228056","33228232"]\') or source.lsn on a Debezium PostgreSQL event, found neither');
}

function mysqlPosition(source: JsonObject): Position {
  if (typeof source.file !== 'string' || source.file === '') {
    throw decodeError('missing-field', `expected source.file to be a binlog file name (e.g. "mysql-bin.000003"), got ${describe(source.file)}`);
  }
  const fileNo = binlogFileNo(source.file, 'source.file');
  if (fileNo === null) throw decodeError('bad-position', `expected source.file to end in a number (e.g. "mysql-bin.000003"), got ${describe(source.file)}`);
  return sourcePosition(fileNo, readUnsigned(source.pos, 'source.pos', '154'), readUnsignedOrZero(source.row, 'source.row', '0'));
}

/** A SQL Server LSN `xxxxxxxx:xxxxxxxx:xxxx` as one 80-bit integer (see {@link parseHexLsn}). */
export function parseSqlServerLsn(text: string, what = 'LSN'): bigint {
  return parseHexLsn(text, what);
}

function sqlServerPosition(source: JsonObject): Position {
  if (typeof source.commit_lsn !== 'string') {
    throw decodeError('missing-field', `expected source.commit_lsn to be a SQL Server LSN like "00000027:00000758:0005", got ${describe(source.commit_lsn)}`);
  }
  const commit = parseSqlServerLsn(source.commit_lsn, 'source.commit_lsn');
  const change = typeof source.change_lsn === 'string' ? parseSqlServerLsn(source.change_lsn, 'source.change_lsn') : 0n;
  return sourcePosition(commit, change, readUnsignedOrZero(source.event_serial_no, 'source.event_serial_no', '1'));
}

/**
 * Oracle: (commit_scn, scn, txSeq or transaction.total_order). SCNs are decimal strings compared
 * as BigInt ("9" < "10"). Snapshot rows have no commit_scn and use [scn, scn, 0].
 */
function oraclePosition(source: JsonObject, transaction: JsonValue | undefined): Position {
  const scn = readUnsigned(source.scn, 'source.scn', '"2122185"');
  if (source.commit_scn === null || source.commit_scn === undefined) return sourcePosition(scn, scn, 0n);
  const commitScn = readUnsigned(source.commit_scn, 'source.commit_scn', '"2122187"');
  const seq = source.txSeq ?? totalOrderOf(transaction);
  return sourcePosition(commitScn, scn, readUnsignedOrZero(seq, 'source.txSeq or transaction.total_order', '1'));
}

/**
 * The position of one Debezium data event.
 *
 * Incremental-snapshot reads (`source.snapshot === "incremental"`) get {@link NO_POSITION}: they
 * carry no lsn/txId (PostgreSQL) and their chunk is read outside the log order. An empty position
 * sorts below every real position, so such a row only fills a key the stream has not touched and
 * never overwrites streamed state or a tombstone.
 */
export function debeziumPosition(connector: Connector, source: JsonObject, transaction: JsonValue | undefined, message: InboundMessage): Position {
  if (source.snapshot === 'incremental') return NO_POSITION;
  switch (connector) {
    case 'postgresql':
      return pgPosition(source);
    case 'mysql':
    case 'mariadb':
      return mysqlPosition(source);
    case 'sqlserver':
      return sqlServerPosition(source);
    case 'oracle':
      return oraclePosition(source, transaction);
    case 'db2':
      return commitLsnPosition(source);
    case 'informix':
      return informixPosition(source, transaction);
    case 'yashandb':
      return yashanPosition(source);
    case 'vitess':
      return vitessPosition(transaction, message);
    case 'spanner':
      return spannerPosition(source);
    case 'cockroachdb':
      return cockroachPosition(source, message);
  }
}

/** The position of a PostgreSQL `op:"m"` message event, or null when it carries none. */
export function pgMessagePosition(source: JsonObject): Position | null {
  if (typeof source.sequence !== 'string' && (source.lsn === null || source.lsn === undefined)) return null;
  return pgPosition(source);
}
