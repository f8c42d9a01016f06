/**
 * The names of the wire formats tidemark reads, listed once. The config's `format` setting is
 * `"auto"` or one of these; the decoder registry (index.ts) maps each name to its decoder.
 */
export const FORMAT_NAMES = ['generic', 'debezium', 'debezium-flattened', 'debezium-mongodb', 'cockroachdb', 'dms', 'maxwell', 'canal', 'aurora-dsql'] as const;

export type FormatName = (typeof FORMAT_NAMES)[number];

export function isFormatName(value: string): value is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(value);
}
