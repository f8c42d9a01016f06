/**
 * The local state-machine runner on the emulators, with the jobs' ASL blocks (lib/jobs/asl.ts):
 * - a query loop whose queries a step stored in S3 runs each statement on the embedded DuckDB
 *   engine over the S3 emulator's raw objects (compaction then expected state, as the hourly job);
 * - a DynamoDB export (exportTableToPointInTime, Wait, describeExport, as the reconcile job polls
 *   it) writes DynamoDB Local's table into the S3 emulator in the layout AWS documents ("DynamoDB
 *   table export output format", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html),
 *   and a Distributed Map reads its manifest-files.json as JSON Lines, one data file per child.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/local-stepfunctions.test.ts`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { duckdbAthenaHandler } from '../../bin/local/athena-local.js';
import { DuckDbEngine } from '../../bin/local/duckdb-engine.js';
import { listObjectKeys as listKeys } from '../../functions/adapters/s3-list.js';
import { runLocalStateMachine } from '../../bin/local/stepfunctions.js';
import type { JsonValue } from '../../functions/core/json.js';
import { planMaintenance } from '../../functions/jobs/maintenance/plan.js';
import { queryAt, storeQueries } from '../../functions/jobs/queries.js';
import { queryRefs } from '../../functions/jobs/sql-run.js';
import { buildStatements, HOUR_MS } from '../../functions/sql/index.js';
import { historyDatabase } from '../../functions/config/types.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import { catchTo, distributedMap, failState, lambdaTask, queryLoop, serviceRetry } from '../../lib/jobs/asl.js';
import { MAINTENANCE_TASKS, maintenanceDefinition } from '../../lib/jobs/definitions.js';
import { validateAsl } from '../helpers/asl.js';
import { pos } from '../helpers/history-rows.js';
import { batchOf, v2Line } from '../helpers/raw-v2.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

type Json = Record<string, unknown>;
const base = parseConfig({
  name: 'localsfn',
  tables: [{ source: 'public.orders', target: 'localsfn-orders', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'localsfn-raw' },
});
const H6 = Date.UTC(2026, 10, 30, 6);
const O = 'public.orders';

describe('local state machines on the emulators', () => {
  let target: Target;
  let config: TidemarkConfig;
  let engine: DuckDbEngine;
  const bucket = () => config.raw.bucket;
  const bytesOf = async (key: string): Promise<Buffer> => {
    const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
    return Buffer.from((await got.Body?.transformToByteArray()) ?? []);
  };
  const keysUnder = async (prefix: string) => {
    const out: string[] = [];
    for await (const k of listKeys(target.clients.s3, bucket(), prefix)) out.push(k);
    return out.sort();
  };

  before(async () => {
    target = await openTarget();
    config = uniqueConfig(base);
    await target.setup(config);
    engine = new DuckDbEngine({
      s3: target.clients.s3,
      bucket: bucket(),
      rawPrefix: config.raw.prefix,
      quarantinePrefix: config.raw.quarantinePrefix,
      warehousePrefix: 'warehouse/',
      tableSidePrefix: 'reports/table_side/',
      memoryLimit: '256MB',
    });
  });

  after(async () => {
    await engine?.close();
    await target?.teardown(config).catch(() => {});
    await target?.close();
  });

  it('a query loop runs the stored queries on DuckDB over the emulator objects: an hour compacted, then folded into expected state', async () => {
    const raw = batchOf(config.raw.prefix, [
      v2Line({ table: O, key: { id: 1 }, op: 'c', position: pos(10), arrivalTs: H6 + 60_000, sequence: '100', hash: 'o1-10' }),
      v2Line({ table: O, key: { id: 2 }, op: 'c', position: pos(11), arrivalTs: H6 + 60_000, sequence: '101', hash: 'o2-11' }),
      v2Line({ table: O, key: { id: 1 }, op: 'u', position: pos(12), arrivalTs: H6 + 61_000, sequence: '102', hash: 'o1-12' }),
    ]);
    await target.clients.s3.send(new PutObjectCommand({ Bucket: bucket(), Key: raw.key, Body: raw.body }));
    // What the compaction plan stores: QueryRefs (functions/jobs/sql-run.ts), each its statement and Athena text, in S3 (functions/jobs/queries.ts).
    const deps = { s3: target.clients.s3, config };
    const refs = [...queryRefs('compact-hour', { hour: H6 }, 'tidemark_localsfn'), ...queryRefs('fold-expected', { hour: H6 }, 'tidemark_localsfn')];
    const stored = await storeQueries(deps, 'jobs/compaction/r1/queries.json', refs);
    const definition: Json = {
      StartAt: 'Plan',
      States: {
        Plan: lambdaTask('PlanFunction', 30, { ResultPath: '$.stored', Catch: catchTo('Failed'), Next: 'HourStart' }),
        ...queryLoop({ from: '$.stored', name: 'Hour', next: 'Done', onError: 'Failed', timeoutSeconds: 30 }),
        Done: { Type: 'Succeed' },
        Failed: failState(),
      },
    };
    assert.deepEqual(validateAsl(definition), []);
    const fetched: number[] = [];
    const out = (await runLocalStateMachine(definition, { runId: 'r1' }, {
      handlers: {
        PlanFunction: () => ({ ...stored }),
        JobQueryAtFunction: async (input) => {
          fetched.push((input as { index: number }).index);
          return (await queryAt(input as { queriesKey: string; index: number; count: number }, deps)) as unknown as JsonValue;
        },
      },
      s3: target.clients.s3,
      athena: duckdbAthenaHandler(engine),
    })) as Json;
    assert.deepEqual(fetched, [0, 1, 2, 3]);
    assert.deepEqual(out.Hour, { index: 4, count: 4 });
    const history = await keysUnder('warehouse/history/');
    assert.equal(history.length, 1, history.join('\n'));
    assert.match(history[0] ?? '', /^warehouse\/history\/source_table=public\.orders\/dt=2026-11-30\/g00000001-[^/]+\.parquet$/);
    assert.equal((await keysUnder('warehouse/expected_state/source_table=public.orders/')).length, 1);
    const expected: Json[] = [];
    for await (const row of engine.query(buildStatements('reconcile-full', { tables: [O], runId: 'none', cutoff: H6 + 2 * HOUR_MS, part: 'counts' })[0] ?? assert.fail())) expected.push(row);
    assert.ok(expected.length > 0, 'expected state is readable by the next statement');
  });

  it('table maintenance, the deployed definition, completes locally having changed nothing: OPTIMIZE and VACUUM have no DuckDB form', async () => {
    const before = await keysUnder('warehouse/');
    assert.ok(before.length > 0, 'the compacted hour is there to leave alone');
    const etags = async (keys: string[]) => Promise.all(keys.map(async (Key) => (await target.clients.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key }))).ETag));
    const tagsBefore = await etags(before);
    const deps = { s3: target.clients.s3, config, log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }, now: () => H6 };
    const ran: string[] = [];
    const athena = duckdbAthenaHandler(engine);
    const out = (await runLocalStateMachine(maintenanceDefinition(), {}, {
      handlers: {
        [MAINTENANCE_TASKS.plan]: async (input) => (await planMaintenance(input as never, deps)) as unknown as JsonValue,
        JobQueryAtFunction: async (input) => (await queryAt(input as { queriesKey: string; index: number; count: number }, deps)) as unknown as JsonValue,
      },
      s3: target.clients.s3,
      athena: (ref, query) => {
        ran.push(query.QueryString);
        return athena(ref, query);
      },
    })) as Json;
    assert.deepEqual(out.statements, ['history', 'expected_state', 'truncates', 'table_hours'].flatMap((t) => [`optimize-${t}`, `vacuum-${t}`]));
    assert.equal(ran.length, 8, 'each Athena task ran, on the local engine');
    assert.equal(ran[1], `VACUUM "${historyDatabase(config)}"."history"`);
    assert.deepEqual(await keysUnder('warehouse/'), before, 'no file added or removed');
    assert.deepEqual(await etags(before), tagsBefore, 'no file rewritten');
  });

  it('a DynamoDB export written from DynamoDB Local in the documented layout, polled with describeExport, its files read by a Distributed Map', async () => {
    const table = `${config.name}-export`;
    await target.clients.dynamodb.send(
      new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }),
    );
    try {
      const items = Array.from({ length: 25 }, (_, i) => ({
        pk: `k${i}`,
        n: i,
        big: 12345678901234567890n,
        flag: i % 2 === 0,
        nothing: null,
        bin: new Uint8Array([i, 255]),
        tags: new Set(['a', `t${i}`]),
        nums: new Set([1, i + 2]),
        list: [1, 'x', { deep: true }],
        map: { nested: { s: 'v' } },
      }));
      for (const item of items) await target.clients.dynamodb.send(new PutItemCommand({ TableName: table, Item: marshall(item) }));
      const tableArn = (await target.clients.dynamodb.send(new DescribeTableCommand({ TableName: table }))).Table?.TableArn ?? assert.fail('no TableArn');
      const definition: Json = {
        StartAt: 'Export',
        States: {
          Export: {
            Type: 'Task',
            Resource: 'arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime',
            Parameters: { 'TableArn.$': '$.tableArn', 'S3Bucket.$': '$.bucket', 'S3Prefix.$': '$.prefix', ExportFormat: 'DYNAMODB_JSON', ExportType: 'FULL_EXPORT' },
            ResultSelector: { 'arn.$': '$.ExportDescription.ExportArn' },
            ResultPath: '$.export',
            Retry: serviceRetry(),
            Catch: catchTo('Failed'),
            Next: 'ExportWait',
          },
          ExportWait: { Type: 'Wait', Seconds: 60, Next: 'ExportStatus' },
          ExportStatus: {
            Type: 'Task',
            Resource: 'arn:aws:states:::aws-sdk:dynamodb:describeExport',
            Parameters: { 'ExportArn.$': '$.export.arn' },
            ResultPath: '$.described',
            Retry: serviceRetry(),
            Catch: catchTo('Failed'),
            Next: 'ExportDone',
          },
          ExportDone: {
            Type: 'Choice',
            Choices: [
              { Variable: '$.described.ExportDescription.ExportStatus', StringEquals: 'COMPLETED', Next: 'Manifest' },
              { Variable: '$.described.ExportDescription.ExportStatus', StringEquals: 'IN_PROGRESS', Next: 'ExportWait' },
            ],
            Default: 'Failed',
          },
          // ExportManifest names manifest-summary.json; manifest-files.json is beside it.
          Manifest: { Type: 'Pass', Parameters: { 'bucket.$': '$.bucket', 'summary.$': '$.described.ExportDescription.ExportManifest' }, ResultPath: '$.manifest', Next: 'ManifestFiles' },
          ManifestFiles: lambdaTask('ManifestFilesFunction', 30, { InputPath: '$.manifest', ResultPath: '$.manifest', Next: 'Files' }),
          Files: distributedMap({
            items: { bucketPath: '$.manifest.bucket', keyPath: '$.manifest.key', kind: 'jsonl' },
            itemSelector: { 'file.$': '$$.Map.Item.Value', 'bucket.$': '$.bucket' },
            processor: { StartAt: 'File', States: { File: lambdaTask('ExportFileFunction', 30, { End: true }) } },
            maxConcurrency: 2,
            label: 'ExportFile',
            resultPath: '$.files',
            next: 'Done',
            onError: 'Failed',
          }),
          Done: { Type: 'Succeed' },
          Failed: failState(),
        },
      };
      assert.deepEqual(validateAsl(definition), []);
      const read: Json[] = [];
      const started = Date.now();
      const out = (await runLocalStateMachine(definition, { tableArn, bucket: bucket(), prefix: 'exports/orders' }, {
        handlers: {
          ManifestFilesFunction: (input) => {
            const { bucket: b, summary } = input as { bucket: string; summary: string };
            return { bucket: b, key: summary.replace(/manifest-summary\.json$/, 'manifest-files.json') };
          },
          ExportFileFunction: async (input) => {
            const { file } = input as { file: { dataFileS3Key: string; itemCount: number; md5Checksum: string; etag: string } };
            const body = await bytesOf(file.dataFileS3Key);
            assert.equal(createHash('md5').update(body).digest('base64'), file.md5Checksum, 'md5Checksum is the base64 MD5 of the data file');
            const head = await target.clients.s3.send(new HeadObjectCommand({ Bucket: bucket(), Key: file.dataFileS3Key }));
            assert.equal(head.ETag?.replace(/"/g, ''), file.etag);
            const lines = gunzipSync(body).toString('utf8').split('\n').filter(Boolean);
            assert.equal(lines.length, file.itemCount);
            for (const l of lines) read.push(JSON.parse(l) as Json);
            return { items: lines.length };
          },
        },
        s3: target.clients.s3,
        dynamodb: target.clients.dynamodb,
        dynamodbExport: { segments: 3, itemsPerFile: 10 },
        waitMs: 0,
      })) as Json;
      assert.ok(Date.now() - started < 60_000, 'waitMs replaced the 60 s poll');
      const described = (out.described as Json).ExportDescription as Json;
      const exportArn = String(described.ExportArn);
      const exportId = exportArn.split('/export/')[1] ?? assert.fail(exportArn);
      assert.equal(exportArn, `${tableArn}/export/${exportId}`);
      assert.match(exportId, /^\d{14}-[0-9a-f]{8}$/);
      const root = `exports/orders/AWSDynamoDB/${exportId}/`;
      assert.equal(described.ExportManifest, `${root}manifest-summary.json`);
      assert.equal(described.ExportStatus, 'COMPLETED');
      assert.equal(described.ItemCount, 25);

      // The layout: _started (empty), manifest-summary/-files with checksums, data/*.json.gz.
      const keys = await keysUnder(root);
      const data = keys.filter((k) => k.startsWith(`${root}data/`));
      assert.deepEqual(
        keys.filter((k) => !k.startsWith(`${root}data/`)),
        ['_started', 'manifest-files.checksum', 'manifest-files.json', 'manifest-summary.checksum', 'manifest-summary.json'].map((f) => `${root}${f}`),
      );
      assert.ok(data.length >= 3 && data.every((k) => /\/data\/[a-z2-7]{26}\.json\.gz$/.test(k)), data.join('\n'));
      assert.equal((await bytesOf(`${root}_started`)).length, 0);
      const summary = JSON.parse((await bytesOf(`${root}manifest-summary.json`)).toString('utf8')) as Json;
      assert.deepEqual(Object.keys(summary), [
        'version',
        'exportArn',
        'startTime',
        'endTime',
        'tableArn',
        'tableId',
        'exportTime',
        's3Bucket',
        's3Prefix',
        's3SseAlgorithm',
        's3SseKmsKeyId',
        'manifestFilesS3Key',
        'billedSizeBytes',
        'itemCount',
        'outputFormat',
        'exportType',
      ]);
      assert.equal(summary.version, '2020-06-30');
      assert.equal(summary.exportArn, exportArn);
      assert.equal(summary.tableArn, tableArn);
      assert.equal(summary.s3Bucket, bucket());
      assert.equal(summary.s3Prefix, 'exports/orders');
      assert.equal(summary.manifestFilesS3Key, `${root}manifest-files.json`);
      assert.equal(summary.itemCount, 25);
      assert.equal(summary.outputFormat, 'DYNAMODB_JSON');
      assert.equal(summary.exportType, 'FULL_EXPORT');
      for (const t of ['startTime', 'endTime', 'exportTime']) assert.match(String(summary[t]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const manifestFiles = (await bytesOf(`${root}manifest-files.json`)).toString('utf8');
      const files = manifestFiles
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
      assert.deepEqual(files.map((f) => String(f.dataFileS3Key)).sort(), data);
      for (const f of files) assert.deepEqual(Object.keys(f), ['itemCount', 'md5Checksum', 'etag', 'dataFileS3Key']);
      assert.ok(files.every((f) => (f.itemCount as number) <= 10), 'at most itemsPerFile items a file');
      assert.equal((await bytesOf(`${root}manifest-files.checksum`)).toString('utf8'), createHash('md5').update(manifestFiles).digest('hex'));

      // Every data line is {"Item": <DynamoDB JSON>}, binaries base64; together, the whole table.
      assert.equal((out.files as unknown[]).length, files.length, 'one child execution per data file');
      assert.equal(read.length, 25);
      assert.ok(read.every((l) => Object.keys(l).length === 1 && typeof l.Item === 'object'));
      const first = read.find((l) => ((l.Item as Json).pk as Json).S === 'k3') ?? assert.fail('k3 not exported');
      assert.deepEqual((first.Item as Json).bin, { B: Buffer.from([3, 255]).toString('base64') });
      assert.deepEqual((first.Item as Json).big, { N: '12345678901234567890' });
      assert.deepEqual((first.Item as Json).nothing, { NULL: true });
      const back = read.map((l) => {
        const item = structuredClone(l.Item as Json);
        item.bin = { B: Buffer.from(String((item.bin as Json).B), 'base64') };
        return unmarshall(item as never, { wrapNumbers: true });
      });
      assert.deepEqual(back.map((i) => String(i.pk)).sort(), items.map((i) => i.pk).sort());
      const k3 = back.find((i) => i.pk === 'k3') as Json;
      assert.deepEqual([...(k3.tags as Set<string>)].sort(), ['a', 't3']);
      assert.deepEqual(k3.map, { nested: { s: 'v' } });
      assert.equal(k3.flag, false);
    } finally {
      await target.clients.dynamodb.send(new DeleteTableCommand({ TableName: table })).catch(() => {});
    }
  });
});
