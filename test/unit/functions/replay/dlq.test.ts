/**
 * On-failure records read back for `replay --from-dlq`. The invocation record below is the example
 * of AWS's Lambda developer guide, "Retain discarded batch records for a Kinesis Data Streams event
 * source" (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html): the
 * SQS form carries only the shard and sequence range; the S3 form adds the whole event as `payload`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareSequence, inBatchRange, parseFailedBatch, parseFailedBatchLines } from '../../../../functions/replay/dlq.js';

const docExample = {
  requestContext: { requestId: 'c9b8fa9f-5a7f-xmpl-af9c-0c604cde93a5', functionArn: 'arn:aws:lambda:us-east-2:123456789012:function:myfunction', condition: 'RetryAttemptsExhausted', approximateInvokeCount: 1 },
  responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
  version: '1.0',
  timestamp: '2019-11-14T00:38:06.021Z',
  KinesisBatchInfo: {
    shardId: 'shardId-000000000001',
    startSequenceNumber: '49601189658422359378836298521827638475320189012309704722',
    endSequenceNumber: '49601189658422359378836298522902373528957594348623495186',
    approximateArrivalOfFirstRecord: '2019-11-14T00:38:04.835Z',
    approximateArrivalOfLastRecord: '2019-11-14T00:38:05.580Z',
    batchSize: 500,
    streamArn: 'arn:aws:kinesis:us-east-2:123456789012:stream/mystream',
  },
};

// The Kinesis event example of the same guide (with-kinesis.html), one record.
const kinesisEvent = {
  Records: [
    {
      kinesis: { kinesisSchemaVersion: '1.0', partitionKey: '1', sequenceNumber: '49590338271490256608559692538361571095921575989136588898', data: 'SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==', approximateArrivalTimestamp: 1545084650.987 },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: 'shardId-000000000006:49590338271490256608559692538361571095921575989136588898',
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: 'arn:aws:iam::123456789012:role/lambda-role',
      awsRegion: 'us-east-2',
      eventSourceARN: 'arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream',
    },
  ],
};

describe('on-failure records', () => {
  it('reads the SQS form as a shard and sequence range', () => {
    const b = parseFailedBatch(docExample, 'sqs:1');
    assert.ok('kind' in b && b.kind === 'range');
    assert.deepEqual(b.range, {
      stream: 'mystream',
      shard: 'shardId-000000000001',
      startSequence: '49601189658422359378836298521827638475320189012309704722',
      endSequence: '49601189658422359378836298522902373528957594348623495186',
      firstArrival: Date.parse('2019-11-14T00:38:04.835Z'),
      lastArrival: Date.parse('2019-11-14T00:38:05.580Z'),
      batchSize: 500,
    });
  });

  it('reads the S3 form (payload as a JSON string or object) as whole records, bytes exact', () => {
    for (const payload of [JSON.stringify(kinesisEvent), kinesisEvent]) {
      const b = parseFailedBatch({ ...docExample, payload }, 's3://b/k');
      assert.ok('kind' in b && b.kind === 'records');
      assert.deepEqual(b.event, { source: 'kinesis', event: kinesisEvent }, 'the event as delivered');
      const [group] = b.groups;
      assert.equal(group?.length, 1);
      assert.equal(Buffer.from(group?.[0]?.value ?? []).toString(), 'Hello, this is a test.');
      assert.equal(group?.[0]?.transport.shard, 'shardId-000000000006');
      assert.equal(group?.[0]?.transport.stream, 'lambda-stream');
    }
  });

  it('reads an MSK payload (the example event of the guide, with-msk.html) as one group per partition', () => {
    const msk = {
      eventSource: 'aws:kafka',
      eventSourceArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/vpc-2priv-2pub/751d2973-a626-431c-9d4e-d7975eb44dd7-2',
      bootstrapServers: 'b-2.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092',
      records: {
        'mytopic-0': [
          { topic: 'mytopic', partition: 0, offset: 15, timestamp: 1545084650987, timestampType: 'CREATE_TIME', key: 'abcDEFghiJKLmnoPQRstuVWXyz1234==', value: 'SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==', headers: [{ headerKey: [104, 101, 97, 100, 101, 114, 86, 97, 108, 117, 101] }] },
        ],
      },
    };
    const b = parseFailedBatch({ version: '1.0', requestContext: {}, payload: JSON.stringify(msk) }, 's3://b/k');
    assert.ok('kind' in b && b.kind === 'records');
    assert.equal(b.groups.length, 1);
    const r = b.groups[0]?.[0];
    assert.equal(Buffer.from(r?.value ?? []).toString(), 'Hello, this is a test.');
    assert.deepEqual([r?.transport.kind, r?.transport.stream, r?.transport.shard, r?.transport.sequence], ['kafka', 'mytopic', '0', '15']);
    assert.equal(r?.headers.headerKey, 'headerValue');
  });

  it('reads the first local runner lines, and names what it cannot read', () => {
    const text = [
      JSON.stringify({ stream: 's', shard: 'shardId-0', startSequence: '5', endSequence: '9', attempts: 4, at: '2026-11-30T00:00:00Z' }),
      'not json',
      JSON.stringify({ hello: 1 }),
      JSON.stringify({ ...docExample, payload: '{"nope": 1}' }),
    ].join('\n');
    const { batches, problems } = parseFailedBatchLines(text, 'f.jsonl');
    assert.equal(batches.length, 1);
    assert.deepEqual(problems.map((p) => p.source), ['f.jsonl:2', 'f.jsonl:3', 'f.jsonl:4']);
  });

  it('compares 56-digit sequences as integers', () => {
    assert.equal(compareSequence('9', '10'), -1);
    assert.equal(compareSequence('49601189658422359378836298522902373528957594348623495186', '49601189658422359378836298521827638475320189012309704722'), 1);
    const range = { stream: 's', shard: 'a', startSequence: '10', endSequence: '20', firstArrival: null, lastArrival: null, batchSize: null };
    assert.equal(inBatchRange(range, { stream: 's', shard: 'a', sequence: '9' }), false);
    assert.equal(inBatchRange(range, { stream: 's', shard: 'a', sequence: '15' }), true);
    assert.equal(inBatchRange(range, { stream: 's', shard: 'b', sequence: '15' }), false);
    assert.equal(inBatchRange(range, { stream: 't', shard: 'a', sequence: '15' }), false);
  });
});
