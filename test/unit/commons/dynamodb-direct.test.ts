/**
 * The direct path (functions/commons/dynamodb-direct.ts) must put on the wire what the SDK's own
 * pipeline puts there, give back what the SDK gives back, and fail as the SDK fails. Each check
 * sends the same command through a lean client with and without the direct path, both on a
 * recording request handler that answers like DynamoDB, and compares.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DynamoDBClient,
  DynamoDBServiceException,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { type HttpRequest, HttpResponse } from '@smithy/core/protocols';
import fc from 'fast-check';
import { lean } from '../../../functions/commons/clients.js';
import { holdsBytes } from '../../../functions/commons/dynamodb-direct.js';
import { bodyText, recordingHandler, rejectionOf, resign as resignWith } from '../../helpers/recording-handler.js';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'session-token' };

/** A lean client on `handler`, with (`direct`) or without the direct path; `stack` counts the requests that went through the SDK's stack. */
function client(handler: ReturnType<typeof recordingHandler>['handler'], direct: boolean, extra: object = {}) {
  const c = lean(new DynamoDBClient({ region: 'eu-west-2', credentials, requestHandler: handler, ...extra }), { direct });
  const stack = { count: 0 };
  c.middlewareStack.add(
    (next) => async (args) => {
      stack.count++;
      return next(args);
    },
    { step: 'initialize', name: 'countSdkStack' },
  );
  return { c, stack };
}

const resign = (req: HttpRequest) => resignWith(req, credentials, 'eu-west-2');

/** DynamoDB attribute values without bytes (what the direct path sends), nested two levels. */
const scalar: fc.Arbitrary<AttributeValue> = fc.oneof(
  fc.string().map((S) => ({ S })),
  fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })).map((n) => ({ N: String(n) })),
  fc.boolean().map((BOOL) => ({ BOOL })),
  fc.constant({ NULL: true }),
  fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 3 }).map((SS) => ({ SS })),
);
const value: fc.Arbitrary<AttributeValue> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  fc.array(scalar, { maxLength: 3 }).map((L) => ({ L })),
  fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), scalar, { maxKeys: 3 }).map((M) => ({ M })),
);
const item = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), value, { minKeys: 1, maxKeys: 8 });
const bytes = fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b).toString('base64'));
/** The same, as a response carries them: `B` and `BS` as base64 text. */
const wireValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: scalar },
  bytes.map((B) => ({ B })),
  fc.array(bytes, { minLength: 1, maxLength: 3 }).map((BS) => ({ BS })),
  fc.array(fc.oneof(scalar, bytes.map((B) => ({ B }))), { maxLength: 3 }).map((L) => ({ L })),
  fc.dictionary(
    fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__'),
    fc.oneof(scalar, bytes.map((B) => ({ B }))),
    { maxKeys: 3 },
  ).map((M) => ({ M })),
);
/**
 * Attribute names of a response, but "__proto__": the SDK's deserializer loses the value of an
 * attribute of that name (its output holds `__proto__: undefined`), where `JSON.parse` keeps it
 * (a response with bytes is read by the SDK on the direct path too); the last test pins the direct
 * path's behaviour for it.
 */
const wireName = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__');
const wireItem = fc.dictionary(wireName, wireValue, { minKeys: 1, maxKeys: 6 });

const commands = fc.oneof(
  fc.tuple(fc.constantFrom('t1', 'orders-current'), item).map(
    ([TableName, Item]) =>
      new PutItemCommand({
        TableName,
        Item,
        ConditionExpression: 'attribute_not_exists(#pk) OR #pos < :base',
        ExpressionAttributeNames: { '#pk': 'id', '#pos': '__pos' },
        ExpressionAttributeValues: { ':base': { S: 'a8' } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ReturnConsumedCapacity: 'TOTAL',
      }),
  ),
  fc.tuple(item, item).map(
    ([Key, values]) =>
      new UpdateItemCommand({
        TableName: 't2',
        Key,
        UpdateExpression: 'SET #a = :a',
        ExpressionAttributeNames: { '#a': 'a' },
        ExpressionAttributeValues: { ':a': Object.values(values)[0] as AttributeValue },
        ReturnValues: 'ALL_NEW',
      }),
  ),
  item.map((Key) => new GetItemCommand({ TableName: 't3', Key, ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' })),
  fc.array(item, { minLength: 1, maxLength: 4 }).map((Keys) => new BatchGetItemCommand({ RequestItems: { t4: { Keys, ProjectionExpression: '#p', ExpressionAttributeNames: { '#p': '__pos' } } }, ReturnConsumedCapacity: 'TOTAL' })),
);

describe('the direct path of the DynamoDB client', () => {
  it('sends what the SDK sends (body, target, host, signature) for PutItem, UpdateItem, GetItem and BatchGetItem', async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (command) => {
        const sdk = recordingHandler(() => ({ status: 200, body: '{}' }));
        const direct = recordingHandler(() => ({ status: 200, body: '{}' }));
        const a = client(sdk.handler, false);
        const b = client(direct.handler, true);
        try {
          await a.c.send(command as PutItemCommand);
          await b.c.send(command as PutItemCommand);
          assert.equal(a.stack.count, 1);
          assert.equal(b.stack.count, 0, 'the direct path does not enter the SDK stack');
          const [x, y] = [sdk.requests[0], direct.requests[0]] as [HttpRequest, HttpRequest];
          assert.deepEqual(JSON.parse(bodyText(y.body)), JSON.parse(bodyText(x.body)));
          for (const h of ['content-type', 'x-amz-target', 'host', 'x-amz-security-token', 'amz-sdk-request']) assert.equal(y.headers[h], x.headers[h], h);
          assert.equal(y.headers['content-length'], String(Buffer.byteLength(bodyText(y.body))));
          assert.match(y.headers['amz-sdk-invocation-id'] ?? '', /^[0-9a-f-]{36}$/);
          assert.equal(`${y.protocol}//${y.hostname}${y.path}`, `${x.protocol}//${x.hostname}${x.path}`);
          assert.equal(y.headers.authorization, await resign(y));
        } finally {
          a.c.destroy();
          b.c.destroy();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('gives back what the SDK gives back, with and without bytes (B, BS, nested in M and L)', async () => {
    await fc.assert(
      fc.asyncProperty(wireItem, fc.array(wireItem, { maxLength: 3 }), async (stored, more) => {
        const answers: [unknown, string][] = [
          [new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } }, ReturnValues: 'ALL_OLD', ReturnConsumedCapacity: 'TOTAL' }), JSON.stringify({ Attributes: stored, ConsumedCapacity: { TableName: 't', CapacityUnits: 1.5 } })],
          [new UpdateItemCommand({ TableName: 't', Key: { id: { S: '1' } }, ReturnValues: 'ALL_NEW' }), JSON.stringify({ Attributes: stored, ItemCollectionMetrics: { ItemCollectionKey: stored, SizeEstimateRangeGB: [0, 1] } })],
          [new GetItemCommand({ TableName: 't', Key: { id: { S: '1' } } }), JSON.stringify({ Item: stored })],
          [new GetItemCommand({ TableName: 't', Key: { id: { S: '1' } } }), ''],
          [
            new BatchGetItemCommand({ RequestItems: { t: { Keys: [{ id: { S: '1' } }] } } }),
            JSON.stringify({ Responses: { t: [stored, ...more] }, UnprocessedKeys: { t: { Keys: more, ConsistentRead: true } }, ConsumedCapacity: [{ TableName: 't', CapacityUnits: 2 }] }),
          ],
        ];
        for (const [command, body] of answers) {
          const a = client(recordingHandler(() => ({ status: 200, body })).handler, false);
          const b = client(recordingHandler(() => ({ status: 200, body })).handler, true);
          try {
            const expected = await a.c.send(command as GetItemCommand);
            const got = await b.c.send(command as GetItemCommand);
            assert.equal(b.stack.count, 0);
            assert.deepEqual(got, expected);
          } finally {
            a.c.destroy();
            b.c.destroy();
          }
        }
      }),
      { numRuns: 30 },
    );
  });

  it('raises the SDK exception of an error response: a failed condition with its item, an unknown error, after the retries of a 500', async () => {
    const old = { id: { S: '7' }, __pos: { S: 'a9' }, blob: { B: Buffer.from([0, 255, 1]).toString('base64') } };
    const ccf = recordingHandler(() => ({
      status: 400,
      body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException', message: 'The conditional request failed', Item: old }),
      headers: { 'x-amzn-errortype': 'ConditionalCheckFailedException:http://internal.amazon.com/coral/com.amazonaws.dynamodb.v20120810/' },
    }));
    const { c } = client(ccf.handler, true);
    const put = new PutItemCommand({ TableName: 't', Item: { id: { S: '7' } }, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' });
    try {
      const err = await rejectionOf(c.send(put));
      assert.ok(err instanceof ConditionalCheckFailedException);
      assert.equal(err.message, 'The conditional request failed');
      assert.deepEqual(err.Item, { id: { S: '7' }, __pos: { S: 'a9' }, blob: { B: new Uint8Array([0, 255, 1]) } });
      assert.equal(err.$metadata.httpStatusCode, 400);
      assert.equal(err.$metadata.attempts, 1, 'a failed condition is not retried');
      assert.equal(err.$fault, 'client');
      assert.ok((err as unknown as { $response?: HttpResponse }).$response instanceof HttpResponse);
      assert.equal(ccf.requests.length, 1);
    } finally {
      c.destroy();
    }

    const unknown = recordingHandler(() => ({ status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.validate#ValidationException', message: 'Item size has exceeded the maximum allowed size' }) }));
    const u = client(unknown.handler, true);
    try {
      const err = await rejectionOf(u.c.send(put));
      assert.ok(err instanceof DynamoDBServiceException);
      assert.equal(err.name, 'ValidationException');
      assert.match(err.message, /maximum allowed size/);
      assert.equal(unknown.requests.length, 1);
    } finally {
      u.c.destroy();
    }

    const down = recordingHandler(() => ({ status: 500, body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'oops' }) }));
    const d = client(down.handler, true, { maxAttempts: 3, retryStrategy: undefined });
    try {
      const err = await rejectionOf(d.c.send(put));
      assert.ok(err instanceof DynamoDBServiceException);
      assert.equal(err.name, 'InternalServerError');
      assert.equal(err.$metadata.attempts, 3);
      assert.deepEqual(
        down.requests.map((r) => r.headers['amz-sdk-request']),
        ['attempt=1; max=3', 'attempt=2; max=3', 'attempt=3; max=3'],
      );
      for (const r of down.requests) assert.equal(r.headers.authorization, await resign(r));
    } finally {
      d.c.destroy();
    }
  });

  it('retries a 5xx whose body is not JSON (a load balancer page) as the SDK does, and fails with its status', async () => {
    const outcome = async (direct: boolean) => {
      const rec = recordingHandler(() => ({ status: 503, body: '<html><body>Service Unavailable</body></html>', headers: { 'content-type': 'text/html' } }));
      const { c } = client(rec.handler, direct, { maxAttempts: 2 });
      try {
        const err = (await rejectionOf(c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } } })))) as { $metadata?: { httpStatusCode?: number; attempts?: number } };
        return { status: err.$metadata?.httpStatusCode, attempts: err.$metadata?.attempts, requests: rec.requests.length };
      } finally {
        c.destroy();
      }
    };
    const sdk = await outcome(false);
    assert.deepEqual(sdk, { status: 503, attempts: 2, requests: 2 });
    assert.deepEqual(await outcome(true), sdk);
  });

  it('retries a connection reset as the SDK does', async () => {
    const outcome = async (direct: boolean) => {
      let n = 0;
      const handler = {
        handle: async (req: HttpRequest) => {
          n++;
          if (n === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          return recordingHandler(() => ({ status: 200, body: '{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1}}' })).handler.handle(req);
        },
      };
      const { c } = client(handler, direct);
      try {
        const out = await c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } }, ReturnConsumedCapacity: 'TOTAL' }));
        return { attempts: out.$metadata.attempts, units: out.ConsumedCapacity?.CapacityUnits, calls: n };
      } finally {
        c.destroy();
      }
    };
    const sdk = await outcome(false);
    assert.deepEqual(sdk, { attempts: 2, units: 1, calls: 2 });
    assert.deepEqual(await outcome(true), sdk);
  });

  it('corrects its clock from the server, as the SDK does, and signs the retry with the corrected time', async () => {
    const serverNow = Date.now() + 30 * 60_000;
    const skewed = recordingHandler((_req, n) =>
      n === 1
        ? { status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature expired' }), headers: { date: new Date(serverNow).toUTCString() } }
        : { status: 200, body: '{}', headers: { date: new Date(serverNow).toUTCString() } },
    );
    const { c } = client(skewed.handler, true);
    try {
      const out = await c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } } }));
      assert.equal(out.$metadata.attempts, 2);
      const offset = (c.config as unknown as { systemClockOffset: number }).systemClockOffset;
      assert.ok(Math.abs(offset - 30 * 60_000) < 5_000, `offset ${offset}`);
      const signedAt = (r: HttpRequest) => Date.parse((r.headers['x-amz-date'] ?? '').replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
      const [first, second] = skewed.requests as [HttpRequest, HttpRequest];
      assert.ok(signedAt(second) - signedAt(first) > 25 * 60_000, 'the retry is signed at the server time');
    } finally {
      c.destroy();
    }
  });

  it('resolves its endpoint once, and tries again after a failure instead of keeping it', async () => {
    let calls = 0;
    const rec = recordingHandler(() => ({ status: 200, body: '{}' }));
    const c = lean(
      new DynamoDBClient({
        credentials,
        requestHandler: rec.handler,
        region: async () => {
          calls++;
          if (calls === 1) throw new Error('region not there yet');
          return 'eu-west-2';
        },
      }),
    );
    try {
      const put = () => c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } } }));
      await assert.rejects(put(), /region not there yet/);
      await put();
      await put();
      assert.equal(rec.requests.length, 2);
      for (const r of rec.requests) {
        assert.equal(r.hostname, 'dynamodb.eu-west-2.amazonaws.com');
        assert.equal(r.headers.authorization, await resign(r));
      }
    } finally {
      c.destroy();
    }
  });

  it('leaves bytes in an input, a table ARN, other commands and calls with options to the SDK', async () => {
    const rec = recordingHandler(() => ({ status: 200, body: '{}' }));
    const { c, stack } = client(rec.handler, true);
    try {
      await c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' }, b: { B: new Uint8Array([1, 2]) } } }));
      await c.send(new GetItemCommand({ TableName: 'arn:aws:dynamodb:eu-west-2:123456789012:table/t', Key: { id: { S: '1' } } }));
      await c.send(new QueryCommand({ TableName: 't', KeyConditionExpression: 'id = :id', ExpressionAttributeValues: { ':id': { S: '1' } } }));
      await c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } } }), { requestTimeout: 1_000 });
      assert.equal(stack.count, 4);
      assert.equal(JSON.parse(bodyText(rec.requests[0]?.body)).Item.b.B, 'AQI=');
      await c.send(new PutItemCommand({ TableName: 't', Item: { id: { S: '1' } } }));
      assert.equal(stack.count, 4, 'a plain PutItem takes the direct path');
    } finally {
      c.destroy();
    }
    const odd = recordingHandler(() => ({ status: 200, body: '{"Item":{"__proto__":{"S":"x"},"a":{"S":"y"}}}' }));
    const o = client(odd.handler, true);
    try {
      const out = await o.c.send(new GetItemCommand({ TableName: 't', Key: { a: { S: 'y' } } }));
      assert.deepEqual(Object.getOwnPropertyDescriptor(out.Item, '__proto__')?.value, { S: 'x' }, 'an attribute named __proto__ is kept, as an own attribute');
      assert.equal(Object.getPrototypeOf(out.Item), Object.prototype);
    } finally {
      o.c.destroy();
    }
    assert.equal(holdsBytes({ M: { a: { L: [{ S: 'x' }, { B: new Uint8Array(0) }] } } }), true);
    assert.equal(holdsBytes({ M: { a: { L: [{ S: 'x' }, { NULL: true }] } } }), false);
  });
});
