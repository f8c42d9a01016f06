/**
 * The local DynamoDB export (bin/local/dynamodb-export.ts), on mocked clients: what it writes where,
 * in the layout of "DynamoDB table export output format"
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html), its
 * DynamoDB JSON, its errors by the names the SDK integration gives them, and what is refused when a
 * definition is localized. test/integration/local-stepfunctions.test.ts runs it on DynamoDB Local and s3rver.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { DescribeTableCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { dynamoDbJson, LocalDynamoDbExports } from '../../../../bin/local/dynamodb-export.js';
import { localizeDefinition } from '../../../../bin/local/stepfunctions.js';

type Json = Record<string, unknown>;
const creds = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } };
const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:000000000000:table/orders';

/** DynamoDB with `items` split across segments by index, two per page; S3 keeping every put. */
function clients(items: Record<string, unknown>[], missing = false) {
  const dynamodb = new DynamoDBClient(creds);
  const s3 = new S3Client(creds);
  const scans: Json[] = [];
  mockClient(dynamodb)
    .on(DescribeTableCommand)
    .callsFake(() => {
      if (missing) throw Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' });
      return { Table: { TableId: 'tid-1', TableArn: TABLE_ARN } };
    })
    .on(ScanCommand)
    .callsFake((input) => {
      scans.push(input as Json);
      const mine = items.filter((_, i) => i % (input.TotalSegments ?? 1) === (input.Segment ?? 0));
      const from = Number((input.ExclusiveStartKey as Json | undefined)?.at ? ((input.ExclusiveStartKey as Json).at as Json).N : 0);
      return { Items: mine.slice(from, from + 2).map((i) => marshall(i)), ...(from + 2 < mine.length ? { LastEvaluatedKey: { at: { N: String(from + 2) } } } : {}) };
    });
  const objects = new Map<string, Buffer>();
  mockClient(s3)
    .on(PutObjectCommand)
    .callsFake(async (input) => {
      const body = input.Body;
      const bytes = typeof body === 'string' ? Buffer.from(body) : body instanceof Readable ? Buffer.concat(await body.toArray()) : Buffer.from(body as Uint8Array);
      objects.set(`${input.Bucket}/${input.Key}`, bytes);
      return { ETag: `"${createHash('md5').update(bytes).digest('hex')}"` };
    });
  return { dynamodb, s3, objects, scans };
}

describe('local DynamoDB export', () => {
  it('writes _started, data files of {"Item": DynamoDB JSON} lines, manifest-files and manifest-summary, and describes the export', async () => {
    const items = Array.from({ length: 7 }, (_, i) => ({ pk: `k${i}`, n: i }));
    const c = clients(items);
    const at = new Date(Date.UTC(2026, 11, 2, 0, 0, 0, 123));
    const exports = new LocalDynamoDbExports(c, { segments: 2, itemsPerFile: 2, now: () => at });
    const result = (await exports.exportTable({ TableArn: TABLE_ARN, S3Bucket: 'b', S3Prefix: 'exp/', ExportFormat: 'DYNAMODB_JSON', ClientToken: 't1' })) as Json;
    const d = result.ExportDescription as Json;
    const id = String(d.ExportArn).split('/export/')[1] ?? '';
    assert.equal(id, `0${at.getTime()}-${id.slice(-8)}`);
    const root = `exp/AWSDynamoDB/${id}/`;
    assert.deepEqual(
      { ...d, ExportArn: undefined },
      {
        ExportArn: undefined,
        ExportStatus: 'COMPLETED',
        StartTime: at.toISOString(),
        EndTime: at.toISOString(),
        ExportManifest: `${root}manifest-summary.json`,
        TableArn: TABLE_ARN,
        TableId: 'tid-1',
        ExportTime: at.toISOString(),
        ClientToken: 't1',
        S3Bucket: 'b',
        S3Prefix: 'exp/',
        ExportFormat: 'DYNAMODB_JSON',
        ExportType: 'FULL_EXPORT',
        BilledSizeBytes: d.BilledSizeBytes,
        ItemCount: 7,
      },
    );
    assert.ok(c.scans.every((s) => s.ConsistentRead === true && s.TotalSegments === 2));
    assert.equal(c.objects.get(`b/${root}_started`)?.length, 0);
    const files = String(c.objects.get(`b/${root}manifest-files.json`))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Json);
    assert.deepEqual(
      files.map((f) => f.itemCount),
      [2, 2, 2, 1],
      'segment 0 holds 4 items in files of 2, segment 1 holds 3',
    );
    const lines: Json[] = [];
    for (const f of files) {
      const body = c.objects.get(`b/${String(f.dataFileS3Key)}`) ?? assert.fail(`no ${String(f.dataFileS3Key)}`);
      assert.match(String(f.dataFileS3Key), new RegExp(`^${root}data/[a-z2-7]{26}\\.json\\.gz$`));
      assert.equal(f.md5Checksum, createHash('md5').update(body).digest('base64'));
      assert.equal(f.etag, createHash('md5').update(body).digest('hex'));
      for (const l of gunzipSync(body).toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Json);
    }
    assert.deepEqual(lines.map((l) => ((l.Item as Json).pk as Json).S).sort(), items.map((i) => i.pk).sort());
    const summary = JSON.parse(String(c.objects.get(`b/${root}manifest-summary.json`))) as Json;
    assert.equal(summary.manifestFilesS3Key, `${root}manifest-files.json`);
    assert.equal(summary.itemCount, 7);
    assert.equal(summary.billedSizeBytes, d.BilledSizeBytes);
    assert.equal(String(c.objects.get(`b/${root}manifest-summary.checksum`)), createHash('md5').update(String(c.objects.get(`b/${root}manifest-summary.json`))).digest('hex'));
    assert.deepEqual(exports.describe({ ExportArn: d.ExportArn as string }), result);
    const again = await exports.exportTable({ TableArn: TABLE_ARN, S3Bucket: 'b', S3Prefix: 'exp/', ClientToken: 't1' });
    assert.deepEqual(again, result, 'the same ClientToken is the same export');
  });

  it('an empty table still writes one (empty) data file per segment', async () => {
    const c = clients([]);
    const d = ((await new LocalDynamoDbExports(c, { segments: 3 }).exportTable({ TableArn: TABLE_ARN, S3Bucket: 'b' })) as Json).ExportDescription as Json;
    assert.equal(d.ItemCount, 0);
    const manifest = [...c.objects.keys()].find((k) => k.endsWith('manifest-files.json')) ?? assert.fail();
    assert.ok(manifest.startsWith('b/AWSDynamoDB/'), 'no prefix: AWSDynamoDB/ at the bucket root');
    const files = String(c.objects.get(manifest)).split('\n').filter(Boolean);
    assert.equal(files.length, 3);
    assert.ok(files.every((l) => (JSON.parse(l) as Json).itemCount === 0));
  });

  it('maps every attribute type to DynamoDB JSON, binaries as base64', () => {
    const item = marshall({ s: 'x', n: 1, b: new Uint8Array([1, 2]), bs: new Set([new Uint8Array([3])]), ss: new Set(['a']), ns: new Set([2]), t: true, z: null, l: [1, { m: 'v' }] });
    const json = Object.fromEntries(Object.entries(item).map(([k, v]) => [k, dynamoDbJson(v)]));
    assert.deepEqual(json, {
      s: { S: 'x' },
      n: { N: '1' },
      b: { B: 'AQI=' },
      bs: { BS: ['Aw=='] },
      ss: { SS: ['a'] },
      ns: { NS: ['2'] },
      t: { BOOL: true },
      z: { NULL: true },
      l: { L: [{ N: '1' }, { M: { m: { S: 'v' } } }] },
    });
  });

  it('fails as the SDK integration does: DynamoDb.TableNotFoundException, DynamoDb.ValidationException, DynamoDb.ExportNotFoundException', async () => {
    const exports = new LocalDynamoDbExports(clients([], true));
    await assert.rejects(exports.exportTable({ TableArn: TABLE_ARN, S3Bucket: 'b' }), (e: Error) => e.name === 'DynamoDb.TableNotFoundException');
    await assert.rejects(exports.exportTable({ TableArn: 'orders', S3Bucket: 'b' }), (e: Error) => e.name === 'DynamoDb.ValidationException');
    await assert.rejects(exports.exportTable({ TableArn: TABLE_ARN }), (e: Error) => e.name === 'DynamoDb.ValidationException' && /S3Bucket/.test(e.message));
    assert.throws(() => exports.describe({ ExportArn: `${TABLE_ARN}/export/x` }), (e: Error) => e.name === 'DynamoDb.ExportNotFoundException');
  });

  it('refuses, when localizing, what is not written locally (ION, incremental exports)', () => {
    const def = {
      StartAt: 'E',
      States: {
        E: { Type: 'Task', Resource: 'arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime', Parameters: { TableArn: TABLE_ARN, S3Bucket: 'b', ExportFormat: 'ION', ExportType: 'INCREMENTAL_EXPORT' }, End: true },
      },
    };
    assert.throws(() => localizeDefinition(def), (e: Error) => /ExportFormat ION is not supported locally/.test(e.message) && /ExportType INCREMENTAL_EXPORT is not supported locally/.test(e.message));
  });
});
