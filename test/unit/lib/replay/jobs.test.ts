/** The replay and erase state machines as deployed: sized from config, least privilege per job. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { replayTables } from '../../../../functions/replay/deps.js';
import { runPrefix } from '../../../../functions/replay/job.js';
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
      // Both run queries in the jobs' workgroup: replay its selection (the jobs bundle's fetch), erase its finds and deletes (its own function answers the fetch).
      assert.deepEqual(Object.keys(subs), name === 'shop-replay' ? ['ReplayFunction', 'JobQueryAtFunction', 'AthenaWorkGroup'] : ['EraseFunction', 'JobQueryAtFunction', 'AthenaWorkGroup']);
      assert.equal(subs.AthenaWorkGroup, 'shop-jobs');
      if (name === 'shop-erase') assert.deepEqual(subs.JobQueryAtFunction, subs.EraseFunction);
      else assert.notDeepEqual(subs.JobQueryAtFunction, subs.ReplayFunction);
      assert.equal(machine.Properties.TracingConfiguration !== undefined, true);
    }
  });

  it('deploys replay on SQL: the selection query in the jobs workgroup, its fetch, and a Map reading the buckets from S3', () => {
    const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine', { Properties: { StateMachineName: 'shop-replay' } })) as { Properties: Record<string, unknown> }[];
    const definition = JSON.parse(machine?.Properties.DefinitionString as string) as { States: Record<string, Record<string, unknown>> };
    assert.deepEqual(definition.States.Plan?.Parameters, { step: 'plan-sql', 'request.$': '$' });
    assert.equal(definition.States.SelectRun?.Resource, 'arn:aws:states:::athena:startQueryExecution.sync');
    assert.ok(definition.States.Replay?.ItemReader, 'the Map reads its items from S3');
    assert.equal(JSON.stringify(definition).includes('"step":"batch"') || JSON.stringify(definition).includes('"step":"plan"'), false, 'no step of the object-batch machine');
    const subs = machine?.Properties.DefinitionSubstitutions as Record<string, unknown>;
    assert.equal(subs.AthenaWorkGroup, 'shop-jobs');
    assert.match(JSON.stringify(subs.JobQueryAtFunction), /PipelineReplayReplayQueryAtFunction/);
    template.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'shop-replay-jobQueryAt', Handler: 'index.jobQueryAt' });
  });

  it("the replay machine's role: Athena only in the one workgroup, Glue only on history and raw_lines, S3 only under the history, raw and replay-run prefixes", () => {
    const statements = statementsOf(template, 'PipelineReplayReplayStateMachineRole');
    const all = actions(statements);
    for (const a of ['athena:StartQueryExecution', 'athena:GetQueryExecution', 'athena:StopQueryExecution', 'glue:GetTable', 's3:GetObject', 's3:PutObject']) assert.ok(all.has(a), a);
    for (const a of ['s3:DeleteObject', 'glue:UpdateTable', 'athena:*', 'glue:*', 's3:*']) assert.equal(all.has(a), false, a);
    for (const s of statements) {
      const acts = Array.isArray(s.Action) ? s.Action : [s.Action];
      const resource = JSON.stringify(s.Resource);
      // "*" only for the log delivery and X-Ray statements CDK adds (their APIs take no resource).
      if (resource === '"*"') assert.ok(acts.every((a) => a.startsWith('logs:') || a.startsWith('xray:')), JSON.stringify(acts));
      if (acts.some((a) => a.startsWith('athena:'))) assert.deepEqual(s.Resource, { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':athena:us-east-1:111122223333:workgroup/shop-jobs']] });
      if (acts.some((a) => a.startsWith('glue:'))) {
        const names = (resource.match(/:glue:[^"]*/g) ?? []).map((r) => r.replace(/^:glue:us-east-1:111122223333:/, ''));
        assert.deepEqual(names, ['catalog', 'database/tidemark_shop', 'table/tidemark_shop/history', 'table/tidemark_shop/raw_lines']);
      }
      if (acts.some((a) => a.startsWith('s3:') && a !== 's3:ListBucket' && a !== 's3:GetBucketLocation')) {
        for (const key of resource.match(/"\/[^"]*"/g) ?? []) assert.match(key, /^"\/(history\/athena\/\*|history\/warehouse\/\*|raw\/\*|jobs\/replay\/\*\/events\/\*|jobs\/replay\/\*\/buckets\.json)"$/, `${s.Sid}: ${key}`);
      }
    }
    const writes = statements.filter((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]).includes('s3:PutObject')).map((s) => JSON.stringify(s.Resource));
    assert.equal(writes.some((r) => r.includes('/raw/') || r.includes('/warehouse/')), false, 'the selection never writes raw or history');
    const items = statements.find((s) => s.Sid === 'ReadMapItems');
    assert.match(JSON.stringify(items?.Resource), /\/jobs\/replay\/\*\/buckets\.json/);
    const list = statements.find((s) => s.Sid === 'ListQueryData') as (Statement & { Condition?: unknown }) | undefined;
    assert.deepEqual(list?.Condition, { StringLike: { 's3:prefix': ['history/athena/*', 'history/warehouse/*', 'raw/*', 'jobs/replay/*/events/*'] } });
    assert.equal(statements.some((s) => JSON.stringify(s.Action).includes('kms:')), false, 'no key grants under aws-managed encryption');
  });

  it('under kms: the replay machine uses the pipeline key through S3 only; the fetch reads only stored replay queries', () => {
    const t = templateOf(testConfig({ encryption: 'kms' }));
    const key = statementsOf(t, 'PipelineReplayReplayStateMachineRole').find((s) => s.Sid === 'QueryDataUnderPipelineKey') as (Statement & { Condition?: unknown }) | undefined;
    assert.ok(key, 'the key statement');
    assert.deepEqual(new Set(key.Action as string[]), new Set(['kms:Decrypt', 'kms:GenerateDataKey']));
    assert.deepEqual(key.Condition, { StringEquals: { 'kms:ViaService': 's3.us-east-1.amazonaws.com' } });
    // The grants' `jobs/replay/` is where the job writes its runs.
    assert.equal(runPrefix(testConfig(), 'r1'), 'jobs/replay/r1/');
    const fetch = statementsOf(t, 'PipelineReplayReplayQueryAtRole');
    const reads = fetch.filter((s) => JSON.stringify(s.Action).includes('s3:'));
    assert.deepEqual(reads.map((s) => [s.Sid, s.Action, JSON.stringify(s.Resource).match(/"\/[^"]*"/g)]), [['ReadStoredQueries', 's3:GetObject', ['"/jobs/replay/*/queries.json"']]]);
  });

  it('lets the replay function read the frontier (one object), its runs and spilled rows, not raw', () => {
    const read = statementsOf(template, 'PipelineReplayReplayRole').find((s) => s.Sid === 'ReadFrontierRunsAndSpills');
    assert.deepEqual(JSON.stringify(read?.Resource).match(/"\/[^"]*"/g), ['"/history/state/compaction.json"', '"/jobs/*"', '"/raw/spill/*"']);
  });

  it("lets the erase function read compaction's state (frontier and hour markers), and only read it", () => {
    const statements = statementsOf(template, 'PipelineReplayEraseRole');
    const read = statements.find((s) => s.Sid === 'ReadCompactionState');
    assert.deepEqual(read?.Action, 's3:GetObject');
    assert.deepEqual(JSON.stringify(read?.Resource).match(/"\/[^"]*"/g), ['"/history/state/*"']);
    const writes = statements.filter((s) => JSON.stringify(s.Resource).includes('/history/state/') && s.Sid !== 'ReadCompactionState');
    assert.deepEqual(writes, [], 'no other statement reaches the state');
  });

  it('lets replay write under the guard, never delete objects; lets erase rewrite raw with its versions', () => {
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
