/**
 * The runtime's SDK clients use documented options only (issue 19): DynamoDB with its middleware
 * stack cached per command class, S3 with checksums only where S3 requires them, both with the
 * standard retry strategy and the SDK's default keep-alive HTTP handler. Nothing is removed from
 * or bypassed around the middleware stack, so middleware a user or Powertools adds runs on every
 * request, and throttling is still retried.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createClients, destroyClients } from '../../../../bin/local/clients.js';
import { createRuntimeClients, DYNAMODB_OPTIONS, S3_CHECKSUMS } from '../../../../functions/adapters/clients.js';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const STANDARD = ['serializerMiddleware', 'deserializerMiddleware', 'retryMiddleware', 'httpSigningMiddleware', 'getUserAgentMiddleware', 'loggerMiddleware'];
const names = (client: { middlewareStack: { identify(): string[] } }): string[] => client.middlewareStack.identify().map((n) => n.split(' ')[0] as string);

interface SeenRequest {
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** A request handler answering like DynamoDB's endpoint: `answer(n)` for the n-th request (from 1). */
function fakeHandler(answer: (n: number) => { status: number; body: string; type?: string }) {
  const requests: SeenRequest[] = [];
  return {
    requests,
    handle: async (req: SeenRequest) => {
      requests.push(req);
      const a = answer(requests.length);
      const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `req-${requests.length}` };
      if (a.type) headers['x-amzn-errortype'] = a.type;
      return { response: { statusCode: a.status, headers, body: Readable.from([Buffer.from(a.body)]) } };
    },
  };
}

describe('runtime SDK clients', () => {
  it('createRuntimeClients: the standard middleware stack, cached on DynamoDB, checksums when required on S3, standard retries, the default HTTP handler', async () => {
    const { dynamodb, s3 } = createRuntimeClients({ maxAttempts: 5 }, {});
    try {
      for (const client of [dynamodb, s3]) {
        for (const name of STANDARD) assert.ok(names(client).includes(name), `${name} kept`);
        assert.ok(client.config.requestHandler instanceof NodeHttpHandler, 'the SDK default keep-alive handler');
        assert.equal(await client.config.maxAttempts(), 5);
        assert.equal(((await client.config.retryStrategy()) as { mode?: string }).mode, 'standard');
      }
      assert.equal(dynamodb.config.cacheMiddleware, DYNAMODB_OPTIONS.cacheMiddleware);
      assert.notEqual(s3.config.cacheMiddleware, true, 'S3 endpoints depend on the bucket: no shared handler context');
      assert.equal(await s3.config.requestChecksumCalculation(), 'WHEN_REQUIRED');
      assert.equal(await s3.config.responseChecksumValidation(), S3_CHECKSUMS.responseChecksumValidation);
    } finally {
      dynamodb.destroy();
      s3.destroy();
    }
  });

  it('createClients (local tooling and tests) uses the same options', async () => {
    const clients = createClients({ dynamodb: 'http://127.0.0.1:1', kinesis: 'http://127.0.0.1:1', s3: 'http://127.0.0.1:1', region: 'us-east-1', ...credentials });
    try {
      assert.equal(clients.dynamodb.config.cacheMiddleware, true);
      assert.equal(await clients.s3.config.requestChecksumCalculation(), 'WHEN_REQUIRED');
      for (const name of STANDARD) assert.ok(names(clients.dynamodb).includes(name), `${name} kept`);
    } finally {
      destroyClients(clients);
    }
  });

  it('runs middleware added to the client on every request, with the cached stack, concurrently', async () => {
    const fake = fakeHandler(() => ({ status: 200, body: '{}' }));
    const client = new DynamoDBClient({ region: 'us-east-1', credentials, requestHandler: fake, ...DYNAMODB_OPTIONS });
    const seen: string[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        seen.push((args.input as { TableName: string }).TableName);
        return next(args);
      },
      { step: 'initialize', name: 'userAddedMiddleware' },
    );
    try {
      await Promise.all(Array.from({ length: 12 }, (_, i) => client.send(new PutItemCommand({ TableName: `t${i % 3}`, Item: { id: { N: String(i) } } }))));
      assert.equal(seen.length, 12);
      assert.equal(fake.requests.length, 12);
      for (const req of fake.requests) {
        assert.match(req.headers.authorization ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/dynamodb\/aws4_request/);
        assert.ok(req.headers['x-amz-user-agent'] ?? req.headers['user-agent'], 'the SDK user agent is sent');
      }
    } finally {
      client.destroy();
    }
  });

  it('retries throttling with the standard strategy', async () => {
    const fake = fakeHandler((n) =>
      n === 1 ? { status: 400, type: 'ThrottlingException', body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' }) } : { status: 200, body: '{}' },
    );
    const client = new DynamoDBClient({ region: 'us-east-1', credentials, requestHandler: fake, ...DYNAMODB_OPTIONS });
    try {
      const out = await client.send(new PutItemCommand({ TableName: 't', Item: { id: { N: '1' } } }));
      assert.equal(out.$metadata.attempts, 2);
      assert.deepEqual(
        fake.requests.map((r) => r.headers['amz-sdk-request']),
        ['attempt=1; max=4', 'attempt=2; max=4'],
      );
    } finally {
      client.destroy();
    }
  });
});
