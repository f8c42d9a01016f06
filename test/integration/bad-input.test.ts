/**
 * The bad-input corpus (test/corpus/bad-input.ts) through the Lambda's own code path: `handleEvent`
 * with Kinesis-shaped and MSK-shaped events, real clients on the integration target. Every kind of
 * bad record is mixed into batches of good records from every format; for each kind we check that
 * the batch did not fail because of it, that it was quarantined with its exact bytes and its
 * specific reason, and, per batch, that the good records were applied exactly and every record is
 * counted once. Run with
 * `node bin/with-loopback.mjs node --import tsx --test test/integration/bad-input.test.ts`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { KinesisStreamEvent, MSKEvent } from 'aws-lambda';
import { runApply } from '../../bin/cli/apply.js';
import { localDeps } from '../../bin/cli/context.js';
import { kinesisEvent, mskEvent } from '../../bin/cli/kinesis-shape.js';
import { getRow, statusRows, tableOrThrow } from '../../bin/cli/state.js';
import type { TidemarkConfig } from '../../lib/config/config.js';
import { canonicalJson, isLosslessNumber, type JsonObject } from '../../functions/core/json.js';
import { canonicalDecimal } from '../../functions/core/limits.js';
import { handleEvent } from '../../functions/ingest.js';
import type { BatchSummary, IngestDeps } from '../../functions/ingest/process-batch.js';
import type { WriteResult } from '../../functions/adapters/dynamo-writer.js';
import type { Log } from '../../functions/telemetry/sinks.js';
import type { PlannedWrite } from '../../functions/core/plan.js';
import { BAD_KINDS, type BadKind, corpusConfig, type GoodRecord, goodRecords } from '../corpus/bad-input.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

type Transport = 'kinesis' | 'msk';

/** One delivered record of a run: a bad kind or a good record, with its transport sequence. */
type Slot = { readonly kind: BadKind; readonly good?: undefined } | { readonly good: GoodRecord; readonly kind?: undefined };

interface QuarantineLine {
  readonly reason: string;
  readonly detail: string;
  readonly valueBase64: string | null;
  readonly keyBase64: string | null;
  readonly transport: { readonly sequence: string };
}

interface RunResult {
  readonly config: TidemarkConfig;
  readonly sequences: Map<BadKind, string>;
  readonly partitionKeys: Map<BadKind, string>;
  readonly goods: readonly GoodRecord[];
  readonly batches: BatchSummary[];
  readonly failures: string[];
  readonly thrown: string[];
  readonly quarantine: Map<string, QuarantineLine[]>;
  readonly status: JsonObject[];
}

const BATCH = 100;
const BAD_PER_GOOD = 3;

function quietLog(): Log & { readonly errors: string[] } {
  const errors: string[] = [];
  const noop = () => {};
  return { debug: noop, info: noop, warn: noop, error: (m) => errors.push(m), errors };
}

/** Bad kinds with a good record after every few, so every batch mixes both. */
function interleave(kinds: readonly BadKind[], goods: readonly GoodRecord[]): Slot[] {
  const slots: Slot[] = [];
  let g = 0;
  kinds.forEach((kind, i) => {
    slots.push({ kind });
    if (i % BAD_PER_GOOD === BAD_PER_GOOD - 1 && g < goods.length) slots.push({ good: goods[g++] as GoodRecord });
  });
  while (g < goods.length) slots.push({ good: goods[g++] as GoodRecord });
  return slots;
}

const bytesOf = (s: Slot) => (s.kind ? s.kind.value : (s.good as GoodRecord).value);

/** Row columns only (no `__` metadata). */
function columns(row: JsonObject | null): JsonObject | null {
  if (!row) return null;
  return Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('__')));
}

/** Canonical JSON where every number is spelled one way: DynamoDB may return 9.9E+125 as digits. */
function exact(value: unknown): string {
  const walk = (v: unknown): unknown => {
    if (isLosslessNumber(v)) return `#${canonicalDecimal(v.value)}`;
    if (typeof v === 'number') return `#${canonicalDecimal(String(v))}`;
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return canonicalJson(walk(value));
}

/** The accounting identity: every record is counted exactly once. */
function identity(s: BatchSummary): { records: number; counted: number } {
  const truncates = (s as unknown as { truncates?: number }).truncates ?? 0;
  return { records: s.records, counted: s.applied + s.stale + s.duplicates + s.conflicts + s.superseded + s.quarantined + s.controls + truncates };
}

describe(`bad-input corpus through handleEvent (${process.env.TIDEMARK_TARGET ?? 'embedded'})`, () => {
  let target: Target;
  const configs: TidemarkConfig[] = [];
  const dirs: string[] = [];

  before(async () => {
    target = await openTarget();
  });

  after(async () => {
    for (const c of configs) await target?.teardown(c).catch(() => {});
    await target?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('has at least 150 distinct kinds of bad record, over every format', () => {
    const ids = new Set(BAD_KINDS.map((k) => `${k.family}: ${k.name}`));
    assert.equal(ids.size, BAD_KINDS.length, 'kind names are distinct');
    assert.ok(ids.size >= 150, `${ids.size} kinds`);
    const families = new Set(BAD_KINDS.map((k) => k.family));
    for (const f of ['bytes', 'json', 'envelope', 'pg-position', 'mysql-position', 'sqlserver-position', 'oracle-position', 'cockroachdb', 'maxwell', 'canal', 'dms', 'generic', 'mongodb', 'flattened', 'dynamo-value', 'reserved', 'key', 'commit-ts', 'kafka-key']) {
      assert.ok(families.has(f), `family ${f}`);
    }
    for (const k of BAD_KINDS) assert.notEqual(k.reason, 'decoder-error', `${k.name}: a generic reason`);
  });

  async function readQuarantine(config: TidemarkConfig): Promise<Map<string, QuarantineLine[]>> {
    const bySequence = new Map<string, QuarantineLine[]>();
    let token: string | undefined;
    do {
      const res = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: config.raw.bucket, Prefix: config.raw.quarantinePrefix, ContinuationToken: token }));
      for (const o of res.Contents ?? []) {
        const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: config.raw.bucket, Key: o.Key }));
        const text = gunzipSync(Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toString('utf8');
        for (const l of text.trimEnd().split('\n')) {
          const line = JSON.parse(l) as QuarantineLine;
          bySequence.set(line.transport.sequence, [...(bySequence.get(line.transport.sequence) ?? []), line]);
        }
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return bySequence;
  }

  async function run(transport: Transport): Promise<RunResult> {
    const config = uniqueConfig(corpusConfig);
    configs.push(config);
    await target.setup(config);
    const log = quietLog();
    const batches: BatchSummary[] = [];
    const deps: IngestDeps = { ...localDeps(config, target.clients), log, onSummary: (s) => batches.push({ ...s }) };
    const kinds = BAD_KINDS.filter((k) => k.only === undefined || k.only === transport);
    const goods = goodRecords(Math.ceil(kinds.length / BAD_PER_GOOD) - 12);
    const slots = interleave(kinds, goods);
    const sequences = new Map<BadKind, string>();
    const partitionKeys = new Map<BadKind, string>();
    const failures: string[] = [];
    const thrown: string[] = [];
    for (let start = 0; start < slots.length; start += BATCH) {
      const chunk = slots.slice(start, start + BATCH);
      let event: KinesisStreamEvent | MSKEvent;
      if (transport === 'kinesis') {
        const seq = (i: number) => `4959${String(start + i).padStart(52, '0')}`;
        chunk.forEach((s, i) => {
          if (s.kind) {
            sequences.set(s.kind, seq(i));
            partitionKeys.set(s.kind, `pk-${start + i}`);
          }
        });
        event = kinesisEvent(
          'corpus',
          'shardId-000000000000',
          chunk.map((s, i) => ({ data: bytesOf(s), partitionKey: `pk-${start + i}`, sequenceNumber: seq(i), arrival: new Date() })),
        );
      } else {
        chunk.forEach((s, i) => {
          if (s.kind) sequences.set(s.kind, String(start + i));
        });
        event = mskEvent(chunk.map((s, i) => ({ topic: 'corpus', partition: 0, offset: start + i, key: s.kind?.key ?? null, value: bytesOf(s), timestamp: Date.now() })));
      }
      try {
        const res = await handleEvent(event, deps);
        for (const f of res.batchItemFailures ?? []) failures.push(typeof f.itemIdentifier === 'string' ? f.itemIdentifier : JSON.stringify(f.itemIdentifier));
      } catch (err) {
        thrown.push(String(err));
      }
    }
    return { config, sequences, partitionKeys, goods, batches, failures, thrown, quarantine: await readQuarantine(config), status: await statusRows(target.clients.dynamodb, config) };
  }

  for (const transport of ['kinesis', 'msk'] as const) {
    describe(`${transport}-shaped events`, () => {
      let r: RunResult;
      const kinds = BAD_KINDS.filter((k) => k.only === undefined || k.only === transport);

      before(async () => {
        r = await run(transport);
      });

      it('never throws and reports no batchItemFailures', () => {
        assert.deepEqual(r.thrown, []);
        assert.deepEqual(r.failures, []);
      });

      it('counts every record exactly once per batch, and the status rows agree with the batches', () => {
        assert.ok(r.batches.length >= 2, 'several batches');
        for (const s of r.batches) {
          const { records, counted } = identity(s);
          assert.equal(counted, records, `records = applied + stale + duplicates + conflicts + superseded + quarantined + controls + truncates in ${JSON.stringify(s)}`);
          assert.equal(s.failed, 0);
        }
        const total = (k: keyof BatchSummary) => r.batches.reduce((n, s) => n + s[k], 0);
        assert.equal(total('quarantined'), kinds.length);
        assert.equal(total('applied'), r.goods.length);
        const sum = (field: string) => r.status.reduce((n, row) => n + (typeof row[field] === 'number' ? (row[field] as number) : 0), 0);
        assert.equal(sum('quarantined'), kinds.length, 'status rows count every quarantined record');
        assert.equal(sum('applied'), r.goods.length, 'status rows count every applied record');
      });

      it('applies every good record exactly', async () => {
        for (const g of r.goods) {
          const stored = await getRow(target.clients.dynamodb, tableOrThrow(r.config, g.table), g.key);
          assert.ok(stored, `${g.name}: row stored`);
          assert.equal(stored.__deleted, false, g.name);
          assert.equal(exact(columns(stored)), exact(g.row), `${g.name}: stored columns`);
        }
      });

      for (const kind of kinds) {
        it(`quarantines [${kind.family}] ${kind.name} as ${kind.reason}, byte for byte${kind.defect ? ' (known defect, see corpus)' : ''}`, () => {
          const seq = r.sequences.get(kind);
          assert.ok(seq !== undefined);
          const lines = r.quarantine.get(seq) ?? [];
          assert.equal(lines.length, 1, 'quarantined exactly once');
          const line = lines[0] as QuarantineLine;
          assert.equal(line.reason, kind.reason, line.detail);
          assert.ok(line.detail.length > 0);
          assert.equal(line.valueBase64, Buffer.from(kind.value).toString('base64'), 'exact value bytes');
          const key = transport === 'kinesis' ? Buffer.from(r.partitionKeys.get(kind) ?? '', 'utf8') : kind.key;
          assert.equal(line.keyBase64, key && key.length > 0 ? Buffer.from(key).toString('base64') : null, 'exact key bytes');
        });
      }
    });
  }

  it('a column named constructor is applied exactly or retried, never lost or stored wrong (issue 10 item 11, writer)', async () => {
    const config = uniqueConfig(corpusConfig);
    configs.push(config);
    await target.setup(config);
    const g = goodRecords(1)[0] as GoodRecord;
    const row = { id: 600, constructor: 'c', name: 'ctor' };
    const value = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(g.value).toString('utf8')), after: row }), 'utf8');
    const deps: IngestDeps = { ...localDeps(config, target.clients), log: quietLog() };
    const seqs = ['49590000000000000000000000000000000000000000000000000001', '49590000000000000000000000000000000000000000000000000002'];
    const event = kinesisEvent('corpus', 'shardId-000000000000', [
      { data: g.value, partitionKey: 'a', sequenceNumber: seqs[0] as string, arrival: new Date() },
      { data: value, partitionKey: 'b', sequenceNumber: seqs[1] as string, arrival: new Date() },
    ]);
    const res = await handleEvent(event, deps);
    const stored = await getRow(target.clients.dynamodb, tableOrThrow(config, 'public.customers'), { id: 600 });
    const failed = (res.batchItemFailures ?? []).map((f) => f.itemIdentifier);
    if (stored === null) assert.deepEqual(failed, [seqs[1]], 'not stored, so it must be reported for retry');
    else assert.equal(exact(columns(stored)), exact(row));
    const other = await getRow(target.clients.dynamodb, tableOrThrow(config, g.table), g.key);
    assert.equal(exact(columns(other)), exact(g.row), 'the other record of the batch is applied');
  });

  describe('tidemark apply on a file with bad lines', () => {
    it('quarantines the bad lines (invalid UTF-8, DynamoDB-refused values, impossible positions) and applies the rest', async () => {
      const config = uniqueConfig(corpusConfig);
      configs.push(config);
      await target.setup(config);
      const dir = mkdtempSync(join(tmpdir(), 'tidemark-bad-apply-'));
      dirs.push(dir);
      const goods = goodRecords(6).slice(0, 6);
      const picks = ['1e400', '2,000 levels of nesting', 'lsn 2^64+5 in source.sequence', 'Latin-1 e-acute in a column value', 'ts_ms of 400 digits', 'string partition key of 2,049 bytes'];
      const bad = picks.map((p) => BAD_KINDS.find((k) => k.name.includes(p)) as BadKind);
      for (const b of bad) assert.ok(b, 'corpus kind found');
      const lines: Uint8Array[] = [];
      goods.forEach((g, i) => {
        lines.push(g.value);
        lines.push((bad[i] as BadKind).value);
      });
      const path = join(dir, 'mixed.jsonl');
      writeFileSync(path, Buffer.concat(lines.flatMap((l) => [Buffer.from(l), Buffer.from('\n')])));
      const log = quietLog();
      const result = await runApply({ ...localDeps(config, target.clients), log }, { path, shape: 'value', batchSize: 4, maxRetries: 2 });
      assert.deepEqual(result.problems, []);
      assert.equal(result.retries, 0);
      assert.equal(result.totals.applied, goods.length);
      assert.equal(result.totals.quarantined, bad.length);
      const q = await readQuarantine(config);
      const byLine = new Map([...q.entries()].map(([seq, l]) => [Number(seq), l[0] as QuarantineLine]));
      bad.forEach((b, i) => {
        const line = byLine.get(2 * i + 2);
        assert.ok(line, `line ${2 * i + 2} quarantined`);
        assert.equal(line.reason, b.reason);
        assert.equal(line.valueBase64, Buffer.from(b.value).toString('base64'));
      });
      for (const g of goods) {
        const stored = await getRow(target.clients.dynamodb, tableOrThrow(config, g.table), g.key);
        assert.equal(exact(columns(stored)), exact(g.row));
      }
    });

    it('reports a line whose write keeps failing, with its line number, and applies the rest of the file (record shape)', async () => {
      const config = uniqueConfig(corpusConfig);
      configs.push(config);
      await target.setup(config);
      const dir = mkdtempSync(join(tmpdir(), 'tidemark-bad-apply-'));
      dirs.push(dir);
      const goods = goodRecords(5).slice(0, 5);
      const path = join(dir, 'records.jsonl');
      const binaryKey = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
      const lines = goods.map((g) => JSON.stringify({ valueBase64: Buffer.from(g.value).toString('base64'), keyBase64: binaryKey.toString('base64'), topic: 'corpus' }));
      writeFileSync(path, `${lines.join('\n')}\n`);
      const deps: IngestDeps = { ...localDeps(config, target.clients), log: quietLog() };
      const write = deps.writer.write.bind(deps.writer);
      let attempts = 0;
      deps.writer.write = async (w: PlannedWrite): Promise<WriteResult> => {
        if (w.table === 'public.customers' && String(w.key.id) === '3') {
          attempts++;
          return { outcome: 'failed', writeUnits: 0, requests: 1, missing: [], spilled: false, error: new Error('injected: persistent write error') };
        }
        return write(w);
      };
      const result = await runApply(deps, { path, shape: 'record', batchSize: 2, maxRetries: 2 });
      assert.equal(attempts, 3, 'the first try and two retries');
      assert.deepEqual(
        result.problems.map((p) => p.line),
        [3],
      );
      assert.match(result.problems[0]?.reason ?? '', /not applied after 3 attempts/);
      for (const g of goods) {
        const stored = await getRow(target.clients.dynamodb, tableOrThrow(config, g.table), g.key);
        if (String(g.key.id) === '3') assert.equal(stored, null);
        else assert.equal(exact(columns(stored)), exact(g.row), g.name);
      }
    });
  });
});
