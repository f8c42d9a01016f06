/**
 * The errors people hit most, each as the exact message, no stack trace, and the command that
 * fixes it. The AWS errors come from real SDK clients over a request handler that answers as the
 * service (or the network) would, so the call context the CLI names is the one the middleware records.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { annotateErrors, errorContextOf } from '../../../../bin/local/call-context.js';
import { CliError, errorLines, exitCodeOf } from '../../../../bin/cli/errors.js';
import { ConfigError } from '../../../../functions/core/errors.js';

const setting = { configPath: 'shop.json' };
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

/** A request handler answering every call with `status` and a JSON error body, or throwing `fail`. */
function handler(answer: { status: number; type?: string; message?: string } | Error) {
  return {
    handle: async () => {
      if (answer instanceof Error) throw answer;
      const body = JSON.stringify({ __type: answer.type, message: answer.message });
      return { response: { statusCode: answer.status, headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': answer.type ?? '' }, body: Readable.from([Buffer.from(body)]) } };
    },
  };
}

async function failure(client: { send(c: never): Promise<unknown> }, command: unknown): Promise<unknown> {
  try {
    await client.send(command as never);
  } catch (e) {
    return e;
  }
  throw new Error('the call did not fail');
}

const dynamo = (endpoint: string, answer: Parameters<typeof handler>[0]) =>
  annotateErrors(new DynamoDBClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1, requestHandler: handler(answer) }), 'DynamoDB', endpoint);
const get = new GetItemCommand({ TableName: 'shop-orders', Key: { order_id: { N: '7' } } });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });

describe('errors that name what was wrong and the fix', () => {
  it('not provisioned: names the table and the operation; locally, provision', async () => {
    const e = await failure(dynamo('http://127.0.0.1:8000', { status: 400, type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException', message: 'Cannot do operations on a non-existent table' }), get);
    assert.deepEqual(errorContextOf(e), { service: 'DynamoDB', operation: 'GetItem', resource: 'shop-orders', endpoint: 'http://127.0.0.1:8000' });
    assert.deepEqual(errorLines(e, setting, false), ['tidemark: DynamoDB table shop-orders does not exist (GetItem)', '  fix: npx tidemark provision -c shop.json']);
  });

  it('not provisioned on AWS: deploy the stack', async () => {
    const e = await failure(dynamo('https://dynamodb.us-east-1.amazonaws.com', { status: 400, type: 'ResourceNotFoundException', message: 'Requested resource not found' }), get);
    assert.deepEqual(errorLines(e, setting, false), [
      'tidemark: DynamoDB table shop-orders does not exist (GetItem)',
      '  fix: deploy the stack (npx cdk deploy -c tidemark:configFile=shop.json), or check AWS_REGION',
    ]);
  });

  it('emulators down: names the service and endpoint, and how to start them', async () => {
    const e = await failure(dynamo('http://127.0.0.1:8000', refused()), get);
    assert.deepEqual(errorLines(e, setting, false), [
      'tidemark: cannot reach DynamoDB at http://127.0.0.1:8000 (connection refused)',
      '  fix: the local emulators are not running there: npx tidemark local up, then eval "$(npx tidemark local env)"',
    ]);
  });

  it('no region and no credentials: what to set, for AWS and for the emulators', async () => {
    const noRegion = await failure(annotateErrors(new DynamoDBClient({ credentials, maxAttempts: 1, region: async () => { throw new Error('Region is missing'); } }), 'DynamoDB', undefined), get);
    assert.deepEqual(errorLines(noRegion, setting, false), ['tidemark: no AWS region is set', '  fix: export AWS_REGION=<region>; for the local emulators: npx tidemark local up, then eval "$(npx tidemark local env)"']);
    const noCredentials = Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });
    assert.deepEqual(errorLines(noCredentials, setting, false), [
      'tidemark: no AWS credentials were found',
      '  fix: aws configure (or export AWS_PROFILE=<profile>); for the local emulators: npx tidemark local up, then eval "$(npx tidemark local env)"',
    ]);
  });

  it('access denied: the operation, the resource and the action the credentials need', async () => {
    const s3 = annotateErrors(
      new S3Client({ region: 'us-east-1', credentials, maxAttempts: 1, requestHandler: handler(Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })) }),
      'S3',
      undefined,
    );
    const e = await failure(s3, new PutObjectCommand({ Bucket: 'shop-raw', Key: 'k', Body: 'x' }));
    assert.deepEqual(errorLines(e, setting, false), ['tidemark: access denied: S3 PutObject on shop-raw', '  fix: use credentials allowed s3:PutObject on shop-raw (docs/deploy.md lists what each role may do)']);
  });

  it('throttled: the service, the operation and the attempts', async () => {
    const client = annotateErrors(
      new DynamoDBClient({ region: 'us-east-1', credentials, maxAttempts: 2, retryMode: 'standard', requestHandler: handler({ status: 400, type: 'ProvisionedThroughputExceededException', message: 'slow down' }) }),
      'DynamoDB',
      undefined,
    );
    const e = await failure(client, get);
    assert.deepEqual(errorLines(e, setting, false), ['tidemark: DynamoDB throttled GetItem after 2 attempts', '  fix: run it again in a minute; for long runs raise apply.maxRetries in the config']);
  });

  it('shows the stack only with --verbose, and exits 2 unless the error says otherwise', () => {
    const e = new CliError('--since must be before --until', 'a range whose start is at or below its end');
    assert.equal(errorLines(e, setting, false).some((l) => l.includes('    at ')), false);
    assert.ok(errorLines(e, setting, true).some((l) => l.includes('    at ')));
    assert.equal(exitCodeOf(e), 2);
    assert.equal(exitCodeOf(new CliError('findings', undefined, { exitCode: 1 })), 1);
    assert.deepEqual(errorLines(new Error('boom'), setting, false), ['tidemark: boom', '  (run again with --verbose for the stack)']);
  });

  it('lists every config problem at once', () => {
    const lines = errorLines(new ConfigError(['tables[1].source: "public.orders" is already configured at tables[0]', 'raw.prefix: "/raw" must not start with "/"'], 'shop.json'), setting, false);
    assert.equal(lines[0], 'tidemark: shop.json is invalid:\n  - tables[1].source: "public.orders" is already configured at tables[0]\n  - raw.prefix: "/raw" must not start with "/"');
  });
});
