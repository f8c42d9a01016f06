/**
 * The LocalStack path, checked statically (Docker cannot run here): pinned versions, the
 * environment cdklocal needs, compose services covering every resource type of the synthesized
 * template and every service the jobs call, scripts that parse and do what `npm run
 * test:localstack` promises, and the jobs e2e.ts runs: an output per state machine, and each input
 * e2e.ts sends accepted by the job's own planning step.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { BatchGetItemCommand, DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { newRunId } from '../../../bin/cli/replay.js';
import { CollectingMetricSink } from '../../../functions/telemetry/sinks.js';
import { loadConfigFile, parseConfig, type TidemarkConfig } from '../../../lib/config/config.js';
import { resolveErase, submitErase } from '../../../functions/erase/erase.js';
import { JobInputError } from '../../../functions/jobs/deps.js';
import { jobDeps } from '../../../functions/composition.js';
import { planReconcileRun } from '../../../functions/jobs/reconcile/run.js';
import type { ReconcileRequest } from '../../../functions/jobs/reconcile/types.js';
import { planSnapshotRun } from '../../../functions/jobs/snapshot/run.js';
import { planReplaySql } from '../../../functions/replay/sql-job.js';
import { planMaintenance } from '../../../functions/jobs/maintenance/plan.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';
import { TidemarkStack } from '../../../lib/stack.js';
import { type CfnTemplate, deployedJobs, deployedTemplates, eraseBlocker, eraseInput, JOB_OUTPUT_IDS, replayTestWindow, settledReconcile, stateMachineIds } from '../../../localstack/jobs.js';
import { type FakeS3, fakeS3 } from '../../helpers/fake-s3.js';
import { FIXTURE_HANDLER } from './fixtures/stack.js';
import { replayContext } from '../../../functions/composition.js';

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

/** The config deploy.sh deploys by default, and its main stack as cdklocal deploys it (under destroy). */
const LOCALSTACK_CONFIG = path.join(PACKAGE_ROOT, 'tidemark.config.json');
function localstackTemplate(config: TidemarkConfig): CfnTemplate {
  const stack = new TidemarkStack(new App(), 'Tidemark-localstack', { config, pipeline: { ingestEntry: FIXTURE_HANDLER, removalPolicy: RemovalPolicy.DESTROY } });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}
const composeServices = () => new Set((/SERVICES: ([a-z0-9,]+)/.exec(read('docker-compose.yml'))?.[1] ?? '').split(','));
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** The JSONPath fields (`$.x`) the first state of a definition reads from the execution input. */
function inputFields(definition: string): string[] {
  const asl = JSON.parse(definition) as { StartAt: string; States: Record<string, { Parameters?: Record<string, unknown> }> };
  const parameters = asl.States[asl.StartAt]?.Parameters ?? {};
  return Object.entries(parameters)
    .filter(([k, v]) => k.endsWith('.$') && typeof v === 'string' && v.startsWith('$.'))
    .map(([, v]) => (v as string).slice(2).split('.')[0] ?? '');
}

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
    const services = composeServices();
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
      Athena: 'athena',
      KMS: 'kms',
      StepFunctions: 'stepfunctions',
      Events: 'events',
      Scheduler: 'scheduler',
      CloudFormation: 'cloudformation',
      SecretsManager: 'secretsmanager',
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
    for (const step of ['PutRecordsCommand', 'getRow(', 'rawLines(', 'listKeys(', 'statusRows(', 'StartExecutionCommand']) assert.ok(e2e.includes(step), `e2e.ts uses ${step}`);
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts['test:localstack'], 'bash localstack/test.sh');
    const ignored = readFileSync(path.join(PACKAGE_ROOT, '.gitignore'), 'utf8').split('\n');
    assert.ok(ignored.includes('localstack/.volume/') && ignored.includes('localstack/.outputs.json'));
  });
});

describe('LocalStack jobs: what e2e.ts finds and sends', () => {
  const config = loadConfigFile(LOCALSTACK_CONFIG);
  const template = localstackTemplate(config);
  const resources = template.Resources ?? {};
  const jobOf = (name: string) => {
    const job = deployedJobs(template).find((j) => j.job === name);
    assert.ok(job, `the stack outputs the ${name} state machine`);
    return job;
  };
  const definitionOf = (logicalId: string): string => {
    const definition = resources[logicalId]?.Properties?.DefinitionString;
    assert.equal(typeof definition, 'string', `${logicalId} has a literal definition`);
    return definition as string;
  };

  it('outputs every state machine of the LocalStack config once, as a Ref, under the ids e2e.ts reads', () => {
    const machines = stateMachineIds(template);
    assert.ok(machines.length >= 4, `state machines: ${machines.join(', ')}`);
    const jobs = deployedJobs(template);
    assert.deepEqual(jobs.map((j) => j.stateMachine).sort(), [...machines].sort(), 'one job output per state machine, and no state machine without one');
    assert.deepEqual(jobs.map((j) => j.job).sort(), Object.keys(JOB_OUTPUT_IDS).sort());
    for (const j of jobs) assert.match(template.Outputs?.[j.outputKey]?.Description ?? '', /input/, `${j.outputKey} describes its input`);
    // Every schedule starts a state machine that has an output, with the input e2e.ts reads.
    const schedules = Object.values(resources).filter((r) => r.Type === 'AWS::Scheduler::Schedule');
    assert.equal(jobs.flatMap((j) => j.scheduled).length, schedules.length, 'every schedule targets an output state machine');
    assert.deepEqual(
      jobOf('reconcile').scheduled.map((s) => s.input),
      [{ mode: 'window' }, { mode: 'full' }],
    );
    assert.deepEqual(
      jobOf('snapshot').scheduled.map((s) => s.input),
      [{}],
    );
  });

  it('reads the deployed templates from a cloud assembly, as cdklocal deploy --output writes it', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'tidemark-cdk-out-'));
    try {
      const app = new App({ outdir });
      // bin/app.ts names the stack Tidemark-<name>; deploy.sh sets this account and region.
      new TidemarkStack(app, `Tidemark-${config.name}`, {
        config,
        env: { account: '000000000000', region: 'us-east-1' },
        pipeline: { ingestEntry: FIXTURE_HANDLER, removalPolicy: RemovalPolicy.DESTROY },
      });
      app.synth();
      const templates = deployedTemplates(outdir, [`Tidemark-${config.name}`]);
      assert.equal(templates.length, 1);
      assert.deepEqual(templates.flatMap((t) => deployedJobs(t).map((j) => j.job)).sort(), Object.keys(JOB_OUTPUT_IDS).sort());
      assert.throws(() => deployedTemplates(outdir, ['Tidemark-other']), /no template of the stacks Tidemark-other/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('keeps the outputs and the scheduled inputs when the schedules are disabled (the state machines stay)', () => {
    const off = parseConfig({
      ...JSON.parse(readFileSync(LOCALSTACK_CONFIG, 'utf8')),
      jobs: { reconcile: { window: { enabled: false }, full: { enabled: false } }, snapshot: { enabled: false } },
      history: { compaction: { enabled: false }, maintenance: { enabled: false } },
    });
    const jobs = deployedJobs(localstackTemplate(off));
    assert.equal(jobs.length, Object.keys(JOB_OUTPUT_IDS).length);
    const scheduled = jobs.flatMap((j) => j.scheduled);
    assert.equal(scheduled.length, 5, 'compaction, reconcile window and full, snapshot, maintenance');
    assert.ok(scheduled.every((s) => !s.enabled));
  });

  it('refuses a template whose job output is not a Ref to a state machine', () => {
    const [first] = deployedJobs(template);
    assert.ok(first);
    const broken: CfnTemplate = { ...template, Outputs: { ...template.Outputs, [first.outputKey]: { Value: 'arn:aws:states:us-east-1:0:stateMachine:x' } } };
    assert.throws(() => deployedJobs(broken), /not a Ref to a state machine/);
  });

  describe('each input e2e.ts sends is accepted by the job’s own planning step', () => {
    const NOW = Date.parse('2026-11-30T12:00:00Z');
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    // The status table as the planning steps read it: an empty erase ledger, no key fingerprint yet, no hour or status rows.
    const ddb = mockClient(dynamodb);
    ddb.on(QueryCommand).resolves({ Items: [] });
    ddb.on(BatchGetItemCommand).resolves({ Responses: {} });
    ddb.on(GetItemCommand).resolves({});
    ddb.on(PutItemCommand).resolves({});
    ddb.on(DescribeTableCommand).callsFake((input: { TableName: string }) => ({ Table: { TableName: input.TableName, TableArn: `arn:aws:dynamodb:us-east-1:000000000000:table/${input.TableName}` } }));
    let s3: FakeS3;
    afterEach(() => s3.restore());

    it('reconcile: both scheduled inputs and the settled run plan; a bad mode is refused', async () => {
      s3 = fakeS3();
      const deps = jobDeps(config, { s3: s3.client, dynamodb }, { metrics: new CollectingMetricSink(), log: quiet, now: () => NOW });
      const job = jobOf('reconcile');
      for (const s of job.scheduled) {
        const plan = await planReconcileRun(s.input as ReconcileRequest, deps);
        assert.equal(plan.run.mode, s.input.mode);
        assert.deepEqual(plan.run.tables, config.tables.map((t) => t.source));
      }
      const full = job.scheduled.find((s) => s.input.mode === 'full');
      assert.ok(full);
      const settled = await planReconcileRun(settledReconcile(full.input), deps);
      assert.equal(settled.run.mode, 'full');
      assert.equal(settled.run.cutoff, settled.run.startedAt, 'the settled run compares everything landed before it starts');
      assert.equal(definitionOf(job.stateMachine).includes('"StartAt":"Plan"'), true, 'the input goes to Plan whole');
      await assert.rejects(planReconcileRun({ mode: 'weekly' } as unknown as ReconcileRequest, deps), JobInputError);
    });

    it('snapshot: the scheduled input plans every table; a bad window is refused', async () => {
      s3 = fakeS3();
      const deps = jobDeps(config, { s3: s3.client, dynamodb }, { metrics: new CollectingMetricSink(), log: quiet, now: () => NOW });
      for (const s of jobOf('snapshot').scheduled) {
        const plan = await planSnapshotRun(s.input, deps);
        assert.deepEqual(plan.run.tables, config.tables.map((t) => t.source));
        assert.equal(plan.queries.count, 3, 'anomalies, re-snapshots, orphans');
      }
      await assert.rejects(planSnapshotRun({ hours: 0 }, deps), JobInputError);
    });

    it('maintenance: the scheduled input plans OPTIMIZE and VACUUM of the four Iceberg tables; a table that is not Iceberg is refused', async () => {
      s3 = fakeS3();
      const deps = jobDeps(config, { s3: s3.client, dynamodb }, { metrics: new CollectingMetricSink(), log: quiet, now: () => NOW });
      const scheduled = jobOf('maintenance').scheduled;
      assert.equal(scheduled.length, 1);
      for (const s of scheduled) {
        const plan = await planMaintenance(s.input, deps);
        assert.equal(plan.queries.count, 8);
      }
      await assert.rejects(planMaintenance({ tables: ['raw_lines'] }, deps), JobInputError);
    });

    it('replay: the test-window request plans a live replay; a bad target is refused', async () => {
      s3 = fakeS3();
      const ctx = replayContext(config, { s3: s3.client, dynamodb }, quiet);
      const request = replayTestWindow(config, newRunId('replay'), { since: NOW - 3_600_000, until: NOW }, NOW);
      const asl = JSON.parse(definitionOf(jobOf('replay').stateMachine)) as { States: { Plan: { Parameters: Record<string, unknown> } } };
      assert.equal(asl.States.Plan.Parameters['request.$'], '$', 'the whole input is the ReplayRequest');
      const plan = await planReplaySql(ctx, request);
      assert.equal(plan.runId, request.runId);
      assert.equal(plan.freshTable, null, 'into the live tables');
      assert.ok(s3.keys().includes(plan.manifestKey));
      await assert.rejects(planReplaySql(ctx, { ...request, into: 'elsewhere' }));
    });

    it('erase: the input carries every field the first state reads, and the stored request resolves; an unknown table is refused', async () => {
      s3 = fakeS3();
      const ctx = { config, clients: { s3: s3.client, dynamodb }, log: quiet, env: { TIDEMARK_ERASE_KEY: 'unit-test-ledger-key-0123456789' } };
      const runId = newRunId('erase');
      const requestKey = await submitErase(ctx, runId, { table: 'public.customers', key: { id: 1 }, reason: 'static check' });
      const input = eraseInput(runId, requestKey);
      const fields = inputFields(definitionOf(jobOf('erase').stateMachine));
      assert.deepEqual(fields.sort(), Object.keys(input).sort());
      const resolved = await resolveErase(ctx, input.requestKey);
      assert.deepEqual(resolved.map((r) => [r.table.source, r.canonical]), [['public.customers', '["1"]']]);
      await assert.rejects(submitErase(ctx, runId, { table: 'public.nope', key: { id: 1 }, reason: 'x' }));
    });
  });

  it('erase runs on the deployed default config: the generated ledger key secret, read with GetSecretValue (no extension layer)', () => {
    assert.equal(config.replay.erase.ledgerKeySecret.startsWith('env:'), true, 'the LocalStack config keeps the default reference');
    assert.equal(eraseBlocker(template, config), null);
    const erase = jobOf('erase');
    const substitutions = resources[erase.stateMachine]?.Properties?.DefinitionSubstitutions as Record<string, { 'Fn::GetAtt': [string, string] }>;
    const fnId = Object.values(substitutions)[0]?.['Fn::GetAtt'][0] ?? '';
    const fn = resources[fnId];
    assert.ok(fn);
    assert.equal(fn.Properties?.Layers, undefined, 'no layer LocalStack would have to fetch from AWS');
    // Without the generated secret, an env: reference needs the variable on the function.
    const noSecret: CfnTemplate = { ...template, Resources: Object.fromEntries(Object.entries(resources).filter(([, r]) => r.Type !== 'AWS::SecretsManager::Secret')) };
    assert.match(eraseBlocker(noSecret, config) ?? '', /has no TIDEMARK_ERASE_KEY in its environment/);
    const withKey: CfnTemplate = { ...noSecret, Resources: { ...noSecret.Resources, [fnId]: { ...fn, Properties: { ...fn.Properties, Environment: { Variables: { TIDEMARK_ERASE_KEY: 'k' } } } } } };
    assert.equal(eraseBlocker(withKey, config), null);
    // A stack built before this change (the extension layer on the function) is still recognized.
    const withLayer: CfnTemplate = {
      ...template,
      Resources: { ...resources, [fnId]: { ...fn, Properties: { ...fn.Properties, Layers: ['arn:aws:lambda:us-east-1:177933569100:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:12'] } } },
    };
    assert.match(eraseBlocker(withLayer, config) ?? '', /Parameters and Secrets Lambda extension/);
  });

  it('starts and waits for stepfunctions, scheduler and every service the jobs’ roles call (default and kms)', () => {
    const services = composeServices();
    const polled = (/"(cloudformation,[a-z0-9,]+)"; then/.exec(read('deploy.sh'))?.[1] ?? '').split(',');
    for (const svc of ['stepfunctions', 'scheduler']) {
      assert.ok(services.has(svc), `SERVICES has ${svc}`);
      assert.ok(polled.includes(svc), `deploy.sh waits for ${svc}`);
    }
    const SERVICE_OF_ACTION: Record<string, string> = {
      s3: 's3',
      dynamodb: 'dynamodb',
      lambda: 'lambda',
      states: 'stepfunctions',
      logs: 'logs',
      xray: 'xray',
      kms: 'kms',
      sqs: 'sqs',
      secretsmanager: 'secretsmanager',
      cloudwatch: 'cloudwatch',
      athena: 'athena',
      glue: 'glue',
    };
    const kms = parseConfig({ ...JSON.parse(readFileSync(LOCALSTACK_CONFIG, 'utf8')), encryption: 'kms' });
    for (const t of [template, localstackTemplate(kms)]) {
      const res = t.Resources ?? {};
      const getAtt = (v: unknown): string | undefined => {
        const g = (v as { 'Fn::GetAtt'?: unknown } | undefined)?.['Fn::GetAtt'];
        return Array.isArray(g) && typeof g[0] === 'string' ? g[0] : undefined;
      };
      const roles = new Set<string>();
      for (const j of deployedJobs(t)) {
        const machine = res[j.stateMachine]?.Properties ?? {};
        const role = getAtt(machine.RoleArn);
        if (role) roles.add(role);
        for (const sub of Object.values((machine.DefinitionSubstitutions ?? {}) as Record<string, unknown>)) {
          const fnRole = getAtt(res[getAtt(sub) ?? '']?.Properties?.Role);
          if (fnRole) roles.add(fnRole);
        }
      }
      for (const r of Object.values(res).filter((x) => x.Type === 'AWS::Scheduler::Schedule')) {
        const role = getAtt((r.Properties?.Target as { RoleArn?: unknown } | undefined)?.RoleArn);
        if (role) roles.add(role);
      }
      assert.ok(roles.size >= 4 + 8, `roles of the jobs' state machines, functions and schedules: ${roles.size}`);
      const prefixes = new Set<string>();
      for (const p of Object.values(res).filter((x) => x.Type === 'AWS::IAM::Policy')) {
        const attached = ((p.Properties?.Roles ?? []) as { Ref?: string }[]).some((r) => r.Ref !== undefined && roles.has(r.Ref));
        if (!attached) continue;
        for (const st of ((p.Properties?.PolicyDocument ?? { Statement: [] }) as { Statement: { Action: string | string[] }[] }).Statement) {
          for (const action of [st.Action].flat()) prefixes.add(action.split(':')[0] ?? '');
        }
      }
      assert.ok(prefixes.has('states') && prefixes.has('lambda') && prefixes.has('s3') && prefixes.has('dynamodb'), [...prefixes].join(', '));
      for (const prefix of prefixes) {
        const svc = SERVICE_OF_ACTION[prefix];
        assert.ok(svc, `map the jobs' ${prefix}:* actions to a LocalStack service in this test`);
        assert.ok(services.has(svc), `the jobs call ${prefix}:*: SERVICES needs "${svc}"`);
      }
    }
  });

  it('deploy.sh keeps the deployed templates and test.sh hands them to e2e.ts, which runs every job through checks.ts', () => {
    assert.match(read('deploy.sh'), /deploy --all [^\n]*--output "\$\{HERE\}\/\.cdk\.out"/);
    const test = read('test.sh');
    assert.match(test, /e2e\.ts" "\$\{CONFIG_FILE\}" "\$\{HERE\}\/\.outputs\.json" "\$\{HERE\}\/\.cdk\.out"/);
    assert.match(test, /rm -rf [^\n]*"\$\{HERE\}\/\.cdk\.out"/);
    assert.ok(read('.gitignore').split('\n').includes('.cdk.out/'));
    const e2e = read('e2e.ts');
    for (const step of ['deployedTemplates(cdkOutDir', 'deployedJobs(', 'eraseBlocker(', 'DescribeExecutionCommand', 'checkReconcile(', 'checkSnapshot(', 'checkReplay(', 'checkErase(']) {
      assert.ok(e2e.includes(step), `e2e.ts uses ${step}`);
    }
    const checks = read('checks.ts');
    for (const step of ['settledReconcile(', 'replayTestWindow(', 'submitErase(', 'eraseInput(', 'job.scheduled']) assert.ok(checks.includes(step), `checks.ts uses ${step}`);
    // The rehearsal runs the same checks with the local runners.
    const rehearse = read('rehearse.ts');
    for (const step of ['checkReconcile(', 'checkSnapshot(', 'checkReplay(', 'checkErase(', 'deployedJobs(']) assert.ok(rehearse.includes(step), `rehearse.ts uses ${step}`);
    for (const text of [e2e, checks]) assert.ok(!/input: '\{\}'/.test(text), 'no job is started with an invented empty input');
  });
});
