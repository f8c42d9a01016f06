/**
 * Goal 3 of the performance work as an invariant: with the ingest's `auto` pre-read, redelivered
 * records cost no write units, and a window applied a second time costs none at all. Measured with
 * the real DynamoWriter on the guard-evaluating fake DynamoDB (test/bench/redelivery.ts, which
 * `npm run bench` prints at full size).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/config.js';
import { measureRedelivery } from '../../../bench/redelivery.js';

const config = parseConfig({
  name: 'bench',
  format: 'debezium',
  tables: [{ source: 'public.orders', target: 'bench-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }],
  raw: { bucket: 'bench-raw' },
});

describe('write units under redelivery (pre-read auto)', () => {
  it('charges a batch with 10% redelivery at most 1.02x the same batch without it, and a re-applied window nothing', async () => {
    const { runs, converged } = await measureRedelivery({ config, events: 3_000, keys: 300, batch: 200, seed: 7 });
    const units = new Map(runs.map((r) => [r.label, r]));
    const clean = units.get('clean');
    const same = units.get('same batches');
    const again = units.get('re-applied');
    const off = units.get('no pre-read');
    assert.ok(clean && same && again && off);
    assert.ok(converged, 'every run ends in the same rows');
    assert.ok(clean.writeUnits > 0);
    assert.ok(same.writeUnits <= 1.02 * clean.writeUnits, `${same.writeUnits} vs ${clean.writeUnits}`);
    assert.ok(same.skipped > 0, 'stale redeliveries were settled by the pre-read');
    assert.ok(off.writeUnits > same.writeUnits, 'without the pre-read the redeliveries are charged');
    assert.equal(again.writeUnits, 0);
    assert.equal(again.writeRequests, 0);
    assert.ok(again.readRequests > 0 && again.skipped > 0, 'the re-applied window was settled by reads');
    for (const r of runs) assert.equal(r.failed, 0, r.label);
  });
});
