import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { canal } from '../../../../../functions/core/formats/canal.js';
import type { JsonObject } from '../../../../../functions/core/json.js';
import type { ChangeEvent, ControlEvent, InboundMessage } from '../../../../../functions/core/types.js';
import { context, fixture, inbound, inboundFixture } from '../../../../helpers/inbound.js';

const DIR = 'canal';
const ctx = context({ 'inventory.products': ['id'] });

const decode = (m: InboundMessage) => canal.decode(m, ctx);
const fx = (name: string, sequence = '1') => inboundFixture(DIR, name, { sequence });
const variant = (name: string, patch: JsonObject) => inbound({ ...(fixture(DIR, name).value as JsonObject), ...patch });
const isDecodeError = (reason: string, pattern?: RegExp) => (e: unknown) =>
  e instanceof DecodeError && e.reason === reason && (pattern === undefined || pattern.test(e.message));

describe('canal decoder', () => {
  it('detects flat messages (row and DDL), and not Maxwell', () => {
    for (const name of ['insert-two-rows-in-one-message', 'delete', 'ddl-alter']) assert.ok(canal.detect(fx(name)), name);
    assert.equal(canal.detect(inbound({ database: 'test', table: 'e', type: 'insert', ts: 1, data: {} })), false);
  });

  it('fans a multi-row INSERT out to one event per row, ordered by (offset, row index)', () => {
    const events = decode(fx('insert-two-rows-in-one-message', '300')) as ChangeEvent[];
    assert.equal(events.length, 2);
    assert.deepEqual(
      events.map((e) => [e.op, e.key, e.position]),
      [
        ['c', { id: 112 }, { tuple: [300n, 0n], strength: 'transport' }],
        ['c', { id: 113 }, { tuple: [300n, 1n], strength: 'transport' }],
      ],
    );
    assert.equal(events[0]!.table, 'inventory.products');
    assert.equal(events[0]!.before, null);
    assert.equal(events[0]!.commitTs, 1589373561000);
    assert.equal(events[0]!.snapshot, false);
  });

  it('reads columns whose mysqlType is numeric as exact numbers, and keeps every other value as the delivered string', () => {
    const [e] = decode(fx('insert-two-rows-in-one-message')) as ChangeEvent[];
    assert.deepEqual(e!.after, { id: 112, name: 'car battery', weight: 8.1 });
    const [untyped] = decode(variant('insert-two-rows-in-one-message', { mysqlType: null })) as ChangeEvent[];
    assert.deepEqual(untyped!.after, { id: '112', name: 'car battery', weight: '8.1' });
  });

  it('decodes an UPDATE with before = {...data[i], ...old[i]}', () => {
    const [e] = decode(fx('update-old-holds-only-changed-columns')) as ChangeEvent[];
    assert.equal(e!.op, 'u');
    assert.equal(e!.before?.weight, 5.15);
    assert.equal(e!.before?.name, 'scooter');
    assert.equal(e!.after?.weight, 5.18);
    assert.deepEqual(e!.key, { id: 111 });
  });

  it('pairs old[i] with data[i] in a multi-row UPDATE, and gives before null when old is missing', () => {
    const events = decode(
      variant('update-old-holds-only-changed-columns', {
        data: [
          { id: '1', w: '2' },
          { id: '2', w: '3' },
        ],
        old: [{ w: '1' }, { w: '0' }],
        mysqlType: { id: 'varchar(8)', w: 'varchar(8)' },
      }),
    ) as ChangeEvent[];
    assert.deepEqual(
      events.map((e) => e.before),
      [
        { id: '1', w: '1' },
        { id: '2', w: '0' },
      ],
    );
    const [noOld] = decode(variant('update-old-holds-only-changed-columns', { old: null })) as ChangeEvent[];
    assert.equal(noOld!.before, null);
  });

  it('decodes a DELETE with before = data[i] and after null', () => {
    const [e] = decode(fx('delete')) as ChangeEvent[];
    assert.equal(e!.op, 'd');
    assert.equal(e!.after, null);
    assert.equal(e!.before?.name, 'scooter');
    assert.deepEqual(e!.key, { id: 111 });
  });

  it('uses gtid as txid only when non-empty', () => {
    const [none] = decode(fx('delete')) as ChangeEvent[];
    assert.equal(none!.txid, null);
    const [some] = decode(variant('delete', { gtid: '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:55' })) as ChangeEvent[];
    assert.equal(some!.txid, '0e4d5dcd-a33b-11ea-80f1-02010a22a99e:55');
  });

  it('decodes a DDL message as one schema control event with the statement', () => {
    const events = decode(fx('ddl-alter'));
    assert.equal(events.length, 1);
    const c = events[0] as ControlEvent;
    assert.equal(c.kind, 'control');
    assert.equal(c.control, 'schema');
    assert.equal(c.table, 'inventory.products');
    assert.deepEqual(c.detail, { type: 'ALTER', ddl: 'ALTER TABLE products ADD COLUMN color VARCHAR(16)' });
  });

  it('decodes a TRUNCATE DDL as a truncate change event with an empty key', () => {
    const [e] = decode(variant('ddl-alter', { type: 'TRUNCATE', sql: 'TRUNCATE TABLE products' })) as ChangeEvent[];
    assert.equal(e!.kind, 'change');
    assert.equal(e!.op, 't');
    assert.deepEqual(e!.key, {});
    assert.equal(e!.table, 'inventory.products');
  });

  it('rejects malformed messages with specific DecodeErrors', () => {
    assert.throws(() => decode(variant('delete', { type: 'QUERY' })), isDecodeError('bad-op', /INSERT, UPDATE, DELETE or INIT/));
    assert.throws(() => decode(variant('delete', { data: [] })), isDecodeError('missing-field', /"data"/));
    assert.throws(() => decode(variant('delete', { data: ['x'] })), isDecodeError('bad-field', /data\[0\]/));
    assert.throws(() => decode(variant('delete', { table: '' })), isDecodeError('missing-field', /table/));
    assert.throws(() => decode(inboundFixture(DIR, 'delete', { sequence: '-1' })), isDecodeError('bad-position'));
  });
});
