/** The replay and erase state machines as deployed: sized from config, least privilege per job. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { replayTables } from '../../../../functions/replay/deps.js';
import { STATUS_TABLE_DENIED } from '../../../../lib/replay/jobs.js';
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
      assert.deepEqual(Object.keys(subs), [name === 'shop-replay' ? 'ReplayFunction' : 'EraseFunction']);
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
    const fresh = statementsOf(template, 'PipelineReplayReplayRole').find((s) => s.Sid === 'CreateFreshTables');
    assert.match(JSON.stringify(fresh?.Resource), /table\/shop-\*/);
  });

  it('denies replay every call on the status table (which matches shop-*) but the watermark and ledger ones', () => {
    const statements = statementsOf(template, 'PipelineReplayReplayRole');
    const deny = statements.find((s) => s.Sid === 'NotTheStatusTable') as (Statement & { Effect?: string }) | undefined;
    assert.equal(deny?.Effect, 'Deny');
    assert.deepEqual(new Set(deny?.Action as string[]), new Set(STATUS_TABLE_DENIED));
    assert.match(JSON.stringify(deny?.Resource), /StatusTable/);
    const allowedOnStatus = statements.find((s) => s.Sid === 'WatermarksAndLedger');
    assert.ok(allowedOnStatus, 'the watermark and ledger statement');
    for (const a of allowedOnStatus.Action as string[]) assert.equal(STATUS_TABLE_DENIED.includes(a), false, `${a} stays allowed on the status table`);
    for (const a of ['dynamodb:PutItem', 'dynamodb:Scan', 'dynamodb:CreateTable', 'dynamodb:DeleteItem']) assert.ok(STATUS_TABLE_DENIED.includes(a), a);
  });

  it('refuses a fresh replay into the status table or a live target, whatever the IAM policy allows', () => {
    const config = testConfig();
    const source = config.tables[0]?.source as string;
    assert.throws(() => replayTables(config, [source], { kind: 'fresh', target: config.statusTable }), /status table; name a new table/);
    assert.throws(() => replayTables(config, [source], { kind: 'fresh', target: config.tables[0]?.target as string }), /live target table/);
    assert.equal(replayTables(config, [source], { kind: 'fresh', target: `${config.name}-rebuild` }).get(source)?.target, `${config.name}-rebuild`);
  });

  it('with a Secrets Manager ledger key: GetSecretValue on that one secret, no extension layer', () => {
    const t = templateOf(testConfig({ replay: { erase: { ledgerKeySecret: 'secretsmanager:shop/erase-key' } } }));
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'shop-erase', Layers: Match.absent() });
    const s = statementsOf(t, 'PipelineReplayEraseRole').find((x) => x.Sid === 'ReadLedgerKey');
    assert.match(JSON.stringify(s?.Resource), /secret:shop\/erase-key-\?\?\?\?\?\?/);
  });
});
