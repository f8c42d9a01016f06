/**
 * The JSON a user types or writes, read with the mistake's place: the option or file, the line and
 * column, and an example of what was expected.
 *
 *   --key '{order_id: 7}'   → --key is not valid JSON at line 1, column 2: Quoted object key expected but got 'o'
 *                               fix: --key '{"order_id": 7}'
 *   a config file           → tidemark.config.json is not valid JSON at line 9, column 5: Expected ',' or '}' …
 */
import { errorMessage } from '../../functions/core/errors.js';
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from '../../functions/core/json.js';
import { CliError } from './errors.js';

/** The 1-based line and column of a 0-based offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  const end = Math.min(Math.max(0, offset), text.length);
  for (let i = text.indexOf('\n'); i >= 0 && i < end; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: end - start + 1 };
}

/** The offset a JSON parser's message names (`… at position 182`, either parser's wording), else the end. */
function offsetOf(message: string, text: string): number {
  const at = message.lastIndexOf('position ');
  if (at < 0) return text.length;
  let digits = '';
  for (const ch of message.slice(at + 'position '.length, at + 'position '.length + 12)) {
    if (ch < '0' || ch > '9') break;
    digits += ch;
  }
  return digits === '' ? text.length : Number(digits);
}

/** The parser's message without its position (which the caller gives as line and column). */
function withoutPosition(message: string): string {
  const at = message.lastIndexOf(' at position ');
  return at >= 0 ? message.slice(0, at) : message;
}

/** `what is not valid JSON at line L, column C: <reason>` for a failed parse of `text`. */
export function jsonErrorText(what: string, text: string, err: unknown): string {
  let message = errorMessage(err);
  if (!message.includes(' at position ')) {
    // Node's own parser does not always say where (`Unexpected token '}', "…" is not valid JSON`): ask the exact one.
    try {
      parseJson(text);
    } catch (again) {
      message = errorMessage(again);
    }
  }
  const { line, column } = lineAndColumn(text, offsetOf(message, text));
  return `${what} is not valid JSON at line ${line}, column ${column}: ${withoutPosition(message)}`;
}

/** Parses a JSON option (numbers kept exact); a mistake names the option, line and column, and an example. */
export function jsonOptionValue(option: string, text: string, example: string): JsonValue {
  try {
    return parseJson(text);
  } catch (err) {
    throw new CliError(jsonErrorText(option, text, err), `${option} '${example}'`);
  }
}

/** A `--key` value: a JSON object of key columns. */
export function keyOption(text: string, example = '{"order_id": 7}'): JsonObject {
  const key = jsonOptionValue('--key', text, example);
  if (!isJsonObject(key)) throw new CliError('--key must be a JSON object of the key columns', `--key '${example}'`);
  return key;
}
