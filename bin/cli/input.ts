/**
 * Reads JSON Lines of messages for `plan` and `apply`, as bytes: the file is split on the newline
 * byte (0x0A) and every line is kept byte for byte, so a line that is not valid UTF-8 reaches the
 * pipeline unchanged and is quarantined as `invalid-utf8`, exactly as the Lambda would.
 *   --input-shape value  (default) each line is one message value
 *   --input-shape record each line is {"key": …, "value": …, "topic"?: "…"}; value null is a Kafka
 *                        tombstone. `keyBase64` / `valueBase64` carry bytes that are not UTF-8 text
 *                        (a binary Kafka key, say) in place of `key` / `value`.
 * A record line that cannot be read as an envelope (not UTF-8, not JSON) goes to the pipeline as a
 * message value, so it is quarantined with its exact bytes rather than lost. Lines that are JSON but
 * not a record are reported with their line number and reason; nothing stops the run.
 */
import { readFileSync } from 'node:fs';
import { errorMessage } from '../../functions/core/errors.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson, stringifyJson } from '../../functions/core/json.js';

export type InputShape = 'value' | 'record';

export interface InputMessage {
  readonly line: number;
  readonly value: Uint8Array | null;
  readonly key: Uint8Array | null;
  readonly topic: string | null;
}

export interface InputProblem {
  readonly line: number;
  readonly reason: string;
}

const NEWLINE = 0x0a;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Splits bytes on 0x0A; a trailing newline does not make an extra line. */
export function splitLines(bytes: Uint8Array): Uint8Array[] {
  const lines: Uint8Array[] = [];
  let start = 0;
  for (let i = bytes.indexOf(NEWLINE); i >= 0; i = bytes.indexOf(NEWLINE, start)) {
    lines.push(bytes.subarray(start, i));
    start = i + 1;
  }
  if (start < bytes.length) lines.push(bytes.subarray(start));
  return lines;
}

/** True for a line of spaces, tabs and carriage returns only. */
const blank = (line: Uint8Array) => line.every((b) => b === 0x20 || b === 0x09 || b === 0x0d);

/** A lone UTF-16 surrogate in a JSON string has no UTF-8 form; encoding it would silently write U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function fieldBytes(record: JsonObject, field: 'key' | 'value'): Uint8Array | null {
  const b64Field = `${field}Base64`;
  const b64 = record[b64Field];
  if (b64 !== undefined && b64 !== null) {
    if (typeof b64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new Error(`"${b64Field}" must be base64 text`);
    return Buffer.from(b64, 'base64');
  }
  const v: JsonValue | undefined = record[field];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') {
    if (LONE_SURROGATE.test(v)) throw new Error(`"${field}" holds an unpaired UTF-16 surrogate, which has no UTF-8 form; send the bytes as "${b64Field}"`);
    return Buffer.from(v, 'utf8');
  }
  return Buffer.from(stringifyJson(v), 'utf8');
}

function recordLine(line: number, bytes: Uint8Array): InputMessage | InputProblem {
  let parsed: JsonValue;
  try {
    parsed = parseJson(utf8.decode(bytes));
  } catch {
    // Not an envelope at all: let the pipeline quarantine the exact bytes (invalid-utf8, invalid-json).
    return { line, value: bytes, key: null, topic: null };
  }
  if (!isJsonObject(parsed) || !(Object.hasOwn(parsed, 'value') || Object.hasOwn(parsed, 'valueBase64'))) {
    return { line, reason: 'a record line must be an object with "value" or "valueBase64" (and optional "key" or "keyBase64", "topic")' };
  }
  const topic = Object.hasOwn(parsed, 'topic') ? parsed.topic : undefined;
  if (topic !== undefined && topic !== null && typeof topic !== 'string') return { line, reason: '"topic" must be a string' };
  try {
    return { line, value: fieldBytes(parsed, 'value'), key: fieldBytes(parsed, 'key'), topic: topic ?? null };
  } catch (err) {
    return { line, reason: errorMessage(err) };
  }
}

/** Parses file bytes into messages; see the module comment for the two shapes. */
export function parseMessages(bytes: Uint8Array, shape: InputShape): { messages: InputMessage[]; problems: InputProblem[] } {
  const messages: InputMessage[] = [];
  const problems: InputProblem[] = [];
  splitLines(bytes).forEach((raw, i) => {
    const line = i + 1;
    if (blank(raw)) return;
    if (shape === 'value') {
      // The value is kept byte for byte; the pipeline itself reports lines that are not UTF-8 or JSON.
      messages.push({ line, value: raw, key: null, topic: null });
      return;
    }
    const read = recordLine(line, raw);
    if ('reason' in read) problems.push(read);
    else messages.push(read);
  });
  return { messages, problems };
}

export function readMessages(path: string, shape: InputShape): { messages: InputMessage[]; problems: InputProblem[] } {
  return parseMessages(readFileSync(path), shape);
}
