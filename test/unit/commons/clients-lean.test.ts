/**
 * `lean` trims per-request work neither DynamoDB nor S3 needs (measured in `npm run bench`, goal 6);
 * signing, retries, serialization and the HTTP handler must stay. The configuration is asserted,
 * and so is what it must not change: the requests of a lean DynamoDB client, sent concurrently to
 * several tables through its cached middleware and its reused signer, are each signed correctly
 * (re-signed independently here) and each get their own response, and throttling is still retried.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { HttpRequest } from '@smithy/core/protocols';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import { createClients, destroyClients } from '../../../bin/local/clients.js';
import { createRuntimeClients, DYNAMODB_REMOVALS, LEAN_REMOVALS, lean, S3_CHECKSUMS } from '../../../functions/commons/clients.js';
import { bodyText, recordingHandler, resign as resignWith } from '../../helpers/recording-handler.js';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const KEPT = ['serializerMiddleware', 'deserializerMiddleware', 'contentLengthMiddleware', 'hostHeaderMiddleware', 'retryMiddleware', 'httpSigningMiddleware'];

const names = (client: { middlewareStack: { identify(): string[] } }): string[] => client.middlewareStack.identify().map((n) => n.split(' ')[0] as string);
const resign = (req: HttpRequest) => resignWith(req, credentials, 'us-east-1');

describe('lean clients', () => {
  it('createRuntimeClients: DynamoDB without user-agent, logger and recursion detection, with cached middleware; S3 without user-agent and logger, checksums when required', async () => {
    const { dynamodb, s3 } = createRuntimeClients({ maxAttempts: 5 }, {});
    try {
      const d = names(dynamodb);
      for (const gone of [...LEAN_REMOVALS, ...DYNAMODB_REMOVALS]) assert.ok(!d.includes(gone), `${gone} removed from DynamoDB`);
      for (const kept of KEPT) assert.ok(d.includes(kept), `${kept} kept on DynamoDB`);
      const s = names(s3);
      for (const gone of LEAN_REMOVALS) assert.ok(!s.includes(gone), `${gone} removed from S3`);
      for (const kept of [...KEPT, 'recursionDetectionMiddleware', 'addExpectContinueMiddleware']) assert.ok(s.includes(kept), `${kept} kept on S3`);

      assert.equal(dynamodb.config.cacheMiddleware, true);
      assert.notEqual(s3.config.cacheMiddleware, true, 'S3 endpoints depend on the bucket: no shared handler context');
      assert.equal(await s3.config.requestChecksumCalculation(), S3_CHECKSUMS.requestChecksumCalculation);
      assert.equal(await s3.config.responseChecksumValidation(), S3_CHECKSUMS.responseChecksumValidation);
      assert.equal(S3_CHECKSUMS.requestChecksumCalculation, 'WHEN_REQUIRED');

      for (const client of [dynamodb, s3]) {
        assert.ok(client.config.requestHandler instanceof NodeHttpHandler, 'the SDK default HTTP/1.1 keep-alive handler');
        assert.equal(await client.config.maxAttempts(), 5);
        assert.equal(((await client.config.retryStrategy()) as { mode?: string }).mode, 'standard');
      }
    } finally {
      dynamodb.destroy();
      s3.destroy();
    }
  });

  it('createClients (local tooling and tests) gets the same trimming', () => {
    const clients = createClients({ dynamodb: 'http://127.0.0.1:1', kinesis: 'http://127.0.0.1:1', s3: 'http://127.0.0.1:1', region: 'us-east-1', ...credentials });
    try {
      assert.deepEqual(
        [...LEAN_REMOVALS, ...DYNAMODB_REMOVALS].filter((n) => names(clients.dynamodb).includes(n)),
        [],
      );
      assert.equal(clients.dynamodb.config.cacheMiddleware, true);
      assert.deepEqual(
        LEAN_REMOVALS.filter((n) => names(clients.s3).includes(n)),
        [],
      );
    } finally {
      destroyClients(clients);
    }
  });

  it('reuses one signer per DynamoDB client, and does not keep a failed one', async () => {
    let calls = 0;
    const client = lean(
      new DynamoDBClient({
        credentials,
        region: async () => {
          calls++;
          if (calls === 1) throw new Error('region not there yet');
          return 'us-east-1';
        },
      }),
    );
    try {
      const signer = client.config.signer as () => Promise<unknown>;
      await assert.rejects(signer(), /region not there yet/);
      const first = await signer();
      assert.ok(first instanceof SignatureV4);
      assert.equal(await signer(), first);
    } finally {
      client.destroy();
    }
  });

  it('signs every request correctly and gives each caller its own response, 24 concurrent writes to 4 tables', async () => {
    const fake = recordingHandler((req) => {
      const table = (JSON.parse(bodyText(req.body)) as { TableName: string }).TableName;
      return { status: 200, body: JSON.stringify({ ConsumedCapacity: { TableName: table, CapacityUnits: 1 } }) };
    });
    const client = lean(new DynamoDBClient({ region: 'us-east-1', credentials, requestHandler: fake.handler }));
    try {
      const writes = Array.from({ length: 24 }, (_, i) => ({ table: `t${i % 4}`, id: String(i) }));
      const outputs = await Promise.all(
        writes.map((w) =>
          client.send(
            new PutItemCommand({
              TableName: w.table,
              Item: { id: { N: w.id }, __pos: { S: `p${w.id}` } },
              ConditionExpression: 'attribute_not_exists(id) OR #pos < :pos',
              ExpressionAttributeNames: { '#pos': '__pos' },
              ExpressionAttributeValues: { ':pos': { S: `p${w.id}` } },
              ReturnConsumedCapacity: 'TOTAL',
            }),
          ),
        ),
      );
      for (const [i, out] of outputs.entries()) assert.equal(out.ConsumedCapacity?.TableName, writes[i]?.table);
      assert.equal(fake.requests.length, 24);
      const seen = new Set<string>();
      for (const req of fake.requests) {
        const body = JSON.parse(bodyText(req.body)) as { TableName: string; Item: { id: { N: string } } };
        assert.equal(body.TableName, `t${Number(body.Item.id.N) % 4}`);
        seen.add(body.Item.id.N);
        assert.equal(req.headers.host, 'dynamodb.us-east-1.amazonaws.com');
        assert.equal(req.headers['x-amz-target'], 'DynamoDB_20120810.PutItem');
        assert.equal(req.headers['user-agent'], undefined, 'no SDK user-agent');
        assert.equal(req.headers['x-amz-user-agent'], undefined, 'no SDK user-agent');
        assert.match(req.headers.authorization ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=[^ ]*host[^ ]*x-amz-date[^ ]*x-amz-target/);
        assert.equal(req.headers.authorization, await resign(req));
      }
      assert.equal(seen.size, 24);
    } finally {
      client.destroy();
    }
  });

  it('still retries throttling, with the standard strategy', async () => {
    const fake = recordingHandler((_req, n) =>
      n === 1
        ? { status: 400, body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' }), headers: { 'x-amzn-errortype': 'ThrottlingException' } }
        : { status: 200, body: '{}' },
    );
    const client = lean(new DynamoDBClient({ region: 'us-east-1', credentials, requestHandler: fake.handler }));
    try {
      const out = await client.send(new PutItemCommand({ TableName: 't', Item: { id: { N: '1' } } }));
      assert.equal(out.$metadata.attempts, 2);
      assert.deepEqual(
        fake.requests.map((r) => r.headers['amz-sdk-request']),
        ['attempt=1; max=4', 'attempt=2; max=4'],
      );
      for (const req of fake.requests) assert.equal(req.headers.authorization, await resign(req));
    } finally {
      client.destroy();
    }
  });
});
