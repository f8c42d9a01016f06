/**
 * Every wire format tidemark reads: one decoder per name in {@link FORMAT_NAMES}, and the order in
 * which `auto` tries them (the most specific shapes first, the generic teaching envelope last).
 * docs/formats.md describes each format and how it is ordered.
 */
import type { FormatDecoder } from '../types.js';
import { auroraDsql } from './aurora-dsql.js';
import { canal } from './canal.js';
import { cockroachdb } from './cockroachdb.js';
import { debezium } from './debezium.js';
import { debeziumFlattened } from './debezium-flattened.js';
import { debeziumMongo } from './debezium-mongodb.js';
import { dms } from './dms.js';
import { generic } from './generic.js';
import { maxwell } from './maxwell.js';
import { FORMAT_NAMES, type FormatName, isFormatName } from './names.js';

export { FORMAT_NAMES, type FormatName, isFormatName };

/** The decoder of each format name: a complete map, so a new name without a decoder does not compile. */
export const DECODERS: Readonly<Record<FormatName, FormatDecoder>> = {
  'debezium-mongodb': debeziumMongo,
  debezium,
  'debezium-flattened': debeziumFlattened,
  cockroachdb,
  dms,
  maxwell,
  canal,
  'aurora-dsql': auroraDsql,
  generic,
};

/** Detection order for `format: "auto"`. */
const DETECTION_ORDER: readonly FormatName[] = ['debezium-mongodb', 'debezium', 'debezium-flattened', 'aurora-dsql', 'cockroachdb', 'dms', 'maxwell', 'canal', 'generic'];

export const FORMATS: readonly FormatDecoder[] = DETECTION_ORDER.map((name) => DECODERS[name]);

export function formatByName(name: string): FormatDecoder | undefined {
  return isFormatName(name) ? DECODERS[name] : undefined;
}
