/** The replay and erase state machines as deployed: sized from config, least privilege per job. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { replayTables } from '../../../../functions/replay/deps.js';
import { FRESH_TABLE_ACTIONS, STATUS_TABLE_DENIED } from '../../../../lib/replay/jobs.js';
import { templateOf, testConfig } from '../fixtures/stack.js';

type Statement = { Action: string | string[]; Sid?: string; Resource: unknown };
function statementsOf(template: Template, rolePrefix: string): Statement[] {
  return Object.entries(template.findResources('AWS::IAM::Policy'))
    .filter(([id]) => id.startsWith(rolePrefix))
    .flatMap(([, p]) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement);
}
const actions = (ss: Statement[]) => new Set(ss.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])));

describe('ReplayJobs construct', () => {
  const template = templateOf(testConfig({ replay: { maxConcurrency: 12, toleratedFailurePercentage: 2 } }));

  it('deploys the replay and erase definitions with the job function substituted and MaxConcurrency from config', () => {
    for (const name of ['shop-replay', 'shop-erase']) {
      const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine', { Properties: { StateMachineName: name } })) as { Properties: Record<string, unknown> }[];
      assert.ok(machine, name);
      const body = JSON.stringify(JSON.parse(machine.Properties.DefinitionString as string));
      assert.match(body, /"MaxConcurrency":12/);
      assert.match(body, /"ToleratedFailurePercentage":2/);
      assert.match(body, /"Mode":"DISTRIBUTED"/);
      const subs = machine.Properties.DefinitionSubstitutions as Record<string, unknown>;
      // Erase runs its queries: the query loops' fetch (the erase function itself) and the jobs' workgroup.
      assert.deepEqual(Object.keys(subs), name === 'shop-replay' ? ['ReplayFunction'] : ['EraseFunction', 'JobQueryAtFunction', 'AthenaWorkGroup']);
      if (name === 'shop-erase') {
        assert.deepEqual(subs.JobQueryAtFunction, subs.EraseFunction);
        assert.equal(subs.AthenaWorkGroup, 'shop-jobs');
      }
      assert.equal(machine.Properties.TracingConfiguration !== undefined, true);
    }
  });

  it('lets replay read raw and write under the guard, never delete objects; lets erase rewrite raw with its versions', () => {
    const replay = actions(statementsOf(template, 'PipelineReplayReplayRole'));
    const erase = actions(statementsOf(template, 'PipelineReplayEraseRole'));
    for (const a of ['s3:GetObject', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:CreateTable']) assert.ok(replay.has(a), a);
    for (const a of ['s3:DeleteObject', 's3:DeleteObjectVersion', 'dynamodb:DeleteTable']) assert.equal(replay.has(a), false, a);
    for (const a of ['s3:DeleteObject', 's3:DeleteObjectVersion', 's3:ListBucketVersions', 'dynamodb:DeleteItem']) assert.ok(erase.has(a), a);
    for (const a of ['dynamodb:CreateTable', 'dynamodb:DeleteTable', 'dynamodb:Scan']) assert.equal(erase.has(a), false, a);
  });

  it("lets the erase state machine run its queries in the workgroup only, on exactly raw, its keys and the Iceberg tables it erases", () => {
    const statements = statementsOf(template, 'PipelineReplayEraseStateMachineRole');
    const bySid = new Map(statements.map((s) => [s.Sid, s]));
    const text = (sid: string) => JSON.stringify(bySid.get(sid)?.Resource ?? null);
    assert.match(text('RunEraseQueries'), /workgroup\/shop-jobs"/);
    const glue = text('ReadEraseCatalog');
    for (const t of ['raw_lines', 'raw_events', 'erase_keys', 'history', 'expected_state']) assert.match(glue, new RegExp(`table/tidemark_shop/${t}"`), t);
    for (const t of ['truncates', 'table_hours', 'table_side', 'quarantine_lines']) assert.doesNotMatch(glue, new RegExp(`/${t}"`), t);
    assert.deepEqual(text('CommitErasedTables').match(/table\/tidemark_shop\/[a-z_]+/g), ['table/tidemark_shop/history', 'table/tidemark_shop/expected_state']);
    // Deletes only where VACUUM expires Iceberg files: the warehouse.
    const deletes = statements.filter((s) => JSON.stringify(s.Action).includes('s3:DeleteObject'));
    assert.deepEqual(deletes.map((s) => s.Sid), ['WriteErasedTables']);
    assert.match(text('WriteErasedTables'), /history\/warehouse\/\*/);
    assert.match(text('UnloadFinds'), /jobs\/erase\/\*/);
    assert.match(text('ReadMapItems'), /jobs\/erase\/\*/, "the ItemReader reads the run's objects list");
    const list = bySid.get('ListQueryData') as Statement & { Condition?: { StringLike?: Record<string, string[]> } };
    assert.deepEqual(list.Condition?.StringLike?.['s3:prefix'], ['raw/dt=*', 'raw/table=*', 'history/erase_keys/*', 'history/warehouse/*', 'history/athena/*', 'jobs/erase/*']);
    assert.equal(statements.some((s) => JSON.stringify(s.Action).includes('kms:')), false, 'no key grants under aws-managed encryption');
    const kms = statementsOf(templateOf(testConfig({ encryption: 'kms' })), 'PipelineReplayEraseStateMachineRole').find((s) => s.Sid === 'QueryDataUnderPipelineKey') as (Statement & { Condition?: unknown }) | undefined;
    assert.ok(kms, 'under kms, the pipeline key for the queries');
    assert.match(JSON.stringify(kms.Condition), /kms:ViaService/);
    // The erase function writes and deletes the run's keys.
    const fnRole = statementsOf(template, 'PipelineReplayEraseRole').find((s) => s.Sid === 'RewriteRawAndQuarantine');
    assert.match(JSON.stringify(fnRole?.Resource), /history\/erase_keys\/\*/);
  });

  it('scopes every fresh-table grant to the reserved prefix shop-fresh-*, with tagging, tag reads and PITR, and no table deletion', () => {
    const statements = statementsOf(template, 'PipelineReplayReplayRole');
    const fresh = statements.find((s) => s.Sid === 'CreateFreshTables');
    assert.ok(fresh, 'the fresh-table statement');
    assert.equal(JSON.stringify(fresh.Resource).match(/table\/[^"]*/g)?.join(' '), 'table/shop-fresh-*', 'one resource, under the reserved prefix');
    const freshActions = new Set(fresh.Action as string[]);
    for (const a of [...FRESH_TABLE_ACTIONS, 'dynamodb:PutItem', 'dynamodb:Scan']) assert.ok(freshActions.has(a), a);
    for (const a of ['dynamodb:TagResource', 'dynamodb:ListTagsOfResource', 'dynamodb:UpdateContinuousBackups']) assert.ok(FRESH_TABLE_ACTIONS.includes(a), a);
    assert.equal(freshActions.has('dynamodb:DeleteTable') || freshActions.has('dynamodb:UntagResource'), false);
    // No other statement names a table by wildcard: shop-* (which matched shop-payments) is gone.
    const wildcards = statements.flatMap((s) => JSON.stringify(s.Resource).match(/table\/[^"]*\*/g) ?? []);
    assert.deepEqual([...new Set(wildcards)], ['table/shop-fresh-*']);
    // What a fresh table copies of the live ones: DescribeTable and DescribeContinuousBackups, on the live tables by name.
    const live = statements.filter((s) => s.Sid?.startsWith('GuardedReplayWrites'));
    assert.ok(live.length > 0);
    for (const s of live) for (const a of ['dynamodb:DescribeTable', 'dynamodb:DescribeContinuousBackups']) assert.ok((s.Action as string[]).includes(a), a);
    assert.equal(statements.some((s) => JSON.stringify(s.Action).includes('kms:')), false, 'no key grants under aws-managed encryption');
  });

  it('denies replay every call on the status table (a configured name may fall under shop-fresh-) but the watermark and ledger ones', () => {
    const statements = statementsOf(template, 'PipelineReplayReplayRole');
    const deny = statements.find((s) => s.Sid === 'NotTheStatusTable') as (Statement & { Effect?: string }) | undefined;
    assert.equal(deny?.Effect, 'Deny');
    assert.deepEqual(new Set(deny?.Action as string[]), new Set(STATUS_TABLE_DENIED));
    assert.match(JSON.stringify(deny?.Resource), /StatusTable/);
    const allowedOnStatus = statements.find((s) => s.Sid === 'WatermarksAndLedger');
    assert.ok(allowedOnStatus, 'the watermark and ledger statement');
    for (const a of allowedOnStatus.Action as string[]) assert.equal(STATUS_TABLE_DENIED.includes(a), false, `${a} stays allowed on the status table`);
    for (const a of ['dynamodb:PutItem', 'dynamodb:Scan', 'dynamodb:DeleteItem', ...FRESH_TABLE_ACTIONS]) assert.ok(STATUS_TABLE_DENIED.includes(a), a);
  });

  it('a status table named under the fresh prefix is still denied to replay, and refused by the job', () => {
    const config = testConfig({ statusTable: 'shop-fresh-status' });
    const t = templateOf(config);
    const deny = statementsOf(t, 'PipelineReplayReplayRole').find((s) => s.Sid === 'NotTheStatusTable') as (Statement & { Effect?: string }) | undefined;
    assert.equal(deny?.Effect, 'Deny');
    assert.match(JSON.stringify(deny?.Resource), /StatusTable/);
    assert.throws(() => replayTables(config, [config.tables[0]?.source as string], { kind: 'fresh', target: 'shop-fresh-status' }), /status table; name a new table/);
  });

  it('refuses a fresh replay into the status table or a live target, whatever the IAM policy allows', () => {
    const config = testConfig();
    const source = config.tables[0]?.source as string;
    assert.throws(() => replayTables(config, [source], { kind: 'fresh', target: config.statusTable }), /status table; name a new table/);
    assert.throws(() => replayTables(config, [source], { kind: 'fresh', target: config.tables[0]?.target as string }), /live target table/);
    assert.throws(() => replayTables(config, [source], { kind: 'fresh', target: `${config.name}-rebuild` }), /must be named shop-fresh-<suffix>/);
    assert.equal(replayTables(config, [source], { kind: 'fresh', target: `${config.name}-fresh-rebuild` }).get(source)?.target, `${config.name}-fresh-rebuild`);
  });

  it('with a Secrets Manager ledger key: GetSecretValue on that one secret, no extension layer', () => {
    const t = templateOf(testConfig({ replay: { erase: { ledgerKeySecret: 'secretsmanager:shop/erase-key' } } }));
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'shop-erase', Layers: Match.absent() });
    const s = statementsOf(t, 'PipelineReplayEraseRole').find((x) => x.Sid === 'ReadLedgerKey');
    assert.match(JSON.stringify(s?.Resource), /secret:shop\/erase-key-\?\?\?\?\?\?/);
  });
});
