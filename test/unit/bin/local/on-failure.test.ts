/** The on-failure record: the S3 destination's shape, whole records in `payload`, read back by one reader. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kinesisEvent } from '../../../../bin/cli/kinesis-shape.js';
import { onFailureRecord, parseOnFailureRecord } from '../../../../bin/local/on-failure.js';
import { recordsFromKinesis } from '../../../../functions/adapters/records.js';

describe('on-failure records', () => {
  it('hold batch info and the whole invocation event, and read back to the same records', () => {
    const event = kinesisEvent('cdc', 'shardId-000000000001', [
      { data: Buffer.from('{"a":1}'), partitionKey: 'k1', sequenceNumber: '4961', arrival: new Date(Date.UTC(2026, 10, 30, 6, 0, 1)) },
      { data: Uint8Array.from([0, 0xff]), partitionKey: 'k2', sequenceNumber: '4962', arrival: new Date(Date.UTC(2026, 10, 30, 6, 0, 2)) },
    ]);
    const record = onFailureRecord(event, 4, 'BatchItemFailures', new Date(Date.UTC(2026, 10, 30, 6, 5)));
    assert.equal(record.version, '1.0');
    assert.equal(record.requestContext.condition, 'RetryAttemptsExhausted');
    assert.equal(record.requestContext.approximateInvokeCount, 4);
    assert.deepEqual(record.KinesisBatchInfo, {
      shardId: 'shardId-000000000001',
      startSequenceNumber: '4961',
      endSequenceNumber: '4962',
      approximateArrivalOfFirstRecord: '2026-11-30T06:00:01.000Z',
      approximateArrivalOfLastRecord: '2026-11-30T06:00:02.000Z',
      batchSize: 2,
      streamArn: 'arn:aws:kinesis:us-east-1:000000000000:stream/cdc',
    });
    const back = parseOnFailureRecord(JSON.stringify(record));
    assert.deepEqual(recordsFromKinesis(back.event), recordsFromKinesis(event));
    assert.deepEqual([...(recordsFromKinesis(back.event)[1]?.value ?? [])], [0, 0xff], 'bytes exactly');
  });

  it('refuses what is not an on-failure record of a Kinesis batch with its records, as the replay reader does', () => {
    const info = { shardId: 'shardId-0', startSequenceNumber: '1', endSequenceNumber: '2', batchSize: 2, streamArn: 'arn:aws:kinesis:us-east-1:1:stream/s' };
    const kinesis = JSON.stringify(kinesisEvent('s', 'shardId-0', [{ data: Buffer.from('{}'), partitionKey: 'k', sequenceNumber: '1', arrival: new Date(0) }]));
    assert.throws(() => parseOnFailureRecord(JSON.stringify({ KinesisBatchInfo: { shardId: 's' } })), /payload/);
    assert.throws(() => parseOnFailureRecord(JSON.stringify({ KinesisBatchInfo: info })), /no "payload"/, 'the SQS form holds only the range');
    assert.throws(() => parseOnFailureRecord(JSON.stringify({ KinesisBatchInfo: {}, payload: '{}' })), /not a Kinesis or MSK event/);
    assert.throws(() => parseOnFailureRecord(JSON.stringify({ payload: kinesis })), /KinesisBatchInfo/);
    assert.throws(() => parseOnFailureRecord(JSON.stringify({ KinesisBatchInfo: info, payload: JSON.stringify({ eventSource: 'aws:kafka', records: {} }) })), /not a Kinesis event/);
    assert.equal(parseOnFailureRecord(JSON.stringify({ KinesisBatchInfo: info, payload: kinesis })).event.Records.length, 1);
  });
});
