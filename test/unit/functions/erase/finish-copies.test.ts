/**
 * Erase's Finish reads the copies outside raw (quarantine, the on-failure objects, the reports and
 * the jobs' SQL outputs) once per run for all its keys: one listing of each prefix and one GET (and
 * at most one conditional rewrite) per object, whatever the number of keys; each key's counts are
 * the ones a pass per key gave, an object holding several keys is rewritten once without all of
 * them, and the final objects are those one key at a time left (checked against a per-key
 * reference of the matching of before).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import type { TableConfig } from '../../../../functions/config/types.js';
import { deleteOlderVersions, type EraseContext, erasePrefix, finishErase, submitEraseBatch } from '../../../../functions/erase/erase.js';
import { type ErasedKey, eraseFromQuarantine, eraseFromReports } from '../../../../functions/erase/copies.js';
import { isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, parseJson, stringifyJson } from '../../../../functions/core/json.js';
import { keyId, normalizeKey } from '../../../../functions/core/keys.js';
import { pgMessage } from '../../../helpers/debezium.js';
import { type FakeS3, fakeS3 } from '../../../helpers/fake-s3.js';

const config = parseConfig({
  name: 'er',
  tables: [
    { source: 'public.customers', target: 'er-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'inventory.products', target: 'er-products', key: ['id'] },
  ],
  raw: { bucket: 'er-raw' },
});
const env = { TIDEMARK_ERASE_KEY: 'unit-test-ledger-key-0123456789' };
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const NOW = Date.UTC(2026, 11, 1);

/** A DynamoDB that holds no item and takes every ledger write. */
function emptyDynamo(): DynamoDBClient {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  mock.on(GetItemCommand).resolves({});
  mock.on(PutItemCommand).resolves({});
  mock.on(UpdateItemCommand).resolves({});
  mock.on(QueryCommand).resolves({ Items: [] });
  return client;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** A quarantine line as ingest writes it: its table when the record named a configured one, its original bytes. */
const qLine = (table: string | null, value: string) => ({ reason: 'decode-error', detail: 'x', ...(table === null ? {} : { table }), transport: { kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: '1' }, topic: null, headers: {}, valueBase64: b64(value), keyBase64: null });
const jsonl = (lines: readonly object[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
const gz = (lines: readonly object[]) => gzipSync(Buffer.from(jsonl(lines)));
const text = (s3: FakeS3, key: string): string => {
  const body = Buffer.from(s3.get(key) ?? []);
  return (body[0] === 0x1f ? gunzipSync(body) : body).toString('utf8');
};
const lines = (s3: FakeS3, key: string) =>
  text(s3, key)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** A Debezium PostgreSQL change of `schema.table` row `id`, as the stream delivers it. */
const change = (schema: string, table: string, id: number | string, lsn: number) => JSON.stringify(pgMessage({ table, schema, op: 'c', after: { id, name: `n${id}` }, lsn, lastCommitLsn: lsn - 8 }));
/** Lambda's S3 on-failure record of a Kinesis batch of these messages (as functions/replay/dlq.ts reads it). */
const onFailureDoc = (values: readonly string[]) => ({
  requestContext: { requestId: 'r', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:f', condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
  version: '1.0',
  KinesisBatchInfo: { shardId: 'shardId-000000000000', batchSize: values.length, streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/s' },
  payload: JSON.stringify({
    Records: values.map((v, i) => ({
      kinesis: { kinesisSchemaVersion: '1.0', partitionKey: 'p', sequenceNumber: String(1000 + i), data: b64(v), approximateArrivalTimestamp: NOW / 1000 },
      eventSource: 'aws:kinesis',
      eventID: `shardId-000000000000:${1000 + i}`,
      eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/s',
    })),
  }),
});
const finding = (table: string, key: string) => ({ class: 'missing', table, key, expected: { position: '05' }, actual: null });

describe('erase finish reads the copies outside raw once per run', () => {
  let s3: FakeS3;
  afterEach(() => s3.restore());

  /** Three keys over two tables (the last found nowhere), and copies of the first two in every prefix erase reads outside raw. */
  async function run(): Promise<{ summary: Awaited<ReturnType<typeof finishErase>>; calls: readonly string[]; objects: Record<string, string> }> {
    s3 = fakeS3();
    const ctx: EraseContext = { config, clients: { s3: s3.client, dynamodb: emptyDynamo() }, log: quiet, env, now: () => NOW };
    const requestKey = await submitEraseBatch(ctx, 'f1', [
      { table: 'public.customers', key: { id: 42 }, reason: 'in every copy' },
      { table: 'inventory.products', key: { id: 'sku-9' }, reason: 'in every copy' },
      { table: 'public.customers', key: { id: 7 }, reason: 'nowhere' },
    ]);
    s3.put(`${erasePrefix(config, 'f1')}begin.json`, JSON.stringify([0, 1, 2].map((request) => ({ request, keyHash: `h${request}`, table: request === 1 ? 'inventory.products' : 'public.customers', storedPosition: null, itemFound: false, itemDeleted: false }))));
    const objects = {
      // Quarantine: one object holding keys 0 and 1 (and another key), one holding key 1 only (by its bytes), one holding neither.
      q1: 'quarantine/dt=2026-11-30/hr=01/shardId-0-1-9-a.jsonl.gz',
      q2: 'quarantine/dt=2026-11-30/hr=02/shardId-0-10-19-b.jsonl.gz',
      q3: 'quarantine/dt=2026-11-30/hr=03/shardId-0-20-29-c.jsonl.gz',
      // On-failure: a batch holding keys 0 and 1 and another row, one of another key only, one of key 0 only (deleted).
      f1: `${config.replay.onFailurePrefix}mapping/shardId-000000000000/2026/11/30/failed-1`,
      f2: `${config.replay.onFailurePrefix}mapping/shardId-000000000000/2026/11/30/failed-2`,
      f3: `${config.replay.onFailurePrefix}mapping/shardId-000000000000/2026/11/30/failed-3`,
      // Reports: findings holding keys 0 and 1, a snapshot report holding both, a report naming no key, a job's SQL output of key 1.
      findings: `${config.jobs.reportPrefix}reconcile/r1/findings/p=0001.jsonl.gz`,
      snapshot: `${config.jobs.reportPrefix}snapshot/s1/report.json`,
      plain: `${config.jobs.reportPrefix}reconcile/r1/report.json`,
      unload: 'history/unload/reconcile/r2/findings/0-0.json.gz',
    };
    s3.put(objects.q1, gz([qLine('public.customers', '{"after":{"id":42,"email":"x"}}'), qLine(null, '{"source":{"table":"customers"},"after":{"id":43}}'), qLine('inventory.products', '{"after":{"id":"sku-9"}}')]));
    s3.put(objects.q2, gz([qLine(null, '{"source":{"table":"products"},"after":{"id":"sku-9"}}'), qLine('public.customers', '{"after":{"id":421}}')]));
    s3.put(objects.q3, gz([qLine(null, '{"source":{"table":"orders"},"after":{"id":42}}')]));
    s3.put(objects.f1, JSON.stringify(onFailureDoc([change('public', 'customers', 42, 100), change('public', 'customers', 9, 108), change('inventory', 'products', 'sku-9', 116)])));
    s3.put(objects.f2, JSON.stringify(onFailureDoc([change('public', 'customers', 9, 124)])));
    s3.put(objects.f3, JSON.stringify(onFailureDoc([change('public', 'customers', 42, 132)])));
    s3.put(objects.findings, gz([finding('public.customers', '{"id":42}'), finding('public.customers', '{"id":43}'), finding('inventory.products', '{"id":"sku-9"}'), finding('inventory.products', '{"id":"42"}')]));
    s3.put(objects.snapshot, JSON.stringify({ job: 'snapshot', tables: [{ table: 'public.customers', orphans: { count: 2, keys: ['{"id":42}', '{"id":5}'] } }, { table: 'inventory.products', orphans: { count: 1, keys: ['{"id":"sku-9"}'] } }] }));
    s3.put(objects.plain, JSON.stringify({ job: 'reconcile', runId: 'r1' }));
    s3.put(objects.unload, gz([{ source_table: 'inventory.products', key_id: '["sku-9"]', key_json: '{"id":"sku-9"}', class: 'missing' }, { source_table: 'inventory.products', key_json: '{"id":"sku-8"}', class: 'missing' }]));
    const from = s3.calls.length;
    const summary = await finishErase(ctx, { runId: 'f1', requestKey });
    return { summary, calls: s3.calls.slice(from), objects };
  }

  it('lists each prefix once and GETs each object once for three keys, with each key\'s counts, a key found nowhere among them', async () => {
    const { summary, calls, objects } = await run();
    const copies = ['quarantine/', config.replay.onFailurePrefix, config.jobs.reportPrefix, 'history/unload/'];
    for (const prefix of copies) assert.equal(calls.filter((c) => c === `List ${prefix}`).length, 1, `one listing of ${prefix}`);
    for (const [name, key] of Object.entries(objects)) assert.equal(calls.filter((c) => c === `Get ${key}`).length, 1, `${name} is read once`);
    const copyCalls = calls.filter((c) => copies.some((p) => c.startsWith(`List ${p}`) || c.startsWith(`Get ${p}`) || c.startsWith(`Put ${p}`) || c.startsWith(`Delete ${p}`)));
    // 4 listings, 10 GETs, 6 PUTs (q1, q2, f1, findings, snapshot, unload), 1 DELETE (f3, left with no record).
    assert.equal(copyCalls.filter((c) => c.startsWith('List')).length, 4);
    assert.equal(copyCalls.filter((c) => c.startsWith('Get')).length, 10);
    assert.deepEqual(copyCalls.filter((c) => c.startsWith('Put')).sort(), [objects.q1, objects.q2, objects.f1, objects.findings, objects.snapshot, objects.unload].map((k) => `Put ${k}`).sort());
    assert.deepEqual(copyCalls.filter((c) => c === `Delete ${objects.f3}`).length, 1);
    const by = summary.results.map((r) => [r.request, r.found, r.quarantineLinesRewritten, r.onFailureRecordsRemoved, r.reportEntriesRemoved, r.ledgerRecorded]);
    assert.deepEqual(by, [
      [0, true, 1, 2, 2, true],
      [1, true, 2, 1, 3, true],
      [2, false, 0, 0, 0, false],
    ]);
    assert.deepEqual([summary.keysFound, summary.keysNotFound], [2, 1]);
    assert.deepEqual([summary.quarantineLinesRewritten, summary.onFailureRecordsRemoved, summary.reportEntriesRemoved], [3, 3, 5]);
  });

  it('rewrites an object holding two of the run\'s keys once, without both', async () => {
    const { summary, calls, objects } = await run();
    const hash = summary.results.map((r) => r.keyHash);
    const erasedBy = (key: string) => lines(s3, key).map((l) => (l.erased as { keyHash?: string } | undefined)?.keyHash ?? null);
    for (const key of [objects.q1, objects.f1, objects.findings, objects.snapshot]) {
      assert.equal(calls.filter((c) => c === `Put ${key}`).length, 1, `${key} is written once`);
      assert.equal(s3.versions(key).length, 1, 'the versions that held the keys are gone');
    }
    const q1 = lines(s3, objects.q1);
    assert.deepEqual(erasedBy(objects.q1), [hash[0], null, hash[1]], 'each erased line names the key it held');
    assert.deepEqual(erasedBy(objects.q2), [hash[1], null]);
    assert.equal(q1[0]?.valueBase64, null);
    assert.equal(q1[2]?.valueBase64, null);
    assert.equal(q1[1]?.valueBase64, b64('{"source":{"table":"customers"},"after":{"id":43}}'), 'another key\'s line keeps its bytes');
    assert.equal(lines(s3, objects.q2)[1]?.valueBase64, b64('{"after":{"id":421}}'), 'a longer number is another key');
    assert.equal(calls.filter((c) => c === `Put ${objects.q3}`).length, 0);
    const f1 = JSON.parse(text(s3, objects.f1)) as { payload: string };
    const left = (JSON.parse(f1.payload) as { Records: { kinesis: { data: string } }[] }).Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString());
    assert.deepEqual(left, [change('public', 'customers', 9, 108)], 'only the other key\'s record stays in the failed batch');
    assert.equal(s3.get(objects.f3), undefined, 'a batch of the key alone is deleted');
    assert.ok(s3.get(objects.f2), 'a batch without the keys stays');
    assert.deepEqual(lines(s3, objects.findings).map((f) => `${String(f.table)} ${String(f.key)}`), ['public.customers {"id":43}', 'inventory.products {"id":"42"}']);
    const snapshot = JSON.parse(text(s3, objects.snapshot)) as { tables: { orphans: { keys: string[] } }[] };
    assert.deepEqual(snapshot.tables.map((t) => t.orphans.keys), [['{"id":5}'], []]);
    assert.deepEqual(lines(s3, objects.unload).map((r) => r.key_json), ['{"id":"sku-8"}']);
    assert.ok(!calls.includes(`Put ${objects.plain}`), 'a report naming no key is not rewritten');
  });

  it('the batched quarantine pass leaves the objects and counts one key at a time left, for any keys and lines (property)', async () => {
    const render = (v: string, quoted: boolean, space: string) => `${space}${quoted ? JSON.stringify(v) : v}`;
    const noise = fc.tuple(fc.constantFrom('id', 'order', 'line', 'other'), fc.constantFrom(...VALUES), fc.boolean(), fc.constantFrom('', ' ', '\n ')).map(([c, v, q, sp]) => [`"${c}":${render(v, q, sp)}`]);
    /** Lines mostly of the run's keys: a key written out (every column, quoted or not, or its value run on into a longer one), with its table or another named. */
    const objectsOf = (picked: readonly string[]) => {
      const name = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...picked) }, { weight: 1, arbitrary: fc.constantFrom(...POOL.keys()) });
      const mention = fc.tuple(name, fc.boolean(), fc.constantFrom('', ' '), fc.constantFrom('', '', '', '0', 'x', '.5')).map(([n, q, sp, tail]) =>
        Object.entries(POOL.get(n)?.[1] ?? {}).map(([c, v], i) => `"${c}":${render(`${String(v)}${i === 0 ? tail : ''}`, q, sp)}`),
      );
      const source = fc.oneof({ weight: 3, arbitrary: name.map((n) => POOL.get(n)?.[0] ?? null) }, { weight: 1, arbitrary: fc.constantFrom('public.orders', 'shop.customers') });
      const line = fc.oneof(
        { weight: 8, arbitrary: fc.tuple(fc.boolean(), source, fc.array(fc.oneof({ weight: 3, arbitrary: mention }, { weight: 1, arbitrary: noise }), { maxLength: 4 })).map(([named, table, parts]) => JSON.stringify(qLine(named ? table : null, `{${[...(named || table === null ? [] : [`"source":{"table":${JSON.stringify(table.split('.').pop())}}`]), ...parts.flat()].join(',')}}`))) },
        { weight: 1, arbitrary: fc.constantFrom('', 'not json', '5') },
      );
      return fc.array(fc.array(line, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 });
    };
    const picks = fc.array(fc.constantFrom(...POOL.keys()), { minLength: 1, maxLength: 6 });
    s3 = fakeS3();
    await fc.assert(
      fc.asyncProperty(picks.chain((picked) => fc.tuple(fc.constant(picked), objectsOf(picked))), async ([picked, objects]) => {
        s3.restore();
        s3 = fakeS3();
        const keys = picked.map((p, i) => pooled(p, `h${i}`));
        const names = objects.map((_, o) => `quarantine/dt=2026-11-30/hr=0${o}/o${o}.jsonl.gz`);
        for (const [o, ls] of objects.entries()) s3.put(names[o] as string, gzipSync(Buffer.from(ls.join('\n'))));
        const got = await eraseFromQuarantine(s3.client, wide, keys, NOW, deleteOlderVersions);
        const want = keys.map(() => 0);
        for (const [o, ls] of objects.entries()) {
          let body = ls.join('\n');
          for (const [i, k] of keys.entries()) {
            const one = quarantineOneKey(body, k, NOW);
            if (one.changed > 0) body = one.text;
            want[i] = (want[i] ?? 0) + one.changed;
          }
          assert.equal(gunzipSync(Buffer.from(s3.get(names[o] as string) ?? [])).toString('utf8'), body);
        }
        assert.deepEqual(got.perKey, want);
        assert.equal(got.total, want.reduce((a, b) => a + b, 0));
      }),
      { numRuns: 150 },
    );
  });

  it('the batched report pass leaves the reports and counts one key at a time left, JSON reports and JSON Lines alike (property)', async () => {
    const tableName = fc.constantFrom('public.customers', 'inventory.products', 'shop.lines', 'public.orders');
    const keyText = fc.constantFrom('{"id":1}', '{"id": 2}', '{"id":"1"}', '{"id":"a"}', '{"id":12}', '{"order":"1","line":"2"}', '{"order":"2","line":"1"}', 'not json', '{}');
    const keyIdText = fc.constantFrom('["1"]', '["2"]', '["a"]', '["1","2"]', '["12"]');
    const leaf = fc.oneof(
      keyText,
      fc.record({ table: tableName, key: keyText }),
      fc.record({ source_table: tableName, key_id: keyIdText, key_json: keyText }, { requiredKeys: ['source_table'] }),
      fc.constant(5),
    );
    const { node } = fc.letrec<{ node: JsonValue }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.array(tie('node'), { maxLength: 4 }),
        // A finding or row with entries inside it: one key may drop it while an earlier one looks inside.
        fc.record(
          { table: tableName, key: keyText, source_table: tableName, key_json: keyText, keys: fc.array(fc.oneof(keyText, tie('node')), { maxLength: 4 }), items: fc.array(tie('node'), { maxLength: 3 }), inner: tie('node') },
          { requiredKeys: [] },
        ),
      ) as fc.Arbitrary<JsonValue>,
    }));
    const findingLine = fc.oneof(leaf.map((l) => JSON.stringify(l)), fc.constantFrom('', 'not json', '[1]'));
    s3 = fakeS3();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...POOL.keys()), { minLength: 1, maxLength: 6 }), node, fc.array(findingLine, { maxLength: 8 }), async (picked, report, findings) => {
        s3.restore();
        s3 = fakeS3();
        const keys = picked.map((p, i) => pooled(p, `h${i}`));
        const jsonKey = `${wide.jobs.reportPrefix}snapshot/s1/report.json`;
        const linesKey = `${wide.jobs.reportPrefix}reconcile/t/r1.findings.jsonl`;
        const inputs: [string, string, boolean][] = [
          [jsonKey, stringifyJson(report), false],
          [linesKey, findings.join('\n'), true],
        ];
        for (const [key, body] of inputs) s3.put(key, body);
        const got = await eraseFromReports(s3.client, wide, keys, deleteOlderVersions);
        const want = keys.map(() => 0);
        for (const [key, start, asLines] of inputs) {
          let body = start;
          for (const [i, k] of keys.entries()) {
            const one = reportOneKey(body, asLines, k);
            if (one === null || one.changed === 0) continue;
            body = one.next;
            want[i] = (want[i] ?? 0) + one.changed;
          }
          assert.equal(Buffer.from(s3.get(key) ?? []).toString('utf8'), body, key);
        }
        assert.deepEqual(got.perKey, want);
      }),
      { numRuns: 200 },
    );
  });
});

/** A config with a key of two columns besides the two of one column, for the properties. */
const wide = parseConfig({
  name: 'er',
  tables: [
    { source: 'public.customers', target: 'er-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'inventory.products', target: 'er-products', key: ['id'] },
    { source: 'shop.lines', target: 'er-lines', key: ['order', 'line'] },
  ],
  raw: { bucket: 'er-raw' },
});
const VALUES = ['1', '2', '12', '21', 'a', 'b', 'ab', '1.5', '-1'];
/** The keys the properties erase, by name. */
const POOL = new Map<string, [string, JsonObject]>([
  ['c1', ['public.customers', { id: 1 }]],
  ['c2', ['public.customers', { id: 2 }]],
  ['c12', ['public.customers', { id: 12 }]],
  ['pa', ['inventory.products', { id: 'a' }]],
  ['p1', ['inventory.products', { id: '1' }]],
  ['l12', ['shop.lines', { order: '1', line: '2' }]],
  ['l21', ['shop.lines', { order: '2', line: '1' }]],
  ['l11', ['shop.lines', { order: '1', line: '1' }]],
]);
function pooled(name: string, hash: string): ErasedKey {
  const [source, key] = POOL.get(name) ?? ['', {}];
  const table = wide.tables.find((t) => t.source === source) as TableConfig;
  const columns = normalizeKey(table, key);
  return { table, canonical: keyId(table, columns), columns, hash };
}

// The per-key matching of before (copies.ts, one key a pass), the reference the batched passes are held to.

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function skipSpace(text: string, i: number): number {
  let at = i;
  while (at < text.length && isSpace(text[at])) at++;
  return at;
}

function valueAt(text: string, i: number, value: string): boolean {
  const quoted = text[i] === '"';
  const start = quoted ? i + 1 : i;
  if (!text.startsWith(value, start)) return false;
  const next = text[start + value.length];
  if (quoted) return next === '"';
  return next === undefined || !/[0-9A-Za-z.]/.test(next);
}

function holdsPair(text: string, column: string, value: string): boolean {
  const name = JSON.stringify(column);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    const colon = skipSpace(text, at + name.length);
    if (text[colon] === ':' && valueAt(text, skipSpace(text, colon + 1), value)) return true;
  }
  return false;
}

function mentionsKey(text: string, key: JsonObject, table: string | null): boolean {
  const bare = table === null ? null : (table.split('.').pop() ?? table);
  if (bare !== null && !text.includes(JSON.stringify(bare))) return false;
  return Object.entries(key).every(([col, v]) => holdsPair(text, col, isLosslessNumber(v) ? v.value : String(v)));
}

function quarantineOneKey(body: string, k: ErasedKey, now: number): { text: string; changed: number } {
  let changed = 0;
  const out = body.split('\n').map((line) => {
    if (line.trim() === '') return line;
    let q: Record<string, unknown>;
    try {
      q = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return line;
    }
    const bytes = [q.valueBase64, q.keyBase64].map((b) => (typeof b === 'string' ? Buffer.from(b, 'base64').toString('utf8') : '')).join('\n');
    const lineTable = typeof q.table === 'string' ? q.table : null;
    if (lineTable !== null && lineTable !== k.table.source) return line;
    if (!mentionsKey(bytes, k.columns, lineTable === null ? k.table.source : null)) return line;
    changed++;
    return JSON.stringify({ ...q, valueBase64: null, keyBase64: null, erased: { keyHash: k.hash, at: now } });
  });
  return { text: out.join('\n'), changed };
}

function sameKey(k: ErasedKey, text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    const parsed = parseJson(text);
    if (!isJsonObject(parsed)) return false;
    return keyId(k.table, normalizeKey(k.table, parsed)) === k.canonical;
  } catch {
    return false;
  }
}

function namesKey(v: JsonObject, k: ErasedKey): boolean {
  if (v.table === k.table.source && sameKey(k, v.key)) return true;
  return v.source_table === k.table.source && (v.key_id === k.canonical || sameKey(k, v.key_json));
}

function scrubOneKey(value: JsonValue, k: ErasedKey): { value: JsonValue; removed: number } {
  let removed = 0;
  const walk = (v: JsonValue, table: string | null): JsonValue => {
    if (Array.isArray(v)) {
      const kept = v.filter((x) => !(isJsonObject(x) && namesKey(x, k)));
      removed += v.length - kept.length;
      return kept.map((x) => walk(x, table));
    }
    if (!isJsonObject(v)) return v;
    const here = typeof v.table === 'string' ? v.table : table;
    const out: JsonObject = {};
    for (const [name, child] of Object.entries(v)) {
      if (name === 'keys' && Array.isArray(child) && here === k.table.source) {
        const kept = child.filter((x) => !sameKey(k, x));
        removed += child.length - kept.length;
        out[name] = kept;
      } else out[name] = walk(child, here);
    }
    return out;
  };
  return { value: walk(value, null), removed };
}

function reportOneKey(text: string, lines: boolean, k: ErasedKey): { next: string; changed: number } | null {
  if (!text.includes(k.table.source) && !text.includes(JSON.stringify(k.table.source).slice(1, -1))) return null;
  if (lines) {
    const all = text.split('\n');
    const kept = all.filter((line) => {
      if (line === '') return true;
      let parsed: JsonValue;
      try {
        parsed = parseJson(line);
      } catch {
        return true;
      }
      return !(isJsonObject(parsed) && namesKey(parsed, k));
    });
    return { next: kept.join('\n'), changed: all.length - kept.length };
  }
  let parsed: JsonValue;
  try {
    parsed = parseJson(text);
  } catch {
    return null;
  }
  const scrubbed = scrubOneKey(parsed, k);
  return { next: stringifyJson(scrubbed.value), changed: scrubbed.removed };
}
