/**
 * The `tidemark replay` and `tidemark erase` commands as a user runs them, against the embedded
 * emulators (endpoints in the environment): the `--json` summary lines, the dry run's per-key lines,
 * `--from-dlq` reading the local on-failure file, `erase --list`.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/replay-cli.test.ts`.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { localDeps } from '../../bin/cli/context.js';
import { getRow } from '../../bin/cli/state.js';
import { parseConfig, type TableConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { RawRecord } from '../../functions/core/normalize.js';
import { processBatch } from '../../functions/ingest/process-batch.js';
import { cliEnv, execTidemark, jsonLines } from '../helpers/cli-env.js';
import { PgHistory } from '../helpers/debezium.js';
import { KinesisFeed } from '../helpers/kinesis-feed.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const base = parseConfig({
  name: 'rcli',
  tables: [{ source: 'public.customers', target: 'rcli-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'rcli-raw' },
});

describe('tidemark replay / erase commands', { skip: process.env.TIDEMARK_TARGET !== undefined && process.env.TIDEMARK_TARGET !== 'embedded' ? 'embedded only' : false }, () => {
  let target: Target;
  let config: TidemarkConfig;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const history = new PgHistory();
  const feed = new KinesisFeed('rcli');

  async function tidemark(...args: string[]): Promise<Record<string, unknown>[]> {
    const { stdout } = await execTidemark(args, { cwd: dir, env, config: join(dir, 'tidemark.config.json') });
    return jsonLines(stdout);
  }

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    dir = mkdtempSync(join(tmpdir(), 'tidemark-rcli-'));
    writeFileSync(join(dir, 'tidemark.config.json'), JSON.stringify(config));
    const e = target.endpoints;
    assert.ok(e, 'embedded endpoints');
    env = cliEnv(e, { TIDEMARK_ERASE_KEY: 'cli-test-ledger-key-0123456789' });
    for (let id = 1; id <= 6; id++) history.emit('customers', 'c', { id }, { name: `c${id}` });
    await processBatch(feed.records(history.events), { ...localDeps(config, target.clients), log: quiet });
  });

  after(async () => {
    await target?.teardown(config).catch(() => {});
    await target?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The `--json` contract: the last line is `{"summary":{…}}`. */
  const summaryOf = (lines: readonly Record<string, unknown>[]) => lines.at(-1)?.summary as Record<string, unknown> | undefined;

  it('replay --json prints one summary line: an applied window costs 0 write units', async () => {
    const lines = await tidemark('replay', '--table', 'public.customers', '--json');
    assert.equal(lines.length, 1);
    const summary = summaryOf(lines);
    assert.equal(summary?.command, 'replay');
    assert.equal(lines[0]?.command, 'replay', 'the flat shape of before stays readable for a release');
    assert.equal(summary?.into, 'live');
    assert.equal(summary?.records, 6);
    assert.equal(summary?.writeUnits, 0);
    assert.equal(summary?.writeRequests, 0);
    assert.equal(summary?.readUnits, 3);
  });

  it('replay --keys replays only the listed keys', async () => {
    const customers = config.tables[0] as TableConfig;
    for (const id of [4, 5]) await target.clients.dynamodb.send(new DeleteItemCommand({ TableName: customers.target, Key: { id: { N: String(id) } } }));
    writeFileSync(join(dir, 'keys.jsonl'), '{"id": "4"}\n');
    const summary = summaryOf(await tidemark('replay', '--table', 'public.customers', '--keys', join(dir, 'keys.jsonl'), '--json'));
    assert.equal(summary?.applied, 1);
    // The selection runs in SQL (replay-select restricted to the keys): only key 4's one event is read.
    assert.equal(summary?.records, 1, 'the other five keys\' events are never read');
    assert.equal(summary?.selected, 1);
    assert.equal((await getRow(target.clients.dynamodb, customers, { id: 4 }))?.name, 'c4');
    assert.equal(await getRow(target.clients.dynamodb, customers, { id: 5 }), null);
    const all = summaryOf(await tidemark('replay', '--all', '--json'));
    assert.equal(all?.applied, 1);
  });

  it('replay --dry-run --json prints per key the stored position, the winner and the action, then the summary', async () => {
    const lines = await tidemark('replay', '--table', 'public.customers', '--dry-run', '--json');
    const keys = lines.filter((l) => l.dryRun === true && typeof l.key === 'string');
    assert.equal(keys.length, 6);
    for (const k of keys) {
      assert.equal(k.action, 'duplicate');
      assert.equal(k.stored, k.winner);
    }
    assert.deepEqual(summaryOf(lines)?.actions, { duplicate: 6 });
  });

  it('replay --from-dlq reads the local on-failure file (Lambda S3-destination shape) and re-ingests the batch', async () => {
    const lost = feed.records([history.emit('customers', 'u', { id: 2 }, { name: 'from the dlq' })]);
    const r = lost[0] as RawRecord;
    const payload = {
      Records: [
        {
          kinesis: { kinesisSchemaVersion: '1.0', partitionKey: r.transport.partitionKey, sequenceNumber: r.transport.sequence, data: Buffer.from(r.value ?? []).toString('base64'), approximateArrivalTimestamp: r.transport.arrivalTime / 1000 },
          eventSource: 'aws:kinesis',
          eventVersion: '1.0',
          eventID: `shardId-000000000000:${r.transport.sequence}`,
          eventName: 'aws:kinesis:record',
          invokeIdentityArn: 'arn:aws:iam::000000000000:role/x',
          awsRegion: 'us-east-1',
          eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/rcli',
        },
      ],
    };
    mkdirSync(join(dir, '.tidemark', 'on-failure'), { recursive: true });
    writeFileSync(
      join(dir, '.tidemark', 'on-failure', 'rcli.jsonl'),
      `${JSON.stringify({ version: '1.0', requestContext: { condition: 'RetryAttemptsExhausted' }, KinesisBatchInfo: { shardId: 'shardId-000000000000', startSequenceNumber: r.transport.sequence, endSequenceNumber: r.transport.sequence, batchSize: 1, streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/rcli' }, payload: JSON.stringify(payload) })}\n`,
    );
    const summary = summaryOf(await tidemark('replay', '--from-dlq', '--json'));
    assert.equal(summary?.source, 'dlq');
    assert.equal(summary?.reingested, 1);
    assert.equal((summary?.ingest as { applied?: number } | undefined)?.applied, 1);
    const row = await getRow(target.clients.dynamodb, config.tables[0] as TableConfig, { id: 2 });
    assert.equal(row?.name, 'from the dlq');
  });

  it('erase --json, then erase --list shows the keyed hash and reason, never the key', async () => {
    const [line] = await tidemark('erase', '--table', 'public.customers', '--key', '{"id": 3}', '--reason', 'ticket 77', '--json');
    const summary = line?.summary as Record<string, unknown> | undefined;
    assert.equal(summary?.command, 'erase');
    assert.equal(summary?.itemsDeleted, 1);
    assert.equal(summary?.rawObjectsRewritten, 1);
    assert.equal(typeof summary?.versionsRemoved, 'number');
    assert.equal(summary?.linesRemoved, 1);
    // The names of before, at the top level, for one release.
    assert.deepEqual([line?.command, line?.itemDeleted, line?.objectsRewritten], ['erase', true, 1]);
    const list = (await tidemark('erase', '--list', '--json')).filter((l) => l.summary === undefined);
    assert.equal(list.length, 1);
    assert.equal(list[0]?.reason, 'ticket 77');
    assert.equal(list[0]?.table, 'public.customers');
    assert.match(String(list[0]?.keyHash), /^[A-Za-z0-9_-]{43}$/);
    assert.equal(JSON.stringify(list).includes('"id"'), false);
  });
});
