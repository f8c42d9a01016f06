/** Key columns are read as own properties only (issue 10, items 7 and 20). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodeError } from '../../../../functions/core/errors.js';
import { keyLayout, keySource, normalizeKey, ownValue } from '../../../../functions/core/keys.js';
import { change } from '../../../helpers/events.js';

const reasonOf = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    assert.ok(err instanceof DecodeError);
    return err.reason;
  }
};

describe('keys', () => {
  it('never reads a built-in through the prototype', () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__']) {
      assert.equal(ownValue({ id: 1 }, name), undefined, name);
      assert.equal(keySource(change({ op: 'c', key: {}, after: { id: 1 } }), name), undefined, name);
      assert.equal(reasonOf(() => normalizeKey({ key: [name], keyTypes: {} }, {})), 'missing-key', name);
    }
  });

  it('ignores a function a decoder copied from a prototype', () => {
    const key: Record<string, unknown> = {};
    key.constructor = Object;
    assert.equal(ownValue(key as never, 'constructor'), undefined);
  });

  it('takes the first non-null of message key, after, patch, before', () => {
    const e = change({ op: 'u', key: { id: null }, after: { name: 'x' }, patch: { set: { id: 3 }, unset: [] }, before: { id: 4 } });
    assert.equal(keySource(e, 'id'), 3);
    assert.equal(keySource(change({ op: 'd', key: {}, after: null, before: { id: null } }), 'id'), null);
  });

  it('own built-in names are ordinary key columns', () => {
    const table = { key: ['constructor', 'toString'], keyTypes: { toString: 'number' as const } };
    assert.deepEqual(normalizeKey(table, { constructor: 'c', toString: '7' }), { constructor: 'c', toString: 7 });
    assert.deepEqual(keyLayout(table).partitionKey, { name: 'constructor', type: 'S' });
    assert.deepEqual(keyLayout(table).sortKey, { name: 'toString', type: 'N' });
  });

  it('says "an object" / "an array" for a non-scalar key', () => {
    assert.equal(reasonOf(() => normalizeKey({ key: ['id'], keyTypes: {} }, { id: { a: 1 } })), 'bad-key');
    assert.equal(reasonOf(() => normalizeKey({ key: ['id'], keyTypes: {} }, { id: [1] })), 'bad-key');
  });
});
