/**
 * Erase over a versioned in-memory S3: objects are found by HEAD (key filter) before any GET, the
 * key's lines leave raw with every older version, multi-row records go whole (their message holds
 * the key's values), and quarantine lines that name the key lose their bytes.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../lib/config/config.js';
import { abandonErase, type EraseContext, erasePrefix, findEraseObjects, finishErase, mentionsKey, rewriteEraseBatch, submitErase } from '../../../../functions/erase/erase.js';
import { keyFilterMetadata } from '../../../../functions/core/key-filter.js';
import { encodeSegment, legacySegment } from '../../../../functions/adapters/raw-layout.js';
import { RawStore } from '../../../../functions/adapters/raw-store.js';
import { readFixture } from '../../../helpers/messages.js';
import { type FakeS3, fakeS3 } from '../../../helpers/fake-s3.js';
import { assertLinear } from '../../../helpers/linear.js';

const config = parseConfig({
  name: 'er',
  tables: [
    { source: 'public.customers', target: 'er-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'inventory.products', target: 'er-products', key: ['id'] },
  ],
  raw: { bucket: 'er-raw' },
  replay: { objectsPerBatch: 10 },
});
const env = { TIDEMARK_ERASE_KEY: 'unit-test-ledger-key-0123456789' };
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
/** The status table as far as submitting needs it: the ledger key's fingerprint row, absent at first. */
function ledgerDynamo(): DynamoDBClient {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  mock.on(GetItemCommand).resolves({});
  mock.on(PutItemCommand).resolves({});
  return client;
}
const t = (seq: number) => ({ kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: String(seq), partitionKey: 'p', arrivalTime: 1 });

function line(table: string, id: number | string, seq: number, extra: Record<string, unknown> = {}) {
  return { kind: 'change', format: 'debezium', op: 'u', table, key: JSON.stringify({ id }), position: `0${seq}`, topic: null, headers: {}, transport: t(seq), messageKey: null, message: JSON.stringify({ after: { id, email: `${id}@example.com` } }), ...extra };
}
const body = (lines: readonly object[]) => gzipSync(Buffer.from(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`));
const read = (s3: FakeS3, key: string) =>
  gunzipSync(Buffer.from(s3.get(key) ?? []))
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('erase on a versioned store', () => {
  let s3: FakeS3;
  afterEach(() => s3.restore());

  it('validates everything before it writes the request, and abandoning deletes the request (issue 20, item 6)', async () => {
    s3 = fakeS3();
    const base: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    await assert.rejects(submitErase({ ...base, env: {} }, 'e0', { table: 'public.customers', key: { id: 42 }, reason: 'unit' }), /Environment variable TIDEMARK_ERASE_KEY is required/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.customers', key: { name: 'x' }, reason: 'unit' }), /must hold every key column of public\.customers \(id\); missing id/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.nope', key: { id: 1 }, reason: 'unit' }), /not configured/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.customers', key: { id: 1 }, reason: ' ' }), /needs a reason/);
    assert.deepEqual(s3.keys(), [], 'a request that cannot run leaves nothing behind');
    const requestKey = await submitErase(base, 'e0', { table: 'public.customers', key: { id: 42 }, reason: 'unit' });
    assert.deepEqual(s3.keys(), [requestKey]);
    await abandonErase(base, { requestKey });
    assert.deepEqual(s3.keys(), []);
  });

  it('HEADs every object, GETs only those whose key filter may hold the key, and removes the key with all older versions', async () => {
    s3 = fakeS3();
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    const objects: string[] = [];
    for (let o = 0; o < 8; o++) {
      const lines = Array.from({ length: 50 }, (_, i) => line('public.customers', 1000 + o * 50 + i, o * 100 + i));
      if (o === 2 || o === 5) lines.push(line('public.customers', 42, o * 100 + 99));
      const key = `raw/table=public.customers/dt=2026-11-30/hr=0${o}/shardId-0-${o * 100}-${o * 100 + 99}.jsonl.gz`;
      s3.put(key, body(lines.map((l) => ({ ...l, message: 'old copy' }))), keyFilterMetadata(lines));
      s3.put(key, body(lines), keyFilterMetadata(lines)); // a second version (a retried batch)
      objects.push(key);
    }
    const requestKey = await submitErase(ctx, 'e1', { table: 'public.customers', key: { id: 42 }, reason: 'unit' });
    const found = await findEraseObjects(ctx, { runId: 'e1', requestKey });
    assert.equal(found.objects, 8);
    assert.equal(s3.calls.filter((c) => c.startsWith('Head raw/')).length, 8);
    assert.equal(s3.calls.filter((c) => c.startsWith('Get raw/')).length, 0, 'finding reads no raw object');
    assert.ok(found.candidates >= 2 && found.candidates <= 3);
    const res = await rewriteEraseBatch(ctx, { runId: 'e1', requestKey, manifestKey: found.manifestKey, batch: 0 });
    assert.equal(s3.calls.filter((c) => c.startsWith('Get raw/')).length, found.candidates);
    assert.equal(res.objectsRewritten, 2);
    assert.equal(res.linesRemoved, 2);
    assert.equal(res.falsePositives, found.candidates - 2);
    assert.equal(res.versioning, true);
    assert.equal(res.versionsDeleted, 4, 'both older versions of both objects');
    assert.equal(res.maxPosition, '0599');
    for (const key of [objects[2], objects[5]] as string[]) {
      assert.equal(s3.versions(key).length, 1);
      const lines = read(s3, key);
      assert.equal(lines.length, 50);
      assert.ok(!lines.some((l) => l.key === '{"id":42}'));
    }
    assert.equal(s3.versions(objects[0] as string).length, 2, 'objects without the key are untouched');
  });

  it('drops every line of a record that carried the key: a multi-row message holds its values (both layouts)', async () => {
    s3 = fakeS3();
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    // Flink's canal-data.txt-style message with rows 112 and 113 (test/fixtures/canal).
    const canal = JSON.stringify(readFixture('canal', 'insert-two-rows-in-one-message').message_value);
    const rows = [
      { ...line('inventory.products', '112', 7), message: canal },
      { ...line('inventory.products', '113', 7), message: null, messageRef: true },
      line('inventory.products', '200', 8),
    ];
    const key = 'raw/table=inventory.products/dt=2026-11-30/hr=01/shardId-0-7-8-abc.jsonl.gz';
    s3.put(key, body(rows), keyFilterMetadata(rows));
    const requestKey = await submitErase(ctx, 'e2', { table: 'inventory.products', key: { id: '113' }, reason: 'unit' });
    const found = await findEraseObjects(ctx, { runId: 'e2', requestKey });
    const res = await rewriteEraseBatch(ctx, { runId: 'e2', requestKey, manifestKey: found.manifestKey, batch: 0 });
    assert.equal(res.linesRemoved, 1);
    assert.equal(res.otherRowsRemoved, 1);
    assert.deepEqual(read(s3, key).map((l) => l.key), ['{"id":"200"}']);
  });

  it('finds the key in quarantine bytes only with its table named and every key column matched', () => {
    const msg = JSON.stringify({ source: { table: 'customers' }, after: { id: 42, email: 'x' } });
    assert.equal(mentionsKey(msg, { id: 42 }, 'public.customers'), true);
    assert.equal(mentionsKey(msg, { id: 4 }, 'public.customers'), false);
    assert.equal(mentionsKey(msg, { id: 421 }, 'public.customers'), false);
    assert.equal(mentionsKey(msg, { id: 42 }, 'public.orders'), false);
    assert.equal(mentionsKey('{"source":{"table":"customers"},"after":{"id":"42"}}', { id: 42 }, 'public.customers'), true);
    assert.equal(mentionsKey('{"after":{"id":42}}', { id: 42 }, null), true, 'a line that names its table is matched on the key alone');
    assert.equal(mentionsKey('{"after":{"id": 42.5}}', { id: 42 }, null), false, 'a longer number is another value');
    assert.equal(mentionsKey('{"after":{"id" :\n "42"}}', { id: 42 }, null), true);
    assert.equal(mentionsKey('{"after":{"id":"42x"}}', { id: 42 }, null), false);
    assert.equal(mentionsKey('{"a":{"name":"a.b(c)*"}}', { name: 'a.b(c)*' }, null), true, 'values are matched as text, never as a pattern');
  });

  it('matches in time linear in the text: a 2 MB quarantine line of repeated column names', () => {
    const text = `{${'"id":4,'.repeat(300_000)}"id":42}`;
    assert.equal(mentionsKey(text, { id: 42 }, null), true);
    assert.equal(mentionsKey(text, { id: 43 }, null), false);
    assertLinear(
      (n) => {
        const t = `{${'"id":4,'.repeat(n)}"id":42}`;
        return () => mentionsKey(t, { id: 43 }, null);
      },
      300_000,
      'mentionsKey over repeated column names',
    );
  });

  it('finish adds up every page of the rewrite results, and says when the key was found nowhere (issue 20, items 7 and 18)', async () => {
    s3 = fakeS3({ pageSize: 100 });
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    const requestKey = await submitErase(ctx, 'e3', { table: 'public.customers', key: { id: 42 }, reason: 'unit' });
    const result = { objectsRead: 1, objectsRewritten: 1, objectsDeleted: 0, falsePositives: 0, linesRemoved: 1, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: true, maxPosition: '05' };
    for (let b = 0; b < 250; b++) s3.put(`${erasePrefix(config, 'e3')}results/${String(b).padStart(6, '0')}.json`, JSON.stringify({ batch: b, ...result }));
    const begin = { keyHash: 'h', table: 'public.customers', storedPosition: '04', itemFound: true, itemDeleted: true };
    const summary = await finishErase(ctx, { runId: 'e3', requestKey, begin, find: { objects: 250, candidates: 250 } });
    assert.equal(summary.objectsRead, 250, 'three pages of results, all counted');
    assert.equal(summary.linesRemoved, 250);
    assert.equal(summary.found, true);
    assert.equal(summary.ledgerPosition, '05');
    assert.ok(!s3.keys().includes(requestKey), 'the request is gone');

    const none = await submitErase(ctx, 'e4', { table: 'public.customers', key: { id: 7 }, reason: 'unit' });
    const nothing = await finishErase(ctx, { runId: 'e4', requestKey: none, begin: { ...begin, storedPosition: null, itemFound: false, itemDeleted: false }, find: { objects: 0, candidates: 0 } });
    assert.equal(nothing.found, false);
    assert.equal(nothing.ledgerRecorded, false);
    assert.equal(nothing.ledgerPosition, '');
    assert.equal(nothing.versioning, null);
  });

  it('deletes the key\'s spilled rows in tables named with a space and a non-ASCII letter, under both segment encodings, and no other key\'s (issue 20, item 4)', async () => {
    s3 = fakeS3();
    const named = parseConfig({
      name: 'er',
      tables: [
        { source: 'public.café', target: 'er-cafe', key: ['id'], keyTypes: { id: 'number' } },
        { source: 'dbo.Order Details', target: 'er-order-details', key: ['id'], keyTypes: { id: 'number' } },
      ],
      raw: { bucket: 'er-raw' },
    });
    const ctx: EraseContext = { config: named, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    // As the writer spills a row too large for DynamoDB (RawStore.spill, through raw-layout.ts).
    const store = new RawStore(s3.client, named.raw.bucket, named.raw.prefix, named.raw.quarantinePrefix);
    const begin = { keyHash: 'h', storedPosition: null, itemFound: false, itemDeleted: false };
    for (const table of ['public.café', 'dbo.Order Details']) {
      const mine = [await store.spill(table, '["42"]', '05', '{"id":42}'), await store.spill(table, '["42"]', '07', '{"id":42}')].map((uri) => uri.replace(`s3://${named.raw.bucket}/`, ''));
      const other = (await store.spill(table, '["43"]', '05', '{"id":43}')).replace(`s3://${named.raw.bucket}/`, '');
      // A row spilled before the segment encoding was injective (`public.caf_`, `dbo.Order_Details`).
      const legacy = (mine[0] as string).replace(encodeSegment(table), legacySegment(table));
      assert.notEqual(legacy, mine[0]);
      s3.put(legacy, gzipSync('{"id":42}'));
      const runId = `e-${encodeSegment(table).length}`;
      const requestKey = await submitErase(ctx, runId, { table, key: { id: 42 }, reason: 'unit' });
      const summary = await finishErase(ctx, { runId, requestKey, begin: { ...begin, table }, find: { objects: 0, candidates: 0 } });
      assert.equal(summary.spilledDeleted, 3, `${table}: both spilled rows and the legacy one`);
      assert.equal(summary.found, true);
      for (const key of [...mine, legacy]) assert.deepEqual(s3.versions(key), [], `${key} is gone with its versions`);
      assert.ok(s3.keys().includes(other), `${table}: another key's spilled row stays`);
    }
  });

  it('reaches the jobs\' reports: the key\'s reconcile findings and its entry in a snapshot report\'s orphan keys, nothing else', async () => {
    s3 = fakeS3();
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    const requestKey = await submitErase(ctx, 'e5', { table: 'public.customers', key: { id: 42 }, reason: 'unit' });
    const finding = (table: string, key: string) => ({ class: 'missing', table, key, expected: { position: '05', op: 'u', deleted: false, hash: 'h' }, actual: null });
    const runFindings = `${config.jobs.reportPrefix}reconcile/r1/findings/p=0001.jsonl.gz`;
    s3.put(runFindings, body([finding('public.customers', '{"id":42}'), finding('public.customers', '{"id":43}'), finding('inventory.products', '{"id":"42"}')]));
    const tableFindings = `${config.jobs.reportPrefix}reconcile/public.customers/r1.findings.jsonl`;
    s3.put(tableFindings, `${JSON.stringify(finding('public.customers', '{"id": 42}'))}\n${JSON.stringify(finding('public.customers', '{"id":7}'))}\n`);
    const snapshot = `${config.jobs.reportPrefix}snapshot/s1/report.json`;
    s3.put(snapshot, JSON.stringify({ job: 'snapshot', tables: [{ table: 'public.customers', orphans: { count: 2, keys: ['{"id":42}', '{"id":5}'] } }, { table: 'inventory.products', orphans: { count: 1, keys: ['{"id":"42"}'] } }] }));
    const untouched = `${config.jobs.reportPrefix}reconcile/r1/report.json`;
    s3.put(untouched, JSON.stringify({ job: 'reconcile', runId: 'r1' }));
    const begin = { keyHash: 'h', table: 'public.customers', storedPosition: null, itemFound: false, itemDeleted: false };
    const summary = await finishErase(ctx, { runId: 'e5', requestKey, begin, find: { objects: 0, candidates: 0 } });
    assert.equal(summary.reportEntriesRemoved, 3);
    assert.equal(summary.found, true, 'a key held only in a report was found there');
    assert.deepEqual(
      read(s3, runFindings).map((f) => `${String(f.table)} ${String(f.key)}`),
      ['public.customers {"id":43}', 'inventory.products {"id":"42"}'],
    );
    const tableLines = Buffer.from(s3.get(tableFindings) ?? []).toString().split('\n').filter(Boolean);
    assert.deepEqual(tableLines.map((l) => (JSON.parse(l) as { key: string }).key), ['{"id":7}']);
    const report = JSON.parse(Buffer.from(s3.get(snapshot) ?? []).toString()) as { tables: { table: string; orphans: { keys: string[] } }[] };
    assert.deepEqual(report.tables.map((t) => t.orphans.keys), [['{"id":5}'], ['{"id":"42"}']]);
    assert.ok(!s3.calls.includes(`Put ${untouched}`), 'a report without the key is not rewritten');
    assert.equal(s3.versions(runFindings).length, 1, 'the version that held the key is gone');
  });

  it('reaches the jobs\' SQL outputs left under <history>unload/: rows of the key go, gzip or plain; outputs that hold no keys are never read', async () => {
    s3 = fakeS3();
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: ledgerDynamo() }, log: quiet, env };
    const requestKey = await submitErase(ctx, 'e6', { table: 'public.customers', key: { id: 42 }, reason: 'unit' });
    const row = (table: string, keyJson: string, extra: Record<string, unknown> = {}) => ({ source_table: table, key_json: keyJson, class: 'missing', ...extra });
    // A reconcile run that failed before its Report: its findings (gzip) and window keys (plain) are left.
    const findings = 'history/unload/reconcile/r2/findings/0-0.json.gz';
    s3.put(findings, body([row('public.customers', '{"id":42}'), row('public.customers', '{"id":43}'), row('inventory.products', '{"id":"42"}')]));
    const windowKeys = 'history/unload/reconcile/r2/window-keys/bucket=3/0-0.json.gz';
    s3.put(windowKeys, `${JSON.stringify({ source_table: 'public.customers', key_id: '["42"]', key_json: '{"id": 42}' })}\n${JSON.stringify({ source_table: 'public.customers', key_id: '["7"]', key_json: '{"id":7}' })}\n`);
    // Snapshot detection's orphans of a run that failed before its Report (the lifecycle rule takes them later).
    const orphans = 'history/unload/snapshot/s2/orphans/0-0.json.gz';
    s3.put(orphans, body([{ source_table: 'public.customers', key_json: '{"id":42}', snapshot_end: 'p' }]));
    // Counts and anomalies name tables and numbers only: never fetched.
    const counts = 'history/unload/reconcile/r2/counts/0-0.json.gz';
    s3.put(counts, body([{ source_table: 'public.customers', class: 'missing', keys: 1 }]));
    const anomalies = 'history/unload/snapshot/s2/anomalies/0-0.json.gz';
    s3.put(anomalies, body([{ source_table: 'public.customers', kind: 'silent' }]));
    const begin = { keyHash: 'h', table: 'public.customers', storedPosition: null, itemFound: false, itemDeleted: false };
    const summary = await finishErase(ctx, { runId: 'e6', requestKey, begin, find: { objects: 0, candidates: 0 } });
    assert.equal(summary.reportEntriesRemoved, 3);
    assert.deepEqual(
      read(s3, findings).map((r) => `${String(r.source_table)} ${String(r.key_json)}`),
      ['public.customers {"id":43}', 'inventory.products {"id":"42"}'],
    );
    const plain = Buffer.from(s3.get(windowKeys) ?? []);
    assert.notEqual(plain[0], 0x1f, 'a plain output stays plain');
    assert.deepEqual(
      plain.toString().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { key_id: string }).key_id),
      ['["7"]'],
    );
    assert.deepEqual(read(s3, orphans), []);
    for (const key of [counts, anomalies]) assert.ok(!s3.calls.some((c) => c.startsWith('Get') && c.includes(key)), `${key} is not read`);
  });
});
