/**
 * The bad-input corpus (issue 10, "Proof"): kinds of bad record for every wire format, each with
 * the exact quarantine reason it must get, plus the good records they are mixed with.
 *
 * Message shapes follow the connectors' own documentation and test data, as kept in test/fixtures:
 * - Debezium PostgreSQL / MySQL / SQL Server / Oracle change events: debezium.io/documentation/reference/stable/connectors/{postgresql,mysql,sqlserver,oracle}.html ("Data change events");
 * - Debezium MongoDB: debezium.io/documentation/reference/stable/connectors/mongodb.html (after as Extended JSON text);
 * - Debezium ExtractNewRecordState (flattened): debezium.io/documentation/reference/stable/transformations/event-flattening.html;
 * - CockroachDB changefeeds: cockroachlabs.com/docs/stable/changefeed-messages (wrapped envelope, `updated`, key array);
 * - Maxwell: maxwells-daemon.io/dataformat/ (position "file:offset", xoffset);
 * - Canal: github.com/alibaba/canal wiki "Canal Kafka RocketMQ QuickStart" and Flink's canal-json test data (flink-formats/flink-json/src/test/resources/canal-data.txt);
 * - AWS DMS: docs.aws.amazon.com/dms/latest/userguide/CHAP_Target.Kinesis.html ("data" + "metadata").
 */
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { type JsonObject, parseJson } from '../../functions/core/json.js';

export const PLACEHOLDER = '__debezium_unavailable_value';

/** One kind of bad record. `value` is the message exactly as delivered. */
export interface BadKind {
  readonly name: string;
  readonly family: string;
  readonly value: Uint8Array;
  /** Kafka key bytes (MSK) or, when text, the Kinesis partition key. */
  readonly key?: Uint8Array;
  /** The exact quarantine reason. */
  readonly reason: string;
  /** Runs on one transport only (binary Kafka keys have no Kinesis form). */
  readonly only?: 'kinesis' | 'msk';
  /**
   * A defect found by this kind in a file owned elsewhere: the record is handled safely (quarantined,
   * nothing lost) but not as the issue asks. The expectation above is what happens today.
   */
  readonly defect?: string;
}

/** A good record and the row it must leave in its target table. */
export interface GoodRecord {
  readonly name: string;
  readonly value: Uint8Array;
  readonly table: string;
  readonly key: JsonObject;
  /** Source columns the stored row must hold, exactly (no more, no fewer). */
  readonly row: JsonObject;
}

export const corpusConfig: TidemarkConfig = parseConfig({
  name: 'corpus',
  tables: [
    { source: 'public.customers', target: 'corpus-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.products', target: 'corpus-products', key: ['sku'] },
    { source: 'public.pairs', target: 'corpus-pairs', key: ['a', 'b'] },
    { source: 'public.lines', target: 'corpus-lines', key: ['order_id', 'line_no', 'sku'], keyTypes: { order_id: 'number', line_no: 'number' } },
    { source: 'public.ctor', target: 'corpus-ctor', key: ['constructor'] },
    { source: 'inventory.customers', target: 'corpus-my-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'dbo.items', target: 'corpus-ss-items', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'DEBEZIUM.CUSTOMERS', target: 'corpus-ora-customers', key: ['ID'], keyTypes: { ID: 'number' } },
    { source: 'shopdb.customers', target: 'corpus-mongo-customers', key: ['_id'], keyTypes: { _id: 'number' } },
    { source: 'orders', target: 'corpus-crdb-orders', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'test.e', target: 'corpus-maxwell-e', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'inventory.products', target: 'corpus-canal-products', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'hr.accounts', target: 'corpus-dms-accounts', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.items', target: 'corpus-generic-items', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.flat', target: 'corpus-flat', key: ['id'], keyTypes: { id: 'number' } },
  ],
  raw: { bucket: 'corpus-raw' },
});

const enc = (s: string) => Buffer.from(s, 'utf8');
const json = (v: unknown) => JSON.stringify(v);
const U64 = (1n << 64n) - 1n;
const BIG = (U64 + 6n).toString(); // 2^64 + 5
const DIGITS_400 = `1${'0'.repeat(399)}`;
/** `1`, 100,000 zeros, `1`: a PostgreSQL numeric that a quadratic pattern (`/0+$/`) once took two minutes over. */
const DIGITS_100K = `1${'0'.repeat(100_000)}1`;
/** A run of 200,000 digits with a non-digit at the end: a pattern anchored only at the end (`/(\d+)$/`) is quadratic on it. */
const RUN_200K = `${'7'.repeat(200_000)}x`;
const RANDOM_400 = Array.from({ length: 400 }, (_, i) => String((i * 7 + 3) % 10)).join('').replace(/^0/, '9');

// ------------------------------------------------------------------------------------------------
// Base messages, one per format, with overridable parts.
// ------------------------------------------------------------------------------------------------

type Obj = Record<string, unknown>;

function pgSource(over: Obj = {}): Obj {
  return { version: '3.4.0.Final', connector: 'postgresql', name: 'shop', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'shop', sequence: '["33228056","33228232"]', schema: 'public', table: 'customers', txId: 700, lsn: 33_228_232, ...over };
}
function pg(after: Obj | null, over: { op?: string; before?: Obj | null; source?: Obj; top?: Obj } = {}): Obj {
  return { before: over.before ?? null, after, source: pgSource(over.source), op: over.op ?? 'c', ts_ms: 1_735_732_800_100, transaction: null, ...over.top };
}
/** Debezium PostgreSQL as the JsonConverter writes it with schemas.enable=true. */
function pgWrapped(after: Obj | null, over: { source?: Obj } = {}): Obj {
  return { schema: { type: 'struct', optional: false, name: 'shop.public.customers.Envelope', version: 2, fields: [] }, payload: pg(after, over) };
}
function mysql(after: Obj | null, source: Obj = {}, op = 'c'): Obj {
  return {
    before: null,
    after,
    source: { version: '3.4.0.Final', connector: 'mysql', name: 'mysql-server-1', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'inventory', table: 'customers', server_id: 223_344, gtid: null, file: 'mysql-bin.000003', pos: 154, row: 0, thread: 7, query: null, ...source },
    op,
    ts_ms: 1_735_732_800_300,
    transaction: null,
  };
}
function sqlserver(after: Obj | null, source: Obj = {}): Obj {
  return {
    before: null,
    after,
    source: { version: '3.4.0.Final', connector: 'sqlserver', name: 'server1', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'testDB', schema: 'dbo', table: 'items', change_lsn: '00000027:00000758:0003', commit_lsn: '00000027:00000758:0005', event_serial_no: 1, ...source },
    op: 'c',
    ts_ms: 1_735_732_800_300,
    transaction: null,
  };
}
function oracle(after: Obj | null, source: Obj = {}): Obj {
  return {
    before: null,
    after,
    source: { version: '3.4.0.Final', connector: 'oracle', name: 'server1', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'ORCLPDB1', schema: 'DEBEZIUM', table: 'CUSTOMERS', txId: '6.28.807', scn: '2122185', commit_scn: '2122187', ...source },
    op: 'c',
    ts_ms: 1_735_732_800_300,
    transaction: null,
  };
}
function mongo(after: string | null, over: { source?: Obj; op?: string; top?: Obj } = {}): Obj {
  return {
    before: null,
    after,
    updateDescription: null,
    source: { version: '3.4.0.Final', connector: 'mongodb', name: 'fulfillment', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'shopdb', sequence: null, collection: 'customers', ord: 1, lsid: null, txnNumber: null, ...over.source },
    op: over.op ?? 'c',
    ts_ms: 1_735_732_800_050,
    transaction: null,
    ...over.top,
  };
}
function crdb(after: Obj | null, over: Obj = {}): Obj {
  return { after, key: [after?.id ?? 1], topic: 'orders', updated: '1701102311425045163.0000000000', ...over };
}
function maxwell(data: Obj | null, over: Obj = {}): Obj {
  return { database: 'test', table: 'e', type: 'insert', ts: 1_477_053_217, xid: 23_396, xoffset: 0, position: 'master.000006:800911', server_id: 23_042, thread_id: 108, data, ...over };
}
function canal(data: unknown, over: Obj = {}): Obj {
  return { data, database: 'inventory', es: 1_589_373_561_000, gtid: '', id: 10, isDdl: false, mysqlType: { id: 'INTEGER', name: 'VARCHAR(255)' }, old: null, pkNames: ['id'], sql: '', sqlType: { id: 4, name: 12 }, table: 'products', ts: 1_589_373_561_020, type: 'INSERT', ...over };
}
function dms(data: Obj | null, meta: Obj = {}): Obj {
  return { data, metadata: { timestamp: '2024-12-01T10:30:00.123456Z', 'record-type': 'data', operation: 'insert', 'partition-key-type': 'schema-table', 'schema-name': 'hr', 'table-name': 'accounts', 'transaction-id': 12_345_678, ...meta } };
}
function generic(after: Obj | null, source: Obj = {}, top: Obj = {}): Obj {
  return { operation: 'insert', before: null, after, source: { table: 'public.items', lsn: '0/1A2F4C88', txid: 901, commit_ts: '2025-01-01T12:00:00.000Z', snapshot: false, ...source }, ...top };
}
function flat(row: Obj, meta: Obj = {}): Obj {
  return { ...row, __op: 'c', __table: 'flat', __schema: 'public', __lsn: 33_228_232, __source_ts_ms: 1_735_732_800_000, __deleted: 'false', ...meta };
}

/** n levels of maps and lists around a scalar, as JSON text (built iteratively). */
function nested(levels: number, leaf = '1'): string {
  let open = '';
  let close = '';
  for (let i = 0; i < levels; i++) {
    open += i % 2 === 0 ? '{"n":' : '[';
    close = (i % 2 === 0 ? '}' : ']') + close;
  }
  return open + leaf + close;
}

// ------------------------------------------------------------------------------------------------
// The kinds.
// ------------------------------------------------------------------------------------------------

const kinds: BadKind[] = [];
const add = (family: string, name: string, reason: string, value: string | Uint8Array | Obj, extra: Partial<BadKind> = {}) => {
  const bytes = typeof value === 'string' ? enc(value) : value instanceof Uint8Array ? value : enc(json(value));
  kinds.push({ family, name, reason, value: bytes, ...extra });
};
const good = (id: number, extra: Obj = {}): Obj => ({ id, name: `n${id}`, ...extra });
const validPg = json(pg(good(900)));

// -- bytes and text ------------------------------------------------------------------------------
add('bytes', 'lone 0xFF byte inside a string', 'invalid-utf8', Buffer.concat([enc(validPg.slice(0, 40)), Buffer.from([0xff]), enc(validPg.slice(40))]));
add('bytes', 'overlong encoding C0 AF', 'invalid-utf8', Buffer.concat([enc('{"a":"'), Buffer.from([0xc0, 0xaf]), enc('"}')]));
add('bytes', 'multibyte sequence cut at the end', 'invalid-utf8', Buffer.concat([enc(validPg), Buffer.from([0xe2, 0x82])]));
add('bytes', 'UTF-16 surrogate encoded as UTF-8 (CESU)', 'invalid-utf8', Buffer.concat([enc('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), enc('"}')]));
const latin = json(pg(good(901)));
add('bytes', 'Latin-1 e-acute in a column value', 'invalid-utf8', Buffer.concat([enc(latin.slice(0, latin.indexOf('n901'))), Buffer.from([0x52, 0xe9]), enc(latin.slice(latin.indexOf('n901') + 4))]));
add('bytes', 'gzip-compressed message', 'invalid-utf8', Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0x56, 0x4a, 0x54, 0xb2, 0x32, 0xac, 0x05, 0x00]));
add('bytes', 'UTF-16LE text with a byte-order mark', 'invalid-utf8', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"op":"c"}', 'utf16le')]));
add('bytes', 'NUL and control bytes (valid UTF-8, not JSON)', 'invalid-json', Buffer.from([0x00, 0x01, 0x02, 0x7f]));
add('bytes', 'raw control character inside a JSON string', 'invalid-json', `{"before":null,"after":{"id":902,"name":"a\u0001b"},"op":"c"}`);
add('bytes', 'raw newline inside a JSON string', 'invalid-json', '{"after":{"id":903,"name":"a\nb"},"op":"c"}');

// -- broken JSON ---------------------------------------------------------------------------------
add('json', 'truncated mid-object', 'invalid-json', validPg.slice(0, Math.floor(validPg.length / 2)));
add('json', 'truncated inside a string', 'invalid-json', validPg.slice(0, validPg.indexOf('"n900"') + 3));
add('json', 'missing closing brace', 'invalid-json', validPg.slice(0, -1));
add('json', 'trailing comma', 'invalid-json', validPg.replace(/}$/, ',}'));
add('json', 'single-quoted strings', 'invalid-json', "{'op':'c','after':{'id':1}}");
add('json', 'unquoted keys', 'invalid-json', '{op:"c",after:{id:1}}');
add('json', 'NaN literal', 'invalid-json', validPg.replace('"id":900', '"id":NaN'));
add('json', 'Infinity literal', 'invalid-json', validPg.replace('"id":900', '"id":Infinity'));
add('json', 'hex number literal', 'invalid-json', validPg.replace('"id":900', '"id":0x384'));
add('json', 'leading-zero number', 'invalid-json', validPg.replace('"id":900', '"id":0900'));
add('json', 'line comment', 'invalid-json', `// change\n${validPg}`);
add('json', 'two objects in one record', 'invalid-json', `${validPg}${validPg}`);
add('json', 'trailing garbage after the object', 'invalid-json', `${validPg} x`);
add('json', 'duplicate top-level key "op"', 'invalid-json', validPg.replace('"op":"c"', '"op":"c","op":"d"'));
add('json', 'duplicate column in the after image', 'invalid-json', validPg.replace('"name":"n900"', '"name":"n900","name":"evil"'));
add('json', 'invalid escape \\x41', 'invalid-json', validPg.replace('"n900"', '"\\x41"'));
add('json', 'bad unicode escape', 'invalid-json', validPg.replace('"n900"', '"\\u12G4"'));
add('json', 'whitespace only', 'invalid-json', '   \t ');
add('json', '200,000 levels of nesting (parser stack)', 'invalid-json', `${'['.repeat(200_000)}${']'.repeat(200_000)}`);
add('json', 'unterminated array', 'invalid-json', '[1,2');

// -- wrong envelopes -----------------------------------------------------------------------------
add('envelope', 'top-level array', 'unknown-format', '[1,2,3]');
add('envelope', 'top-level string', 'unknown-format', '"hello"');
add('envelope', 'top-level number', 'unknown-format', '42');
add('envelope', 'top-level boolean', 'unknown-format', 'true');
add('envelope', 'empty object', 'unknown-format', '{}');
add('envelope', 'unrelated object', 'unknown-format', { hello: 'world', n: 1 });
add('envelope', 'Debezium envelope of an unsupported connector', 'unsupported-connector', pg(good(904), { source: { connector: 'cassandra' } }));
add('envelope', 'schema wrapping with a non-struct schema', 'unknown-format', { schema: { type: 'string' }, payload: pg(good(905)) });
add('envelope', 'source is a string', 'unknown-format', { ...pg(good(906)), source: 'postgresql' });
add('envelope', 'Debezium op "x"', 'bad-op', pg(good(907), { op: 'x' }));
add('envelope', 'Debezium op is a number', 'unknown-format', pg(good(908), { op: 1 as unknown as string }));
add('envelope', 'unknown table', 'unknown-table', pg(good(909), { source: { table: 'nope' } }));
add('envelope', 'unknown schema', 'unknown-table', pg(good(910), { source: { schema: 'private' } }));
add('envelope', 'source.table missing', 'missing-field', pg(good(911), { source: { table: undefined } }));
add('envelope', 'source.schema missing', 'missing-field', pg(good(912), { source: { schema: undefined } }));
add('envelope', 'insert without an after image', 'missing-field', pg(null));
add('envelope', 'update without an after image', 'missing-field', pg(null, { op: 'u', before: good(913) }));
add('envelope', 'snapshot read without an after image', 'missing-field', pg(null, { op: 'r', source: { snapshot: 'true' } }));
add('envelope', 'after image is a string', 'missing-field', pg('{"id":914}' as unknown as Obj));
add('envelope', 'after image is an array', 'missing-field', pg([1, 2] as unknown as Obj));
add('envelope', 'after image is a number', 'missing-field', pg(5 as unknown as Obj));
add('envelope', 'delete with neither before image nor key', 'missing-key', pg(null, { op: 'd', before: null }));

// -- PostgreSQL positions ------------------------------------------------------------------------
add('pg-position', 'lsn 2^64+5 in source.sequence', 'bad-position', pg(good(920), { source: { sequence: `["33228056","${BIG}"]` } }));
add('pg-position', 'last commit LSN 2^64+5', 'bad-position', pg(good(921), { source: { sequence: `["${BIG}","33228232"]` } }));
add('pg-position', '400-digit LSN', 'bad-position', pg(good(922), { source: { sequence: `["1","${DIGITS_400}"]` } }));
add('pg-position', 'sequence not a JSON array', 'bad-position', pg(good(923), { source: { sequence: 'abc' } }));
add('pg-position', 'sequence of three', 'bad-position', pg(good(924), { source: { sequence: '["1","2","3"]' } }));
add('pg-position', 'negative LSN', 'bad-position', pg(good(925), { source: { sequence: '["1","-5"]' } }));
add('pg-position', 'fractional LSN', 'bad-position', pg(good(926), { source: { sequence: '["1","1.5"]' } }));
add('pg-position', 'lsn 2^64+5 without sequence', 'bad-position', pg(good(927), { source: { sequence: undefined, lsn: BIG } }));
add('pg-position', 'lsn is text without sequence', 'bad-position', pg(good(928), { source: { sequence: undefined, lsn: 'abc' } }));
add('pg-position', 'neither sequence nor lsn', 'missing-field', pg(good(929), { source: { sequence: undefined, lsn: undefined } }));
add('pg-position', 'truncate at 2^64+5', 'bad-position', pg(null, { op: 't', source: { sequence: `["1","${BIG}"]` } }));
add('pg-position', 'schema-wrapped update at 2^64+5', 'bad-position', pgWrapped(good(930), { source: { sequence: `["1","${BIG}"]` } }));

// -- MySQL positions -----------------------------------------------------------------------------
const my = (id: number) => ({ id, first_name: 'M', email: `m${id}@x` });
add('mysql-position', 'binlog file without a number', 'bad-position', mysql(my(931), { file: 'mysql-bin' }));
add('mysql-position', 'binlog file number 2^31', 'bad-position', mysql(my(932), { file: 'mysql-bin.2147483648' }));
add('mysql-position', 'binlog file number of 20 digits', 'bad-position', mysql(my(933), { file: 'mysql-bin.99999999999999999999' }));
add('mysql-position', 'pos 2^32', 'bad-position', mysql(my(934), { pos: 4_294_967_296 }));
add('mysql-position', 'pos 2^64+5', 'bad-position', mysql(my(935), { pos: BIG }));
add('mysql-position', 'negative pos', 'bad-position', mysql(my(936), { pos: -1 }));
add('mysql-position', 'pos is text', 'bad-position', mysql(my(937), { pos: 'abc' }));
add('mysql-position', 'row 2^31', 'bad-position', mysql(my(938), { row: 2_147_483_648 }));
add('mysql-position', 'binlog file missing', 'missing-field', mysql(my(939), { file: undefined }));
add('mysql-position', 'binlog file empty', 'missing-field', mysql(my(940), { file: '' }));

// -- SQL Server positions ------------------------------------------------------------------------
add('sqlserver-position', 'commit_lsn malformed', 'bad-position', sqlserver(good(941), { commit_lsn: 'zz' }));
add('sqlserver-position', 'commit_lsn missing', 'missing-field', sqlserver(good(942), { commit_lsn: undefined }));
add('sqlserver-position', 'change_lsn with a 9-digit VLF', 'bad-position', sqlserver(good(943), { change_lsn: '000000027:00000758:0003' }));
add('sqlserver-position', 'event_serial_no 2^63', 'bad-position', sqlserver(good(944), { event_serial_no: '9223372036854775808' }));
add('sqlserver-position', 'negative event_serial_no', 'bad-position', sqlserver(good(945), { event_serial_no: -1 }));

// -- Oracle positions ----------------------------------------------------------------------------
const ora = (id: number) => ({ ID: id, FIRST_NAME: 'O' });
add('oracle-position', 'scn 2^64+5', 'bad-position', oracle(ora(946), { scn: BIG, commit_scn: BIG }));
add('oracle-position', 'commit_scn 2^64+5', 'bad-position', oracle(ora(947), { commit_scn: BIG }));
add('oracle-position', 'scn is text', 'bad-position', oracle(ora(948), { scn: 'abc' }));
add('oracle-position', 'txSeq 2^63', 'bad-position', oracle(ora(949), { txSeq: '9223372036854775808' }));

// -- CockroachDB ---------------------------------------------------------------------------------
add('cockroachdb', 'HLC wall 2^64+5', 'bad-position', crdb(good(950), { updated: `${BIG}.0000000000` }));
add('cockroachdb', 'HLC wall in 1970', 'bad-position', crdb(good(951), { updated: '5.0000000000' }));
add('cockroachdb', 'HLC wall in 2200', 'bad-position', crdb(good(952), { updated: '7258118400000000000.0000000000' }));
add('cockroachdb', 'HLC logical 2^31', 'bad-position', crdb(good(953), { updated: '1701102311425045163.2147483648' }));
add('cockroachdb', 'updated is a number', 'bad-position', crdb(good(954), { updated: 1_701_102_311 }));
add('cockroachdb', 'updated is not an HLC', 'bad-position', crdb(good(955), { updated: 'yesterday' }));
add('cockroachdb', 'mvcc_timestamp of 400 digits (the commit time)', 'bad-timestamp', crdb(good(956), { mvcc_timestamp: `${DIGITS_400}.0` }));
// On MSK the Kafka topic names the table, which makes this the unconfigured-topic case below.
add('cockroachdb', 'no table anywhere', 'missing-field', crdb(good(957), { topic: undefined }), { only: 'kinesis' });
add('cockroachdb', 'unconfigured topic', 'unmapped-key', crdb(good(958), { topic: 'payments' }), {
  defect: 'functions/core/formats/cockroachdb.ts: a record of an unconfigured table is quarantined as unmapped-key ("configured key columns are no key columns") instead of unknown-table',
});
add('cockroachdb', 'enriched op "x"', 'unknown-format', { ...crdb(good(959)), op: 'x', source: {} });

// -- Maxwell -------------------------------------------------------------------------------------
add('maxwell', 'position file without a number', 'bad-position', maxwell(good(960), { position: 'master:800911' }));
add('maxwell', 'position offset beyond 32 bits', 'bad-position', maxwell(good(961), { position: 'master.000006:99999999999' }));
add('maxwell', 'position without an offset', 'bad-position', maxwell(good(962), { position: 'master.000006' }));
add('maxwell', 'position is a number', 'bad-position', maxwell(good(963), { position: 800_911 }));
add('maxwell', 'negative xoffset', 'bad-position', maxwell(good(964), { xoffset: -1 }));
add('maxwell', 'xoffset 2^63', 'bad-position', maxwell(good(965), { xoffset: '9223372036854775808' }));
add('maxwell', 'unknown type', 'bad-op', maxwell(good(966), { type: 'upsert' }));
add('maxwell', 'insert without data', 'missing-field', maxwell(null));
add('maxwell', 'database missing', 'unknown-format', maxwell(good(967), { database: undefined }));
add('maxwell', 'unknown table', 'unknown-table', maxwell(good(968), { table: 'zzz' }));

// -- Canal ---------------------------------------------------------------------------------------
const cRow = (id: number) => ({ id: String(id), name: `c${id}` });
add('canal', 'unknown type', 'bad-op', canal([cRow(970)], { type: 'MERGE' }));
add('canal', 'data is an object', 'missing-field', canal(cRow(971)));
add('canal', 'a row is a string', 'bad-field', canal(['x']));
add('canal', 'empty data array', 'missing-field', canal([]));
add('canal', 'table missing', 'unknown-format', canal([cRow(972)], { table: undefined }));
add('canal', 'key column missing from the row', 'missing-key', canal([{ name: 'nokey' }]));
add('canal', 'key text is not a number', 'bad-key', canal([{ id: '12abc', name: 'x' }]));
add('canal', 'es of 400 digits', 'bad-timestamp', json(canal([cRow(973)])).replace('"es":1589373561000', `"es":${DIGITS_400}`));

// -- DMS -----------------------------------------------------------------------------------------
add('dms', 'unknown operation', 'bad-op', dms(good(980), { operation: 'frobnicate' }));
add('dms', 'insert without data', 'missing-field', dms(null));
add('dms', 'table-name missing', 'missing-field', dms(good(981), { 'table-name': undefined }));
add('dms', 'commit-timestamp not a time', 'bad-field', dms(good(982), { 'commit-timestamp': 'not a time' }));
add('dms', 'commit-timestamp is a number', 'bad-field', dms(good(983), { 'commit-timestamp': 5 }));
add('dms', 'metadata is a string', 'unknown-format', { data: good(984), metadata: 'x' });

// -- generic -------------------------------------------------------------------------------------
add('generic', 'lsn 2^64+5', 'bad-position', generic(good(985), { lsn: BIG }));
add('generic', 'lsn "X/Y" with a bad hex digit', 'bad-position', generic(good(986), { lsn: 'G/1' }));
add('generic', 'unknown operation', 'bad-op', generic(good(987), {}, { operation: 'upsert' }));
add('generic', 'commit_ts not a date', 'bad-field', generic(good(988), { commit_ts: 'not a date' }));
add('generic', 'ts_ms of 400 digits', 'bad-timestamp', { op: 'c', ts_ms: DIGITS_400, before: null, after: good(989), source: { table: 'public.items', lsn: 439_307_400, txid: 1 } });
add('generic', 'lsn missing', 'missing-field', generic(good(990), { lsn: undefined }));

// -- MongoDB -------------------------------------------------------------------------------------
add('mongodb', 'after is not Extended JSON', 'invalid-json', mongo('{"_id": {"$numberLong": "1"}, '));
add('mongodb', 'after document has a __proto__ field', 'reserved-column', mongo('{"_id": {"$numberLong": "991"}, "__proto__": {"_id": 5}, "name": "p"}'));
add('mongodb', 'after document has a nested __proto__ field', 'reserved-column', mongo('{"_id": {"$numberLong": "992"}, "doc": {"__proto__": {"x": 1}}}'));
add('mongodb', 'document without _id', 'missing-key', mongo('{"name": "no id"}'));
add('mongodb', 'document nested 40 deep', 'too-deep', mongo(`{"_id": {"$numberLong": "993"}, "doc": ${nested(40)}}`));
add('mongodb', 'document with an empty field name', 'bad-column-name', mongo('{"_id": {"$numberLong": "994"}, "": 1}'));
add('mongodb', 'collection missing', 'missing-field', mongo('{"_id": 995}', { source: { collection: undefined } }));
add('mongodb', 'op "x"', 'bad-op', mongo('{"_id": 996}', { op: 'x' }));
add('mongodb', 'after is a number', 'bad-field', { ...mongo(null), after: 5 });
add('mongodb', '$numberLong holding text', 'bad-value', mongo('{"_id": {"$numberLong": "abc"}}'));

// -- flattened -----------------------------------------------------------------------------------
add('flattened', '__lsn 2^64+5', 'bad-position', flat(good(997), { __lsn: BIG }));
add('flattened', '__lsn negative', 'bad-position', flat(good(998), { __lsn: -1 }));
add('flattened', 'unknown table', 'unknown-table', flat(good(999), { __table: 'zzz' }));

// -- DynamoDB value limits (PostgreSQL rows) -----------------------------------------------------
const pgRaw = (afterJson: string) => validPg.replace('{"id":900,"name":"n900"}', afterJson);
add('dynamo-value', 'number 1e400', 'number-range', pgRaw('{"id":1000,"v":1e400}'));
add('dynamo-value', 'number 1e-400', 'number-range', pgRaw('{"id":1001,"v":1e-400}'));
add('dynamo-value', 'number 1E+200', 'number-range', pgRaw('{"id":1002,"v":1E+200}'));
add('dynamo-value', 'number -1e400', 'number-range', pgRaw('{"id":1003,"v":-1e400}'));
add('dynamo-value', 'number 5e-324 (smallest double)', 'number-range', pgRaw('{"id":1004,"v":5e-324}'));

// Long digit and whitespace runs, and absurdly wide rows: quarantined in linear time (issue 20, items 1 and 2).
add('long-digits', '100,002-digit LSN in source.sequence', 'bad-position', pg(good(1005), { source: { sequence: `["1","${DIGITS_100K}"]` } }));
add('long-digits', 'binlog file name ending in a 200,000-digit run and a letter', 'bad-position', mysql(my(1006), { file: `mysql-bin.${RUN_200K}` }));
add('long-digits', 'maxwell position with a 200,000-digit offset', 'bad-position', maxwell(good(1007), { position: `master.000006:${'9'.repeat(200_000)}` }));
add('long-digits', 'number 1e followed by a 100,000-digit exponent', 'number-range', pgRaw(`{"id":1008,"v":1e${DIGITS_100K}}`));
add('long-digits', 'ts_ms of 100,002 digits', 'bad-timestamp', pg(good(1009), { source: { ts_ms: DIGITS_100K } }));
add('long-digits', 'key of 100,002 digits', 'number-precision', pgRaw(`{"id":${DIGITS_100K},"v":1}`));
add('wide-row', 'after image of 320,000 columns', 'too-many-columns', pg({ id: 1010, ...Object.fromEntries(Array.from({ length: 320_000 }, (_, i) => [`c${i}`, i])) }));
add('wide-row', 'before image of 5,001 columns', 'too-many-columns', pg(good(1011), { op: 'u', before: Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`c${i}`, i])) }));
add('dynamo-value', 'number 1e126', 'number-range', pgRaw('{"id":1005,"v":1e126}'));
// Top-level decimals longer than 38 digits are stored as exact text (flagged in decimalText, see
// docs/formats.md); inside a map or list there is no column to flag, so they are refused.
add('dynamo-value', '39 significant digits in a map', 'number-precision', pgRaw('{"id":1006,"v":{"n":123456789012345678901234567890123456789}}'));
add('dynamo-value', '400 significant digits in a list', 'number-precision', pgRaw(`{"id":1007,"v":[${RANDOM_400}]}`));
add('dynamo-value', '400-digit power of ten', 'number-range', pgRaw(`{"id":1008,"v":${DIGITS_400}}`));
add('dynamo-value', 'decimal with 40 significant digits in a map', 'number-precision', pgRaw('{"id":1009,"v":{"d":0.1234567890123456789012345678901234567891}}'));
add('dynamo-value', 'out-of-range number in a list', 'number-range', pgRaw('{"id":1010,"v":[1,2,1e400]}'));
add('dynamo-value', 'out-of-range number in a map', 'number-range', pgRaw('{"id":1011,"v":{"a":{"b":1e-400}}}'));
add('dynamo-value', 'empty column name', 'bad-column-name', pgRaw('{"id":1012,"":1}'));
add('dynamo-value', '64 KiB column name', 'bad-column-name', pgRaw(`{"id":1013,"${'c'.repeat(65_536)}":1}`));
add('dynamo-value', 'column name with an unpaired surrogate', 'bad-column-name', pgRaw('{"id":1014,"a\\udc80":1}'));
add('dynamo-value', 'empty map key in a JSON column', 'bad-column-name', pgRaw('{"id":1015,"doc":{"":1}}'));
add('dynamo-value', '32 levels of nesting', 'too-deep', pgRaw(`{"id":1016,"doc":${nested(32)}}`));
add('dynamo-value', '2,000 levels of nesting', 'too-deep', pgRaw(`{"id":1017,"doc":${nested(2000)}}`));
add('dynamo-value', '40 levels of lists', 'too-deep', pgRaw(`{"id":1018,"doc":${'['.repeat(40)}1${']'.repeat(40)}}`));
add('dynamo-value', 'string with an unpaired high surrogate', 'invalid-string', pgRaw('{"id":1019,"name":"a\\ud800b"}'));
add('dynamo-value', 'string with an unpaired low surrogate', 'invalid-string', pgRaw('{"id":1020,"name":"\\udfff"}'));
add('dynamo-value', 'unpaired surrogate deep in a list', 'invalid-string', pgRaw('{"id":1021,"tags":["ok",["\\ud83d"]]}'));

// -- reserved names ------------------------------------------------------------------------------
add('reserved', '__proto__ column (bare Debezium)', 'reserved-column', pgRaw('{"id":1030,"__proto__":{"id":5}}'));
add('reserved', '__proto__ column holding a scalar', 'reserved-column', pgRaw('{"id":1031,"__proto__":7}'));
add('reserved', '__proto__ column without an id (must not become the key)', 'reserved-column', pgRaw('{"__proto__":{"id":1032}}'));
add('reserved', '__proto__ column (schema-wrapped Debezium)', 'reserved-column', json({ schema: { type: 'struct', name: 'shop.public.customers.Envelope' }, payload: pg(good(1033)) }).replace('"name":"n1033"', '"__proto__":{"id":5}'));
add('reserved', '__proto__ key inside a JSON column', 'reserved-column', pgRaw('{"id":1034,"doc":{"__proto__":{"x":1}}}'));
add('reserved', '__op metadata column', 'reserved-column', pgRaw('{"id":1035,"__op":"d"}'));
add('reserved', '__pos metadata column', 'reserved-column', pgRaw('{"id":1036,"__pos":"z"}'));
add('reserved', '__deleted metadata column', 'reserved-column', pgRaw('{"id":1037,"__deleted":true}'));

// -- keys ----------------------------------------------------------------------------------------
const products = (after: Obj) => pg(after, { source: { table: 'products' } });
const pairs = (after: Obj) => pg(after, { source: { table: 'pairs' } });
add('key', 'string partition key of 2,049 bytes', 'key-too-large', products({ sku: 's'.repeat(2049) }));
add('key', 'string partition key of 1,025 two-byte characters', 'key-too-large', products({ sku: 'é'.repeat(1025) }));
add('key', 'sort key of 1,025 bytes', 'key-too-large', pairs({ a: 'x', b: 'y'.repeat(1025) }));
add('key', 'composite key of 2,100 bytes', 'key-too-large', pg({ order_id: 1, line_no: 1, sku: 'z'.repeat(2100) }, { source: { table: 'lines' } }));
add('key', 'placeholder in a string key', 'placeholder-key', products({ sku: PLACEHOLDER, name: 'p' }));
add('key', 'placeholder in a number key', 'placeholder-key', pgRaw(`{"id":"${PLACEHOLDER}","name":"p"}`));
add('key', 'placeholder in a sort key', 'placeholder-key', pairs({ a: 'x', b: PLACEHOLDER }));
add('key', 'key column missing', 'missing-key', pgRaw('{"name":"no id"}'));
add('key', 'key column null', 'missing-key', pgRaw('{"id":null,"name":"null id"}'));
add('key', 'key column is an object', 'bad-key', pgRaw('{"id":{"v":1},"name":"x"}'));
add('key', 'key column is an array', 'bad-key', pgRaw('{"id":[1],"name":"x"}'));
add('key', 'number key is a boolean', 'bad-key', pgRaw('{"id":true,"name":"x"}'));
add('key', 'number key is text', 'bad-key', pgRaw('{"id":"12abc","name":"x"}'));
add('key', 'number key 1e400', 'number-range', pgRaw('{"id":1e400,"name":"x"}'));
add('key', 'number key of 39 digits', 'number-precision', pgRaw('{"id":123456789012345678901234567890123456789,"name":"x"}'));
add('key', 'empty string key', 'bad-key', products({ sku: '', name: 'x' }));
add('key', 'string key with an unpaired surrogate', 'invalid-string', json(products({ sku: 'PLACE', name: 'x' })).replace('"PLACE"', '"a\\udc00"'));
add('key', 'missing key column named constructor', 'missing-key', pg({ name: 'no ctor' }, { source: { table: 'ctor' } }));
add('key', 'missing sort key', 'missing-key', pairs({ a: 'x' }));

// -- commit time ---------------------------------------------------------------------------------
add('commit-ts', 'ts_ms of 400 digits', 'bad-timestamp', json(pg(good(1050))).replace('"ts_ms":1735732800000', `"ts_ms":${DIGITS_400}`));
add('commit-ts', 'ts_ms of 400 digits as text', 'bad-timestamp', pg(good(1055), { source: { ts_ms: DIGITS_400 } }));
add('commit-ts', 'negative ts_ms', 'bad-timestamp', pg(good(1051), { source: { ts_ms: -1 } }));
add('commit-ts', 'ts_ms of 21 digits', 'bad-timestamp', pg(good(1052), { source: { ts_ms: '100000000000000000000' } }));
add('commit-ts', 'MySQL ts_ms past year 9999', 'bad-timestamp', mysql(my(1053), { ts_ms: 253_402_300_800_000 }));
add('commit-ts', 'flattened __source_ts_ms of 400 digits', 'bad-timestamp', flat(good(1054), { __source_ts_ms: DIGITS_400 }));

// -- binary and mismatched Kafka keys (MSK only) -------------------------------------------------
const binaryKey = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
add('kafka-key', 'binary key, CockroachDB value that needs it', 'bad-key', { after: good(1060), topic: 'orders', updated: '1701102311425045163.0000000000' }, { key: binaryKey, only: 'msk' });
add('kafka-key', 'binary key, value not JSON', 'invalid-json', '{"after":', { key: binaryKey, only: 'msk' });
add('kafka-key', 'JSON key, value truncated', 'invalid-json', validPg.slice(0, 30), { key: enc('{"id":900}'), only: 'msk' });
add('kafka-key', 'binary key, value invalid UTF-8', 'invalid-utf8', Buffer.from([0x7b, 0xff, 0x7d]), { key: binaryKey, only: 'msk' });

export const BAD_KINDS: readonly BadKind[] = kinds;

/** A row at DynamoDB's limits, all accepted: 38 digits, 9.99…E+125, 1E-130, 31 levels of nesting. */
const LIMITS_ROW = `{"id":501,"d38":12345678901234567890123456789012345678,"big":9.9999999999999999999999999999999999999E+125,"tiny":1E-130,"doc":${nested(31, '"leaf"')}}`;

// ------------------------------------------------------------------------------------------------
// Good records, one or more per format, with the rows they must leave.
// ------------------------------------------------------------------------------------------------

/** Good records; `base` offsets the PostgreSQL ids so several runs can share nothing. */
export function goodRecords(count: number): GoodRecord[] {
  const out: GoodRecord[] = [];
  for (let i = 0; i < count; i++) {
    const id = 1 + i;
    const lsn = 40_000_000 + i * 8;
    const row = { id, name: `good-${id}`, email: `g${id}@example.com`, score: 10.5 + i, tags: ['a', { b: i }] };
    out.push({ name: `pg ${id}`, value: enc(json(pg(row, { source: { sequence: `["${lsn - 8}","${lsn}"]`, lsn } }))), table: 'public.customers', key: { id }, row });
  }
  const formats: GoodRecord[] = [
    { name: 'mysql', value: enc(json(mysql({ id: 7, first_name: 'Anne', email: 'a@x' }))), table: 'inventory.customers', key: { id: 7 }, row: { id: 7, first_name: 'Anne', email: 'a@x' } },
    { name: 'sqlserver', value: enc(json(sqlserver({ id: 7, name: 'S' }))), table: 'dbo.items', key: { id: 7 }, row: { id: 7, name: 'S' } },
    { name: 'oracle', value: enc(json(oracle({ ID: 7, FIRST_NAME: 'O' }))), table: 'DEBEZIUM.CUSTOMERS', key: { ID: 7 }, row: { ID: 7, FIRST_NAME: 'O' } },
    { name: 'mongodb', value: enc(json(mongo('{"_id": {"$numberLong": "7"}, "name": "Mo", "toString": "t", "hasOwnProperty": "h"}'))), table: 'shopdb.customers', key: { _id: 7 }, row: { _id: 7, name: 'Mo', toString: 't', hasOwnProperty: 'h' } },
    { name: 'cockroachdb', value: enc(json(crdb({ id: 7, name: 'Terry' }))), table: 'orders', key: { id: 7 }, row: { id: 7, name: 'Terry' } },
    { name: 'maxwell', value: enc(json(maxwell({ id: 7, comment: 'light' }))), table: 'test.e', key: { id: 7 }, row: { id: 7, comment: 'light' } },
    { name: 'canal', value: enc(json(canal([{ id: '7', name: 'hammer' }]))), table: 'inventory.products', key: { id: 7 }, row: { id: 7, name: 'hammer' } }, // the key column takes its declared number type
    { name: 'dms', value: enc(json(dms({ id: 7, status: 'open' }))), table: 'hr.accounts', key: { id: 7 }, row: { id: 7, status: 'open' } },
    { name: 'generic', value: enc(json(generic({ id: 7, name: 'g' }))), table: 'public.items', key: { id: 7 }, row: { id: 7, name: 'g' } },
    { name: 'flattened', value: enc(json(flat({ id: 7, name: 'f' }))), table: 'public.flat', key: { id: 7 }, row: { id: 7, name: 'f' } },
    // Built-in names are ordinary columns: kept as own keys, never read through the prototype.
    { name: 'built-in column names', value: enc(json(pg({ id: 500, toString: 'ts', hasOwnProperty: 'hop', valueOf: 3 }))), table: 'public.customers', key: { id: 500 }, row: { id: 500, toString: 'ts', hasOwnProperty: 'hop', valueOf: 3 } },
    // The limits themselves are accepted: 38 digits, 1E+125, 1E-130, 31 levels, 2,048-byte key.
    { name: 'values at the limits', value: enc(pgRaw(LIMITS_ROW)), table: 'public.customers', key: { id: 501 }, row: parseJson(LIMITS_ROW) as JsonObject },
    { name: 'string key of 2,048 bytes', value: enc(json(products({ sku: 'é'.repeat(1024), name: 'max' }))), table: 'public.products', key: { sku: 'é'.repeat(1024) }, row: { sku: 'é'.repeat(1024), name: 'max' } },
  ];
  return [...out, ...formats];
}
