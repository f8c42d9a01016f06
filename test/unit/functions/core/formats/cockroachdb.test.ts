import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../../functions/core/errors.js';
import { cockroachdb } from '../../../../../functions/core/formats/cockroachdb.js';
import type { JsonObject } from '../../../../../functions/core/json.js';
import { comparePositions } from '../../../../../functions/core/position.js';
import type { ChangeEvent, ControlEvent, InboundMessage, NormalizedEvent } from '../../../../../functions/core/types.js';
import { context, inbound, inboundFixture } from '../../../../helpers/inbound.js';

const DIR = 'cockroachdb';
const ctx = context({ employees: ['id'], 'db.public.orders': ['region', 'id'] });

function fx(name: string, options: { topic?: string | null; sequence?: string; key?: null } = {}): InboundMessage {
  return inboundFixture(DIR, name, { topic: 'employees', ...options });
}

function one(events: NormalizedEvent[]): ChangeEvent {
  assert.equal(events.length, 1);
  assert.equal(events[0]!.kind, 'change');
  return events[0] as ChangeEvent;
}

const decode = (m: InboundMessage) => cockroachdb.decode(m, ctx);
const isDecodeError = (reason: string, pattern?: RegExp) => (e: unknown) =>
  e instanceof DecodeError && e.reason === reason && (pattern === undefined || pattern.test(e.message));

describe('cockroachdb decoder', () => {
  it('detects wrapped, bare, enriched, webhook and resolved messages but not a Debezium envelope', () => {
    const names = [
      'wrapped-insert',
      'wrapped-delete',
      'wrapped-diff-update',
      'wrapped-key-in-value-updated-mvcc',
      'bare-envelope-row-with-updated',
      'enriched-with-source',
      'webhook-sink-batch',
      'resolved-timestamp-kafka',
      'resolved-timestamp-bare-envelope',
    ];
    for (const name of names) assert.ok(cockroachdb.detect(fx(name)), name);
    assert.equal(cockroachdb.detect(inbound({ before: null, after: { id: 1 }, source: { connector: 'postgresql' }, op: 'c', ts_ms: 1 })), false);
    assert.equal(cockroachdb.detect(inbound({ data: {}, metadata: { operation: 'insert' } })), false);
  });

  it('decodes a wrapped row without diff as an update (insert and update are indistinguishable)', () => {
    for (const name of ['wrapped-insert', 'wrapped-update-no-diff']) {
      const e = one(decode(fx(name, { sequence: '9' })));
      assert.equal(e.op, 'u');
      assert.equal(e.table, 'employees');
      assert.deepEqual(e.key, { id: 1 });
      assert.equal(e.before, null);
      assert.equal(e.snapshot, false);
      assert.equal(e.txid, null);
      assert.deepEqual(e.position, { tuple: [9n], strength: 'transport' }, 'no updated/mvcc_timestamp → transport fallback');
      assert.equal(e.commitTs, null);
    }
  });

  it('decodes a wrapped delete (after null) with the key from the Kafka key', () => {
    const e = one(decode(fx('wrapped-delete')));
    assert.equal(e.op, 'd');
    assert.deepEqual(e.key, { id: 1 });
    assert.equal(e.after, null);
    assert.equal(e.before, null);
  });

  it('with diff: before null is an insert, before present is an update, delete keeps before', () => {
    assert.equal(one(decode(fx('wrapped-diff-insert'))).op, 'c');
    const u = one(decode(fx('wrapped-diff-update')));
    assert.equal(u.op, 'u');
    assert.equal(u.before?.name, 'Terry');
    assert.equal(u.after?.name, 'Terri');
    const d = one(decode(fx('wrapped-diff-delete')));
    assert.equal(d.op, 'd');
    assert.equal(d.before?.name, 'Terri');
    assert.equal(d.after, null);
  });

  it('takes the HLC of updated as a source position (wall ns, logical) and commitTs in ms', () => {
    const e = one(decode(fx('wrapped-updated')));
    assert.deepEqual(e.position, { tuple: [1701102311425045162n, 0n], strength: 'source' });
    assert.equal(e.commitTs, 1701102311425);
  });

  it('orders an initial-scan row by updated (scan time) but dates it by mvcc_timestamp, with no snapshot marker', () => {
    const e = one(decode(fx('initial-scan-row')));
    assert.deepEqual(e.position.tuple, [1701102600000000000n, 0n]);
    assert.equal(e.commitTs, 1701102305519);
    assert.equal(e.snapshot, false);
    assert.equal(e.op, 'u');
  });

  it('falls back to mvcc_timestamp for the position when updated is absent', () => {
    const e = one(decode(inbound({ after: { id: 3 }, mvcc_timestamp: '1701102305519323705.0000000004' }, { key: [3], topic: 'employees' })));
    assert.deepEqual(e.position, { tuple: [1701102305519323705n, 4n], strength: 'source' });
  });

  it('compares HLCs numerically: wall first, then logical, exact beyond 2^53', () => {
    const at = (hlc: string) => one(decode(inbound({ after: { id: 1 }, updated: hlc }, { key: [1], topic: 'employees' }))).position;
    assert.ok(comparePositions(at('1701102311425045162.0000000000'), at('1701102311425045163.0000000000')) < 0);
    assert.ok(comparePositions(at('1701102311425045162.0000000002'), at('1701102311425045162.0000000010')) < 0);
    assert.ok(comparePositions(at('999999999999999999.0000000009'), at('1000000000000000000.0000000000')) < 0);
    assert.equal(comparePositions(at('1701102311425045162.0000000001'), at('1701102311425045162.0000000001')), 0);
  });

  it('uses key and topic carried in the value over the Kafka ones', () => {
    const e = one(decode(fx('wrapped-key-in-value-updated-mvcc', { key: null })));
    assert.deepEqual(e.key, { id: 1 });
    const t = one(decode(inbound({ after: { id: 1 }, key: [1], topic: 'employees' }, { topic: 'other-topic' })));
    assert.equal(t.table, 'employees');
  });

  it('maps a composite key array onto the configured key columns in order', () => {
    const e = one(decode(inbound({ after: { region: 'eu', id: 7 } }, { key: ['eu', 7], topic: 'db.public.orders' })));
    assert.equal(e.table, 'db.public.orders');
    assert.deepEqual(e.key, { region: 'eu', id: 7 });
  });

  it('decodes a bare row: columns at top level, metadata under __crdb__', () => {
    const e = one(decode(fx('bare-envelope-row-with-updated')));
    assert.equal(e.op, 'u');
    assert.deepEqual(e.after, { id: 1, name: 'Terri', office: 'new york city' });
    assert.deepEqual(e.position.tuple, [1701102311425045162n, 0n]);
    const del = one(decode(inbound({ __crdb__: { updated: '1701102311425045163.0000000000', topic: 'employees', key: [1] } })));
    assert.equal(del.op, 'd');
    assert.equal(del.table, 'employees');
    assert.deepEqual(del.key, { id: 1 });
  });

  it('decodes an enriched row: op from the envelope, table and HLC from source', () => {
    const e = one(decode(fx('enriched-with-source', { topic: null })));
    assert.equal(e.op, 'u');
    assert.equal(e.table, 'employees');
    assert.deepEqual(e.position, { tuple: [1701102311425045162n, 0n], strength: 'source' });
    assert.equal(e.commitTs, 1701102311425);
  });

  it('decodes every element of a webhook batch in order, each with its own key, topic and HLC', () => {
    const events = decode(fx('webhook-sink-batch', { topic: null })) as ChangeEvent[];
    assert.equal(events.length, 2);
    assert.deepEqual(
      events.map((e) => [e.table, e.key.id, e.after?.name]),
      [
        ['employees', 1, 'Terry'],
        ['employees', 1, 'Terri'],
      ],
    );
    assert.ok(comparePositions(events[0]!.position, events[1]!.position) < 0);
  });

  it('gives batch elements without timestamps a transport position with the element index', () => {
    const events = decode(inbound({ payload: [{ after: { id: 1 }, key: [1], topic: 'employees' }, { after: null, key: [1], topic: 'employees' }], length: 2 }, { sequence: '5' }));
    assert.deepEqual(
      events.map((e) => e.position),
      [
        { tuple: [5n, 0n], strength: 'transport' },
        { tuple: [5n, 1n], strength: 'transport' },
      ],
    );
  });

  it('decodes resolved messages (Kafka, bare, webhook) as resolved control events positioned at the HLC', () => {
    for (const name of ['resolved-timestamp-kafka', 'resolved-timestamp-bare-envelope', 'webhook-resolved']) {
      const events = decode(fx(name));
      assert.equal(events.length, 1);
      const c = events[0] as ControlEvent;
      assert.equal(c.kind, 'control');
      assert.equal(c.control, 'resolved');
      assert.deepEqual(c.detail, { resolved: '1701102330000000000.0000000000' });
      assert.deepEqual(c.position, { tuple: [1701102330000000000n, 0n], strength: 'source' });
    }
  });

  it('rejects a key it cannot map: unconfigured table or wrong number of columns', () => {
    assert.throws(() => decode(inboundFixture(DIR, 'wrapped-insert', { topic: 'unknown' })), isDecodeError('unmapped-key', /"unknown".*not configured/));
    assert.throws(
      () => decode(inbound({ after: { id: 1 } }, { key: [1], topic: 'db.public.orders' })),
      isDecodeError('unmapped-key', /\[region, id\]/),
    );
  });

  it('rejects malformed messages with specific DecodeErrors', () => {
    assert.throws(() => decode(inbound({ after: { id: 1 }, updated: 'yesterday' }, { key: [1], topic: 'employees' })), isDecodeError('bad-position', /updated/));
    assert.throws(() => decode(inbound({ resolved: 'soon' })), isDecodeError('bad-position', /resolved/));
    assert.throws(() => decode(inbound({ after: { id: 1 } }, { key: [1] })), isDecodeError('missing-field', /topic/));
    assert.throws(() => decode(inbound({ after: 'row' } as JsonObject, { key: [1], topic: 'employees' })), isDecodeError('bad-field', /after/));
    assert.throws(() => decode(inbound({ after: { id: 1 }, op: 'x', ts_ns: 1 }, { key: [1], topic: 'employees' })), isDecodeError('bad-op'));
    assert.throws(
      () => decode(inbound({ payload: [{ after: { id: 1 }, key: [1] }], length: 1 })),
      isDecodeError('missing-field', /payload\[0\]/),
    );
  });
});
