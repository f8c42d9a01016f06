/**
 * The closed vocabulary of quarantine reasons: every reason a record can be quarantined with is
 * listed here once, with the one-line description that docs/formats.md repeats (a unit test checks
 * that the table there lists every reason from this map, and nothing else).
 *
 * A decoder throws `decodeError('bad-field', '…')` (formats/kit.ts), which only accepts these
 * names; the Normalizer returns them as `Rejection.reason`.
 *
 * The names and the descriptions are two constants, side by side, with the descriptions checked to
 * cover every name and no other: the Lambda needs only the names, and its bundle leaves the
 * descriptions (about 2.5 KB, read by the docs test alone) out.
 */

/** Every reason, in the order of the table in docs/formats.md. */
export const QUARANTINE_REASON_NAMES = [
  'invalid-utf8',
  'invalid-json',
  'unknown-format',
  'unsupported-envelope',
  'unsupported-connector',
  'fragment-invalid',
  'fragment-incomplete',
  'fragment-too-large',
  'unknown-table',
  'missing-field',
  'missing-after',
  'missing-key',
  'bad-key',
  'unmapped-key',
  'bad-op',
  'bad-field',
  'bad-value',
  'bad-shape',
  'bad-position',
  'bad-timestamp',
  'number-range',
  'number-precision',
  'invalid-string',
  'bad-column-name',
  'too-deep',
  'too-many-columns',
  'key-too-large',
  'placeholder-key',
  'reserved-column',
  'tombstone-table-unknown',
  'tombstone-key-missing',
  'write-refused',
  'decoder-error',
] as const;

export type QuarantineReason = (typeof QUARANTINE_REASON_NAMES)[number];

/** What each reason means, as docs/formats.md says it: exactly one entry per reason. */
export const QUARANTINE_REASONS = {
  'invalid-utf8': 'The value (or key) bytes are not valid UTF-8.',
  'invalid-json': 'The value is not valid JSON.',
  'unknown-format': 'The message matches none of the configured formats (the detail lists what each expects).',
  'unsupported-envelope': 'A recognized connector shape that cannot be applied as rows (e.g. CockroachDB `envelope=key_only`).',
  'unsupported-connector': 'A Debezium change event from a connector tidemark does not decode; the detail names the connector (e.g. `cassandra`) and the ones it does.',
  'fragment-invalid': 'The parts of a split Aurora DSQL record do not fit together: an index outside the fragment count, two texts for one index, a CRC32C mismatch, or an image that is not a JSON object.',
  'fragment-incomplete': 'A split Aurora DSQL record whose main record or fragments did not all arrive within the reassembly window; the parts that did arrive are quarantined.',
  'fragment-too-large': 'A split Aurora DSQL record with more fragments than tidemark holds per chunk (1,000), or larger than it reassembles in memory (64 MiB).',
  'unknown-table': 'The message names a source table that is not configured.',
  'missing-field': 'A field the format requires is absent or has the wrong JSON type.',
  'missing-after': 'An insert, update or snapshot read carries neither an after image nor a patch.',
  'missing-key': 'A configured primary-key column is absent or null in every image and in the message key.',
  'bad-key': 'A key value cannot be a key of its declared type (object, array, empty string, non-numeric text for a number key).',
  'unmapped-key': 'A positional key (CockroachDB key array) does not match the configured key columns.',
  'bad-op': 'The operation field holds a value the format does not define.',
  'bad-field': 'A field holds a value of the wrong shape (e.g. Decimal-schema text that is neither base64 nor a decimal).',
  'bad-value': 'A typed value (MongoDB Extended JSON wrapper) holds something its type cannot represent.',
  'bad-shape': 'The message value is not a JSON object, or a batch element is not one.',
  'bad-position': 'The source position is not an unsigned integer tuple of the format (LSN, binlog file and offset, HLC, SCN).',
  'bad-timestamp': 'The commit time is not whole epoch milliseconds between 1970 and the year 9999.',
  'number-range': "A number lies outside DynamoDB's range (magnitude above 9.99E+125 or below 1E-130).",
  'number-precision': 'A number has more than the 38 significant digits DynamoDB stores exactly.',
  'invalid-string': 'A string holds an unpaired UTF-16 surrogate, which has no UTF-8 form.',
  'bad-column-name': 'A column name is empty, has no UTF-8 form, or is longer than DynamoDB allows.',
  'too-deep': "A value nests maps and lists deeper than DynamoDB's 32 levels.",
  'too-many-columns': 'A row image or patch carries more columns than `apply.maxColumns` allows (default 5,000).',
  'key-too-large': 'A key value is longer than DynamoDB allows (2,048 bytes for a partition key, 1,024 for a sort key).',
  'placeholder-key': 'A key column holds the unchanged-value placeholder instead of a key value.',
  'reserved-column': 'A source column starts with `__`, which is reserved for tidemark metadata.',
  'tombstone-table-unknown': 'A Kafka tombstone to apply as a delete names no table: the topic is not `<prefix>.<schema>.<table>` of a configured table and more than one table is configured.',
  'tombstone-key-missing': 'A Kafka tombstone to apply as a delete has no key to delete (a JSON object, or an array of the key values).',
  'write-refused': 'DynamoDB refused the write for good (e.g. an item over its size limit with no spill store): the records are quarantined instead of blocking the shard.',
  'decoder-error': 'A decoder failed in an unexpected way; the detail names the failure (please report it).',
} as const satisfies Readonly<Record<QuarantineReason, string>>;

const REASON_SET: ReadonlySet<string> = new Set(QUARANTINE_REASON_NAMES);

export function isQuarantineReason(value: string): value is QuarantineReason {
  return REASON_SET.has(value);
}
