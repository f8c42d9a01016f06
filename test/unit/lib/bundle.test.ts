/**
 * The shipped ingest bundle, built exactly as `cdk synth` builds it: the AWS SDK as published (no
 * SDK file replaced or trimmed), no zod, no Kinesis client, no credential chain beyond the
 * environment, within its gzipped budget, loadable and runnable on its own with the config shipped
 * beside it, correct over real HTTP against S3 and DynamoDB stand-ins, and the role granted exactly
 * the SDK commands its code sends. The other handlers bundle and load.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Template } from 'aws-cdk-lib/assertions';
import { RUNTIME_CONFIG_FILE } from '../../../functions/config/runtime.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';
import { BUNDLE_ALIASES, BUNDLE_FILE, type BundleMetafile, bundleHandler } from '../../../lib/handler-asset.js';
import { pgMessage } from '../../helpers/debezium.js';
import { AwsStub } from './fixtures/aws-stub.js';
import type { ProbeEvent } from './fixtures/sdk-probe.js';
import { buildStack, MSK_CLUSTER_ARN, testConfig } from './fixtures/stack.js';

/**
 * Budget of the ingest bundle as Lambda ships it: gzipped (the deployment zip deflates it), with
 * headroom for SDK upgrades. `npm run bench` prints the figure next to the cold import time, and
 * docs/performance.md keeps both.
 */
const BUNDLE_BUDGET_GZIP_BYTES = 200 * 1024;

const outDir = mkdtempSync(path.join(tmpdir(), 'tidemark-bundle-'));
after(() => rmSync(outDir, { recursive: true, force: true }));
const { metafile } = bundleHandler(path.join(PACKAGE_ROOT, 'functions', 'ingest.ts'), outDir);
const inputs = Object.keys(metafile.inputs);

/** Bytes each input file contributes to the minified output. */
function bytesInOutput(meta: BundleMetafile): Map<string, number> {
  const out = new Map<string, number>();
  for (const output of Object.values(meta.outputs)) for (const [file, { bytesInOutput: n }] of Object.entries(output.inputs)) out.set(file, (out.get(file) ?? 0) + n);
  return out;
}

/** The environment of a bundle run: fixed credentials, no shared config files, endpoints at `endpoint`. */
const runEnv = (endpoint: string) => ({
  PATH: process.env.PATH ?? '',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'AKIDSTUB',
  AWS_SECRET_ACCESS_KEY: 'stub-secret',
  AWS_SESSION_TOKEN: 'stub-token',
  AWS_ENDPOINT_URL: endpoint,
  AWS_CONFIG_FILE: path.join(outDir, 'no-aws-config'),
  AWS_SHARED_CREDENTIALS_FILE: path.join(outDir, 'no-aws-credentials'),
});

/** Imports `bundle` in a fresh node, calls `handler(event)` and returns its answer (the last line of stdout). */
async function runBundle(bundle: string, event: unknown, endpoint: string): Promise<unknown> {
  const script = `const m = await import(${JSON.stringify(bundle)}); process.stdout.write('\\n' + JSON.stringify(await m.handler(${JSON.stringify(event)})));`;
  // Asynchronous: the stand-ins answer from this process while the bundle runs.
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { env: runEnv(endpoint), encoding: 'utf8', timeout: 60_000 });
  // The handler's own log lines (Powertools, JSON) come first; its answer is the last line.
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
}

describe('the ingest bundle', () => {
  it(`stays under ${BUNDLE_BUDGET_GZIP_BYTES / 1024} KiB gzipped and carries no zod, Kinesis client, STS/SSO clients or source map`, () => {
    const bundle = readFileSync(path.join(outDir, BUNDLE_FILE));
    const gzipped = gzipSync(bundle, { level: 9 }).length;
    const largest = [...bytesInOutput(metafile)]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([f, n]) => `${(n / 1024).toFixed(1)} KB ${f.replace(/^.*node_modules\//, '')}`);
    // Files esbuild read but tree-shook away entirely (e.g. an index re-exporting a fallback) do not ship.
    const shipped = [...bytesInOutput(metafile)].filter(([, n]) => n > 0).map(([f]) => f);
    assert.deepEqual(readdirSync(outDir), [BUNDLE_FILE], 'no source map by default');
    assert.ok(gzipped < BUNDLE_BUDGET_GZIP_BYTES, `${gzipped} bytes gzipped (${bundle.length} minified); largest inputs:\n${largest.join('\n')}`);
    for (const banned of ['node_modules/zod/', 'node_modules/@aws-sdk/client-kinesis/', 'node_modules/@aws-sdk/nested-clients/', 'credential-provider-ini', 'credential-provider-sso']) {
      assert.deepEqual(
        shipped.filter((f) => f.includes(banned)),
        [],
        `${banned} is in the bundle`,
      );
    }
    // The one alias is in use: a stale entry (the SDK renamed the package) fails here, not silently.
    for (const file of Object.values(BUNDLE_ALIASES)) assert.ok(inputs.some((f) => f.endsWith(`lib/bundle-aliases/${path.basename(file)}`)), `${path.basename(file)} replaces nothing`);
    assert.ok(inputs.some((f) => f.endsWith('functions/config/runtime.ts')), 'the runtime loads the shipped config');
    assert.ok(!inputs.some((f) => f.endsWith('lib/config/config.ts')), 'the zod schema module stays out');
  });

  it('loads in a fresh node and handles an empty batch with the config shipped beside it', () => {
    writeFileSync(path.join(outDir, RUNTIME_CONFIG_FILE), JSON.stringify(testConfig()));
    const script = `const m = await import(${JSON.stringify(path.join(outDir, BUNDLE_FILE))}); process.stdout.write('\\n' + JSON.stringify(await m.handler({ Records: [] })));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: runEnv('http://127.0.0.1:9'),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) ?? ''), { batchItemFailures: [] });
  });
});

describe('the shipped bundle over real HTTP (S3 and DynamoDB stand-ins on 127.0.0.1)', () => {
  const config = testConfig();
  const stub = new AwsStub(config.tables, config.statusTable);
  let endpoint = '';
  before(async () => {
    endpoint = await stub.start();
  });
  after(() => stub.stop());

  it('lands a Kinesis batch in S3 and applies it to DynamoDB with guarded writes', async () => {
    writeFileSync(path.join(outDir, RUNTIME_CONFIG_FILE), JSON.stringify(config));
    const message = pgMessage({ table: 'customers', op: 'c', after: { id: 42, name: 'Ada' }, lsn: 2000, lastCommitLsn: 1000 });
    const event = {
      Records: [
        {
          eventID: 'shardId-000000000000:49590338271490256608559692538361571095921575989136588898',
          eventSourceARN: 'arn:aws:kinesis:us-east-1:111122223333:stream/shop-cdc',
          kinesis: {
            data: Buffer.from(JSON.stringify(message)).toString('base64'),
            partitionKey: '42',
            sequenceNumber: '49590338271490256608559692538361571095921575989136588898',
            approximateArrivalTimestamp: 1_735_732_800.5,
          },
        },
      ],
    };
    assert.deepEqual(await runBundle(path.join(outDir, BUNDLE_FILE), event, endpoint), { batchItemFailures: [] });

    // S3: the raw line landed, gzipped, signed with its payload's SHA-256 (checked by the stand-in), and with no
    // flexible checksum: S3 requires none for PutObject (functions/adapters/clients.ts, S3_CHECKSUMS).
    const puts = stub.requests.filter((r) => r.operation === 'PutObject');
    assert.ok(
      puts.length >= 1 && puts.every((r) => /^[0-9a-f]{64}$/.test(String(r.headers['x-amz-content-sha256'])) && r.headers['x-amz-checksum-crc32'] === undefined),
      JSON.stringify(puts.map((r) => r.headers)),
    );
    const rawKeys = [...stub.objects.keys()].filter((k) => k.startsWith(`${config.raw.bucket}/raw/`));
    assert.equal(rawKeys.length, 1, [...stub.objects.keys()].join(', '));
    const landed = gunzipSync(stub.objects.get(rawKeys[0] ?? '')?.body ?? Buffer.alloc(0)).toString('utf8');
    const line = JSON.parse(landed.trim()) as { table: string; key: string; message: string };
    assert.equal(line.table, 'public.customers');
    assert.deepEqual(JSON.parse(line.message), message, 'the raw line keeps the message as received');

    // DynamoDB: the row is stored, written under a condition on its position.
    const dynamoOps = stub.operations('dynamodb');
    assert.ok(dynamoOps.includes('BatchGetItem') && dynamoOps.includes('UpdateItem'), dynamoOps.join(', '));
    const writes = stub.requests.filter((r) => r.service === 'dynamodb' && (r.operation === 'PutItem' || r.operation === 'UpdateItem') && r.input?.TableName === 'shop-customers');
    assert.ok(writes.length >= 1 && writes.every((w) => typeof w.input?.ConditionExpression === 'string'), JSON.stringify(writes.map((w) => w.input)));
    const item = stub.dynamo.get('shop-customers', { id: { N: '42' } });
    assert.equal(item?.name?.S, 'Ada', JSON.stringify(item));
  });

  it('reads a spilled row back, lists, heads and deletes it, gets refused guarded writes and reads status rows through the SDK as published', async () => {
    const probeDir = path.join(outDir, 'probe');
    mkdirSync(probeDir, { recursive: true });
    bundleHandler(path.join(PACKAGE_ROOT, 'test', 'unit', 'lib', 'fixtures', 'sdk-probe.ts'), probeDir);
    const event: ProbeEvent = { bucket: config.raw.bucket, statusTable: config.statusTable, targetTable: 'shop-customers', keyColumn: 'id' };
    const result = (await runBundle(path.join(probeDir, BUNDLE_FILE), event, endpoint)) as Record<string, unknown>;
    assert.equal(result.sameRow, true, JSON.stringify(result.spilled));
    assert.match(String(result.missing), /^NoSuchKey: /);
    assert.equal(result.raised, true);
    assert.equal(result.raisedBelow, false, 'a lower watermark is refused by its condition (ConditionalCheckFailedException)');
    assert.deepEqual(result.loaded, [{ table: 'public.customers', truncateWatermark: 'b' }]);
    // The ingest bundle's run before this one also recorded the table's schema, in the table's own partition (functions/adapters/schema-store.ts): not a status row.
    assert.deepEqual(result.listed, ['public.customers']);
    assert.deepEqual(result.refused, { name: 'ConditionalCheckFailedException', item: { id: { N: '7' }, v: { S: 'first' } } });
    const s3Ops = result.s3Ops as { listed: { key: string; size: number }[]; versions: unknown[]; head: Record<string, unknown>; headAfterDelete: string; spillKey: string };
    const spilledSize = s3Ops.listed.find((o) => o.key === s3Ops.spillKey)?.size;
    assert.ok(spilledSize !== undefined && spilledSize > 0, JSON.stringify(s3Ops.listed));
    assert.deepEqual(s3Ops.versions, s3Ops.listed.map((o) => ({ key: o.key, versionId: 'null', latest: true })));
    assert.deepEqual(s3Ops.head, { length: spilledSize, encoding: 'gzip', type: 'application/json' });
    assert.equal(s3Ops.headAfterDelete, 'NotFound', 'a HEAD of the deleted key is a NotFound');
    for (const op of ['PutObject', 'GetObject', 'ListObjectsV2', 'ListObjectVersions', 'HeadObject', 'DeleteObject']) assert.ok(stub.operations('s3').includes(op), op);
    for (const op of ['PutItem', 'UpdateItem', 'BatchGetItem', 'Query']) assert.ok(stub.operations('dynamodb').includes(op), op);
    const gets = stub.requests.filter((r) => r.operation === 'GetObject');
    assert.ok(gets.length >= 2 && gets.every((r) => r.headers['x-amz-checksum-mode'] === undefined), 'GetObject asks for no checksum: S3 requires none (S3_CHECKSUMS)');
  });
});

describe('the other handlers', () => {
  for (const name of ['replay', 'erase', 'jobs']) {
    it(`${name} bundles the same way and loads in a fresh node`, () => {
      const dir = path.join(outDir, name);
      mkdirSync(dir, { recursive: true });
      const meta = bundleHandler(path.join(PACKAGE_ROOT, 'functions', `${name}.ts`), dir).metafile;
      assert.ok(!Object.keys(meta.inputs).some((f) => f.includes('node_modules/zod/')), `${name} bundles zod`);
      const script = `const m = await import(${JSON.stringify(path.join(dir, BUNDLE_FILE))}); process.stdout.write(JSON.stringify(Object.keys(m).filter((k) => typeof m[k] === 'function').sort()));`;
      const exported = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: runEnv('http://127.0.0.1:9'), encoding: 'utf8' })) as string[];
      assert.ok(exported.length > 0 && (name === 'jobs' || exported.includes('handler')), `${name} exports ${exported.join(', ')}`);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Least privilege: the role's runtime actions are exactly the SDK commands the bundled code sends.

const SERVICE_OF_PACKAGE: Record<string, string> = {
  '@aws-sdk/client-dynamodb': 'dynamodb',
  '@aws-sdk/client-s3': 's3',
  '@aws-sdk/client-sqs': 'sqs',
  '@aws-sdk/client-sfn': 'states',
  '@aws-sdk/client-kinesis': 'kinesis',
  '@aws-sdk/client-secrets-manager': 'secretsmanager',
};

/**
 * The IAM actions one SDK command needs. A TransactWriteItems of Puts (the transaction writer's
 * only kind) is governed by `dynamodb:PutItem` on each table: there is no TransactWriteItems
 * action ("Using IAM with DynamoDB transactions", DynamoDB developer guide).
 */
function iamActionsOf(service: string, command: string): string[] {
  if (service === 'dynamodb' && command === 'TransactWriteItems') return ['dynamodb:PutItem'];
  return [`${service}:${command}`];
}

/** `service:Operation` for every `new XxxCommand(` whose class is imported from an SDK client, per bundled source file. */
function commandsSentBy(files: readonly string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(path.join(PACKAGE_ROOT, file), 'utf8');
    for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(@aws-sdk\/client-[a-z0-9-]+)'/g)) {
      const service = SERVICE_OF_PACKAGE[m[2] ?? ''];
      assert.ok(service, `${file} imports ${m[2]}, which this test does not map to an IAM service`);
      for (const name of (m[1] ?? '').split(',').map((s) => s.trim())) {
        const command = /^(\w+)Command$/.exec(name)?.[1];
        if (command && new RegExp(`new ${command}Command\\(`).test(text)) {
          for (const action of iamActionsOf(service, command)) found.set(action, [...(found.get(action) ?? []), file]);
        }
      }
    }
  }
  return found;
}

/** Statements granted for the mapping, logging and keys, not for the handler's own SDK calls. */
const PLATFORM_SIDS = new Set(['ReadStream', 'WriteFailedBatches', 'FailedBatchesListBucket', 'FindCluster', 'ClusterNetworkInterfaces', 'ReadTopicsAsConsumerGroups', 'UsePipelineKey']);

/** The ingest role's policies: the replay, erase and scheduled jobs' roles have their own tests (test/unit/lib/jobs, test/unit/lib/replay). */
const ingestPolicies = (template: Template) =>
  Object.entries(template.findResources('AWS::IAM::Policy'))
    .filter(([id]) => id.startsWith('PipelineIngestRole'))
    .map(([, p]) => p);

function runtimeActions(template: Template): Set<string> {
  const out = new Set<string>();
  const policies = ingestPolicies(template);
  assert.ok(policies.length > 0, 'the ingest role has policies');
  for (const policy of policies) {
    for (const s of (policy.Properties.PolicyDocument as { Statement: { Sid?: string; Action: string | string[] }[] }).Statement) {
      const actions = Array.isArray(s.Action) ? s.Action : [s.Action];
      if (s.Sid && PLATFORM_SIDS.has(s.Sid)) continue;
      // Logs and X-Ray tracing are the platform's, not SDK commands of the handler.
      for (const a of actions) if (!a.startsWith('logs:') && !a.startsWith('xray:')) out.add(a);
    }
  }
  return out;
}

describe('least privilege of the ingest role', () => {
  const functionFiles = inputs.filter((f) => f.startsWith('functions/'));
  const sent = commandsSentBy(functionFiles);

  it('finds the commands by scanning the bundled functions/ sources', () => {
    assert.ok(functionFiles.length > 10, functionFiles.join(', '));
    assert.ok(sent.has('s3:PutObject') && sent.has('dynamodb:PutItem'), [...sent.keys()].join(', '));
  });

  for (const [name, config] of [
    ['Kinesis, AWS-managed encryption', testConfig()],
    ['MSK, customer-managed key', testConfig({ encryption: 'kms', source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topic: 'shop.cdc' } })],
  ] as const) {
    it(`grants exactly the commands the code sends (${name})`, () => {
      const needed = [...sent.keys()].sort();
      assert.deepEqual([...runtimeActions(Template.fromStack(buildStack(config).stack))].sort(), needed);
    });
  }

  it('adds no Query, enhanced fan-out, ListStreams or kms:Encrypt to the ingest role, and encrypts the environment under kms', () => {
    const template = Template.fromStack(buildStack(testConfig({ encryption: 'kms' })).stack);
    const statements = ingestPolicies(template).flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Sid?: string; Action: string | string[]; Condition?: unknown }[] }).Statement);
    // Query (and GetItem on status) only in the split Aurora DSQL records' partition, by dynamodb:LeadingKeys (pipeline.test.ts checks the condition).
    const all = statements.filter((s) => s.Sid !== 'SplitRecordParts').flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    assert.ok(statements.filter((s) => s.Sid === 'SplitRecordParts').every((s) => s.Condition !== undefined));
    // GetItem is granted on the target tables only (read-merge-put of wide or spilled rows): not on status.
    for (const unwanted of ['dynamodb:Query', 'kinesis:SubscribeToShard', 'kinesis:DescribeStreamConsumer', 'kinesis:ListStreams', 'kms:Encrypt', 'kms:DescribeKey']) {
      assert.ok(!all.includes(unwanted), unwanted);
    }
    // Under `kms` the function's environment is encrypted with the pipeline key too.
    const keyId = Object.keys(template.findResources('AWS::KMS::Key'))[0];
    template.hasResourceProperties('AWS::Lambda::Function', { KmsKeyArn: { 'Fn::GetAtt': [keyId, 'Arn'] } });
  });
});
