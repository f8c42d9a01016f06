/**
 * A Distributed Map's ItemReader and ItemBatcher run locally as AWS documents them: items listed or
 * read from S3 (every page, JSON and JSON Lines, gzip), batched as `{ BatchInput, Items }`, and the
 * Map's ResultPath, OutputPath, Next and Catch giving what they give on AWS (the read items never in
 * its output). S3 is mocked here; test/integration/local-stepfunctions.test.ts runs it on s3rver.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { batchItems, ITEMS_KEY, readMapItems } from '../../../../bin/local/map-item-reader.js';
import { type LocalProgressEvent, localizeDefinition, runLocalStateMachine, taskResource } from '../../../../bin/local/stepfunctions.js';
import type { JsonValue } from '../../../../functions/core/json.js';
import { validateAsl } from '../../../helpers/asl.js';

type Json = Record<string, unknown>;
const DISTRIBUTED = { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' };
const processor = (fn: string) => ({ ProcessorConfig: DISTRIBUTED, StartAt: 'Item', States: { Item: { Type: 'Task', Resource: taskResource(fn), End: true } } });
const MODIFIED = new Date(Date.UTC(2026, 10, 30, 6, 0, 5, 250));

/** An S3 answering ListObjectsV2 in pages of two and GetObject from `objects`. */
function s3With(objects: Record<string, Buffer | string>, fail?: string): { client: S3Client; calls: string[] } {
  const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  const calls: string[] = [];
  mock.on(ListObjectsV2Command).callsFake((input) => {
    calls.push(`List ${input.Bucket} ${input.Prefix ?? ''} ${input.ContinuationToken ?? ''}`.trim());
    if (input.Bucket === fail) throw Object.assign(new Error('The specified bucket does not exist'), { name: 'NoSuchBucket' });
    const keys = Object.keys(objects)
      .filter((k) => k.startsWith(input.Prefix ?? ''))
      .sort();
    const from = Number(input.ContinuationToken ?? 0);
    const page = keys.slice(from, from + 2);
    return {
      Contents: page.map((k) => ({ Key: k, Size: Buffer.byteLength(objects[k] ?? ''), ETag: `"etag-${k}"`, LastModified: MODIFIED, StorageClass: 'STANDARD' })),
      IsTruncated: from + 2 < keys.length,
      ...(from + 2 < keys.length ? { NextContinuationToken: String(from + 2) } : {}),
    };
  });
  mock.on(GetObjectCommand).callsFake((input) => {
    calls.push(`Get ${input.Bucket} ${input.Key}`);
    const body = objects[input.Key ?? ''];
    if (body === undefined) throw Object.assign(new Error('The specified key does not exist.'), { name: 'NoSuchKey' });
    return { Body: { transformToByteArray: async () => new Uint8Array(Buffer.from(body)) } };
  });
  return { client, calls };
}

/** Lists objects under the input's prefix and hands each key to ItemFunction. */
function listingDefinition(): Json {
  return {
    StartAt: 'Where',
    States: {
      Where: { Type: 'Pass', Result: { bucket: 'raw', prefix: 'dt=2026-11-30/' }, ResultPath: '$.where', Next: 'Files' },
      Files: {
        Type: 'Map',
        ItemReader: { Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { 'Bucket.$': '$.where.bucket', 'Prefix.$': '$.where.prefix' } },
        ItemSelector: { 'key.$': '$$.Map.Item.Value.Key', 'index.$': '$$.Map.Item.Index', 'object.$': '$$.Map.Item.Value', 'runId.$': '$.runId' },
        ItemProcessor: processor('ItemFunction'),
        MaxConcurrency: 2,
        Label: 'Files',
        ToleratedFailurePercentage: 0,
        ResultPath: '$.files',
        Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Failed' }],
        Next: 'Done',
      },
      Done: { Type: 'Succeed' },
      Failed: { Type: 'Pass', End: true },
    },
  };
}

/** Reads a JSON Lines object (from the input's reference) in batches of two, with the run's id as BatchInput. */
function batchedDefinition(readerConfig: Json = { InputType: 'JSONL' }): Json {
  return {
    StartAt: 'Batches',
    States: {
      Batches: {
        Type: 'Map',
        ItemReader: { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: readerConfig, Parameters: { Bucket: 'raw', 'Key.$': '$.manifest' } },
        ItemBatcher: { MaxItemsPerBatch: 2, BatchInput: { 'runId.$': '$.runId', kind: 'export' } },
        ItemProcessor: processor('BatchFunction'),
        ResultSelector: { 'batches.$': '$' },
        ResultPath: '$.result',
        OutputPath: '$.result',
        End: true,
      },
    },
  };
}

const JSONL = ['{"id":1}', '', '{"id":2}', '{"id":3}', '   ', '{"id":4}', '{"id":5}', ''].join('\n');

describe('Distributed Map ItemReader and ItemBatcher, run locally', () => {
  it('the test definitions are valid ASL', () => {
    for (const d of [listingDefinition(), batchedDefinition(), batchedDefinition({ InputType: 'JSON', MaxItems: 3 })]) assert.deepEqual(validateAsl(d), []);
  });

  it('lists every page of objects, each item as Step Functions gives it, and ItemSelector sees the item and the Map input', async () => {
    const { client, calls } = s3With({ 'dt=2026-11-30/a.jsonl.gz': 'aa', 'dt=2026-11-30/b.jsonl.gz': 'bbb', 'dt=2026-11-30/c.jsonl.gz': 'c', 'dt=2026-12-01/x': 'x' });
    const seen: Json[] = [];
    const events: LocalProgressEvent[] = [];
    const output = (await runLocalStateMachine(listingDefinition(), { runId: 'r1' }, {
      handlers: {
        ItemFunction: (input) => {
          seen.push(input as Json);
          return { done: (input as Json).key as string };
        },
      },
      s3: client,
      onProgress: (e) => events.push(e),
    })) as Json;
    assert.deepEqual(calls, ['List raw dt=2026-11-30/', 'List raw dt=2026-11-30/ 2'], 'every page');
    seen.sort((a, b) => (a.index as number) - (b.index as number));
    assert.deepEqual(
      seen.map((s) => [s.index, s.key, s.runId]),
      [
        [0, 'dt=2026-11-30/a.jsonl.gz', 'r1'],
        [1, 'dt=2026-11-30/b.jsonl.gz', 'r1'],
        [2, 'dt=2026-11-30/c.jsonl.gz', 'r1'],
      ],
    );
    assert.deepEqual(seen[1]?.object, { Etag: '"etag-dt=2026-11-30/b.jsonl.gz"', Key: 'dt=2026-11-30/b.jsonl.gz', LastModified: Math.floor(MODIFIED.getTime() / 1000), Size: 3, StorageClass: 'STANDARD' });
    assert.deepEqual(output, {
      runId: 'r1',
      where: { bucket: 'raw', prefix: 'dt=2026-11-30/' },
      files: ['a', 'b', 'c'].map((x) => ({ done: `dt=2026-11-30/${x}.jsonl.gz` })),
    });
    assert.equal(events.filter((e) => e.type === 'MapIterationSucceeded').length, 3);
    assert.ok(events.some((e) => e.type === 'StateEntered' && e.state === 'Files (items)'), 'the reading step shows in the progress');
  });

  it('reads JSON Lines (gzip too) in batches of MaxItemsPerBatch with BatchInput beside the Items, up to MaxItems', async () => {
    for (const body of [JSONL, gzipSync(JSONL)]) {
      const { client } = s3With({ 'export/manifest-files.json': body });
      const batches: JsonValue[] = [];
      const output = await runLocalStateMachine(batchedDefinition({ InputType: 'JSONL', MaxItems: 5 }), { runId: 'r2', manifest: 'export/manifest-files.json' }, {
        handlers: {
          BatchFunction: (input) => {
            batches.push(input);
            return { n: ((input as Json).Items as unknown[]).length };
          },
        },
        s3: client,
      });
      const batchInput = { runId: 'r2', kind: 'export' };
      assert.deepEqual(
        batches.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
        [
          { BatchInput: batchInput, Items: [{ id: 1 }, { id: 2 }] },
          { BatchInput: batchInput, Items: [{ id: 3 }, { id: 4 }] },
          { BatchInput: batchInput, Items: [{ id: 5 }] },
        ],
      );
      assert.deepEqual(output, { batches: [{ n: 2 }, { n: 2 }, { n: 1 }] }, 'ResultSelector, ResultPath and OutputPath as on AWS');
    }
  });

  it('reads a JSON array, MaxItems first, with the Map InputPath applied to the reader too', async () => {
    const { client } = s3With({ 'jobs/items.json': JSON.stringify([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]) });
    const def: Json = {
      StartAt: 'Each',
      States: {
        Each: {
          Type: 'Map',
          InputPath: '$.job',
          ItemReader: { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON', 'MaxItems': 3 }, Parameters: { 'Bucket.$': '$.bucket', 'Key.$': '$.key' } },
          ItemProcessor: processor('ItemFunction'),
          ResultPath: '$.job.results',
          End: true,
        },
      },
    };
    assert.deepEqual(validateAsl(def), []);
    const output = await runLocalStateMachine(def, { job: { bucket: 'b', key: 'jobs/items.json' }, other: 1 }, { handlers: { ItemFunction: (i) => (i as Json).id as number }, s3: client });
    assert.deepEqual(output, { job: { bucket: 'b', key: 'jobs/items.json', results: [1, 2, 3] }, other: 1 });
  });

  it('batches an input array (ItemBatcher without ItemReader) within MaxInputBytesPerBatch', async () => {
    const def: Json = {
      StartAt: 'Each',
      States: {
        Each: { Type: 'Map', ItemsPath: '$.keys', ItemBatcher: { MaxInputBytesPerBatch: 40 }, ItemProcessor: processor('BatchFunction'), ResultPath: '$.out', End: true },
      },
    };
    assert.deepEqual(validateAsl(def), []);
    const output = await runLocalStateMachine(def, { keys: ['aaaaaaaa', 'bbbbbbbb', 'cccccccc', 'dddddddd'] }, { handlers: { BatchFunction: (i) => (i as Json).Items as JsonValue } });
    assert.deepEqual(output, { keys: ['aaaaaaaa', 'bbbbbbbb', 'cccccccc', 'dddddddd'], out: [['aaaaaaaa', 'bbbbbbbb'], ['cccccccc', 'dddddddd']] });
  });

  it('an S3 failure is States.ItemReaderFailed, caught by the Map Catch; a caught iteration failure leaves no read items in the output', async () => {
    const { client } = s3With({}, 'raw');
    const failed = (await runLocalStateMachine(listingDefinition(), { runId: 'r3' }, { handlers: { ItemFunction: () => ({}) }, s3: client })) as Json;
    assert.equal((failed.error as Json).Error, 'States.ItemReaderFailed');
    assert.match(String((failed.error as Json).Cause), /listObjectsV2 s3:\/\/raw\/dt=2026-11-30\/: NoSuchBucket/);
    const { client: ok } = s3With({ 'dt=2026-11-30/a': 'a' });
    const caught = (await runLocalStateMachine(listingDefinition(), { runId: 'r4' }, {
      handlers: {
        ItemFunction: () => {
          throw new Error('item broke');
        },
      },
      s3: ok,
    })) as Json;
    assert.equal((caught.error as Json).Error, 'Error');
    assert.ok(!JSON.stringify(caught).includes(ITEMS_KEY), 'the caught output holds no read items');
  });

  it('rewrites Maps everywhere (nested processors, Choice targets, End) and leaves other definitions untouched', () => {
    const def: Json = {
      StartAt: 'Pick',
      States: {
        Pick: { Type: 'Choice', Choices: [{ Variable: '$.go', BooleanEquals: true, Next: 'Outer' }], Default: 'Outer' },
        Outer: {
          Type: 'Map',
          ItemsPath: '$.prefixes',
          ItemProcessor: {
            StartAt: 'Inner',
            States: { Inner: { Type: 'Map', ItemReader: { Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b', 'Prefix.$': '$' } }, ItemProcessor: processor('ItemFunction'), End: true } },
          },
          End: true,
        },
      },
    };
    assert.deepEqual(validateAsl(def), []);
    const local = localizeDefinition(def);
    const inner = ((local.definition.States as Json).Outer as Json).ItemProcessor as Json;
    assert.equal(inner.StartAt, 'Inner (items)');
    assert.deepEqual(Object.keys(inner.States as Json).sort(), ['Inner', 'Inner (items)', 'Inner (output)']);
    assert.deepEqual(((inner.States as Json)['Inner (output)'] as Json).End, true);
    assert.equal(((inner.States as Json).Inner as Json).Next, 'Inner (output)');
    assert.equal(((inner.States as Json).Inner as Json).ItemsPath, `$.${ITEMS_KEY}`);
    assert.deepEqual((local.definition.States as Json).Pick, (def.States as Json).Pick, 'the outer scope does not change');
    assert.deepEqual(local.local.get('Inner (items)'), { kind: 'map-items', map: 'Inner', plan: { source: 'listObjectsV2', batch: false } });
    assert.deepEqual(validateAsl(local.definition), [], 'the rewritten definition is valid ASL too');
  });

  it('refuses what it does not read, naming the state and what to do instead', () => {
    const withReader = (reader: Json, extra: Json = {}) => {
      const d = listingDefinition();
      const files = (d.States as Json).Files as Json;
      Object.assign(files, { ItemReader: reader }, extra);
      return d;
    };
    const refusals: [Json, RegExp][] = [
      [withReader({ Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'CSV', CSVHeaderLocation: 'FIRST_ROW' }, Parameters: { Bucket: 'b', Key: 'k' } }), /state "Files": ItemReader.ReaderConfig.CSVHeaderLocation is not supported locally[\s\S]*InputType CSV is not supported locally/],
      [withReader({ Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'MANIFEST' }, Parameters: { Bucket: 'b', Key: 'k' } }), /InputType MANIFEST is not supported locally/],
      [withReader({ Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSON', ItemsPointer: '/a' }, Parameters: { Bucket: 'b', Key: 'k' } }), /ReaderConfig.ItemsPointer is not supported locally \(store the array itself\)/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', ReaderConfig: { InputType: 'JSON', Transformation: 'LOAD_AND_FLATTEN' }, Parameters: { Bucket: 'b' } }), /Transformation is not supported locally[\s\S]*InputType with s3:listObjectsV2/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b', Delimiter: '/' } }), /ItemReader.Parameters.Delimiter is not supported locally with listObjectsV2/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b' } }, { ResultWriter: { Resource: 'arn:aws:states:::s3:putObject', Parameters: { Bucket: 'b', Prefix: 'r' } } }), /ResultWriter is not supported locally \(Distributed Map ResultWriter/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b' } }, { ItemSelector: { 'all.$': '$' } }), /ItemSelector taking the whole input \("\$"\)/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b' } }, { ItemBatcher: { MaxItemsPerBatch: 2 } }), /ItemSelector together with ItemBatcher is not supported locally \(put per-batch values in BatchInput\)/],
      [withReader({ Resource: 'arn:aws:states:::s3:listObjectsV2', Parameters: { Bucket: 'b' } }, { InputPath: '$.items[*]' }), /InputPath must be a plain reference path/],
      [withReader({ Resource: 'arn:aws:states:::dynamodb:getItem', Parameters: { TableName: 't' } }), /ItemReader Resource arn:aws:states:::dynamodb:getItem is not supported locally/],
    ];
    for (const [def, message] of refusals) assert.throws(() => localizeDefinition(def), message);
    const clash = listingDefinition();
    (clash.States as Json)['Files (items)'] = { Type: 'Pass', End: true };
    assert.throws(() => localizeDefinition(clash), /state name "Files \(items\)" is needed by the local runner/);
  });

  it('refuses to start a reading Map without an S3 client', async () => {
    await assert.rejects(runLocalStateMachine(listingDefinition(), {}, { handlers: { ItemFunction: () => ({}) } }), /item readers run locally with options.s3 \(state "Files"\)/);
  });
});

describe('batchItems and readMapItems', () => {
  it('batch by count and by bytes, never splitting an item, BatchInput in every batch', () => {
    assert.deepEqual(batchItems([1, 2, 3], { maxItems: 2, batchInput: { a: 1 } }), [
      { BatchInput: { a: 1 }, Items: [1, 2] },
      { BatchInput: { a: 1 }, Items: [3] },
    ]);
    const items = ['x'.repeat(10), 'y'.repeat(10), 'z'.repeat(10)];
    const batches = batchItems(items, { maxBytes: 40 });
    for (const b of batches) assert.ok(Buffer.byteLength(JSON.stringify(b)) <= 40);
    assert.deepEqual(batches.flatMap((b) => b.Items as string[]), items);
    assert.throws(() => batchItems(['w'.repeat(50)], { maxBytes: 40 }), /does not fit MaxInputBytesPerBatch 40/);
    assert.deepEqual(batchItems([], { maxItems: 2 }), []);
  });

  it('fail with States.ItemReaderFailed on an object that is not what the reader expects', async () => {
    const { client } = s3With({ 'a.json': '{"not":"an array"}', 'b.jsonl': '{"id":1}\nnot json\n' });
    await assert.rejects(readMapItems({ source: 'getObject', inputType: 'JSON', batch: false }, { Reader: { Bucket: 'b', Key: 'a.json' } }, client), (e: Error) => e.name === 'States.ItemReaderFailed' && /must hold an array/.test(e.message));
    await assert.rejects(readMapItems({ source: 'getObject', inputType: 'JSONL', batch: false }, { Reader: { Bucket: 'b', Key: 'b.jsonl' } }, client), (e: Error) => e.name === 'States.ItemReaderFailed' && /line 2 is not JSON/.test(e.message));
    await assert.rejects(readMapItems({ source: 'getObject', inputType: 'JSONL', batch: false }, { Reader: { Bucket: 'b', Key: 'missing' } }, client), (e: Error) => e.name === 'States.ItemReaderFailed' && /NoSuchKey/.test(e.message));
    await assert.rejects(readMapItems({ source: 'getObject', inputType: 'JSON', batch: false }, { Reader: { Bucket: 'b', Key: 'a.json' }, MaxItems: 0 }, client), /MaxItems must be a positive integer/);
  });
});
