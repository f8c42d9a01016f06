/**
 * Debezium MongoDB connector (1.x oplog mode and 2.x/3.x change streams).
 *
 * - `before` / `after` (and 1.x `patch` / `filter`, and `updateDescription.updatedFields`) are
 *   Extended JSON **text**: parsed again and converted to plain values (see `mongo-extjson.ts`).
 * - Table is `<source.db>.<source.collection>`; the key column is `_id`, compared by value
 *   (`1004` and `{"$numberLong":"1004"}` are the same key; an ObjectId becomes its 24-hex string).
 * - Position depends on the connector version (`source.version`):
 *   - **before 3.4**: `source.ts_ms` is the oplog clusterTime seconds × 1000 and `source.ord` its
 *     increment, MongoDB's own total order. The position is `[ts_ms / 1000, ord]`, source strength,
 *     so a window redelivered after a connector restart is stale, not newer.
 *   - **3.4 and later** (DBZ-9683), or no version: `ts_ms` is the wall time when MongoDB 6.0+ gives
 *     one, and the resume token never reaches the message, so nothing in it orders events. The
 *     position is `[2^32, offset]`: transport order (weak). The constant first element is above
 *     every clusterTime second (a 32-bit number), so after an upgrade to 3.4 the new events still
 *     order after the keys written by the older connector.
 * - Updates:
 *   - `change_streams_update_full` (default): `after` is the full document **as looked up later**;
 *     it may already include later writes. It is applied as a full row.
 *   - With a pre-image (`*_with_pre_image`) and no `after`: the after image is composed from the
 *     delivered `before` and `updateDescription` (exact, nested paths included).
 *   - `change_streams` (delta only): a patch. Top-level `updatedFields` go to `patch.set`, top-level
 *     `removedFields` to `patch.unset`. A dotted path (`a.b`, `tags.2`) or a `truncatedArrays` entry
 *     changes part of a column the patch cannot rebuild without the stored value, so that top-level
 *     column is listed in `placeholders`: its stored value is kept and the gap is counted.
 *   - 1.x oplog `patch`: `$set`/`$unset` (and the 5.0+ `$v:2` `diff` form) are handled the same way;
 *     a replacement document is a full row.
 * - Deletes without a pre-image carry neither image: op `d` with the key from the message key or `filter`.
 */
import { cloneJson, isJsonObject, type JsonObject, type JsonValue, toBigInt } from '../json.js';
import { NO_POSITION, type Position, sourcePosition } from '../position.js';
import { type ChangeEvent, type FormatDecoder, type InboundMessage, isRowOp, type Key, type NormalizedEvent, type RowOp } from '../types.js';
import { changeEvent, decodeError, msOf, own, put, textOf, transportOrder } from './kit.js';
import { parseExtJson, parseExtJsonDocument, toPlain } from './mongo-extjson.js';
import { transactionMember } from './debezium-control.js';

const FORMAT = 'debezium-mongodb';

/** Above every MongoDB clusterTime second (a 32-bit number): transport positions sort after source ones. */
const TRANSPORT_EPOCH = 1n << 32n;

/** True when `source.version` ("2.7.3.Final", "3.3.1.Final") names a connector before 3.4. */
export function isBeforeDebezium34(version: JsonValue | undefined): boolean {
  const m = typeof version === 'string' ? /^(\d+)\.(\d+)/.exec(version) : null;
  if (!m) return false;
  const major = Number(m[1]);
  return major < 3 || (major === 3 && Number(m[2]) < 4);
}

/**
 * The position of an event: `[ts_ms / 1000, ord]` before Debezium 3.4, else `[2^32, offset]`
 * (transport). Incremental-snapshot reads get no position, as for the relational connectors: their
 * chunks are read outside the log order, so they only fill keys the stream has not touched.
 */
export function mongoPosition(source: JsonObject, message: InboundMessage): Position {
  if (source.snapshot === 'incremental') return NO_POSITION;
  const ms = toBigInt(source.ts_ms);
  const ord = toBigInt(source.ord);
  if (isBeforeDebezium34(source.version) && ms !== undefined && ms >= 0n && ord !== undefined && ord >= 0n) return sourcePosition(ms / 1000n, ord);
  const offset = transportOrder(message);
  return { tuple: [TRANSPORT_EPOCH, ...offset.tuple], strength: 'transport' };
}

/** A MongoDB update reduced to dotted-path operations. `opaque` lists columns changed in a way we cannot replay. */
interface UpdateOps {
  readonly sets: [string, JsonValue][];
  readonly unsets: string[];
  readonly truncs: { path: string; size: number }[];
  readonly opaque: string[];
}

/** A document field: Extended JSON text, an already-parsed object, or null/absent. */
function documentField(value: JsonObject, field: string): JsonObject | null {
  const v = value[field];
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return parseExtJsonDocument(v, `"${field}"`);
  if (isJsonObject(v)) {
    const plain = toPlain(v);
    if (isJsonObject(plain)) return plain;
  }
  throw decodeError('bad-field', `"${field}" must be an Extended JSON string or null, got ${typeof v}`);
}

function topLevel(path: string): string {
  const dot = path.indexOf('.');
  return dot < 0 ? path : path.slice(0, dot);
}

function fromUpdateDescription(desc: JsonObject): UpdateOps {
  const ops: UpdateOps = { sets: [], unsets: [], truncs: [], opaque: [] };
  addUpdatedFields(ops, desc.updatedFields);
  const removed = desc.removedFields;
  if (Array.isArray(removed)) for (const f of removed) if (typeof f === 'string') ops.unsets.push(f);
  addTruncatedArrays(ops, desc.truncatedArrays);
  return ops;
}

/** `updatedFields`: a document, or (2.x) the Extended JSON text of one. */
function addUpdatedFields(ops: UpdateOps, updated: JsonValue | undefined): void {
  if (updated === undefined || updated === null) return;
  const doc = typeof updated === 'string' ? parseExtJsonDocument(updated, '"updateDescription.updatedFields"') : updated;
  if (!isJsonObject(doc)) throw decodeError('bad-field', '"updateDescription.updatedFields" must be a JSON document string');
  for (const [k, v] of Object.entries(doc)) ops.sets.push([k, toPlain(v)]);
}

function addTruncatedArrays(ops: UpdateOps, truncated: JsonValue | undefined): void {
  if (!Array.isArray(truncated)) return;
  for (const t of truncated) {
    if (!isJsonObject(t) || typeof t.field !== 'string' || typeof t.size !== 'number') {
      throw decodeError('bad-field', '"updateDescription.truncatedArrays" entries must be {field: string, size: number}');
    }
    ops.truncs.push({ path: t.field, size: t.size });
  }
}

/** 1.x oplog update document: `$set`/`$unset`, or the MongoDB 5.0+ `{$v: 2, diff}` form. */
function fromOplogPatch(patch: JsonObject): UpdateOps {
  const ops: UpdateOps = { sets: [], unsets: [], truncs: [], opaque: [] };
  for (const [op, arg] of Object.entries(patch)) {
    if (op === '$v') continue;
    if (!isJsonObject(arg)) throw decodeError('bad-field', `oplog patch operator "${op}" must hold a document`);
    if (op === '$set') for (const [k, v] of Object.entries(arg)) ops.sets.push([k, v]);
    else if (op === '$unset') ops.unsets.push(...Object.keys(arg));
    else if (op === 'diff') addDiff(ops, arg);
    else throw decodeError('bad-field', `oplog patch operator "${op}" is not supported (expected $set, $unset or diff)`);
  }
  return ops;
}

/** The MongoDB 5.0+ diff: `u`/`i` set, `d` unsets, `s<field>` sub-diffs this decoder does not apply. */
function addDiff(ops: UpdateOps, diff: JsonObject): void {
  for (const [section, body] of Object.entries(diff)) {
    if ((section === 'u' || section === 'i') && isJsonObject(body)) for (const [k, v] of Object.entries(body)) ops.sets.push([k, v]);
    else if (section === 'd' && isJsonObject(body)) ops.unsets.push(...Object.keys(body));
    else if (section.startsWith('s')) ops.opaque.push(section.slice(1));
    else throw decodeError('bad-field', `oplog patch diff section "${section}" is not understood`);
  }
}

type Container = JsonObject | JsonValue[];

/** Walks to the parent of the last path segment, creating sub-documents on the way. */
function parentOf(doc: JsonObject, parts: readonly string[], create: boolean): Container | null {
  let cur: Container = doc;
  for (const part of parts.slice(0, -1)) {
    const next: JsonValue | undefined = Array.isArray(cur) ? cur[Number(part)] : own(cur, part);
    if (next === undefined || next === null) {
      if (!create || Array.isArray(cur)) return null;
      const created: JsonObject = {};
      put(cur, part, created);
      cur = created;
    } else if (Array.isArray(next) || isJsonObject(next)) cur = next;
    else return null;
  }
  return cur;
}

/** Applies the operations to a copy of `before`; null when a path does not fit the document. */
function applyOps(before: JsonObject, ops: UpdateOps): JsonObject | null {
  if (ops.opaque.length > 0) return null;
  const doc = cloneJson(before);
  for (const { path, size } of ops.truncs) if (!truncateAt(doc, path, size)) return null;
  for (const [path, value] of ops.sets) if (!setAt(doc, path, value)) return null;
  for (const path of ops.unsets) unsetAt(doc, path);
  return doc;
}

function lastSegment(parts: readonly string[]): string {
  return parts[parts.length - 1] ?? '';
}

/** Shortens the array at `path` to `size`; false when there is no array there. */
function truncateAt(doc: JsonObject, path: string, size: number): boolean {
  const parts = path.split('.');
  const parent = parentOf(doc, parts, false);
  const last = lastSegment(parts);
  const arr = parent === null ? undefined : Array.isArray(parent) ? parent[Number(last)] : own(parent, last);
  if (!Array.isArray(arr)) return false;
  arr.length = Math.min(arr.length, size);
  return true;
}

/** Sets `path`, creating sub-documents on the way; false when the path does not fit the document. */
function setAt(doc: JsonObject, path: string, value: JsonValue): boolean {
  const parts = path.split('.');
  const parent = parentOf(doc, parts, true);
  const last = lastSegment(parts);
  if (parent === null) return false;
  if (!Array.isArray(parent)) {
    put(parent, last, value);
    return true;
  }
  const i = Number(last);
  if (!Number.isInteger(i) || i < 0) return false;
  while (parent.length < i) parent.push(null);
  parent[i] = value;
  return true;
}

/** Removes `path` (an array element becomes null, as MongoDB's `$unset` does); a missing path is a no-op. */
function unsetAt(doc: JsonObject, path: string): void {
  const parts = path.split('.');
  const parent = parentOf(doc, parts, false);
  const last = lastSegment(parts);
  if (parent === null) return;
  if (Array.isArray(parent)) parent[Number(last)] = null;
  else delete parent[last];
}

/** The patch for an update without any full image; dotted paths make their column a placeholder. */
function toPatch(ops: UpdateOps): Pick<ChangeEvent, 'patch' | 'placeholders'> {
  const set: JsonObject = {};
  const unset: string[] = [];
  const partial = new Set<string>(ops.opaque);
  for (const [path, value] of ops.sets) {
    if (path.includes('.')) partial.add(topLevel(path));
    else put(set, path, value);
  }
  for (const path of ops.unsets) {
    if (path.includes('.')) partial.add(topLevel(path));
    else unset.push(path);
  }
  for (const t of ops.truncs) partial.add(topLevel(t.path));
  for (const col of Object.keys(set)) partial.delete(col);
  for (const col of unset) partial.delete(col);
  return { patch: { set, unset }, placeholders: [...partial] };
}

function keyFromMessage(message: InboundMessage): JsonValue | undefined {
  const k = message.key;
  if (!isJsonObject(k)) return undefined;
  const raw = k.id ?? k._id;
  if (raw === undefined || raw === null) return undefined;
  return typeof raw === 'string' ? parseExtJson(raw, 'message key "id"') : toPlain(raw);
}

function snapshotOf(op: RowOp, snapshot: JsonValue | undefined): boolean {
  if (op === 'r') return true;
  return snapshot !== undefined && snapshot !== null && snapshot !== false && snapshot !== 'false';
}

/** The images of an update that carries no after document. */
interface UpdateImages {
  after: JsonObject | null;
  patch: ChangeEvent['patch'];
  placeholders: readonly string[];
}

/**
 * An update without an after image: a replacement document, or its operations applied to `before`,
 * or (no before image, or a path that does not fit) the operations kept as a patch.
 */
function updateWithoutAfter(value: JsonObject, before: JsonObject | null): UpdateImages {
  const { ops, replacement } = updateOperations(value);
  if (replacement !== null) return { after: replacement, patch: null, placeholders: [] };
  if (ops === null) {
    throw decodeError('missing-field', 'debezium-mongodb update carries neither "after", "updateDescription" nor "patch"');
  }
  const composed = before === null ? null : applyOps(before, ops);
  if (composed !== null) return { after: composed, patch: null, placeholders: [] };
  return { after: null, ...toPatch(ops) };
}

/** 2.x `updateDescription`, or 1.x `patch`: oplog operators, or else a whole replacement document. */
function updateOperations(value: JsonObject): { ops: UpdateOps | null; replacement: JsonObject | null } {
  if (isJsonObject(value.updateDescription)) return { ops: fromUpdateDescription(value.updateDescription), replacement: null };
  if (value.patch === undefined || value.patch === null) return { ops: null, replacement: null };
  const raw = documentField(value, 'patch');
  if (raw !== null && Object.keys(raw).some((k) => k.startsWith('$'))) return { ops: fromOplogPatch(raw), replacement: null };
  return { ops: null, replacement: raw };
}

/** A transaction id: the session and transaction number, or the older `stxnid`. */
function txidOf(source: JsonObject): string | null {
  const lsid = textOf(source.lsid);
  const txnNumber = textOf(source.txnNumber);
  return lsid !== null && txnNumber !== null ? `${lsid}:${txnNumber}` : textOf(source.stxnid);
}

function decodeEvent(message: InboundMessage, value: JsonObject): ChangeEvent {
  const source = value.source;
  if (!isJsonObject(source)) throw decodeError('missing-field', 'debezium-mongodb message has no "source" object');
  const rowOp = value.op;
  if (!isRowOp(rowOp) || rowOp === 't') {
    throw decodeError('bad-op', `debezium-mongodb "op" must be one of c, u, d, r; got ${JSON.stringify(rowOp ?? null)}`);
  }
  const db = source.db;
  const collection = source.collection;
  if (typeof db !== 'string' || typeof collection !== 'string') {
    throw decodeError('missing-field', 'debezium-mongodb "source.db" and "source.collection" must be strings');
  }
  const before = documentField(value, 'before');
  let after = documentField(value, 'after');
  const filter = documentField(value, 'filter');
  let patch: ChangeEvent['patch'] = null;
  let placeholders: readonly string[] = [];
  if (rowOp === 'u' && after === null) ({ after, patch, placeholders } = updateWithoutAfter(value, before));
  if ((rowOp === 'c' || rowOp === 'r') && after === null) {
    throw decodeError('missing-field', `debezium-mongodb op "${rowOp}" must carry an "after" document`);
  }

  const id = keyFromMessage(message) ?? after?._id ?? before?._id ?? filter?._id;
  if (id === undefined) {
    throw decodeError('missing-key', 'debezium-mongodb message has no _id: expected message key {"id": "<extended json>"}, or _id in after/before/filter');
  }
  const key: Key = { _id: id };
  return changeEvent({
    format: FORMAT,
    op: rowOp,
    table: `${db}.${collection}`,
    key,
    before,
    after,
    patch,
    placeholders,
    position: mongoPosition(source, message),
    txid: txidOf(source),
    commitTs: msOf(source.ts_ms),
    snapshot: snapshotOf(rowOp, source.snapshot),
    tx: transactionMember(value.transaction),
  });
}

/** Decoder for Debezium MongoDB change events (change streams, and the 1.x oplog `patch`/`filter` shape). */
export const debeziumMongo: FormatDecoder = {
  name: FORMAT,
  ordering: 'transport',
  shape: '{before: "<ext json>"|null, after: "<ext json>"|null, updateDescription?, source: {connector: "mongodb", db, collection, ord, lsid, txnNumber}, op}',
  detect(message: InboundMessage): boolean {
    const v = message.value;
    if (!isJsonObject(v) || !isJsonObject(v.source)) return false;
    if (v.source.connector === 'mongodb') return true;
    return typeof v.op === 'string' && ('patch' in v || 'filter' in v) && typeof v.source.collection === 'string';
  },
  decode(message: InboundMessage): NormalizedEvent[] {
    if (!isJsonObject(message.value)) throw decodeError('bad-shape', 'debezium-mongodb message value must be a JSON object');
    return [decodeEvent(message, message.value)];
  },
};
