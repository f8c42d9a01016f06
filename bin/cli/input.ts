/**
 * Reads JSON Lines of messages for `plan` and `apply`.
 *   --input-shape value  (default) each line is one message value
 *   --input-shape record each line is {"key": …, "value": …, "topic"?: "…"}; value null is a Kafka tombstone
 * Bad lines are reported with their line number and reason; they never stop the run.
 */
import { readFileSync } from 'node:fs';
import { isJsonObject, type JsonValue, parseJson, stringifyJson } from '../../functions/core/json.js';

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

const bytes = (v: JsonValue | undefined): Uint8Array | null => {
  if (v === undefined || v === null) return null;
  return Buffer.from(typeof v === 'string' ? v : stringifyJson(v), 'utf8');
};

export function readMessages(path: string, shape: InputShape): { messages: InputMessage[]; problems: InputProblem[] } {
  const text = readFileSync(path, 'utf8');
  const messages: InputMessage[] = [];
  const problems: InputProblem[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    if (shape === 'value') {
      // The value is kept byte for byte; the pipeline itself reports lines that are not JSON.
      messages.push({ line, value: Buffer.from(raw, 'utf8'), key: null, topic: null });
      return;
    }
    let parsed: JsonValue;
    try {
      parsed = parseJson(raw);
    } catch (err) {
      problems.push({ line, reason: `not valid JSON: ${(err as Error).message}` });
      return;
    }
    if (!isJsonObject(parsed) || !('value' in parsed)) {
      problems.push({ line, reason: 'a record line must be an object with "value" (and optional "key", "topic")' });
      return;
    }
    const topic = parsed.topic;
    if (topic !== undefined && topic !== null && typeof topic !== 'string') {
      problems.push({ line, reason: '"topic" must be a string' });
      return;
    }
    messages.push({ line, value: bytes(parsed.value), key: bytes(parsed.key), topic: topic ?? null });
  });
  return { messages, problems };
}
