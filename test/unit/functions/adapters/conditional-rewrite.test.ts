/**
 * Conditional rewrites (issue 20, item 7): a writer that changed the object between the read and
 * the write makes the rewrite read and decide again, so neither change is lost; the on-failure
 * codec drops exactly the selected records of a Kinesis or MSK batch.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rewriteIfUnchanged, RewriteContendedError } from '../../../../functions/adapters/conditional-rewrite.js';
import { withoutRecords } from '../../../../functions/adapters/on-failure.js';
import { fakeS3 } from '../../../helpers/fake-s3.js';

const drop = (word: string) => (body: Buffer) => {
  const lines = body.toString('utf8').split('\n');
  const kept = lines.filter((l) => l !== word);
  if (kept.length === lines.length) return { decision: { kind: 'keep' as const } };
  return { decision: { kind: 'put' as const, body: Buffer.from(kept.join('\n')) }, detail: lines.length - kept.length };
};

describe('rewriteIfUnchanged', () => {
  it('re-reads and re-decides when another writer changed the object between read and write: both changes survive', async () => {
    const s3 = fakeS3();
    try {
      s3.put('o', 'a\nb\nc');
      // A concurrent erasure of "a" lands just before this one writes.
      let raced = false;
      s3.onBeforeWrite((command, key) => {
        if (raced || command !== 'Put' || key !== 'o') return;
        raced = true;
        s3.put('o', 'b\nc');
      });
      const out = await rewriteIfUnchanged(s3.client, 'bucket', 'o', drop('b'));
      s3.onBeforeWrite(undefined);
      assert.equal(out.outcome, 'put');
      assert.equal(out.retries, 1, 'the first write was refused by If-Match');
      assert.equal(Buffer.from(s3.get('o') ?? []).toString('utf8'), 'c', 'neither a nor b came back');
    } finally {
      s3.restore();
    }
  });

  it('keeps an object without the key, reports a vanished object as gone, and deletes conditionally', async () => {
    const s3 = fakeS3();
    try {
      s3.put('o', 'x');
      assert.equal((await rewriteIfUnchanged(s3.client, 'bucket', 'o', drop('b'))).outcome, 'kept');
      assert.equal((await rewriteIfUnchanged(s3.client, 'bucket', 'missing', drop('b'))).outcome, 'gone');
      const del = await rewriteIfUnchanged(s3.client, 'bucket', 'o', () => ({ decision: { kind: 'delete' } }));
      assert.equal(del.outcome, 'deleted');
      assert.equal(s3.get('o'), undefined);
    } finally {
      s3.restore();
    }
  });

  it('gives up with a named error when the object changes under every attempt', async () => {
    const s3 = fakeS3();
    try {
      s3.put('o', 'a\nb');
      s3.onBeforeWrite((command, key) => {
        if (command === 'Put' && key === 'o') s3.put('o', `a\nb\n${Math.random()}`);
      });
      await assert.rejects(rewriteIfUnchanged(s3.client, 'bucket', 'o', drop('b'), 3), RewriteContendedError);
    } finally {
      s3.restore();
    }
  });
});

describe('withoutRecords (on-failure objects)', () => {
  const kinesisRecord = (seq: string, data: string) => ({
    kinesis: { kinesisSchemaVersion: '1.0', partitionKey: 'p', sequenceNumber: seq, data: Buffer.from(data).toString('base64'), approximateArrivalTimestamp: 1_700_000_000 },
    eventSource: 'aws:kinesis',
    eventID: `shardId-000000000000:${seq}`,
    eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/s',
  });
  const doc = (records: unknown[]) => ({ version: '1.0', KinesisBatchInfo: { shardId: 'shardId-000000000000' }, payload: JSON.stringify({ Records: records }) });

  it('drops the selected Kinesis records, keeps the rest of the document, and gives null when nothing is left', () => {
    const d = doc([kinesisRecord('1', 'secret'), kinesisRecord('2', 'other')]);
    const isSecret = (r: { value: Uint8Array | null }) => Buffer.from(r.value ?? []).toString('utf8') === 'secret';
    const out = withoutRecords(d, isSecret);
    assert.equal(out.removed, 1);
    assert.equal(out.kept, 1);
    const next = out.doc as { version: string; KinesisBatchInfo: unknown; payload: string };
    assert.equal(next.version, '1.0');
    assert.deepEqual(next.KinesisBatchInfo, d.KinesisBatchInfo);
    assert.equal(typeof next.payload, 'string', 'the payload keeps its form');
    const records = (JSON.parse(next.payload) as { Records: { kinesis: { sequenceNumber: string } }[] }).Records;
    assert.deepEqual(records.map((r) => r.kinesis.sequenceNumber), ['2']);
    assert.equal(withoutRecords(doc([kinesisRecord('1', 'secret')]), isSecret).doc, null);
    assert.equal(withoutRecords(d, () => false).doc, d, 'unchanged when nothing matches');
    assert.equal(withoutRecords({ KinesisBatchInfo: {} }, () => true).removed, 0, 'an SQS-shaped record has no records to drop');
  });

  it('drops the selected MSK records per topic-partition and removes emptied partitions', () => {
    const rec = (offset: number, value: string) => ({ topic: 't', partition: 0, offset, timestamp: 1, timestampType: 'CREATE_TIME', value: Buffer.from(value).toString('base64'), headers: [] });
    const d = { payload: { eventSource: 'aws:kafka', records: { 't-0': [rec(1, 'secret'), rec(2, 'ok')], 't-1': [{ ...rec(3, 'secret'), partition: 1 }] } } };
    const out = withoutRecords(d, (r) => Buffer.from(r.value ?? []).toString('utf8') === 'secret');
    assert.equal(out.removed, 2);
    const records = (out.doc as { payload: { records: Record<string, { offset: number }[]> } }).payload.records;
    assert.deepEqual(Object.keys(records), ['t-0']);
    assert.deepEqual(records['t-0']?.map((r) => r.offset), [2]);
  });
});
