/**
 * The pipeline key under `encryption: kms`, as the template has it: every job's state machine
 * (reconcile, snapshot, replay, erase) is under it; the log delivery service may decrypt with it
 * only for this account's log sources; every job role holds only Decrypt and GenerateDataKey (the
 * ingest's), and replay alone may create a DynamoDB grant and describe the key, through DynamoDB
 * only, for the fresh tables it creates under the key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Match } from 'aws-cdk-lib/assertions';
import { FRESH_TABLE_KEY_ACTIONS } from '../../../lib/encryption.js';
import { KEY_ACTIONS } from '../../../lib/ingest-function.js';
import { templateOf, testConfig } from './fixtures/stack.js';

type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: unknown; Principal?: unknown; Condition?: Record<string, Record<string, unknown>> };
type Res = Record<string, { Properties: Record<string, unknown> }>;

const template = templateOf(testConfig({ encryption: 'kms' }));
const key = { 'Fn::GetAtt': [Match.stringLikeRegexp('^PipelineKey'), 'Arn'] };
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const MACHINES = ['shop-reconcile', 'shop-snapshot', 'shop-replay', 'shop-erase'];

/** Every statement of the policies attached to the role with this logical id. */
function roleStatements(roleId: string): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy') as Res)
    .filter((p) => ((p.Properties.Roles as { Ref?: string }[] | undefined) ?? []).some((r) => r.Ref === roleId))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** Logical ids of the roles of the job functions: every task of reconcile and snapshot, replay and erase. */
function jobFunctionRoles(): Map<string, string> {
  const out = new Map<string, string>();
  for (const fn of Object.values(template.findResources('AWS::Lambda::Function') as Res)) {
    const name = fn.Properties.FunctionName as string | undefined;
    const role = (fn.Properties.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];
    if (name && role && /^shop-(reconcile|snapshot|replay|erase)/.test(name)) out.set(name, role);
  }
  return out;
}

describe('encryption: kms across the jobs', () => {
  it('puts all four job state machines under the pipeline key, replay and erase included', () => {
    for (const name of MACHINES) {
      template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
        StateMachineName: name,
        EncryptionConfiguration: { Type: 'CUSTOMER_MANAGED_KMS_KEY', KmsKeyId: key, KmsDataKeyReusePeriodSeconds: 300 },
      });
    }
  });

  it('lets each state machine’s role use the key only for its own executions and their log delivery', () => {
    for (const [id, machine] of Object.entries(template.findResources('AWS::StepFunctions::StateMachine') as Res)) {
      const name = machine.Properties.StateMachineName as string;
      const role = (machine.Properties.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const kms = roleStatements(role).filter((s) => actionsOf(s).some((a) => a.startsWith('kms:')));
      const executions = kms.find((s) => s.Sid === 'EncryptExecutions');
      assert.ok(executions, `${id}: the executions' grant`);
      assert.deepEqual(actionsOf(executions), ['kms:Decrypt', 'kms:GenerateDataKey']);
      assert.match(JSON.stringify(executions.Condition?.StringEquals?.['kms:EncryptionContext:aws:states:stateMachineArn']), new RegExp(`:stateMachine:${name}"`));
      const delivery = kms.find((s) => s.Sid === 'EncryptLogDelivery');
      assert.deepEqual(delivery && actionsOf(delivery), ['kms:GenerateDataKey']);
      assert.ok(delivery?.Condition?.StringEquals?.['kms:EncryptionContext:SourceArn'], `${id}: log delivery under its encryption context`);
      for (const s of kms) assert.ok(s.Condition, `${id}: no unconditioned key use (${s.Sid})`);
    }
  });

  it('lets the log delivery service decrypt only for this account’s log sources (aws:SourceAccount, aws:SourceArn)', () => {
    const [policy] = Object.values(template.findResources('AWS::KMS::Key') as Res).map((k) => k.Properties.KeyPolicy as { Statement: Statement[] });
    const delivery = (policy?.Statement ?? []).filter((s) => JSON.stringify(s.Principal).includes('delivery.logs.amazonaws.com'));
    assert.equal(delivery.length, 1, 'one statement for the log delivery service, none without conditions');
    const [statement] = delivery;
    assert.deepEqual(statement && actionsOf(statement), ['kms:Decrypt']);
    assert.equal(statement?.Condition?.StringEquals?.['aws:SourceAccount'], '111122223333');
    assert.match(JSON.stringify(statement?.Condition?.ArnLike?.['aws:SourceArn']), /":logs:us-east-1:111122223333:\*"/);
    template.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'delivery.logs.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': '111122223333' }, ArnLike: { 'aws:SourceArn': Match.anyValue() } },
          }),
        ]),
      },
    });
  });

  it('gives every job role Decrypt and GenerateDataKey only, like the ingest: no kms:Encrypt, and DescribeKey only for replay’s table creation', () => {
    const roles = jobFunctionRoles();
    assert.ok(roles.size >= 10, `the task functions of reconcile and snapshot, replay and erase: ${[...roles.keys()].join(', ')}`);
    for (const [fn, role] of roles) {
      const kms = roleStatements(role).filter((s) => actionsOf(s).some((a) => a.startsWith('kms:')));
      const use = kms.find((s) => s.Sid === 'UsePipelineKey');
      assert.ok(use, `${fn}: the key grant`);
      assert.deepEqual(actionsOf(use), [...KEY_ACTIONS], fn);
      const others = kms.filter((s) => s !== use);
      if (fn === 'shop-replay') {
        assert.deepEqual(
          others.map((s) => [s.Sid, actionsOf(s)]),
          [['CreateFreshTablesUnderPipelineKey', [...FRESH_TABLE_KEY_ACTIONS]]],
        );
        assert.deepEqual(others[0]?.Condition, { StringEquals: { 'kms:ViaService': 'dynamodb.us-east-1.amazonaws.com' } }, 'through DynamoDB only');
      } else {
        assert.deepEqual(others.map((s) => actionsOf(s)), [], `${fn}: nothing but UsePipelineKey`);
      }
      const all = kms.flatMap(actionsOf);
      assert.equal(all.includes('kms:Encrypt'), false, `${fn}: no kms:Encrypt`);
    }
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Sid: 'CreateFreshTablesUnderPipelineKey', Action: ['kms:CreateGrant', 'kms:DescribeKey'], Resource: key, Condition: { StringEquals: { 'kms:ViaService': 'dynamodb.us-east-1.amazonaws.com' } } }),
        ]),
      },
    });
  });

  it('under aws-managed, no state machine names a key and no job role holds any kms action', () => {
    const plain = templateOf(testConfig());
    for (const m of Object.values(plain.findResources('AWS::StepFunctions::StateMachine') as Res)) assert.equal(m.Properties.EncryptionConfiguration, undefined);
    const kmsActions = Object.values(plain.findResources('AWS::IAM::Policy') as Res)
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('kms:'));
    assert.deepEqual(kmsActions, []);
  });
});
