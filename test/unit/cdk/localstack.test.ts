/**
 * The LocalStack path, checked statically (Docker cannot run here): pinned versions, the
 * environment cdklocal needs, compose services covering every resource type of the synthesized
 * template, and scripts that parse and do what `npm run test:localstack` promises.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { loadConfigFile, parseConfig } from '../../../functions/commons/config.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';
import { TidemarkStack } from '../../../lib/stack.js';
import { FIXTURE_HANDLER } from './fixtures/stack.js';

const dir = path.join(PACKAGE_ROOT, 'localstack');
const read = (file: string) => readFileSync(path.join(dir, file), 'utf8');
const versions = Object.fromEntries(
  read('versions.env')
    .split('\n')
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => l.split('=') as [string, string]),
);
const lock = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };

/**
 * Pinned tools that are not in the lockfile, with the reason. aws-cdk-local is fetched by npx at
 * the pinned version: adding it as a devDependency was out of scope for this change.
 */
const NOT_IN_LOCKFILE: Record<string, string> = { CDKLOCAL_VERSION: 'aws-cdk-local, run through npx at this exact version' };

describe('LocalStack path', () => {
  it('pins every version exactly, and the aws-cdk cdklocal wraps is the lockfile’s', () => {
    for (const [name, value] of Object.entries(versions)) assert.match(value, /^\d+\.\d+\.\d+$/, `${name}=${value} is an exact version`);
    assert.equal(versions.AWS_CDK_VERSION, lock.packages['node_modules/aws-cdk']?.version, 'aws-cdk in versions.env = package-lock.json');
    for (const name of Object.keys(versions).filter((n) => n !== 'AWS_CDK_VERSION' && n !== 'LOCALSTACK_IMAGE_TAG')) {
      assert.ok(NOT_IN_LOCKFILE[name], `${name} is neither in the lockfile nor explained`);
    }
    assert.match(read('docker-compose.yml'), /image: localstack\/localstack-pro:\$\{LOCALSTACK_IMAGE_TAG:\?/, 'the image tag comes from versions.env, never latest');
    for (const script of ['deploy.sh', 'test.sh']) {
      assert.match(read(script), /source "\$\{HERE\}\/versions\.env"/, `${script} reads versions.env`);
      assert.match(read(script), /aws-cdk-local@\$\{CDKLOCAL_VERSION\}" --package "aws-cdk@\$\{AWS_CDK_VERSION\}/, `${script} pins both packages`);
    }
  });

  it('sets every environment variable cdklocal needs before bootstrap and deploy', () => {
    const text = read('deploy.sh');
    const exported = new Map([...text.matchAll(/^export ([A-Z_0-9]+)="([^"]*)"/gm)].map((m) => [m[1], m[2]]));
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_DEFAULT_REGION', 'AWS_REGION', 'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_ENVAR_ALLOWLIST', 'CDK_DEFAULT_ACCOUNT', 'CDK_DEFAULT_REGION']) {
      assert.ok(exported.has(name), `deploy.sh exports ${name}`);
      assert.ok(text.indexOf(`export ${name}=`) < text.indexOf('bootstrap --no-notices'), `${name} is set before bootstrap`);
    }
    // aws-cdk-local src/index.js (localstack/aws-cdk-local): with AWS_ENDPOINT_URL set it refuses to
    // run unless AWS_ENDPOINT_URL_S3 is set too, on a host whose subdomains resolve (bucket-style URLs).
    assert.match(exported.get('AWS_ENDPOINT_URL_S3') ?? '', /^http:\/\/s3\.localhost\.localstack\.cloud:/, 'an S3 endpoint with resolvable subdomains');
    const allow = (exported.get('AWS_ENVAR_ALLOWLIST') ?? '').split(',');
    for (const name of ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) assert.ok(allow.includes(name), `AWS_ENVAR_ALLOWLIST keeps ${name}`);
    assert.match(text, /-c "tidemark:removalPolicy=destroy"/);
  });

  it('starts every service of the synthesized templates (default and kms, with destroy)', () => {
    const services = new Set((/SERVICES: ([a-z0-9,]+)/.exec(read('docker-compose.yml'))?.[1] ?? '').split(','));
    const SERVICE_OF: Record<string, string> = {
      Lambda: 'lambda',
      Kinesis: 'kinesis',
      DynamoDB: 'dynamodb',
      S3: 's3',
      SQS: 'sqs',
      SNS: 'sns',
      IAM: 'iam',
      Logs: 'logs',
      CloudWatch: 'cloudwatch',
      Glue: 'glue',
      KMS: 'kms',
      StepFunctions: 'stepfunctions',
      Events: 'events',
      Scheduler: 'scheduler',
      CloudFormation: 'cloudformation',
    };
    const example = loadConfigFile(path.join(PACKAGE_ROOT, 'tidemark.config.json'));
    const types = new Set<string>();
    for (const config of [example, parseConfig({ ...JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'tidemark.config.json'), 'utf8')), encryption: 'kms' })]) {
      const app = new App();
      const stack = new TidemarkStack(app, 'Tidemark-localstack', { config, pipeline: { ingestEntry: FIXTURE_HANDLER, removalPolicy: RemovalPolicy.DESTROY } });
      for (const s of stack.node.findAll().filter((c): c is Stack => Stack.isStack(c))) {
        for (const r of Object.values(Template.fromStack(s).toJSON().Resources as Record<string, { Type: string }>)) types.add(r.Type);
      }
    }
    assert.ok(types.has('Custom::S3AutoDeleteObjects'), 'destroy empties the buckets through a custom resource');
    for (const type of types) {
      const svc = type.startsWith('Custom::') ? 'lambda' : SERVICE_OF[type.split('::')[1] ?? ''];
      assert.ok(svc, `map ${type} to a LocalStack service in this test`);
      assert.ok(services.has(svc), `${type} needs the LocalStack service "${svc}"`);
    }
    for (const bootstrap of ['cloudformation', 'sts', 'ssm', 'ecr', 's3', 'iam']) assert.ok(services.has(bootstrap), `cdk bootstrap needs ${bootstrap}`);
  });

  it('runs the real stack end to end and tears it down: scripts parse, and test.sh deploys, drives e2e.ts, destroys', () => {
    for (const script of ['deploy.sh', 'test.sh']) execFileSync('bash', ['-n', path.join(dir, script)]);
    const test = read('test.sh');
    assert.match(test, /bash "\$\{HERE\}\/deploy\.sh"/);
    assert.match(test, /node --import tsx "\$\{HERE\}\/e2e\.ts"/);
    assert.match(test, /cdklocal destroy --all --force/);
    assert.match(test, /trap cleanup EXIT/);
    const e2e = read('e2e.ts');
    for (const step of ['PutRecordsCommand', 'getRow(', 'ListObjectsV2Command', 'statusRows(', 'StartExecutionCommand']) assert.ok(e2e.includes(step), `e2e.ts uses ${step}`);
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts['test:localstack'], 'bash localstack/test.sh');
    const ignored = readFileSync(path.join(PACKAGE_ROOT, '.gitignore'), 'utf8').split('\n');
    assert.ok(ignored.includes('localstack/.volume/') && ignored.includes('localstack/.outputs.json'));
  });
});
