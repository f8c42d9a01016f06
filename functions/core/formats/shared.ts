/**
 * Helpers every decoder shares.
 *
 * Transport order: the Kinesis sequence number or Kafka offset of the record. This is the fallback
 * position for formats that carry no comparable source position. It is weak ordering: a connector
 * redelivery looks newer than it is.
 */
import { DecodeError } from '../errors.js';
import { type Position, transportPosition } from '../position.js';
import type { JsonObject } from '../json.js';
import type { DecodeContext, InboundMessage, Key } from '../types.js';

/** The record's transport sequence as an exact integer; DecodeError `bad-position` if it is not one. */
export function transportSequence(message: InboundMessage): bigint {
  const seq = message.transport.sequence;
  if (!/^\d+$/.test(seq)) throw new DecodeError('bad-position', `transport sequence must be a decimal string, got "${seq}"`);
  return BigInt(seq);
}

/** `(sequence, ...tiebreak)` as a transport-strength position, e.g. a row index within one message. */
export function transportOrder(message: InboundMessage, ...tiebreak: bigint[]): Position {
  return transportPosition(transportSequence(message), ...tiebreak);
}

/**
 * The configured key columns of `table`, each taken from the first image that has a non-null value.
 * The caller re-derives the final key; this is a decoder's best guess.
 */
export function keyFromImages(table: string, ctx: DecodeContext, images: readonly (JsonObject | null)[]): Key {
  const key: Key = {};
  for (const column of ctx.keyColumns(table) ?? []) {
    for (const image of images) {
      const v = image?.[column];
      if (v !== undefined && v !== null) {
        key[column] = v;
        break;
      }
    }
  }
  return key;
}
