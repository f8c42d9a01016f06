/**
 * The embedded engine's Parquet stand-in store (bin/local/duckdb-store.ts), on an in-memory versioned
 * S3: a partition's current files are its highest generation's, filters by table and day select
 * partition directories, raw sources are listed by hour, and a removed object loses every version.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { partitionAt, partitionDir, partitions, removeEverywhere, sourceKeys, type StoreLayout } from '../../../../bin/local/duckdb-store.js';
import { fakeS3 } from '../../../helpers/fake-s3.js';

const layout: StoreLayout = { bucket: 'b', rawPrefix: 'raw/', quarantinePrefix: 'quarantine/', warehousePrefix: 'wh/', tableSidePrefix: 'side/' };
const H6 = Date.UTC(2026, 10, 30, 6);

describe('the Parquet stand-in store', () => {
  const s3 = fakeS3();
  after(() => s3.restore());
  const caf = 'wh/history/source_table=public.caf%C3%A9/';
  for (const key of [
    `${caf}dt=2026-11-30/g00000001-a.parquet`,
    `${caf}dt=2026-11-30/g00000002-b.parquet`,
    `${caf}dt=2026-11-30/g00000002-c.parquet`,
    `${caf}dt=2026-12-01/g00000001-d.parquet`,
    'wh/history/source_table=public.orders/dt=2026-11-30/g00000001-e.parquet',
    'wh/history/source_table=public.orders/dt=2026-11-30/notes.txt',
    'raw/dt=2026-11-30/hr=06/a.jsonl.gz',
    'raw/dt=2026-11-30/hr=07/b.jsonl.gz',
    'raw/table=public.orders/dt=2026-11-30/hr=06/c.jsonl.gz',
  ])
    s3.put(key, 'x');

  it('names partition directories with encoded values', () => {
    assert.equal(partitionDir(layout, 'history', { source_table: 'public.café', dt: '2026-11-30' }), `${caf}dt=2026-11-30/`);
    assert.equal(partitionDir(layout, 'truncates', {}), 'wh/truncates/');
  });

  it('keeps the highest generation of each partition, narrowed by tables and days', async () => {
    const all = await partitions(s3.client, layout, 'history', {});
    assert.deepEqual(
      all.map((p) => [p.dir, p.generation, [...p.keys].sort()]).sort(),
      [
        [`${caf}dt=2026-11-30/`, 2, [`${caf}dt=2026-11-30/g00000002-b.parquet`, `${caf}dt=2026-11-30/g00000002-c.parquet`]],
        [`${caf}dt=2026-12-01/`, 1, [`${caf}dt=2026-12-01/g00000001-d.parquet`]],
        ['wh/history/source_table=public.orders/dt=2026-11-30/', 1, ['wh/history/source_table=public.orders/dt=2026-11-30/g00000001-e.parquet']],
      ],
    );
    const narrowed = await partitions(s3.client, layout, 'history', { tables: ['public.café'], days: { from: '2026-12-01', to: '2026-12-31' } });
    assert.deepEqual(narrowed.map((p) => p.dir), [`${caf}dt=2026-12-01/`]);
    assert.equal((await partitionAt(s3.client, layout, `${caf}dt=2026-11-30/`))?.generation, 2);
    assert.equal(await partitionAt(s3.client, layout, `${caf}dt=2027-01-01/`), null);
  });

  it('lists raw sources by hour, and objects by their URIs', async () => {
    assert.deepEqual(await sourceKeys(s3.client, layout, 'raw_lines', { hours: { from: H6, to: H6 } }), ['raw/dt=2026-11-30/hr=06/a.jsonl.gz']);
    assert.deepEqual(await sourceKeys(s3.client, layout, 'raw_events', { segments: ['public.orders'], hours: { from: H6, to: H6 + 3_600_000 } }), ['raw/table=public.orders/dt=2026-11-30/hr=06/c.jsonl.gz']);
    assert.deepEqual(await sourceKeys(s3.client, layout, 'raw_lines', { objects: ['s3://b/raw/x.jsonl.gz'] }), ['raw/x.jsonl.gz']);
    await assert.rejects(sourceKeys(s3.client, layout, 'raw_lines', { objects: ['s3://other/raw/x.jsonl.gz'] }), /not in the bucket b/);
  });

  it('removes an object with every version', async () => {
    const key = `${caf}dt=2026-11-30/g00000001-a.parquet`;
    s3.put(key, 'second');
    s3.put(key, 'third');
    assert.equal(s3.versions(key).length, 3);
    assert.equal(await removeEverywhere(s3.client, 'b', key), 3);
    assert.equal(s3.versions(key).length, 0);
  });
});
