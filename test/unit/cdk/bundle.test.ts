/**
 * The shipped ingest bundle, built exactly as `cdk synth` builds it: lean (no zod, no Kinesis
 * client, no credential chain beyond the environment), loadable and runnable on its own with the
 * config shipped beside it, and the role granted exactly the SDK commands its code sends.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { RUNTIME_CONFIG_FILE } from '../../../functions/commons/runtime-config.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';
import { BUNDLE_FILE, bundleHandler } from '../../../lib/handler-asset.js';
import { buildStack, MSK_CLUSTER_ARN, testConfig } from './fixtures/stack.js';

/**
 * Budget of the minified ingest bundle. It was 624 KB with zod, the Kinesis client and the full
 * credential chain; 518 KB once validation, pre-read and read-merge-put landed, of which about 330 KB
 * is the AWS SDK (S3 alone 98 KB). The 400 KB target is not met yet.
 */
const BUNDLE_BUDGET_BYTES = 540 * 1024;

const outDir = mkdtempSync(path.join(tmpdir(), 'tidemark-bundle-'));
after(() => rmSync(outDir, { recursive: true, force: true }));
const { metafile } = bundleHandler(path.join(PACKAGE_ROOT, 'functions', 'ingest.ts'), outDir);
const inputs = Object.keys(metafile.inputs);

describe('the ingest bundle', () => {
  it(`stays under ${BUNDLE_BUDGET_BYTES / 1024} KB and carries no zod, Kinesis client, STS/SSO clients or source map`, () => {
    const bytes = readFileSync(path.join(outDir, BUNDLE_FILE)).length;
    assert.deepEqual(readdirSync(outDir), [BUNDLE_FILE], 'no source map by default');
    assert.ok(bytes < BUNDLE_BUDGET_BYTES, `${bytes} bytes`);
    for (const banned of ['node_modules/zod/', 'node_modules/@aws-sdk/client-kinesis/', 'node_modules/@aws-sdk/nested-clients/', 'credential-provider-ini', 'credential-provider-sso']) {
      assert.deepEqual(
        inputs.filter((f) => f.includes(banned)),
        [],
        `${banned} is in the bundle`,
      );
    }
    assert.ok(inputs.some((f) => f.endsWith('functions/commons/runtime-config.ts')), 'the runtime loads the shipped config');
    assert.ok(!inputs.some((f) => f.endsWith('functions/commons/config.ts')), 'the zod schema module stays out');
  });

  it('loads in a fresh node and handles an empty batch with the config shipped beside it', () => {
    writeFileSync(path.join(outDir, RUNTIME_CONFIG_FILE), JSON.stringify(testConfig()));
    const script = `const m = await import(${JSON.stringify(path.join(outDir, BUNDLE_FILE))}); process.stdout.write('\\n' + JSON.stringify(await m.handler({ Records: [] })));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y', AWS_ENDPOINT_URL: 'http://127.0.0.1:9' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    // The handler's own log lines (Powertools, JSON) come first; its answer is the last line.
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) ?? ''), { batchItemFailures: [] });
  });
});

// ---------------------------------------------------------------------------------------------
// Least privilege: the role's runtime actions are exactly the SDK commands the bundled code sends.

const SERVICE_OF_PACKAGE: Record<string, string> = {
  '@aws-sdk/client-dynamodb': 'dynamodb',
  '@aws-sdk/client-s3': 's3',
  '@aws-sdk/client-sqs': 'sqs',
  '@aws-sdk/client-sfn': 'states',
  '@aws-sdk/client-kinesis': 'kinesis',
};

/**
 * Commands constructed in bundled files but sent only by local tooling, each with the method that
 * sends it; the test checks no bundled file calls that method, so an entry goes stale loudly.
 */
const TOOLING_ONLY: readonly { command: string; file: string; method: string }[] = [
  { command: 'dynamodb:Query', file: 'functions/adapters/status-store.ts', method: 'list' },
];

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
          const action = `${service}:${command}`;
          found.set(action, [...(found.get(action) ?? []), file]);
        }
      }
    }
  }
  return found;
}

/** Statements granted for the mapping, logging and keys, not for the handler's own SDK calls. */
const PLATFORM_SIDS = new Set(['ReadStream', 'WriteFailedBatches', 'FailedBatchesListBucket', 'FindCluster', 'ClusterNetworkInterfaces', 'ReadTopicsAsConsumerGroups', 'UsePipelineKey']);

/** The ingest role's policies: the replay, erase and scheduled jobs' roles have their own tests (test/unit/jobs, test/unit/replay). */
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

  it('keeps the tooling-only exclusions true: their methods are not called from bundled code', () => {
    for (const { command, file, method } of TOOLING_ONLY) {
      assert.ok(sent.get(command)?.includes(file), `${command} is no longer sent from ${file}: drop the exclusion`);
      assert.match(readFileSync(path.join(PACKAGE_ROOT, file), 'utf8'), new RegExp(`async ${method}\\(`));
      const callers = functionFiles.filter((f) => new RegExp(`\\.${method}\\(`).test(readFileSync(path.join(PACKAGE_ROOT, f), 'utf8')));
      assert.deepEqual(callers, [], `${method}() is called from the bundle, so ${command} is needed`);
    }
  });

  for (const [name, config] of [
    ['Kinesis, AWS-managed encryption', testConfig()],
    ['MSK, customer-managed key', testConfig({ encryption: 'kms', source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topic: 'shop.cdc' } })],
  ] as const) {
    it(`grants exactly the commands the code sends (${name})`, () => {
      const needed = [...sent.keys()].filter((a) => !TOOLING_ONLY.some((t) => t.command === a)).sort();
      assert.deepEqual([...runtimeActions(Template.fromStack(buildStack(config).stack))].sort(), needed);
    });
  }

  it('adds no Query, enhanced fan-out, ListStreams or kms:Encrypt to the ingest role, and encrypts the environment under kms', () => {
    const template = Template.fromStack(buildStack(testConfig({ encryption: 'kms' })).stack);
    const all = ingestPolicies(template).flatMap((p) =>
      (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])),
    );
    // GetItem is granted on the target tables only (read-merge-put of wide or spilled rows): not on status.
    for (const unwanted of ['dynamodb:Query', 'kinesis:SubscribeToShard', 'kinesis:DescribeStreamConsumer', 'kinesis:ListStreams', 'kms:Encrypt', 'kms:DescribeKey']) {
      assert.ok(!all.includes(unwanted), unwanted);
    }
    // Under `kms` the function's environment is encrypted with the pipeline key too.
    const keyId = Object.keys(template.findResources('AWS::KMS::Key'))[0];
    template.hasResourceProperties('AWS::Lambda::Function', { KmsKeyArn: { 'Fn::GetAtt': [keyId, 'Arn'] } });
  });
});
