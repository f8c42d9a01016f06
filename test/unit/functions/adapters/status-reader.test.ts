/** Listing status rows and reading per-hour counter rows back, against a mocked DynamoDB client. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { StatusReader } from '../../../../functions/adapters/status-reader.js';

function store() {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  return { status: new StatusReader(client, 'shop-status', 'shop'), mock };
}

describe('status reader', () => {
  it('lists status rows without the per-hour rows, by key ranges on either side of hour#', async () => {
    const { status, mock } = store();
    mock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, { S: string }> }) => {
      if (input.ExpressionAttributeValues[':a']) return { Items: [marshall({ pipeline: 'shop', table: '*', quarantined: 2 }), marshall({ pipeline: 'shop', table: 'analytics.events' })] };
      return { Items: [marshall({ pipeline: 'shop', table: 'public.orders', applied: 5 })] };
    });
    const rows = await status.list();
    assert.deepEqual(
      rows.map((r) => r.table),
      ['*', 'analytics.events', 'public.orders'],
    );
    const conditions = mock.commandCalls(QueryCommand).map((c) => [c.args[0].input.KeyConditionExpression, Object.values(c.args[0].input.ExpressionAttributeValues ?? {}).map((v) => v.S)]);
    assert.deepEqual(conditions, [
      ['#p = :p AND #t < :a', ['shop', 'hour#']],
      ['#p = :p AND #t > :b', ['shop', 'hour$']],
    ]);
  });

  it('reads per-hour rows of an hour range back with their hour and source table', async () => {
    const { status, mock } = store();
    mock.on(QueryCommand).resolves({ Items: [marshall({ pipeline: 'shop', table: 'hour#2026-11-30T06#public.orders', applied: 4 })] });
    const rows = await status.hourRows('2026-11-30T00', '2026-11-30T23');
    assert.equal(rows[0]?.hour, '2026-11-30T06');
    assert.equal(rows[0]?.sourceTable, 'public.orders');
    assert.equal(rows[0]?.applied, 4);
    const input = mock.commandCalls(QueryCommand)[0]?.args[0].input;
    assert.equal(input?.KeyConditionExpression, '#p = :p AND #t BETWEEN :a AND :b');
    assert.equal(input?.ExpressionAttributeValues?.[':a']?.S, 'hour#2026-11-30T00');
  });

});
