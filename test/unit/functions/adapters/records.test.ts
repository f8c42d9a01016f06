/** Lambda event shapes → RawRecord: bytes kept exactly, transport metadata filled in. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kinesisEvent, mskEvent } from '../../../../bin/cli/kinesis-shape.js';
import { recordsFromKinesis, recordsFromMsk } from '../../../../functions/adapters/records.js';

describe('records', () => {
  it('reads Kinesis records: data bytes, partition key as the key, shard and sequence from the event', () => {
    const event = kinesisEvent('cdc', 'shardId-000000000002', [{ data: Buffer.from([0, 0xff, 0x41]), partitionKey: '{"id":1}', sequenceNumber: '4960', arrival: new Date(1_700_000_000_123) }]);
    const [r] = recordsFromKinesis(event);
    assert.deepEqual([...(r?.value ?? [])], [0, 0xff, 0x41]);
    assert.equal(Buffer.from(r?.key ?? []).toString('utf8'), '{"id":1}');
    assert.deepEqual(r?.transport, { kind: 'kinesis', stream: 'cdc', shard: 'shardId-000000000002', sequence: '4960', partitionKey: '{"id":1}', arrivalTime: 1_700_000_000_123 });
  });

  it('groups MSK records per topic-partition in offset order, keeping binary keys and null values', () => {
    const event = mskEvent([
      { topic: 'shop.public.orders', partition: 0, offset: 7, key: Uint8Array.from([0x00, 0xff, 0xfe, 0x80, 0x41]), value: Buffer.from('{}'), timestamp: 1 },
      { topic: 'shop.public.orders', partition: 1, offset: 3, key: null, value: null, timestamp: 2 },
      { topic: 'shop.public.orders', partition: 0, offset: 8, key: null, value: Buffer.from('{}'), timestamp: 3 },
    ]);
    const groups = recordsFromMsk(event);
    assert.deepEqual(
      groups.map((g) => g.map((r) => `${r.transport.shard}@${r.transport.sequence}`)),
      [['0@7', '0@8'], ['1@3']],
    );
    assert.deepEqual([...(groups[0]?.[0]?.key ?? [])], [0x00, 0xff, 0xfe, 0x80, 0x41]);
    assert.equal(groups[1]?.[0]?.value?.length ?? 0, 0, 'a tombstone has no value bytes');
    assert.equal(groups[0]?.[0]?.transport.kind, 'kafka');
  });
});
