/**
 * A pipeline of 500 tables synthesizes and stays deployable: no stack over CloudFormation's
 * limits (500 resources, 200 outputs, 200 parameters, 1 MB template), no function environment
 * over Lambda's 4 KB, and the ingest role's policies within IAM's size limits once resolved.
 * MSK with `topicPrefix` is the worst case: 500 tables and 500 mappings.
 *
 * Monitoring is on: its alarms read pipeline-level metrics, so their number does not grow with tables.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RUNTIME_CONFIG_FILE } from '../../../functions/commons/runtime-config.js';
import { MAX_ENVIRONMENT_BYTES } from '../../../lib/defaults.js';
import { buildStack, MSK_CLUSTER_ARN, testConfig } from './fixtures/stack.js';

const TABLES = 500;
const tables = Array.from({ length: TABLES }, (_, i) => ({ source: `inventory.table_${i}`, target: `shop-inventory-table-${i}`, key: ['id'], keyTypes: { id: 'number' } }));
const config = testConfig({ tables, source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topicPrefix: 'shop' } });
const { stack } = buildStack(config);
const stacks = stack.node.findAll().filter((c): c is Stack => Stack.isStack(c));
const templates = new Map(stacks.map((s) => [s.node.path, Template.fromStack(s).toJSON() as Record<string, Record<string, unknown>>]));

/** A template value as it resolves in the partition, region and account with the longest names (GovCloud). */
function resolved(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(resolved);
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => String(resolved(p))).join(sep);
  }
  if ('Ref' in o) return ({ 'AWS::Partition': 'aws-us-gov', 'AWS::Region': 'us-gov-west-1', 'AWS::AccountId': '111122223333' } as Record<string, string>)[String(o.Ref)] ?? 'x'.repeat(64);
  if ('Fn::GetAtt' in o) return `arn:aws-us-gov:service:us-gov-west-1:111122223333:resource/${'x'.repeat(64)}`;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolved(v)]));
}
const policySize = (doc: unknown) => JSON.stringify(resolved(doc)).length;

describe(`a pipeline of ${TABLES} tables (MSK, one topic per table)`, () => {
  it('splits tables and mappings into nested stacks, each within CloudFormation’s limits', () => {
    assert.ok(stacks.length > 1, 'nested stacks');
    for (const [name, t] of templates) {
      const count = (section: string) => Object.keys(t[section] ?? {}).length;
      assert.ok(count('Resources') <= 500, `${name}: ${count('Resources')} resources`);
      assert.ok(count('Outputs') <= 200, `${name}: ${count('Outputs')} outputs`);
      assert.ok(count('Parameters') <= 200, `${name}: ${count('Parameters')} parameters`);
      assert.ok(JSON.stringify(t).length < 1_000_000, `${name}: template over 1 MB`);
    }
    const all = [...templates.values()];
    const ofType = (type: string) => all.flatMap((t) => Object.values(t.Resources ?? {})).filter((r) => (r as { Type: string }).Type === type);
    assert.equal(ofType('AWS::DynamoDB::Table').length, TABLES + 1);
    assert.equal(ofType('AWS::Lambda::EventSourceMapping').length, TABLES);
  });

  it('keeps every function environment under 4 KB: the config travels in the asset', () => {
    for (const [name, t] of templates) {
      for (const [id, r] of Object.entries(t.Resources ?? {}) as [string, { Type: string; Properties: { Environment?: { Variables?: Record<string, string> } } }][]) {
        if (r.Type !== 'AWS::Lambda::Function') continue;
        const vars = r.Properties.Environment?.Variables ?? {};
        const bytes = Object.entries(vars).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(v)), 0);
        assert.ok(bytes <= MAX_ENVIRONMENT_BYTES, `${name}/${id}: ${bytes} bytes of environment`);
      }
    }
    const shipped = JSON.parse(readFileSync(path.join(stack.pipeline.ingest.codeDirectory, RUNTIME_CONFIG_FILE), 'utf8')) as { tables: unknown[] };
    assert.equal(shipped.tables.length, TABLES);
  });

  it('keeps the ingest role’s policies within IAM’s limits once resolved, in at most 10 managed policies', () => {
    const root = templates.get(stack.node.path) ?? {};
    const resources = Object.values(root.Resources ?? {}) as { Type: string; Properties: Record<string, unknown> }[];
    const inline = resources.filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes('PipelineIngestRole'));
    const managed = resources.filter((r) => r.Type === 'AWS::IAM::ManagedPolicy' && JSON.stringify(r.Properties.Roles).includes('PipelineIngestRole'));
    const inlineTotal = inline.reduce((n, r) => n + policySize(r.Properties.PolicyDocument), 0);
    assert.ok(inlineTotal <= 10_240, `inline policies: ${inlineTotal} characters`);
    assert.ok(managed.length <= 10, `${managed.length} managed policies`);
    for (const m of managed) assert.ok(policySize(m.Properties.PolicyDocument) <= 6_144, `managed policy of ${policySize(m.Properties.PolicyDocument)} characters`);
    const granted = JSON.stringify(resolved([...inline, ...managed].map((r) => r.Properties.PolicyDocument)));
    for (const t of [tables[0], tables[TABLES - 1]]) assert.ok(granted.includes(`:table/${t?.target}"`), `${t?.target} is granted`);
  });
});
