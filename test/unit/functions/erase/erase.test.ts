/**
 * Erase over a versioned in-memory S3: every request is checked before anything is written; begin
 * writes the run's keys to erase_keys and stores queries that name the run, never a key; the
 * objects the query found are rewritten without the run's keys (several keys in one object, and
 * every line of a record that carried one) with every older version; finish raises each key's
 * ledger entry to what raw and history held, says per key when it was found nowhere, and deletes
 * the keys and the request with their versions.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DynamoDBClient, GetItemCommand, PutItemCommand, type PutItemCommandInput, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig } from '../../../../lib/config/config.js';
import { abandonErase, beginErase, type EraseContext, eraseKeysObject, erasePrefix, finishErase, mentionsKey, rewriteEraseBatch, submitErase, submitEraseBatch } from '../../../../functions/erase/erase.js';
import { eraseQueryAt, listEraseObjects } from '../../../../functions/erase/find.js';
import { eraseStep } from '../../../../functions/erase/handler.js';
import { keyFilterMetadata, mayContainKey } from '../../../../functions/core/key-filter.js';
import { compactedHourKey, compactionFrontierKey, encodeSegment, legacySegment } from '../../../../functions/adapters/raw-layout.js';
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
/**
 * The DynamoDB erase talks to: the status table's ledger key fingerprint (absent at first), the
 * target tables' items (`items`: table → key id → position; absent otherwise), and a log of the
 * puts (ledger entries, tombstones).
 */
function ledgerDynamo(items: Record<string, Record<string, string>> = {}): { client: DynamoDBClient; puts: PutItemCommandInput[] } {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  const puts: PutItemCommandInput[] = [];
  mock.on(GetItemCommand).callsFake((input: { TableName: string; Key: Record<string, { N?: string; S?: string }> }) => {
    const id = Object.values(input.Key)[0];
    const position = items[input.TableName]?.[String(id?.N ?? id?.S)];
    return position === undefined ? {} : { Item: { __pos: { S: position } } };
  });
  mock.on(PutItemCommand).callsFake((input: PutItemCommandInput) => {
    puts.push(input);
    return {};
  });
  mock.on(UpdateItemCommand).resolves({});
  mock.on(QueryCommand).resolves({ Items: [] });
  return { client, puts };
}
const t = (seq: number) => ({ kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: String(seq), partitionKey: 'p', arrivalTime: 1 });

function line(table: string, id: number | string, seq: number, extra: Record<string, unknown> = {}) {
  return { kind: 'change', format: 'debezium', op: 'u', table, key: JSON.stringify({ id }), keyId: JSON.stringify([String(id)]), position: `0${seq}`, topic: null, headers: {}, transport: t(seq), messageKey: null, message: JSON.stringify({ after: { id, email: `${id}@example.com` } }), ...extra };
}
const body = (lines: readonly object[]) => gzipSync(Buffer.from(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`));
const read = (s3: FakeS3, key: string) =>
  gunzipSync(Buffer.from(s3.get(key) ?? []))
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const ctxOf = (s3: FakeS3, items: Record<string, Record<string, string>> = {}) => {
  const d = ledgerDynamo(items);
  return { ctx: { config, clients: { s3: s3.client, dynamodb: d.client }, log: quiet, env, now: () => Date.UTC(2026, 11, 1) } as EraseContext, puts: d.puts };
};
/** A raw batch object of the hour, as the ingest lands it. */
const rawKey = (n: number) => `raw/dt=2026-11-30/hr=0${n}/shardId-0-${n * 100}-${n * 100 + 99}-d${n}.jsonl.gz`;
/** begin.json as begin leaves it, for finish tests that skip begin. */
const begun = (s3: FakeS3, runId: string, entries: object[]) => s3.put(`${erasePrefix(config, runId)}begin.json`, JSON.stringify(entries));

describe('erase on a versioned store', () => {
  let s3: FakeS3;
  afterEach(() => s3.restore());

  it('validates every request before it writes the run, and abandoning deletes the request and the run\'s keys with their versions (issue 20, item 6)', async () => {
    s3 = fakeS3();
    const { ctx: base } = ctxOf(s3);
    await assert.rejects(submitErase({ ...base, env: {} }, 'e0', { table: 'public.customers', key: { id: 42 }, reason: 'unit' }), /Environment variable TIDEMARK_ERASE_KEY is required/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.customers', key: { name: 'x' }, reason: 'unit' }), /must hold every key column of public\.customers \(id\); missing id/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.nope', key: { id: 1 }, reason: 'unit' }), /not configured/);
    await assert.rejects(submitErase(base, 'e0', { table: 'public.customers', key: { id: 1 }, reason: ' ' }), /needs a reason/);
    const good = { table: 'public.customers', key: { id: 1 }, reason: 'unit' };
    await assert.rejects(submitEraseBatch(base, 'e0', [good, { ...good, table: 'public.nope' }, good]), /^EraseError: request 2: table "public\.nope" is not configured/);
    await assert.rejects(submitEraseBatch(base, 'e0', []), /at least one key/);
    assert.deepEqual(s3.keys(), [], 'a run that cannot run leaves nothing behind');
    const requestKey = await submitEraseBatch(base, 'e0', [good, { ...good, key: { id: 2 } }]);
    assert.deepEqual(s3.keys(), [requestKey]);
    s3.put(eraseKeysObject(config, 'e0'), 'old');
    s3.put(eraseKeysObject(config, 'e0'), 'keys');
    const out = await abandonErase(base, { runId: 'e0', requestKey });
    assert.equal(out.keysDeleted, 1);
    assert.deepEqual(s3.keys(), []);
    assert.deepEqual(s3.versions(eraseKeysObject(config, 'e0')), [], 'every version of the keys object is gone');
    assert.deepEqual(s3.versions(requestKey), []);
  });

  it('begin: a ledger entry and a tombstone per key held, the run\'s keys in erase_keys, and queries that name the run and never a key', async () => {
    s3 = fakeS3();
    s3.put(rawKey(3), body([line('public.customers', 1, 1)]));
    const { ctx, puts } = ctxOf(s3, { 'er-customers': { '42': '0500' } });
    const requestKey = await submitEraseBatch(ctx, 'e1', [
      { table: 'public.customers', key: { id: 42 }, reason: 'ticket 1' },
      { table: 'public.customers', key: { id: 777_000_111 }, reason: 'ticket 2' },
      { table: 'inventory.products', key: { id: 'sku-9' }, reason: 'ticket 3', blockFuture: true },
    ]);
    const out = await beginErase(ctx, { runId: 'e1', requestKey });
    assert.equal(out.keys, 3);
    assert.deepEqual(out.tables, ['public.customers', 'inventory.products']);
    assert.equal(out.itemsDeleted, 2, 'the held key and the blocked one');
    const state = JSON.stringify(out);
    for (const secret of ['777000111', 'sku-9']) assert.ok(!state.includes(secret), 'no key in what goes into the state');
    // Ledger entries: the held key at its position, the blocked one above every position; the absent key waits for finish.
    const ledger = puts.filter((p) => p.TableName === config.statusTable && p.Item?.keyHash !== undefined);
    assert.equal(puts.filter((p) => p.TableName === 'er-customers').length, 1, 'one tombstone in customers');
    assert.equal(puts.filter((p) => p.TableName === 'er-products').length, 1, 'the blocking tombstone');
    assert.ok(ledger.length <= 2);
    const keys = gunzipSync(Buffer.from(s3.get(eraseKeysObject(config, 'e1')) ?? [])).toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
    assert.deepEqual(keys.map((k) => [k.source_table, k.key_id, k.request]), [
      ['public.customers', '["42"]', '0'],
      ['public.customers', '["777000111"]', '1'],
      ['inventory.products', '["sku-9"]', '2'],
    ]);
    assert.ok(keys.every((k) => typeof k.key_hash === 'string' && k.key_hash.length > 20));
    const names: string[] = [];
    for (const stored of [out.queries.find, out.queries.history]) {
      for (let i = 0; i < stored.count; i++) {
        const { query } = await eraseQueryAt(ctx, { ...stored, index: i });
        names.push(query.statement.name);
        for (const secret of ['42', '777000111', 'sku-9']) assert.ok(!query.athena.QueryString.includes(`'${secret}'`) && !query.athena.QueryString.includes(`${secret}"`), `${query.statement.name} holds no key`);
        assert.ok(query.athena.QueryString.includes('e1') || query.statement.name === 'optimize' || query.statement.name === 'vacuum', `${query.statement.name} names the run`);
      }
    }
    assert.deepEqual(names, ['erase-find-raw', 'erase-find-history', 'erase-history', 'erase-expected', 'optimize', 'optimize', 'vacuum', 'vacuum']);
    const { query: findRaw } = await eraseQueryAt(ctx, { ...out.queries.find, index: 0 });
    assert.equal((findRaw.statement.args as { since: number }).since, Date.UTC(2026, 10, 30, 3), 'raw read from its oldest hour');
    assert.match(findRaw.athena.QueryString, /OPTIMIZE|erase_keys/);
    const { query: opt } = await eraseQueryAt(ctx, { ...out.queries.history, index: 2 });
    assert.match(opt.athena.QueryString, /^OPTIMIZE .*"history" REWRITE DATA USING BIN_PACK WHERE source_table IN \('public\.customers', 'inventory\.products'\)$/);
    await assert.rejects(eraseQueryAt(ctx, { queriesKey: 'history/state/compaction.json', index: 0, count: 1 }), /reads only the erase runs' queries/);
    assert.equal(s3.calls.filter((c) => c.startsWith('Head')).length, 0, 'no HEAD of raw');
  });

  it('begin: compacted hours of the grace are found through history, and raw is read only for the hours after the frontier and the late ones', async () => {
    s3 = fakeS3();
    const hour = (n: number) => Date.UTC(2026, 10, 30, n);
    for (const n of [3, 4, 5, 6]) s3.put(rawKey(n), body([line('public.customers', n, n)]));
    const marker = (n: number, compactedAt: number) => s3.put(compactedHourKey(config.history.prefix, hour(n)), JSON.stringify({ hour: hour(n), compactedAt }));
    marker(3, Date.now() + 3_600_000); // every object of hour 3 older than its marker: history holds them
    marker(4, Date.now() - 3_600_000); // hour 4's object modified after it was compacted: late
    // hour 5 compacted without a marker: late; hour 6 after the frontier: raw.
    s3.put(compactionFrontierKey(config.history.prefix), JSON.stringify({ compactedThrough: hour(5), cleanedThrough: null }));
    const { ctx } = ctxOf(s3);
    const requestKey = await submitEraseBatch(ctx, 'e3', [{ table: 'public.customers', key: { id: 42 }, reason: 'unit' }]);
    const out = await beginErase(ctx, { runId: 'e3', requestKey });
    const { query } = await eraseQueryAt(ctx, { ...out.queries.find, index: 0 });
    const args = query.statement.args as { since: number; compacted?: { from: number; through: number; late: number[] } };
    assert.equal(args.since, hour(3));
    assert.deepEqual(args.compacted, { from: hour(3), through: hour(5), late: [hour(4), hour(5)] });
    assert.match(query.athena.QueryString, /"history" h JOIN/);
    assert.ok(!query.athena.QueryString.includes("hr = 3") && !query.athena.QueryString.includes("hr = '3'"), 'hour 3 is not read from raw');
    // Compaction scans only its late-scan window for late objects: a compacted hour older than it is read from raw, unlisted.
    const narrow: EraseContext = { ...ctx, config: { ...config, history: { ...config.history, compaction: { ...config.history.compaction, lateScanHours: 2 } } } };
    const listings = s3.calls.length;
    const again = await beginErase(narrow, { runId: 'e3b', requestKey: await submitEraseBatch(narrow, 'e3b', [{ table: 'public.customers', key: { id: 42 }, reason: 'unit' }]) });
    const { query: narrowed } = await eraseQueryAt(narrow, { ...again.queries.find, index: 0 });
    assert.deepEqual((narrowed.statement.args as typeof args).compacted, { from: hour(3), through: hour(5), late: [hour(3), hour(4), hour(5)] });
    assert.ok(!s3.calls.slice(listings).includes('List raw/dt=2026-11-30/hr=03/'), 'hour 3 is not listed');
    assert.ok(s3.calls.slice(listings).includes('List raw/dt=2026-11-30/hr=04/'), 'hour 4 is');
  });

  it('lists the objects the query found into the Map\'s items, in batches, and GETs only those: never a listing or HEAD of raw', async () => {
    s3 = fakeS3();
    const { ctx } = ctxOf(s3);
    const objects: string[] = [];
    for (let o = 0; o < 8; o++) {
      const lines = Array.from({ length: 50 }, (_, i) => line('public.customers', 1000 + o * 50 + i, o * 100 + i));
      if (o === 2 || o === 5) lines.push(line('public.customers', 42, o * 100 + 99));
      if (o === 5) lines.push(line('inventory.products', 'sku-9', o * 100 + 98));
      s3.put(rawKey(o), body(lines.map((l) => ({ ...l, message: 'old copy' }))), keyFilterMetadata(lines));
      s3.put(rawKey(o), body(lines), keyFilterMetadata(lines)); // a second version (a retried batch)
      objects.push(rawKey(o));
    }
    const requestKey = await submitEraseBatch(ctx, 'e2', [
      { table: 'public.customers', key: { id: 42 }, reason: 'unit' },
      { table: 'inventory.products', key: { id: 'sku-9' }, reason: 'unit' },
    ]);
    // What erase-find-raw UNLOADs: the two objects (one named twice, as two UNLOAD files may).
    const uri = (k: string) => `s3://${config.raw.bucket}/${k}`;
    s3.put(`${erasePrefix(config, 'e2')}objects/a-0.json.gz`, body([{ raw_object: uri(objects[5] as string) }, { raw_object: uri(objects[2] as string) }]));
    s3.put(`${erasePrefix(config, 'e2')}objects/b-0.json.gz`, body([{ raw_object: uri(objects[5] as string) }]));
    const listed = await listEraseObjects(ctx, { runId: 'e2' });
    assert.deepEqual([listed.objects, listed.batches], [2, 1]);
    const items = Buffer.from(s3.get(listed.itemsKey) ?? []).toString().trim().split('\n').map((l) => JSON.parse(l) as { batch: number; objects: string[] });
    assert.deepEqual(items, [{ batch: 0, objects: [uri(objects[2] as string), uri(objects[5] as string)] }]);
    const calls = s3.calls.length;
    const res = await rewriteEraseBatch(ctx, { runId: 'e2', requestKey, ...(items[0] as { batch: number; objects: string[] }) });
    const mine = s3.calls.slice(calls);
    assert.equal(mine.filter((c) => c.startsWith('Get raw/')).length, 2);
    assert.equal(mine.filter((c) => c.startsWith('Head') || c.startsWith('List raw')).length, 0);
    assert.equal(res.objectsRewritten, 2);
    assert.equal(res.linesRemoved, 3);
    assert.equal(res.falsePositives, 0);
    assert.equal(res.versioning, true);
    assert.equal(res.versionsDeleted, 4, 'both older versions of both objects');
    assert.deepEqual(res.byRequest, { '0': { lines: 2, maxPosition: '0599' }, '1': { lines: 1, maxPosition: '0598' } });
    for (const key of [objects[2], objects[5]] as string[]) {
      assert.equal(s3.versions(key).length, 1);
      const lines = read(s3, key);
      assert.equal(lines.length, 50);
      assert.ok(!lines.some((l) => l.key === '{"id":42}' || l.key === '{"id":"sku-9"}'));
      const head = s3.versions(key)[0]?.metadata;
      assert.equal(mayContainKey(head, String(lines[0]?.keyId)), true, 'the key filter holds the kept lines');
      assert.equal(mayContainKey(head, '["42"]'), false, 'and no longer the erased key');
    }
    assert.equal(s3.versions(objects[0] as string).length, 2, 'objects without the keys are untouched');
    // Again (a retried batch): nothing left to remove, each object counted as read in vain.
    const again = await rewriteEraseBatch(ctx, { runId: 'e2', requestKey, ...(items[0] as { batch: number; objects: string[] }) });
    assert.deepEqual([again.objectsRewritten, again.falsePositives], [0, 2]);
    await assert.rejects(rewriteEraseBatch(ctx, { runId: 'e2', requestKey, batch: 1, objects: ['s3://elsewhere/raw/x.jsonl.gz'] }), /is not a raw object/);
  });

  it('two runs erasing keys of one object concurrently: each rewrite is conditional, re-read and re-decided, and both keys go', async () => {
    s3 = fakeS3();
    const { ctx } = ctxOf(s3);
    const lines = [line('public.customers', 42, 1), line('public.customers', 43, 2), line('public.customers', 44, 3)];
    s3.put(rawKey(1), body(lines), keyFilterMetadata(lines));
    const a = await submitErase(ctx, 'ea', { table: 'public.customers', key: { id: 42 }, reason: 'a' });
    const b = await submitErase(ctx, 'eb', { table: 'public.customers', key: { id: 43 }, reason: 'b' });
    const objects = [`s3://${config.raw.bucket}/${rawKey(1)}`];
    let raced = false;
    // Run B rewrites the object between run A's read and its PUT.
    s3.onBeforeWrite((command, key) => {
      if (raced || command !== 'Put' || key !== rawKey(1)) return;
      raced = true;
      s3.put(rawKey(1), body([lines[0] as object, lines[2] as object]));
    });
    const resA = await rewriteEraseBatch(ctx, { runId: 'ea', requestKey: a, batch: 0, objects });
    s3.onBeforeWrite(undefined);
    assert.equal(raced, true);
    assert.equal(resA.contended, 1, 'A read the object again');
    assert.deepEqual(read(s3, rawKey(1)).map((l) => l.key), ['{"id":44}'], "B's erasure is not undone by A's");
    const resB = await rewriteEraseBatch(ctx, { runId: 'eb', requestKey: b, batch: 0, objects });
    assert.equal(resB.falsePositives, 1, 'B finds its key already gone');
  });

  it('drops every line of a record that carried the key: a multi-row message holds its values (both layouts)', async () => {
    s3 = fakeS3();
    const { ctx } = ctxOf(s3);
    // Flink's canal-data.txt-style message with rows 112 and 113 (test/fixtures/canal).
    const canal = JSON.stringify(readFixture('canal', 'insert-two-rows-in-one-message').message_value);
    const first = (l: Record<string, unknown>) => {
      const { keyId: _k, ...rest } = l;
      return rest;
    };
    const rows = [first({ ...line('inventory.products', '112', 7), message: canal }), first({ ...line('inventory.products', '113', 7), message: null, messageRef: true }), first(line('inventory.products', '200', 8))];
    const key = 'raw/table=inventory.products/dt=2026-11-30/hr=01/shardId-0-7-8-abc.jsonl.gz';
    s3.put(key, body(rows), keyFilterMetadata(rows as never));
    const requestKey = await submitErase(ctx, 'e3', { table: 'inventory.products', key: { id: '113' }, reason: 'unit' });
    const res = await rewriteEraseBatch(ctx, { runId: 'e3', requestKey, batch: 0, objects: [`s3://${config.raw.bucket}/${key}`] });
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

  it('finish settles a run\'s keys a few at once, each result in its request\'s place', async () => {
    s3 = fakeS3();
    const { ctx, puts } = ctxOf(s3);
    const n = 40;
    const requestKey = await submitEraseBatch(ctx, 'e9', Array.from({ length: n }, (_, i) => ({ table: 'public.customers', key: { id: 100 + i }, reason: `r${i}` })));
    begun(s3, 'e9', Array.from({ length: n }, (_, i) => ({ request: i, keyHash: `h${i}`, table: 'public.customers', storedPosition: String(i).padStart(4, '0'), itemFound: true, itemDeleted: true })));
    s3.put(eraseKeysObject(config, 'e9'), 'keys');
    // Every DynamoDB request takes a few milliseconds: how many are in flight at once.
    const dynamodb = ctx.clients.dynamodb;
    const send = dynamodb.send.bind(dynamodb) as (c: unknown) => Promise<unknown>;
    let inFlight = 0;
    let most = 0;
    (dynamodb as unknown as { send: (c: unknown) => Promise<unknown> }).send = async (c: unknown) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 3));
      try {
        return await send(c);
      } finally {
        inFlight--;
      }
    };
    const summary = await finishErase(ctx, { runId: 'e9', requestKey });
    assert.deepEqual(summary.results.map((r) => [r.request, r.ledgerPosition]), Array.from({ length: n }, (_, i) => [i, String(i).padStart(4, '0')]));
    assert.equal(puts.filter((p) => p.TableName === config.statusTable && p.Item?.reason !== undefined).length, n, 'a ledger entry per key');
    assert.ok(most > 1 && most <= 16, `between 2 and 16 keys at once, saw ${most}`);
  });

  it('finish: one result per key, the ledger at the highest of item, raw and history, not found per key, and the keys and the request deleted', async () => {
    s3 = fakeS3({ pageSize: 100 });
    const { ctx, puts } = ctxOf(s3);
    const requestKey = await submitEraseBatch(ctx, 'e4', [
      { table: 'public.customers', key: { id: 42 }, reason: 'in raw' },
      { table: 'public.customers', key: { id: 43 }, reason: 'in history only' },
      { table: 'public.customers', key: { id: 7 }, reason: 'nowhere' },
      { table: 'public.customers', key: { id: 8 }, reason: 'held, nothing else' },
    ]);
    const entry = (request: number, storedPosition: string | null) => ({ request, keyHash: `h${request}`, table: 'public.customers', storedPosition, itemFound: storedPosition !== null, itemDeleted: storedPosition !== null });
    begun(s3, 'e4', [entry(0, '04'), entry(1, null), entry(2, null), entry(3, '02')]);
    const result = { objectsRead: 1, objectsRewritten: 1, objectsDeleted: 0, falsePositives: 0, linesRemoved: 1, otherRowsRemoved: 0, versionsDeleted: 0, contended: 0, versioning: true, maxPosition: '05' };
    for (let b = 0; b < 250; b++) s3.put(`${erasePrefix(config, 'e4')}results/${String(b).padStart(6, '0')}.json`, JSON.stringify({ batch: b, ...result, maxPosition: b === 17 ? '09' : '05', byRequest: { '0': { lines: 1, maxPosition: b === 17 ? '09' : '05' } } }));
    // erase-find-history's output: key 43 only in history (raw past its grace), key 42 in both.
    s3.put(`${erasePrefix(config, 'e4')}found/x-0.json.gz`, body([{ request: '1', key_hash: 'h1', lines: 3, max_position: '03' }, { request: '0', key_hash: 'h0', lines: 2, max_position: '07' }]));
    s3.put(eraseKeysObject(config, 'e4'), 'keys');
    const summary = await finishErase(ctx, { runId: 'e4', requestKey, objects: 250 });
    assert.equal(summary.objectsRead, 250, 'three pages of results, all counted');
    assert.equal(summary.linesRemoved, 250);
    assert.equal(summary.historyLines, 5);
    assert.deepEqual([summary.keys, summary.keysFound, summary.keysNotFound], [4, 3, 1]);
    assert.equal(summary.found, undefined, 'no single key at the top of a run of many');
    const by = summary.results.map((r) => [r.request, r.found, r.ledgerRecorded, r.ledgerPosition, r.rawLinesRemoved, r.historyLines]);
    assert.deepEqual(by, [
      [0, true, true, '09', 250, 2],
      [1, true, true, '03', 0, 3],
      [2, false, false, '', 0, 0],
      [3, true, true, '02', 0, 0],
    ]);
    const ledger = puts.filter((p) => p.TableName === config.statusTable && p.Item?.reason !== undefined).map((p) => p.Item?.reason?.S);
    assert.deepEqual(ledger.sort(), ['held, nothing else', 'in history only', 'in raw'], 'a ledger entry per key found, none for the key found nowhere');
    assert.ok(!s3.keys().includes(requestKey), 'the request is gone');
    assert.ok(!s3.keys().includes(eraseKeysObject(config, 'e4')), 'the run\'s keys are gone');
    assert.equal(summary.keysObjectsDeleted, 1);
    const stored = JSON.parse(Buffer.from(s3.get(`${erasePrefix(config, 'e4')}summary.json`) ?? []).toString()) as { results: unknown[] };
    assert.equal(stored.results.length, 4);
    assert.ok(!JSON.stringify(stored).includes('"id"'), 'the summary names keys by their hash');

    const none = await submitErase(ctx, 'e5', { table: 'public.customers', key: { id: 7 }, reason: 'unit' });
    begun(s3, 'e5', [entry(0, null)]);
    const nothing = await finishErase(ctx, { runId: 'e5', requestKey: none });
    assert.equal(nothing.found, false, 'a run of one key reports it at the top level');
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
    const ctx: EraseContext = { config: named, clients: { s3: s3.client, dynamodb: ledgerDynamo().client }, log: quiet, env, now: () => Date.UTC(2026, 11, 1) };
    // As the writer spills a row too large for DynamoDB (RawStore.spill, through raw-layout.ts).
    const store = new RawStore(s3.client, named.raw.bucket, named.raw.prefix, named.raw.quarantinePrefix);
    for (const table of ['public.café', 'dbo.Order Details']) {
      const mine = [await store.spill(table, '["42"]', '05', '{"id":42}'), await store.spill(table, '["42"]', '07', '{"id":42}')].map((uri) => uri.replace(`s3://${named.raw.bucket}/`, ''));
      const other = (await store.spill(table, '["43"]', '05', '{"id":43}')).replace(`s3://${named.raw.bucket}/`, '');
      // A row spilled before the segment encoding was injective (`public.caf_`, `dbo.Order_Details`).
      const legacy = (mine[0] as string).replace(encodeSegment(table), legacySegment(table));
      assert.notEqual(legacy, mine[0]);
      s3.put(legacy, gzipSync('{"id":42}'));
      const runId = `e-${encodeSegment(table).length}`;
      const requestKey = await submitErase(ctx, runId, { table, key: { id: 42 }, reason: 'unit' });
      // begin.json as Begin leaves it: the key's item was not found.
      s3.put(`${erasePrefix(named, runId)}begin.json`, JSON.stringify([{ request: 0, keyHash: 'h', table, storedPosition: null, itemFound: false, itemDeleted: false }]));
      const summary = await finishErase(ctx, { runId, requestKey });
      assert.equal(summary.spilledDeleted, 3, `${table}: both spilled rows and the legacy one`);
      assert.equal(summary.found, true);
      for (const key of [...mine, legacy]) assert.deepEqual(s3.versions(key), [], `${key} is gone with its versions`);
      assert.ok(s3.keys().includes(other), `${table}: another key's spilled row stays`);
    }
  });

  it('the Lambda step returns the summary without the per-key results, and answers the query loop\'s fetch', async () => {
    s3 = fakeS3();
    const { ctx } = ctxOf(s3);
    const requestKey = await submitEraseBatch(ctx, 'e6', [
      { table: 'public.customers', key: { id: 42 }, reason: 'unit' },
      { table: 'public.customers', key: { id: 43 }, reason: 'unit' },
    ]);
    const begin = (await eraseStep({ step: 'begin', runId: 'e6', requestKey }, ctx)) as { queries: { find: { queriesKey: string; count: number } } };
    const fetched = (await eraseStep({ ...begin.queries.find, index: 1 }, ctx)) as { query: { statement: { name: string } }; more: boolean };
    assert.deepEqual([fetched.query.statement.name, fetched.more], ['erase-find-history', false]);
    const finished = (await eraseStep({ step: 'finish', runId: 'e6', requestKey, found: 0 }, ctx)) as Record<string, unknown>;
    assert.equal(finished.results, undefined);
    assert.equal(finished.keys, 2);
    assert.equal(finished.summaryKey, `${erasePrefix(config, 'e6')}summary.json`);
    await assert.rejects(eraseStep({ step: 'find' }, ctx), /unknown erase step "find"/);
  });

  it('reaches the jobs\' reports: the key\'s reconcile findings and its entry in a snapshot report\'s orphan keys, nothing else', async () => {
    s3 = fakeS3();
    const { ctx } = ctxOf(s3);
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
    begun(s3, 'e5', [{ request: 0, keyHash: 'h', table: 'public.customers', storedPosition: null, itemFound: false, itemDeleted: false }]);
    const summary = await finishErase(ctx, { runId: 'e5', requestKey });
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
    const { ctx } = ctxOf(s3);
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
    begun(s3, 'e6', [{ request: 0, keyHash: 'h', table: 'public.customers', storedPosition: null, itemFound: false, itemDeleted: false }]);
    const summary = await finishErase(ctx, { runId: 'e6', requestKey });
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
