/**
 * Issue 20, item 15: the jobs read spilled rows as ingest and replay do. Reconcile's repair builds
 * its writer through the one composition root (`jobDeps`, functions/composition.ts), so a repair
 * that applies an unchanged-TOAST placeholder update to a row that ingest spilled to S3 (too large
 * for an item) reads the spilled copy back and merges it, as ingest does; a writer built without
 * the spill reader (what `jobs/deps.ts` once built) marks the row partial with the column missing.
 *
 * Through the real jobDeps, DynamoWriter and RawStore.spill, over the in-memory DynamoDB (which
 * evaluates the guards) and the in-memory S3.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parseConfig } from '../../../../../lib/config/config.js';
import { jobDeps } from '../../../../../functions/composition.js';
import { decodeItem } from '../../../../../functions/adapters/item-codec.js';
import { keyId } from '../../../../../functions/core/keys.js';
import { planBatch } from '../../../../../functions/core/plan.js';
import type { ChangeEvent, Row } from '../../../../../functions/core/types.js';
import type { JobDeps } from '../../../../../functions/jobs/deps.js';
import { repairWrite } from '../../../../../functions/jobs/reconcile/repair.js';
import { CollectingMetricSink } from '../../../../../functions/telemetry/sinks.js';
import { change, pos } from '../../../../helpers/events.js';
import { FakeDynamoDB } from '../../../../helpers/fake-dynamodb.js';
import { fakeS3, type FakeS3 } from '../../../../helpers/fake-s3.js';
import { memoryLog } from '../../../../helpers/mocked-deps.js';

const PLACEHOLDER = '__debezium_unavailable_value';
const NOW = Date.UTC(2026, 10, 30, 6);
const config = parseConfig({
  name: 'shop',
  tables: [{ source: 'public.t', target: 'shop-t', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'shop-raw' },
  apply: { maxItemBytes: 10_000 },
});
const table = config.tables[0] as (typeof config.tables)[number];
const big = 'y'.repeat(20 * 1024);

const full = (at: number, row: Row): ChangeEvent => change({ table: 'public.t', op: 'u', key: { id: 1 }, after: { id: 1, ...row }, position: pos(at) });
const placeholderUpdate = (at: number, row: Row, placeholders: string[]): ChangeEvent => {
  const after: Row = { id: 1, ...row };
  for (const c of placeholders) after[c] = PLACEHOLDER;
  return change({ table: 'public.t', op: 'u', key: { id: 1 }, after, placeholders, position: pos(at) });
};

describe('reconcile repair reads spilled rows through the composition root (issue 20, item 15)', () => {
  let s3: FakeS3;
  let fake: FakeDynamoDB;
  let deps: JobDeps;
  const row = () => {
    const item = fake.get(table.target, { id: { N: '1' } });
    return item ? decodeItem(table, item) : undefined;
  };

  beforeEach(() => {
    s3 = fakeS3();
    fake = new FakeDynamoDB(config.tables);
    deps = jobDeps(config, { s3: s3.client, dynamodb: fake.client }, { metrics: new CollectingMetricSink(), log: memoryLog(), now: () => NOW });
  });
  afterEach(() => s3.restore());

  it('merges a placeholder update with the spilled copy ingest left, instead of marking the row partial', async () => {
    // What ingest left: a row too large for an item, spilled to raw by the same storage.
    const first = planBatch([full(1, { email: 'old', bio: big })], (e) => keyId(table, e.key)).writes[0];
    assert.ok(first);
    assert.equal((await deps.writer.write(first)).spilled, true, 'spilled to S3');
    assert.ok(row()?.spill, 'the item points at its spilled copy');

    // The window's one event of the key: `bio` unchanged and not sent (TOAST).
    const outcome = await repairWrite(deps, { table: 'public.t', keyId: keyId(table, { id: 1 }), class: 'behind', actualHash: null }, [placeholderUpdate(2, { email: 'new' }, ['bio'])]);
    assert.equal(outcome, 'applied');
    const after = row();
    assert.equal(after?.partial, false, 'the spilled copy was read back and merged');
    assert.deepEqual(after?.missing, []);
    assert.equal(after?.spill !== null, true, 'still too large: spilled again');
    const pointer = String(after?.spill);
    const spilledKey = pointer.replace(/^s3:\/\/[^/]+\//, '');
    const body = s3.get(spilledKey);
    assert.ok(body, `the spilled copy is in S3 (${spilledKey.length} characters of key)`);
    const stored = JSON.parse(gunzipSync(body).toString('utf8')) as Row;
    assert.deepEqual(stored, { id: 1, email: 'new', bio: big }, 'the merged row: the new email and the unchanged bio');
  });
});
