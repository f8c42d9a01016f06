/** Builds the raw and quarantine lines of a batch from normalization results. */
import { stringifyJson } from '../core/json.js';
import { encodePosition } from '../core/position.js';
import type { Normalized, RawRecord } from '../core/normalize.js';
import { CONTROL_TABLE, type QuarantineLine, type RawLine } from '../adapters/raw-store.js';

const text = (bytes: Uint8Array | null) => (bytes && bytes.length > 0 ? Buffer.from(bytes).toString('utf8') : null);
const b64 = (bytes: Uint8Array | null) => (bytes && bytes.length > 0 ? Buffer.from(bytes).toString('base64') : null);

export function rawLinesFor(record: RawRecord, result: Normalized & { ok: true }): { table: string; line: RawLine }[] {
  return result.events.map((e) => {
    const line: RawLine = {
      kind: e.kind,
      format: e.format,
      op: e.kind === 'change' ? e.op : null,
      control: e.kind === 'control' ? e.control : null,
      table: e.table,
      key: e.kind === 'change' ? stringifyJson(e.key) : null,
      position: e.position ? encodePosition(e.position.tuple) : null,
      orderingStrength: e.position?.strength ?? null,
      commitTs: e.commitTs,
      txid: e.txid,
      snapshot: e.kind === 'change' ? e.snapshot : false,
      transport: record.transport,
      topic: record.topic,
      headers: record.headers,
      messageKey: text(record.key),
      message: text(record.value),
    };
    return { table: e.kind === 'change' ? e.table : CONTROL_TABLE, line };
  });
}

export function quarantineLineFor(record: RawRecord, reason: string, detail: string): QuarantineLine {
  return {
    reason,
    detail,
    transport: record.transport,
    topic: record.topic,
    headers: record.headers,
    valueBase64: b64(record.value),
    keyBase64: b64(record.key),
  };
}
