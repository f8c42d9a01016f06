/**
 * The Debezium connectors whose envelopes the `debezium` decoder reads, listed once, with the few
 * things that differ between them: where the table's namespace is, which field is the transaction
 * id, and whether `source.ts_ms` is a commit time. Positions (one tuple shape per connector) are in
 * debezium-positions.ts; docs/formats.md, "Debezium", has the rules.
 *
 * Example: `{source: {connector: "mariadb", db: "inventory", table: "customers", gtid: "0-1-3", …}}`
 * is table `inventory.customers`, txid `0-1-3`, commit time `source.ts_ms`, ordered as MySQL is.
 * `{source: {connector: "cassandra", …}}` names a Debezium connector tidemark does not decode: it is
 * quarantined as `unsupported-connector`, never `unknown-format`.
 */
import type { JsonObject, JsonValue } from '../json.js';
import { isJsonObject } from '../json.js';
import { epochMsOrNull, idText } from './kit.js';

/** The relational connectors the envelope decoder reads (MongoDB has its own decoder). */
export const CONNECTORS = ['postgresql', 'mysql', 'mariadb', 'sqlserver', 'oracle', 'db2', 'informix', 'vitess', 'spanner', 'cockroachdb', 'yashandb'] as const;
export type Connector = (typeof CONNECTORS)[number];

function isConnector(value: unknown): value is Connector {
  return typeof value === 'string' && (CONNECTORS as readonly string[]).includes(value);
}

/**
 * The connector of a `source` block: `source.connector`, or, for records of Debezium before 1.0
 * (no `connector` field, but the logical server `name`), the one whose position fields it carries.
 * Null when it is neither (an unknown connector name included: see {@link unsupportedConnector}).
 */
export function connectorOf(source: JsonObject): Connector | null {
  if ('connector' in source) return isConnector(source.connector) ? source.connector : null;
  if (typeof source.name !== 'string') return null;
  if (typeof source.file === 'string' && 'pos' in source) return 'mysql';
  if ('commit_lsn' in source || 'change_lsn' in source) return 'sqlserver';
  if ('scn' in source) return 'oracle';
  if ('lsn' in source || 'sequence' in source) return 'postgresql';
  return null;
}

/** The `source.connector` name of a Debezium envelope this decoder does not read (e.g. `cassandra`), else null. */
export function unsupportedConnector(source: JsonObject): string | null {
  const name = source.connector;
  return typeof name === 'string' && name !== '' && !isConnector(name) ? name : null;
}

/** What differs between connectors besides the position. */
export interface ConnectorRules {
  /** The `source` field holding the table's namespace (`<namespace>.<table>`), or null for the table alone. */
  readonly namespace: 'schema' | 'db' | 'keyspace' | null;
  /** An example namespace, for error messages. */
  readonly example: string;
  /** The transaction id of a data event. */
  readonly txid: (source: JsonObject, transaction: JsonValue | undefined) => string | null;
  /** The commit time in epoch ms, or null when the connector sends none. */
  readonly commitTs: (source: JsonObject) => number | null;
}

/**
 * `source.ts_ms`, the change's time in the database. Records before Debezium 1.0 have `ts_sec`
 * (MySQL) or `ts_usec` (PostgreSQL) instead.
 */
export function sourceTsMs(source: JsonObject): number | null {
  const ms = epochMsOrNull(source.ts_ms);
  if (ms !== null) return ms;
  const sec = epochMsOrNull(source.ts_sec);
  if (sec !== null) return sec * 1000;
  const usec = epochMsOrNull(source.ts_usec);
  return usec === null ? null : Math.trunc(usec / 1000);
}

const txIdField = (source: JsonObject) => idText(source.txId);
const gtid = (source: JsonObject) => (typeof source.gtid === 'string' && source.gtid !== '' ? source.gtid : null);
const commitLsn = (source: JsonObject) => idText(source.commit_lsn);
const transactionId = (_: JsonObject, transaction: JsonValue | undefined) => (isJsonObject(transaction) ? idText(transaction.id) : null);
const none = () => null;

/** The rules of each connector: a complete map, so a connector without rules does not compile. */
export const CONNECTOR_RULES: Readonly<Record<Connector, ConnectorRules>> = {
  postgresql: { namespace: 'schema', example: '"public"', txid: txIdField, commitTs: sourceTsMs },
  mysql: { namespace: 'db', example: '"inventory"', txid: gtid, commitTs: sourceTsMs },
  mariadb: { namespace: 'db', example: '"inventory"', txid: gtid, commitTs: sourceTsMs },
  sqlserver: { namespace: 'schema', example: '"dbo"', txid: commitLsn, commitTs: sourceTsMs },
  oracle: { namespace: 'schema', example: '"DEBEZIUM"', txid: txIdField, commitTs: sourceTsMs },
  db2: { namespace: 'schema', example: '"MYSCHEMA"', txid: commitLsn, commitTs: sourceTsMs },
  // The Informix connector stamps `source.ts_ms` with its own clock when it handles the change
  // (InformixStreamingChangeEventSource.handleOperation): it is not a commit time.
  informix: { namespace: 'schema', example: '"informix"', txid: txIdField, commitTs: none },
  vitess: { namespace: 'keyspace', example: '"commerce"', txid: transactionId, commitTs: sourceTsMs },
  spanner: { namespace: null, example: '', txid: (source) => idText(source.server_transaction_id), commitTs: sourceTsMs },
  // The Debezium CockroachDB connector sets `source.ts_ms` to the last resolved timestamp, not the
  // row's commit time (CockroachDBStreamingChangeEventSource); only `ts_hlc`, when present, is one.
  cockroachdb: { namespace: 'schema', example: '"public"', txid: none, commitTs: cockroachCommitTs },
  yashandb: { namespace: 'schema', example: '"DEBEZIUM"', txid: txIdField, commitTs: sourceTsMs },
};

/** Wall milliseconds of `source.ts_hlc` (`"<wall ns>.<logical>"`), or null when absent or malformed. */
function cockroachCommitTs(source: JsonObject): number | null {
  const hlc = source.ts_hlc;
  if (typeof hlc !== 'string' || hlc.length > 40) return null;
  const wall = /^(\d{1,20})(?:\.\d{1,10})?$/.exec(hlc)?.[1];
  return wall === undefined ? null : Number(BigInt(wall) / 1_000_000n);
}
