import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configFromEnv, parseConfig } from '../../../functions/commons/config.js';
import { ConfigError } from '../../../functions/core/errors.js';

const valid = { name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } };

describe('config', () => {
  it('fills defaults: auto format, 7-day tombstones, raw/ prefix, <name>-status table', () => {
    const c = parseConfig(valid);
    assert.equal(c.format, 'auto');
    assert.equal(c.tables[0]!.tombstoneTtlDays, 7);
    assert.equal(c.raw.prefix, 'raw/');
    assert.equal(c.statusTable, 'shop-status');
  });

  it('reports every problem together, each with its path', () => {
    const bad = { name: 'Shop!', tables: [valid.tables[0], { source: 'public.lines', target: 'x', key: [] }], raw: { bucket: 'B' } };
    assert.throws(
      () => parseConfig(bad),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        const paths = e.issues.map((i) => i.split(':')[0]);
        assert.deepEqual(paths.sort(), ['name', 'raw.bucket', 'tables[1].key', 'tables[1].target'].sort());
        assert.ok(e.issues.includes('tables[1].key: must not be empty'));
        return true;
      },
    );
  });

  it('rejects key columns that start with the reserved "__" prefix, and duplicate sources', () => {
    const bad = { ...valid, tables: [valid.tables[0], { source: 'public.orders', target: 'other', key: ['__id'] }] };
    assert.throws(() => parseConfig(bad), /tables\[1\]\.source: "public\.orders" is already configured[\s\S]*tables\[1\]\.key\[0\]: "__id" starts with "__"/);
  });

  it('fails fast at cold start naming the missing environment variable', () => {
    assert.throws(() => configFromEnv({}), /Environment variable TIDEMARK_CONFIG is required/);
    assert.equal(configFromEnv({ TIDEMARK_CONFIG: JSON.stringify(valid) }).name, 'shop');
  });
});
