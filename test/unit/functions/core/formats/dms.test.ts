import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { dms, parseDmsTimestamp } from '../../../../../functions/core/formats/dms.js';
import type { JsonObject } from '../../../../../functions/core/json.js';
import type { ChangeEvent, ControlEvent, InboundMessage, NormalizedEvent } from '../../../../../functions/core/types.js';
import { context, fixture, inbound, inboundFixture } from '../../../../helpers/inbound.js';

const DIR = 'dms';
const ctx = context({ 'public.foo': ['id'], 'public.orders': ['id'], 'inventory.customers': ['id'] });

function one(events: NormalizedEvent[]): ChangeEvent {
  assert.equal(events.length, 1);
  assert.equal(events[0]!.kind, 'change');
  return events[0] as ChangeEvent;
}

const decode = (m: InboundMessage) => dms.decode(m, ctx);
const fx = (name: string, sequence = '1') => inboundFixture(DIR, name, { sequence });
function variant(name: string, change: (v: JsonObject) => JsonObject): InboundMessage {
  return inbound(change(fixture(DIR, name).value as JsonObject));
}
const isDecodeError = (reason: string, pattern?: RegExp) => (e: unknown) =>
  e instanceof DecodeError && e.reason === reason && (pattern === undefined || pattern.test(e.message));

describe('dms decoder', () => {
  it('detects data and control records, and not other formats', () => {
    for (const name of ['full-load-row', 'insert-default-settings', 'control-drop-table', 'control-create-table-includecontroldetails']) {
      assert.ok(dms.detect(fx(name)), name);
    }
    assert.equal(dms.detect(inbound({ after: { id: 1 } })), false);
  });

  it('decodes a full-load row as a snapshot read (op r)', () => {
    const e = one(decode(fx('full-load-row')));
    assert.equal(e.op, 'r');
    assert.equal(e.snapshot, true);
    assert.equal(e.table, 'public.foo');
    assert.deepEqual(e.key, { id: 42 });
    assert.deepEqual(e.after, { age: 30, attributes: '{"foo": "bar"}', id: 42, name: 'John' });
    assert.equal(e.before, null);
  });

  it('never uses metadata.timestamp: commitTs is null without IncludeTransactionDetails', () => {
    const e = one(decode(fx('insert-default-settings')));
    assert.equal(e.op, 'c');
    assert.equal(e.commitTs, null);
    assert.equal(e.txid, '12345678');
    assert.equal(e.table, 'public.orders');
  });

  it('takes commitTs from commit-timestamp (microseconds truncated to ms)', () => {
    const e = one(decode(fx('insert-includetransactiondetails-true')));
    assert.equal(e.commitTs, Date.UTC(2024, 6, 29, 0, 58, 17, 974));
    assert.equal(e.txid, '1139');
  });

  it('orders every DMS event by transport sequence (stream-position is opaque)', () => {
    const e = one(decode(fx('insert-includetransactiondetails-true', '49590338271490256608559692538361571095921575989136588898')));
    assert.deepEqual(e.position, { tuple: [49590338271490256608559692538361571095921575989136588898n], strength: 'transport' });
    assert.equal(dms.ordering, 'transport');
  });

  it('decodes an update with a full before image from the configured field', () => {
    const e = one(decode(fx('update-with-before-image-all-columns')));
    assert.equal(e.op, 'u');
    assert.equal(e.before?.age, 31);
    assert.equal(e.after?.age, 33);
    assert.deepEqual(e.key, { id: 46 });
  });

  it('keeps a PK-only before image of a key change: old key in before, new key in after and key', () => {
    const e = one(decode(fx('update-with-before-image-pk-only-pk-changed')));
    assert.deepEqual(e.before, { id: 46 });
    assert.equal(e.after?.id, 45);
    assert.deepEqual(e.key, { id: 45 });
  });

  it('reads the before image from the field name given by the context', () => {
    const m = variant('update-with-before-image-all-columns', (v) => {
      const { 'before-image': image, ...rest } = v;
      return { ...rest, old_row: image! };
    });
    assert.equal(one(dms.decode(m, context({ 'public.foo': ['id'] }, 'old_row'))).before?.age, 31);
    assert.equal(one(decode(m)).before, null);
  });

  it('decodes an update without before image with before null', () => {
    const e = one(decode(fx('update-without-before-image')));
    assert.equal(e.op, 'u');
    assert.equal(e.before, null);
    assert.equal(e.after?.age, 34);
  });

  it('decodes deletes with data as the before image (PK-only or full row)', () => {
    const pg = one(decode(fx('delete-postgresql-source-replica-identity-default')));
    assert.equal(pg.op, 'd');
    assert.equal(pg.after, null);
    assert.deepEqual(pg.before, { age: null, attributes: null, id: 45, name: null });
    assert.deepEqual(pg.key, { id: 45 });
    const my = one(decode(fx('delete-mysql-source-full-row')));
    assert.equal(my.table, 'inventory.customers');
    assert.equal(my.before?.first_name, 'Anne');
    assert.equal(my.txid, '8590392498');
  });

  it('leaves the key empty for an unconfigured table (the caller derives and checks it)', () => {
    const e = one(dms.decode(fx('insert-default-settings'), context()));
    assert.deepEqual(e.key, {});
  });

  it('decodes control records as schema control events, keeping the table-def primary key', () => {
    const create = dms.decode(fx('control-create-table-includecontroldetails'), ctx)[0] as ControlEvent;
    assert.equal(create.kind, 'control');
    assert.equal(create.control, 'schema');
    assert.equal(create.table, 'public.foo');
    assert.deepEqual(create.detail, { operation: 'create-table', primaryKey: ['id'] });
    const drop = dms.decode(fx('control-drop-table'), ctx)[0] as ControlEvent;
    assert.deepEqual(drop.detail, { operation: 'drop-table' });
  });

  it('turns a truncate-table control record into a truncate change event with an empty key', () => {
    for (const operation of ['truncate-table', 'TruncateTable']) {
      const m = variant('control-drop-table', (v) => ({ ...v, metadata: { ...(v.metadata as JsonObject), operation } }));
      const e = one(decode(m));
      assert.equal(e.op, 't');
      assert.equal(e.table, 'public.foo');
      assert.deepEqual(e.key, {});
    }
  });

  it('parses DMS timestamps with or without a zone as UTC', () => {
    assert.equal(parseDmsTimestamp('2024-07-29T00:58:17.974340Z'), Date.UTC(2024, 6, 29, 0, 58, 17, 974));
    assert.equal(parseDmsTimestamp('2024-07-29 00:58:17'), Date.UTC(2024, 6, 29, 0, 58, 17));
    assert.equal(parseDmsTimestamp('2024-07-29T02:58:17.5+02:00'), Date.UTC(2024, 6, 29, 0, 58, 17, 500));
  });

  it('rejects malformed messages with specific DecodeErrors', () => {
    const withMeta = (patch: JsonObject) => variant('insert-includetransactiondetails-true', (v) => ({ ...v, metadata: { ...(v.metadata as JsonObject), ...patch } }));
    assert.throws(() => decode(withMeta({ operation: 'upsert' })), isDecodeError('bad-op', /load, insert, update or delete/));
    assert.throws(() => decode(withMeta({ 'table-name': null })), isDecodeError('missing-field', /table-name/));
    assert.throws(() => decode(withMeta({ 'commit-timestamp': 'yesterday' })), isDecodeError('bad-field', /commit-timestamp/));
    assert.throws(() => decode(variant('insert-default-settings', (v) => ({ ...v, data: null }))), isDecodeError('missing-field', /"data"/));
  });
});
