/**
 * The jobs in the synthesized stack: the deployed definitions are exactly the shared builders'
 * (so the local runner runs what AWS runs) and, rendered with their substitutions, valid ASL; one
 * function per handler of functions/jobs/handlers.ts; every task retries and is caught; each
 * function role and each state machine role holds only its own grants; schedules follow the config
 * with retries and a dead-letter queue; failed executions and findings alarm.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Match } from 'aws-cdk-lib/assertions';
import { forEachState } from '../../../../bin/local/stepfunctions.js';
import { ATHENA_WORKGROUP, JOB_DEFINITIONS, QUERY_AT_FUNCTION } from '../../../../lib/jobs/definitions.js';
import { hasDistributedMap } from '../../../../lib/jobs/job.js';
import { commonPrefix, describeExportResources } from '../../../../lib/jobs/jobs.js';
import { PACKAGE_ROOT } from '../../../../lib/defaults.js';
import { templateOf, testConfig } from '../fixtures/stack.js';
import { validateAsl } from '../../../helpers/asl.js';

type Res = Record<string, { Properties: Record<string, unknown> }>;
interface Statement {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const template = templateOf(
  testConfig({ jobs: { reconcile: { full: { enabled: false } }, snapshot: { schedule: 'rate(2 hours)' } }, history: { compaction: { schedule: 'cron(10 * * * ? *)' }, maintenance: { enabled: false } } }),
);
const resources = (type: string): Res => template.findResources(type) as Res;
const machines = resources('AWS::StepFunctions::StateMachine');
const functions = resources('AWS::Lambda::Function');
const policies = Object.entries(resources('AWS::IAM::Policy'));
const byMachineName = new Map(Object.values(machines).map((m) => [m.Properties.StateMachineName as string, m.Properties]));
const JOBS = { compaction: 'shop-compaction', reconcile: 'shop-reconcile', snapshot: 'shop-snapshot', maintenance: 'shop-maintenance' } as const;

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
/** Every statement of the inline policies of the roles whose logical id starts with `prefix`. */
function statementsOf(prefix: string): Statement[] {
  const found = policies.filter(([id]) => id.startsWith(prefix));
  assert.ok(found.length > 0, `a policy for ${prefix}`);
  return found.flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}
const actionsOf = (prefix: string): Set<string> => new Set(statementsOf(prefix).flatMap((s) => list(s.Action)));
/** The actions of a role but its log group's, X-Ray's and the erase ledger key's (every job function reads it at cold start to name keys in logs). */
const taskActions = (prefix: string): string[] => [...actionsOf(prefix)].filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:') && a !== 'secretsmanager:GetSecretValue').sort();
/** Resources as text, Fn::Join parts concatenated and references named. */
function text(resource: unknown): string {
  if (typeof resource === 'string') return resource;
  if (Array.isArray(resource)) return resource.map(text).join(',');
  if (resource && typeof resource === 'object') {
    const o = resource as Record<string, unknown>;
    if ('Fn::Join' in o) return ((o['Fn::Join'] as [string, unknown[]])[1] ?? []).map(text).join('');
    if ('Fn::GetAtt' in o) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
    if ('Ref' in o) return `<${String(o.Ref)}>`;
  }
  return JSON.stringify(resource);
}
const resourcesOf = (prefix: string, action: string): string[] =>
  statementsOf(prefix)
    .filter((s) => list(s.Action).includes(action))
    .flatMap((s) => list(s.Resource as unknown).map(text));

/** `${Name}` substitutions a definition uses. */
function substitutionsUsed(definition: unknown): Set<string> {
  return new Set([...JSON.stringify(definition).matchAll(/\$\{([A-Za-z0-9]+)\}/g)].map((m) => m[1] ?? ''));
}

describe('job definitions', () => {
  for (const [name, job] of Object.entries(JOB_DEFINITIONS)) {
    it(`${name}: valid ASL; every Task (nested ones too) retries, is caught and times out; it names only its own functions and the workgroup`, () => {
      const def = job.build();
      assert.deepEqual(validateAsl(def), []);
      let tasks = 0;
      // A Task of a Distributed Map's child execution fails that child; the Map state catches it.
      const walk = (states: Record<string, Record<string, unknown>>, inCaughtMap: boolean) => {
        for (const [state, s] of Object.entries(states)) {
          if (s.Type === 'Map') {
            assert.ok(Array.isArray(s.Catch) && s.Catch.length > 0, `${state} is caught`);
            walk((s.ItemProcessor as { States: Record<string, Record<string, unknown>> }).States, true);
          }
          if (s.Type !== 'Task') continue;
          tasks++;
          assert.ok(Array.isArray(s.Retry) && s.Retry.length > 0, `${state} retries`);
          assert.ok(inCaughtMap || (Array.isArray(s.Catch) && s.Catch.length > 0), `${state} is caught`);
          assert.equal(typeof s.TimeoutSeconds, 'number', `${state} has a timeout`);
        }
      };
      walk(def.States as Record<string, Record<string, unknown>>, false);
      let visited = 0;
      forEachState(def, (_state, s) => {
        if (s.Type === 'Task') visited++;
      });
      assert.equal(tasks, visited, 'every Task, nested ones too, was checked');
      assert.ok(tasks >= Object.keys(job.tasks).length + 2, `${tasks} tasks: every function and a query loop`);
      assert.deepEqual([...substitutionsUsed(def)].sort(), [...Object.values(job.tasks), QUERY_AT_FUNCTION, ATHENA_WORKGROUP].sort());
    });
  }
});

describe("reconcile's DescribeExport resources", () => {
  it('names each target while they fit one statement, then one pattern over their common prefix', () => {
    assert.deepEqual(describeExportResources(['shop-a', 'shop-b']), ['shop-a/export/*', 'shop-b/export/*']);
    const many = Array.from({ length: 200 }, (_, i) => `shop-table-${i}`);
    assert.deepEqual(describeExportResources(many), ['shop-table-*/export/*']);
    const unrelated = many.map((n, i) => (i === 0 ? 'other' : n));
    assert.equal(describeExportResources(unrelated).length, 200, 'no common prefix: every target, never every table');
    assert.equal(commonPrefix(['ab', 'abc', 'a']), 'a');
    assert.equal(commonPrefix([]), '');
  });
});

describe('jobs in the stack', () => {
  it('deploys exactly the shared definitions, each substitution a function of the stack running its own handler, or the workgroup', () => {
    for (const [job, name] of Object.entries(JOBS) as [keyof typeof JOBS, string][]) {
      const m = byMachineName.get(name);
      assert.ok(m, `${name} exists`);
      assert.deepEqual(JSON.parse(m.DefinitionString as string), JOB_DEFINITIONS[job].build());
      const subs = m.DefinitionSubstitutions as Record<string, unknown>;
      assert.deepEqual(Object.keys(subs).sort(), [...Object.values(JOB_DEFINITIONS[job].tasks), QUERY_AT_FUNCTION, ATHENA_WORKGROUP].sort());
      assert.equal(subs[ATHENA_WORKGROUP], 'shop-jobs');
      for (const [sub, ref] of Object.entries(subs)) {
        if (sub === ATHENA_WORKGROUP) continue;
        const fn = functions[(ref as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]];
        assert.ok(fn, `${sub} is a function of the stack`);
        // ReconcilePlanFunction → index.reconcilePlan; JobQueryAtFunction → index.jobQueryAt
        const handler = `index.${sub.charAt(0).toLowerCase()}${sub.slice(1).replace(/Function$/, '')}`;
        assert.equal(fn.Properties.Handler, handler, sub);
      }
    }
    // One query fetcher serves the jobs' four query loops.
    const queryAt = new Set(Object.values(JOBS).map((name) => JSON.stringify(((byMachineName.get(name)?.DefinitionSubstitutions ?? {}) as Record<string, unknown>)[QUERY_AT_FUNCTION])));
    assert.equal(queryAt.size, 1);
  });

  it('renders, with its substitutions, to valid ASL whose ARNs asl-validator checks', () => {
    for (const name of Object.values(JOBS)) {
      const m = byMachineName.get(name);
      assert.ok(m);
      let rendered = m.DefinitionString as string;
      for (const [sub, value] of Object.entries(m.DefinitionSubstitutions as Record<string, unknown>)) {
        const arn = typeof value === 'string' ? value : `arn:aws:lambda:us-east-1:111122223333:function:${(value as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]}`;
        rendered = rendered.split(`\${${sub}}`).join(arn);
      }
      assert.doesNotMatch(rendered, /\$\{/, `${name}: every substitution is rendered`);
      assert.deepEqual(validateAsl(JSON.parse(rendered)), [], name);
    }
  });

  it('deploys one function per handler of functions/jobs/handlers.ts, each with its own role', () => {
    const source = readFileSync(path.join(PACKAGE_ROOT, 'functions', 'jobs', 'handlers.ts'), 'utf8');
    const exported = [...source.matchAll(/^export const (\w+) = withDeps/gm)].map((m) => m[1] ?? '').sort();
    assert.ok(exported.length >= 10, exported.join(', '));
    const jobFunctions = Object.values(functions).filter((f) => /^shop-(compaction|reconcile|snapshot|maintenance|jobs)-/.test(String(f.Properties.FunctionName)));
    assert.deepEqual(jobFunctions.map((f) => String(f.Properties.Handler).replace(/^index\./, '')).sort(), exported);
    assert.equal(new Set(jobFunctions.map((f) => JSON.stringify(f.Properties.Role))).size, jobFunctions.length, 'a role each');
    for (const f of jobFunctions) {
      assert.equal(f.Properties.Timeout, 900);
      assert.deepEqual(f.Properties.Architectures, ['arm64']);
    }
  });

  it('logs executions (without data) and traces them', () => {
    for (const m of Object.values(machines)) {
      assert.deepEqual((m.Properties.LoggingConfiguration as { Level: string; IncludeExecutionData: boolean }).Level, 'ALL');
      assert.equal((m.Properties.LoggingConfiguration as { IncludeExecutionData: boolean }).IncludeExecutionData, false);
      assert.deepEqual(m.Properties.TracingConfiguration, { Enabled: true });
    }
  });

  it('schedules from config: compaction by history.compaction.schedule, window on, full disabled, snapshot every two hours, maintenance daily (disabled here), each with retries and a DLQ', () => {
    const schedules = Object.values(resources('AWS::Scheduler::Schedule')).map((s) => s.Properties);
    const byName = new Map(schedules.map((s) => [s.Name, s]));
    assert.deepEqual([...byName.keys()].sort(), ['shop-compaction-hourly', 'shop-maintenance-daily', 'shop-reconcile-full', 'shop-reconcile-window', 'shop-snapshot-detect']);
    assert.equal(byName.get('shop-maintenance-daily')?.ScheduleExpression, 'cron(30 3 * * ? *)', 'the default: daily at 03:30 UTC');
    assert.equal(byName.get('shop-maintenance-daily')?.State, 'DISABLED', 'history.maintenance.enabled: false');
    assert.equal(byName.get('shop-compaction-hourly')?.ScheduleExpression, 'cron(10 * * * ? *)');
    assert.equal(byName.get('shop-compaction-hourly')?.State, 'ENABLED');
    assert.equal(byName.get('shop-reconcile-window')?.State, 'ENABLED');
    assert.equal(byName.get('shop-reconcile-window')?.ScheduleExpression, 'rate(1 hour)');
    assert.equal(byName.get('shop-reconcile-full')?.State, 'DISABLED');
    assert.equal(byName.get('shop-snapshot-detect')?.ScheduleExpression, 'rate(2 hours)');
    for (const s of schedules) {
      const target = s.Target as { RetryPolicy: unknown; DeadLetterConfig: { Arn: unknown }; Input: string };
      assert.deepEqual(target.RetryPolicy, { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 });
      assert.ok(target.DeadLetterConfig.Arn);
    }
    const input = (name: string) => JSON.parse((byName.get(name)?.Target as { Input: string } | undefined)?.Input ?? 'null') as unknown;
    assert.deepEqual(input('shop-reconcile-full'), { mode: 'full' });
    assert.deepEqual(input('shop-compaction-hourly'), {});
  });

  it('gives each task role only its own grants', () => {
    const role = (handler: string) => `PipelineJobs${handler.charAt(0).toUpperCase()}${handler.slice(1)}Role`;
    assert.deepEqual(taskActions(role('jobQueryAt')), ['s3:GetObject']);
    assert.deepEqual(taskActions(role('compactionPlan')), ['s3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(taskActions(role('compactionFinish')), ['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(resourcesOf(role('compactionFinish'), 's3:DeleteObject'), ['<PipelineRawBucket356BBD72.Arn>/raw/dt=*'], 'only batch objects of raw are deleted');
    assert.deepEqual(resourcesOf(role('compactionFinish'), 's3:PutObject'), ['<PipelineRawBucket356BBD72.Arn>/history/state/*']);
    assert.deepEqual(taskActions(role('reconcilePlan')), ['dynamodb:BatchGetItem', 'dynamodb:DescribeTable', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(taskActions(role('reconcileExportFiles')), [], 'names a manifest: no AWS call');
    assert.deepEqual(taskActions(role('reconcileTableSide')), ['s3:GetObject', 's3:PutObject']);
    assert.deepEqual(taskActions(role('reconcileWindowSide')), ['dynamodb:BatchGetItem', 's3:GetObject', 's3:PutObject']);
    assert.deepEqual(taskActions(role('reconcileReport')), ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 's3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(taskActions(role('reconcileRepairPlan')), ['dynamodb:Query', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(taskActions(role('reconcileRepair')), ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(
      resourcesOf(role('reconcileReport'), 'dynamodb:UpdateItem').map((r) => r.replace(/<[^>]*StatusTable[^>]*>/, '<status>')),
      ['<status>'],
      'the last run is recorded on the status table only',
    );
    assert.deepEqual(resourcesOf(role('reconcileReport'), 's3:DeleteObject').sort(), ['<PipelineRawBucket356BBD72.Arn>/history/table_side/*', '<PipelineRawBucket356BBD72.Arn>/history/unload/reconcile/*']);
    assert.deepEqual(taskActions(role('snapshotPlan')), ['dynamodb:BatchGetItem', 's3:PutObject']);
    assert.deepEqual(taskActions(role('maintenancePlan')), ['s3:PutObject']);
    assert.deepEqual(resourcesOf(role('maintenancePlan'), 's3:PutObject'), ['<PipelineRawBucket356BBD72.Arn>/jobs/maintenance/*'], 'only its stored queries');
    assert.ok(resourcesOf(role('jobQueryAt'), 's3:GetObject').includes('<PipelineRawBucket356BBD72.Arn>/jobs/maintenance/*'), 'the fetch reads maintenance queries');
    assert.deepEqual(taskActions(role('snapshotReport')), ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 's3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    assert.deepEqual(resourcesOf(role('snapshotReport'), 's3:DeleteObject'), ['<PipelineRawBucket356BBD72.Arn>/history/unload/snapshot/*'], 'only its own outputs are deleted');
    assert.ok(
      resourcesOf(role('snapshotReport'), 'dynamodb:UpdateItem').some((r) => /StatusTable/.test(r)),
      'open findings are recorded on the status table',
    );
    // The plans read lifecycles, snapshot's report the schema drift: from the status table only.
    for (const [handler, sid] of [['reconcilePlan', 'ReadLifecycles'], ['snapshotPlan', 'ReadLifecycles'], ['snapshotReport', 'ReadSchemaDrift']] as const) {
      const reads = statementsOf(role(handler)).filter((s) => s.Sid === sid);
      assert.deepEqual(reads.map((s) => list(s.Action)), [['dynamodb:BatchGetItem']], `${handler}: ${sid}`);
      assert.ok(reads.flatMap((s) => list(s.Resource as unknown).map(text)).every((r) => /StatusTable/.test(r)), `${handler}: ${sid} on the status table only`);
    }
    for (const handler of ['reconcileWindowSide', 'snapshotReport', 'reconcilePlan']) {
      const tables = statementsOf(role(handler))
        .filter((s) => list(s.Action).some((a) => a.startsWith('dynamodb:')) && !['RecordOpenFindings', 'ReadLifecycles', 'ReadSchemaDrift'].includes(String(s.Sid)))
        .flatMap((s) => list(s.Resource as unknown).map(text));
      assert.deepEqual(tables.map((t) => t.replace(/^.*:table\//, '')).sort(), ['shop-customers', 'shop-order-lines', 'shop-shipments'], `${handler}: the target tables by name`);
    }
  });

  it('gives each state machine role its Athena queries, its tables, its prefixes and its functions only', () => {
    const machineRole = (job: string) => `PipelineJobs${job}StateMachineRole`;
    const workGroupArn = 'arn:<AWS::Partition>:athena:us-east-1:111122223333:workgroup/shop-jobs';
    const glue = (t: string) => `arn:<AWS::Partition>:glue:us-east-1:111122223333:table/tidemark_shop/${t}`;
    for (const job of ['Compaction', 'Reconcile', 'Snapshot']) {
      const statements = statementsOf(machineRole(job));
      const athena = statements.filter((s) => list(s.Action).some((a) => a.startsWith('athena:')));
      assert.equal(athena.length, 1);
      assert.deepEqual(list(athena[0]?.Action ?? []).sort(), ['athena:GetQueryExecution', 'athena:StartQueryExecution', 'athena:StopQueryExecution']);
      assert.deepEqual(list(athena[0]?.Resource as unknown).map(text), [workGroupArn]);
      const actions = actionsOf(machineRole(job));
      for (const a of ['glue:GetTable', 'glue:GetDatabase', 'glue:GetPartition', 'glue:GetPartitions', 's3:GetBucketLocation', 'lambda:InvokeFunction']) assert.ok(actions.has(a), `${job}: ${a}`);
      assert.deepEqual(
        resourcesOf(machineRole(job), 's3:PutObject').filter((r) => r.endsWith('/history/athena/*')),
        ['<PipelineRawBucket356BBD72.Arn>/history/athena/*'],
        `${job} writes its query results`,
      );
      assert.equal(actions.has('states:StartExecution'), job === 'Reconcile', `${job}: child executions only with a Distributed Map`);
      assert.equal([...actions].some((a) => a.startsWith('dynamodb:')), job === 'Reconcile', `${job}: table exports are reconcile's`);
      assert.equal(actions.has('glue:UpdateTable'), job === 'Compaction', `${job}: only compaction commits to Iceberg tables`);
      assert.ok(![...actions].some((a) => a === 's3:DeleteObject' || a.startsWith('glue:Create') || a.startsWith('glue:Delete')), `${job} deletes nothing`);
    }
    // Maintenance: its queries in the workgroup, every Iceberg table committed, and files deleted under the warehouse only (VACUUM).
    const maintenance = statementsOf(machineRole('Maintenance'));
    assert.deepEqual(list(maintenance.find((s) => list(s.Action).includes('athena:StartQueryExecution'))?.Resource as unknown).map(text), [workGroupArn]);
    assert.deepEqual(resourcesOf(machineRole('Maintenance'), 'glue:UpdateTable').sort(), ['expected_state', 'history', 'table_hours', 'truncates'].map(glue));
    assert.ok(!resourcesOf(machineRole('Maintenance'), 'glue:GetTable').includes(glue('raw_lines')), 'maintenance reads no raw');
    assert.deepEqual(resourcesOf(machineRole('Maintenance'), 's3:DeleteObject'), ['<PipelineRawBucket356BBD72.Arn>/history/warehouse/*'], 'VACUUM deletes warehouse files only');
    assert.deepEqual(resourcesOf(machineRole('Maintenance'), 's3:PutObject').sort(), ['<PipelineRawBucket356BBD72.Arn>/history/athena/*', '<PipelineRawBucket356BBD72.Arn>/history/warehouse/*']);
    const maintenanceActions = actionsOf(machineRole('Maintenance'));
    assert.ok(![...maintenanceActions].some((a) => a.startsWith('dynamodb:') || a === 's3:DeleteObjectVersion' || a.startsWith('glue:Delete') || a.startsWith('states:')), [...maintenanceActions].join(', '));
    assert.deepEqual(resourcesOf(machineRole('Compaction'), 'glue:UpdateTable').sort(), ['expected_state', 'history', 'table_hours', 'truncates'].map(glue));
    assert.ok(resourcesOf(machineRole('Snapshot'), 'glue:GetTable').includes(glue('table_hours')));
    assert.ok(!resourcesOf(machineRole('Snapshot'), 'glue:GetTable').includes(glue('raw_lines')), 'snapshot detection reads no raw');
    assert.deepEqual(
      resourcesOf(machineRole('Reconcile'), 'dynamodb:ExportTableToPointInTime')
        .map((t) => t.replace(/^.*:table\//, ''))
        .sort(),
      ['shop-customers', 'shop-order-lines', 'shop-shipments'],
    );
    assert.deepEqual(
      resourcesOf(machineRole('Reconcile'), 'dynamodb:DescribeExport')
        .map((t) => t.replace(/^.*:table\//, ''))
        .sort(),
      ['shop-customers/export/*', 'shop-order-lines/export/*', 'shop-shipments/export/*'],
    );
    assert.deepEqual(
      resourcesOf(machineRole('Compaction'), 's3:PutObject').sort(),
      ['<PipelineRawBucket356BBD72.Arn>/history/athena/*', '<PipelineRawBucket356BBD72.Arn>/history/warehouse/*'],
      'compaction writes the warehouse and its results, never raw',
    );
    assert.deepEqual(
      resourcesOf(machineRole('Snapshot'), 's3:PutObject').sort(),
      ['<PipelineRawBucket356BBD72.Arn>/history/athena/*', '<PipelineRawBucket356BBD72.Arn>/history/unload/snapshot/*'],
    );
    // Each machine invokes exactly the functions its definition names.
    for (const [job, name] of [
      ['Compaction', JOBS.compaction],
      ['Reconcile', JOBS.reconcile],
      ['Snapshot', JOBS.snapshot],
      ['Maintenance', JOBS.maintenance],
    ] as const) {
      const subs = byMachineName.get(name)?.DefinitionSubstitutions as Record<string, unknown>;
      const named = new Set(Object.entries(subs).filter(([k]) => k !== ATHENA_WORKGROUP).map(([, v]) => text(v)));
      assert.deepEqual(new Set(resourcesOf(machineRole(job), 'lambda:InvokeFunction')), named, job);
    }
    for (const [, p] of policies) {
      const actions = (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.flatMap((s) => list(s.Action));
      assert.deepEqual(actions.filter((a) => a.includes('*')), [], 'no wildcard actions');
    }
  });

  it('grants Distributed Map permissions exactly where a definition has one', () => {
    assert.deepEqual(
      Object.entries(JOB_DEFINITIONS)
        .filter(([, j]) => hasDistributedMap(j.build()))
        .map(([n]) => n),
      ['reconcile'],
    );
    assert.equal(hasDistributedMap({ States: { A: { Type: 'Map', ItemProcessor: { ProcessorConfig: { Mode: 'INLINE' } } } } }), false);
  });

  it('alarms on failed executions, on ahead > 0, on any window finding, and on each snapshot finding kind', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-compaction-failed', Threshold: 1, AlarmActions: Match.anyValue() });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-reconcile-failed', Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-snapshot-failed', AlarmActions: Match.anyValue() });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-maintenance-failed', Threshold: 1, AlarmActions: Match.anyValue() });
    const dims = [
      { Name: 'pipeline', Value: 'shop' },
      { Name: 'service', Value: 'tidemark-ingest' },
      { Name: 'table', Value: '*' },
    ];
    for (const [name, metric] of [
      ['shop-reconcile-ahead', 'ReconcileAhead'],
      ['shop-reconcile-window-findings', 'ReconcileWindowFindings'],
      ['shop-snapshot-orphan', 'SnapshotOrphans'],
      ['shop-snapshot-resnapshot', 'Resnapshots'],
      ['shop-snapshot-silent', 'AnomalySilent'],
    ]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: name,
        MetricName: metric,
        Namespace: 'Tidemark',
        Dimensions: Match.arrayWith(dims.map((d) => Match.objectLike(d))),
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        AlarmActions: Match.anyValue(),
      });
    }
  });

  it('outputs the compaction state machine, the Iceberg history table and the workgroup', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Description?: string; Value?: unknown }>;
    const find = (id: string) => Object.entries(outputs).find(([k]) => new RegExp(`^[A-Za-z0-9]*${id}[0-9A-F]{8}$`).test(k))?.[1];
    assert.match(find('CompactionStateMachineArn')?.Description ?? '', /input a CompactionRequest/);
    assert.equal(find('HistoryIcebergTable')?.Value, 'tidemark_shop.history');
    assert.equal(find('AthenaWorkGroup')?.Value, 'shop-jobs');
  });
});
