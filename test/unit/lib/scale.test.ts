/**
 * A pipeline of 500 tables synthesizes and stays deployable: no stack over CloudFormation's
 * limits (500 resources, 200 outputs, 200 parameters, 1 MB template), no function environment
 * over Lambda’s 4 KB, and no role’s policies over IAM’s size limits once resolved.
 * MSK with `topicPrefix` is the worst case: 500 tables and 500 mappings.
 *
 * Monitoring is on: its alarms read pipeline-level metrics, so their number does not grow with tables.
 * Jobs (compaction, reconcile, snapshot detection), replay and erase are always deployed: every role of every
 * stack is checked, with its tokens resolved at a realistic (long) length, against IAM’s limits.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RUNTIME_CONFIG_FILE } from '../../../functions/config/runtime.js';
import { MAX_ENVIRONMENT_BYTES } from '../../../lib/defaults.js';
import { buildStack, MSK_CLUSTER_ARN, testConfig } from './fixtures/stack.js';

const TABLES = 500;
const tables = Array.from({ length: TABLES }, (_, i) => ({ source: `inventory.table_${i}`, target: `shop-inventory-table-${i}`, key: ['id'], keyTypes: { id: 'number' } }));
// The largest policies: a customer-managed key and a Secrets Manager ledger key add a statement to each role.
const config = testConfig({
  tables,
  source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topicPrefix: 'shop' },
  encryption: 'kms',
  replay: { erase: { ledgerKeySecret: 'secretsmanager:shop/erase-ledger-key' } },
});
const { stack } = buildStack(config);
const stacks = stack.node.findAll().filter((c): c is Stack => Stack.isStack(c));
const templates = new Map(stacks.map((s) => [s.node.path, Template.fromStack(s).toJSON() as Record<string, Record<string, unknown>>]));

/**
 * How a template value resolves, for counting policy characters the way IAM does (the JSON without
 * whitespace, after CloudFormation has resolved every intrinsic). The estimate errs long:
 * - pseudo parameters take the longest values in use: partition `aws-us-gov`, region `us-gov-west-1`;
 * - `Fn::Join` joins its resolved parts, so an ARN built by `formatArn` counts at its real length;
 * - every other `Ref`, every `Fn::GetAtt`, `Fn::ImportValue`, `Fn::Select`, … and each `${…}` of a
 *   `Fn::Sub` counts as a GovCloud ARN of ESTIMATED_ARN_CHARS (128) characters: a Lambda, bucket,
 *   table, queue or log-group ARN, or a nested stack's output holding one, is shorter than that.
 */
const ESTIMATED_ARN_CHARS = 128;
const PSEUDO: Record<string, string> = { 'AWS::Partition': 'aws-us-gov', 'AWS::Region': 'us-gov-west-1', 'AWS::AccountId': '111122223333', 'AWS::URLSuffix': 'amazonaws.com' };
const ARN_ESTIMATE = (() => {
  const prefix = 'arn:aws-us-gov:service:us-gov-west-1:111122223333:resource/';
  return prefix + 'x'.repeat(ESTIMATED_ARN_CHARS - prefix.length);
})();
export function resolved(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(resolved);
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  const intrinsic = keys.length === 1 && (keys[0] === 'Ref' || keys[0]?.startsWith('Fn::')) ? keys[0] : undefined;
  if (intrinsic === 'Fn::Join') {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => String(resolved(p))).join(sep);
  }
  if (intrinsic === 'Ref') return PSEUDO[String(o.Ref)] ?? ARN_ESTIMATE;
  if (intrinsic === 'Fn::Sub') {
    const template = Array.isArray(o['Fn::Sub']) ? String(o['Fn::Sub'][0]) : String(o['Fn::Sub']);
    return template.replace(/\$\{([^}!]+)\}/g, (_, name: string) => PSEUDO[name] ?? ARN_ESTIMATE);
  }
  if (intrinsic !== undefined) return ARN_ESTIMATE;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolved(v)]));
}
const policySize = (doc: unknown) => JSON.stringify(resolved(doc)).length;

/** IAM's limits on a role's policies; CloudFormation fails the deploy beyond them. */
export const IAM_LIMITS = {
  /** Characters of all inline policies of one role, together. */
  inlinePerRole: 10_240,
  /** Characters of one managed policy. */
  managedPolicy: 6_144,
  /** Managed policies attached to one role (the default quota; 20 on request). */
  managedPerRole: 10,
} as const;

type Resource = { Type: string; Properties?: Record<string, unknown> };
type Templates = ReadonlyMap<string, { Resources?: Record<string, unknown> }>;
export interface RolePolicies {
  readonly role: string;
  /** Resolved characters of the role's inline policies: its own `Policies` and every `AWS::IAM::Policy` naming it. */
  readonly inline: number;
  /** Resolved characters of each `AWS::IAM::ManagedPolicy` attached to it. */
  readonly managed: number[];
  /** Managed policies attached: those above plus the role's `ManagedPolicyArns`. */
  readonly managedCount: number;
}

/** The policies of every IAM role of every template, sized as IAM counts them. */
export function rolePolicies(templates: Templates): RolePolicies[] {
  const out: RolePolicies[] = [];
  for (const [stackName, t] of templates) {
    const resources = Object.entries(t.Resources ?? {}) as [string, Resource][];
    const naming = (id: string, type: string) =>
      resources.filter(([, r]) => r.Type === type && ((r.Properties?.Roles as unknown[] | undefined) ?? []).some((ref) => JSON.stringify(ref) === JSON.stringify({ Ref: id })));
    for (const [id, role] of resources.filter(([, r]) => r.Type === 'AWS::IAM::Role')) {
      const own = ((role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).map((p) => policySize(p.PolicyDocument));
      const inline = [...own, ...naming(id, 'AWS::IAM::Policy').map(([, p]) => policySize(p.Properties?.PolicyDocument))];
      const managed = naming(id, 'AWS::IAM::ManagedPolicy').map(([, p]) => policySize(p.Properties?.PolicyDocument));
      const arns = ((role.Properties?.ManagedPolicyArns as unknown[] | undefined) ?? []).length;
      out.push({ role: `${stackName}/${id}`, inline: inline.reduce((a, b) => a + b, 0), managed, managedCount: managed.length + arns });
    }
  }
  return out;
}

/** Every way a role breaks `limits`, one line each. */
export function overLimits(roles: readonly RolePolicies[], limits: typeof IAM_LIMITS = IAM_LIMITS): string[] {
  return roles.flatMap((r) => [
    ...(r.inline > limits.inlinePerRole ? [`${r.role}: ${r.inline} characters of inline policies (IAM allows ${limits.inlinePerRole})`] : []),
    ...r.managed.filter((n) => n > limits.managedPolicy).map((n) => `${r.role}: a managed policy of ${n} characters (IAM allows ${limits.managedPolicy})`),
    ...(r.managedCount > limits.managedPerRole ? [`${r.role}: ${r.managedCount} managed policies (the quota is ${limits.managedPerRole})`] : []),
  ]);
}

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

  const roles = rolePolicies(templates);
  /** The share of its nearest limit a role uses. */
  const usage = (r: RolePolicies) => Math.max(r.inline / IAM_LIMITS.inlinePerRole, Math.max(0, ...r.managed) / IAM_LIMITS.managedPolicy, r.managedCount / IAM_LIMITS.managedPerRole);

  it('keeps every role’s policies within IAM’s limits once resolved: functions, jobs, replay, erase, state machines, schedulers', (t) => {
    assert.ok(stack.pipeline.monitoring, 'monitoring is on');
    assert.ok(config.jobs.reconcile.window.enabled && config.jobs.reconcile.full.enabled && config.jobs.snapshot.enabled, 'every job is scheduled');
    const names = roles.map((r) => r.role).join(' ');
    for (const role of ['IngestRole', 'ReplayRole', 'EraseRole', 'ReplayStateMachineRole', 'EraseStateMachineRole', 'CompactionStateMachineRole', 'ReconcileStateMachineRole', 'SnapshotStateMachineRole']) {
      assert.match(names, new RegExp(`Pipeline\\w*${role}`), `the ${role} is checked`);
    }
    for (const task of ['JobQueryAt', 'CompactionPlan', 'CompactionFinish', 'ReconcilePlan', 'ReconcileExportFiles', 'ReconcileTableSide', 'ReconcileWindowSide', 'ReconcileReport', 'SnapshotPlan', 'SnapshotReport']) {
      assert.match(names, new RegExp(`Jobs${task}Role`));
    }
    assert.deepEqual(overLimits(roles), []);
    for (const r of [...roles].sort((a, b) => usage(b) - usage(a)).slice(0, 3)) {
      t.diagnostic(`${r.role}: inline ${r.inline}/${IAM_LIMITS.inlinePerRole}, ${r.managedCount} managed of at most ${Math.max(0, ...r.managed)}/${IAM_LIMITS.managedPolicy}`);
    }
  });

  it('the check fails on a role over any limit', () => {
    const doc = (chars: number) => ({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: 'x'.repeat(chars) }] });
    const template = (policies: Record<string, unknown>) => new Map([['s', { Resources: { R: { Type: 'AWS::IAM::Role', Properties: {} }, ...policies } }]]);
    const attached = (type: string, chars: number) => ({ Type: type, Properties: { Roles: [{ Ref: 'R' }], PolicyDocument: doc(chars) } });
    assert.deepEqual(overLimits(rolePolicies(template({ A: attached('AWS::IAM::Policy', 6_000), B: attached('AWS::IAM::Policy', 5_000) }))).length, 1);
    assert.deepEqual(overLimits(rolePolicies(template({ M: attached('AWS::IAM::ManagedPolicy', 6_100) }))).length, 1);
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`M${i}`, attached('AWS::IAM::ManagedPolicy', 10)]));
    assert.deepEqual(overLimits(rolePolicies(template(eleven))).length, 1);
    // A token counts as a long ARN: 60 references outgrow a managed policy, though their JSON is short.
    const refs = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: Array.from({ length: 60 }, (_, i) => ({ 'Fn::GetAtt': [`T${i}`, 'Arn'] })) }] };
    assert.deepEqual(overLimits(rolePolicies(template({ M: { Type: 'AWS::IAM::ManagedPolicy', Properties: { Roles: [{ Ref: 'R' }], PolicyDocument: refs } } }))).length, 1);
    assert.deepEqual(overLimits(rolePolicies(template({ A: attached('AWS::IAM::Policy', 6_000) }))), []);
  });

  it('grants every target table by its exact ARN to each role that touches them, and no other table but replay’s fresh ones', () => {
    const root = templates.get(stack.node.path) ?? {};
    const docs = new Map<string, string>();
    for (const r of Object.values(root.Resources ?? {}) as Resource[]) {
      if (r.Type !== 'AWS::IAM::Policy' && r.Type !== 'AWS::IAM::ManagedPolicy') continue;
      for (const ref of (r.Properties?.Roles as { Ref: string }[] | undefined) ?? []) {
        docs.set(ref.Ref, (docs.get(ref.Ref) ?? '') + JSON.stringify(resolved(r.Properties?.PolicyDocument)));
      }
    }
    const touching = [...docs].filter(([, d]) => d.includes(`:table/${tables[0]?.target}"`));
    const roleNames = touching.map(([role]) => role).join(' ');
    for (const role of ['IngestRole', 'ReplayRole', 'EraseRole', 'ReconcilePlanRole', 'ReconcileWindowSideRole', 'SnapshotReportRole', 'ReconcileStateMachineRole']) assert.match(roleNames, new RegExp(role));
    for (const [role, doc] of touching) {
      for (const t of tables) assert.ok(doc.includes(`:table/${t.target}"`), `${role} is granted ${t.target}`);
      const wildcards = [...doc.matchAll(/:table\/([^"]*\*[^"]*)"/g)].map((m) => m[1]);
      // Reconcile's state machine describes the targets' exports (`table/<target>/export/<id>`): at this
      // many tables through one pattern over their common name prefix, never every table's.
      const expected = role.includes('ReplayRole') ? ['shop-fresh-*'] : role.includes('ReconcileStateMachineRole') ? ['shop-inventory-table-*/export/*'] : [];
      assert.deepEqual([...new Set(wildcards)], expected, `${role}: table wildcards`);
    }
  });
});
