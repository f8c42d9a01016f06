/**
 * The jobs in the synthesized stack: the deployed definition is exactly the shared builder's (so
 * the local runner runs what AWS runs), every task retries and is caught, roles hold only their
 * task's grants, schedules follow the config with retries and a dead-letter queue.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match } from 'aws-cdk-lib/assertions';
import { forEachState } from '../../../../bin/local/stepfunctions.js';
import { JOB_DEFINITIONS, reconcileDefinition, snapshotDefinition } from '../../../../lib/jobs/definitions.js';
import { templateOf, testConfig } from '../fixtures/stack.js';
import { validateAsl } from '../../../helpers/asl.js';

type Res = Record<string, { Properties: Record<string, unknown> }>;

const template = templateOf(testConfig({ jobs: { reconcile: { full: { enabled: false } }, snapshot: { schedule: 'rate(2 hours)' } } }));
const resources = (type: string): Res => template.findResources(type) as Res;

describe('job definitions', () => {
  for (const [name, job] of Object.entries(JOB_DEFINITIONS)) {
    it(`${name}: valid ASL, and every Task (nested ones too) has Retry and Catch`, () => {
      const def = job.build();
      assert.deepEqual(validateAsl(def), []);
      let tasks = 0;
      forEachState(def, (state, s) => {
        if (s.Type !== 'Task') return;
        tasks++;
        assert.ok(Array.isArray(s.Retry) && s.Retry.length > 0, `${state} retries`);
        assert.ok(Array.isArray(s.Catch) && s.Catch.length > 0, `${state} is caught`);
        assert.equal(typeof s.TimeoutSeconds, 'number', `${state} has a timeout`);
      });
      assert.equal(tasks, Object.keys(job.tasks).length);
    });
  }
});

describe('jobs in the stack', () => {
  const machines = resources('AWS::StepFunctions::StateMachine');

  it('deploys exactly the shared definitions, each Task resource substituted with its own function', () => {
    const byName = new Map(Object.values(machines).map((m) => [m.Properties.StateMachineName, m.Properties]));
    const functions = resources('AWS::Lambda::Function');
    for (const [job, build, tasks] of [
      ['shop-reconcile', reconcileDefinition, JOB_DEFINITIONS.reconcile.tasks],
      ['shop-snapshot', snapshotDefinition, JOB_DEFINITIONS.snapshot.tasks],
    ] as const) {
      const m = byName.get(job);
      assert.ok(m, `${job} exists`);
      assert.deepEqual(JSON.parse(m.DefinitionString as string), build());
      const subs = m.DefinitionSubstitutions as Record<string, { 'Fn::GetAtt': [string, string] }>;
      assert.deepEqual(Object.keys(subs).sort(), Object.values(tasks).sort());
      for (const [name, ref] of Object.entries(subs)) {
        const fn = functions[ref['Fn::GetAtt'][0]];
        assert.ok(fn, `${name} is a function of the stack`);
        assert.match(String(fn.Properties.Handler), /^index\.(reconcile|snapshot)[A-Z]\w+$/);
      }
    }
  });

  it('logs executions (without data) and traces them', () => {
    for (const m of Object.values(machines)) {
      assert.deepEqual((m.Properties.LoggingConfiguration as { Level: string; IncludeExecutionData: boolean }).Level, 'ALL');
      assert.equal((m.Properties.LoggingConfiguration as { IncludeExecutionData: boolean }).IncludeExecutionData, false);
      assert.deepEqual(m.Properties.TracingConfiguration, { Enabled: true });
    }
  });

  it('schedules from config: window on, full disabled, snapshot every two hours, each with retries and a DLQ', () => {
    const schedules = Object.values(resources('AWS::Scheduler::Schedule')).map((s) => s.Properties);
    const byName = new Map(schedules.map((s) => [s.Name, s]));
    assert.deepEqual([...byName.keys()].sort(), ['shop-reconcile-full', 'shop-reconcile-window', 'shop-snapshot-detect']);
    assert.equal(byName.get('shop-reconcile-window')?.State, 'ENABLED');
    assert.equal(byName.get('shop-reconcile-window')?.ScheduleExpression, 'rate(1 hour)');
    assert.equal(byName.get('shop-reconcile-full')?.State, 'DISABLED');
    assert.equal(byName.get('shop-snapshot-detect')?.ScheduleExpression, 'rate(2 hours)');
    for (const s of schedules) {
      const target = s.Target as { RetryPolicy: unknown; DeadLetterConfig: { Arn: unknown }; Input: string };
      assert.deepEqual(target.RetryPolicy, { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 });
      assert.ok(target.DeadLetterConfig.Arn);
    }
    const fullTarget = byName.get('shop-reconcile-full')?.Target as { Input: string } | undefined;
    assert.deepEqual(JSON.parse(fullTarget?.Input ?? 'null'), { mode: 'full' });
  });

  it('gives each task role only its own grants', () => {
    const policies = Object.entries(resources('AWS::IAM::Policy'));
    const actionsOf = (prefix: string): Set<string> => {
      const found = policies.filter(([id]) => id.startsWith(prefix));
      assert.ok(found.length > 0, `a policy for ${prefix}`);
      return new Set(
        found.flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]))),
      );
    };
    const plan = actionsOf('PipelineJobsReconcileReconcilePlanFunctionRole');
    assert.ok(plan.has('s3:ListBucket') && plan.has('s3:PutObject'));
    assert.ok(![...plan].some((a) => a.startsWith('dynamodb:')), 'plan touches no table');
    const scan = actionsOf('PipelineJobsReconcileReconcileScanTableFunctionRole');
    assert.ok(scan.has('dynamodb:Scan'));
    assert.ok(!scan.has('dynamodb:PutItem') && !scan.has('dynamodb:UpdateItem'), 'scanning writes nothing');
    const reduce = actionsOf('PipelineJobsReconcileReconcileReduceFunctionRole');
    assert.ok(reduce.has('dynamodb:BatchGetItem') && reduce.has('dynamodb:PutItem'));
    assert.ok(!reduce.has('dynamodb:Scan') && !reduce.has('dynamodb:DeleteItem'));
    const snapshotPlan = policies.filter(([id]) => id.startsWith('PipelineJobsSnapshotSnapshotPlanFunctionRole'));
    for (const [, p] of snapshotPlan) {
      const actions = (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
      assert.ok(actions.every((a) => a.startsWith('logs:') || a === 'dynamodb:Query' || a === 'dynamodb:BatchGetItem'), 'snapshot plan writes logs and reads the recent hours, nothing else');
    }
    const machine = actionsOf('PipelineJobsReconcileStateMachineRole');
    assert.ok(machine.has('lambda:InvokeFunction') && machine.has('states:StartExecution'));
    for (const [, p] of policies) {
      const actions = (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
      assert.deepEqual(actions.filter((a) => a.includes('*')), [], 'no wildcard actions');
    }
  });

  it('alarms on failed executions, on ahead > 0, on any window finding, and on each snapshot finding kind', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-reconcile-failed', Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-snapshot-failed', AlarmActions: Match.anyValue() });
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
});
