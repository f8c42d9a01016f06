/** The per-object key filter: never a false negative, few false positives, within S3's metadata limit. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildKeyFilter, canonicalKeyText, filterMayContain, KEY_FILTER_METADATA, keyFilterMetadata, mayContainKey } from '../../../../functions/core/key-filter.js';
import { keyId, normalizeKey } from '../../../../functions/core/keys.js';
import { stringifyJson } from '../../../../functions/core/json.js';

const table = { source: 't', target: 't', key: ['order_id', 'line'], keyTypes: { order_id: 'number' as const }, tombstoneTtlDays: 7 };

describe('key filter', () => {
  it('canonical key text of a raw line equals keyId of the normalized key', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0 }), fc.string({ minLength: 1 }), (order, line) => {
        const key = normalizeKey(table, { order_id: order, line });
        assert.equal(canonicalKeyText(stringifyJson(key)), keyId(table, key));
      }),
    );
    assert.equal(canonicalKeyText('not json'), null);
    assert.equal(canonicalKeyText('[1]'), null);
  });

  it('never says "absent" for a key it holds, whatever the keys', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 3000 }), (keys) => {
        const filter = buildKeyFilter(keys);
        for (const k of keys) assert.equal(filterMayContain(filter, k), true);
      }),
      { numRuns: 30 },
    );
  });

  it('fits S3 user metadata (2 KB) and keeps false positives rare for a batch-sized object', () => {
    const keys = Array.from({ length: 500 }, (_, i) => `["${i}"]`);
    const meta = keyFilterMetadata(keys.map((_k, i) => ({ key: `{"id":${i}}` })));
    const size = Object.entries(meta).reduce((n, [k, v]) => n + k.length + v.length, 0);
    assert.ok(size < 2048, `metadata is ${size} bytes`);
    let fp = 0;
    for (let i = 1000; i < 21000; i++) if (mayContainKey(meta, `["${i}"]`)) fp++;
    assert.ok(fp / 20000 < 0.001, `false-positive rate ${fp / 20000}`);
    for (const k of keys) assert.equal(mayContainKey(meta, k), true);
  });

  it('says "unknown" (undefined) when an object has no filter or an unreadable one, so erase reads it', () => {
    assert.equal(mayContainKey({}, '["1"]'), undefined);
    assert.equal(mayContainKey(undefined, '["1"]'), undefined);
    assert.equal(mayContainKey({ [KEY_FILTER_METADATA]: 'zz.3.AAAA' }, '["1"]'), undefined);
  });
});
