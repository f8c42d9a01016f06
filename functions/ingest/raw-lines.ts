/**
 * Builds the raw and quarantine lines of a batch from normalization results.
 *
 * Bytes are kept exactly: a key or value that is valid UTF-8 is stored as text (`messageKey`,
 * `message`), anything else as base64 (`messageKeyBase64`, `messageBase64`, with the text field
 * null), so `00 FF FE 80 41` is never turned into replacement characters.
 */
import { stringifyJson } from '../core/json.js';
import { encodePosition } from '../core/position.js';
import type { Normalized, RawRecord, RecordTexts } from '../core/normalize.js';
import type { NormalizedEvent } from '../core/types.js';
import { type QuarantineLine, RAW_LINE_VERSION, type RawLine } from '../adapters/raw-store.js';

/** A leading byte-order mark is kept (as U+FEFF), so the text is exactly the bytes. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Bytes as delivered: UTF-8 text, or base64 when they are not valid UTF-8. Empty or absent → neither.
 * `text`, when given, is the bytes already decoded the same way (the normalizer's `texts`).
 */
export function exactBytes(bytes: Uint8Array | null, text?: string | null): { text: string | null; base64?: string } {
  if (!bytes || bytes.length === 0) return { text: null };
  if (typeof text === 'string') return { text };
  try {
    return { text: utf8.decode(bytes) };
  } catch {
    return { text: null, base64: Buffer.from(bytes).toString('base64') };
  }
}

const b64 = (bytes: Uint8Array | null) => (bytes && bytes.length > 0 ? Buffer.from(bytes).toString('base64') : null);

/** The parts of a raw line that depend on the record only: computed once per record, shared by its lines. */
export interface RecordPart {
  readonly transport: RawLine['transport'];
  readonly topic: string | null;
  readonly headers: RawLine['headers'];
  readonly messageKey: string | null;
  readonly messageKeyBase64?: string;
  readonly message: string | null;
  readonly messageBase64?: string;
}

export function recordPart(record: RawRecord, texts?: RecordTexts): RecordPart {
  const key = exactBytes(record.key, texts?.key);
  const value = exactBytes(record.value, texts?.value);
  return {
    transport: record.transport,
    topic: record.topic,
    headers: record.headers,
    messageKey: key.text,
    ...(key.base64 !== undefined ? { messageKeyBase64: key.base64 } : {}),
    message: value.text,
    ...(value.base64 !== undefined ? { messageBase64: value.base64 } : {}),
  };
}

/** What a raw line names a change by: its canonical key text and content hash (the Normalizer and plan.ts compute them). */
export interface LineIdentity {
  readonly keyId: string;
  readonly hash: string;
}

/**
 * One raw line for one event of a record. `first` is false for the record's later lines in the same
 * object: those carry `message: null` and `messageRef: true` instead of another copy of the message.
 * `identity` is the change's key id and content hash (null for a control event).
 */
export function rawLineFor(part: RecordPart, e: NormalizedEvent, first: boolean, identity: LineIdentity | null = null): RawLine {
  const { message, messageBase64, ...rest } = part;
  const change = e.kind === 'change' ? e : null;
  return {
    v: RAW_LINE_VERSION,
    kind: e.kind,
    format: e.format,
    op: change ? change.op : null,
    control: e.kind === 'control' ? e.control : null,
    table: e.table,
    keyId: identity?.keyId ?? null,
    key: change ? stringifyJson(change.key) : null,
    position: e.position ? encodePosition(e.position.tuple) : null,
    orderingStrength: e.position?.strength ?? null,
    hash: identity?.hash ?? null,
    commitTs: e.commitTs,
    arrivalTs: part.transport.arrivalTime,
    txid: e.txid,
    snapshot: change ? change.snapshot : false,
    beforeNull: change !== null && change.op === 'u' && change.before === null,
    partial: change !== null && (change.patch !== null || change.placeholders.length > 0),
    ...rest,
    ...(first ? { message, ...(messageBase64 !== undefined ? { messageBase64 } : {}) } : { message: null, messageRef: true as const }),
  };
}

export function quarantineLineFor(record: RawRecord, rejection: Normalized & { ok: false }, table: string | null): QuarantineLine {
  return {
    reason: rejection.reason,
    detail: rejection.detail,
    table,
    transport: record.transport,
    topic: record.topic,
    headers: record.headers,
    valueBase64: b64(record.value),
    keyBase64: b64(record.key),
  };
}

/** A record refused after decoding (e.g. a write DynamoDB cannot take), with its exact bytes. */
export function refusedLineFor(record: RawRecord, reason: string, detail: string, table: string): QuarantineLine {
  return { reason, detail, table, transport: record.transport, topic: record.topic, headers: record.headers, valueBase64: b64(record.value), keyBase64: b64(record.key) };
}
