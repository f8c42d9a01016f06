/**
 * Every wire format tidemark reads, in detection order: the most specific shapes first, the
 * generic teaching envelope last. See README "Formats" for how each one is ordered.
 */
import type { FormatDecoder } from '../types.js';
import { canal } from './canal.js';
import { cockroachdb } from './cockroachdb.js';
import { debezium } from './debezium.js';
import { debeziumFlattened } from './debezium-flattened.js';
import { debeziumMongo } from './debezium-mongodb.js';
import { dms } from './dms.js';
import { generic } from './generic.js';
import { maxwell } from './maxwell.js';

export const FORMATS: readonly FormatDecoder[] = [debeziumMongo, debezium, debeziumFlattened, cockroachdb, dms, maxwell, canal, generic];

export function formatByName(name: string): FormatDecoder | undefined {
  return FORMATS.find((f) => f.name === name);
}
