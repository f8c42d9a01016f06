/**
 * The jobs' state machines as `e2e.ts` finds and starts them on the deployed stack, kept pure so
 * that test/unit/lib/localstack.test.ts checks the very same lookups and inputs offline.
 *
 * Nothing here writes a job input of its own: the scheduled inputs are read from the Scheduler
 * targets of the deployed template (lib/jobs/jobs.ts writes them), the replay request is the
 * `ReplayRequest` of functions/replay/job.ts, and the erase input is what `tidemark erase --on aws`
 * sends after `submitErase` stored the request.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TidemarkConfig } from '../lib/config/config.js';
import { ledgerKeySecretName } from '../lib/config/replay.js';
import { TidemarkError } from '../functions/core/errors.js';
import type { JsonObject } from '../functions/core/json.js';
import type { ReconcileRequest } from '../functions/jobs/reconcile/types.js';
import type { ReplayRequest } from '../functions/replay/job.js';

/** Output id (in lib/pipeline.ts `addOutputs`) of each job's state machine ARN. */
export const JOB_OUTPUT_IDS = {
  compaction: 'CompactionStateMachineArn',
  reconcile: 'ReconcileStateMachineArn',
  snapshot: 'SnapshotStateMachineArn',
  maintenance: 'MaintenanceStateMachineArn',
  replay: 'ReplayStateMachineArn',
  erase: 'EraseStateMachineArn',
} as const;
export type JobName = keyof typeof JOB_OUTPUT_IDS;

/** The part of a synthesized CloudFormation template read here. */
export interface CfnTemplate {
  readonly Resources?: Record<string, { readonly Type: string; readonly Properties?: Record<string, unknown> }>;
  readonly Outputs?: Record<string, { readonly Value?: unknown; readonly Description?: string }>;
  readonly Mappings?: Record<string, Record<string, Record<string, unknown>>>;
}

export interface ScheduledInput {
  /** The schedule's name, e.g. `shop-reconcile-window`. */
  readonly schedule: string;
  readonly enabled: boolean;
  readonly input: JsonObject;
}

export interface DeployedJob {
  readonly job: JobName;
  /** Logical id of the output: its key in `cdk deploy --outputs-file`. */
  readonly outputKey: string;
  /** Logical id of the state machine. */
  readonly stateMachine: string;
  /** What each of its EventBridge Scheduler schedules passes as the execution input. */
  readonly scheduled: readonly ScheduledInput[];
}

/** The deployed template does not wire a job as e2e.ts expects. */
export class TemplateError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

const refOf = (value: unknown): string | undefined =>
  typeof value === 'object' && value !== null && typeof (value as { Ref?: unknown }).Ref === 'string' ? (value as { Ref: string }).Ref : undefined;

/**
 * The templates of the named stacks in a cloud assembly (`cdk deploy --output <dir>`: its
 * manifest.json lists each stack artifact and its template file).
 */
export function deployedTemplates(cdkOutDir: string, stackNames: readonly string[]): CfnTemplate[] {
  const manifest = JSON.parse(readFileSync(path.join(cdkOutDir, 'manifest.json'), 'utf8')) as {
    artifacts?: Record<string, { type?: string; properties?: { templateFile?: string; stackName?: string } }>;
  };
  const templates: CfnTemplate[] = [];
  for (const [id, a] of Object.entries(manifest.artifacts ?? {})) {
    if (a.type !== 'aws:cloudformation:stack' || !a.properties?.templateFile) continue;
    if (!stackNames.includes(a.properties.stackName ?? id)) continue;
    templates.push(JSON.parse(readFileSync(path.join(cdkOutDir, a.properties.templateFile), 'utf8')) as CfnTemplate);
  }
  if (templates.length === 0) throw new TemplateError(`no template of the stacks ${stackNames.join(', ')} in ${cdkOutDir}`);
  return templates;
}

/** Logical ids of every state machine in the template. */
export function stateMachineIds(template: CfnTemplate): string[] {
  return Object.entries(template.Resources ?? {})
    .filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine')
    .map(([id]) => id);
}

/**
 * Each job whose output is in the template: its output key, its state machine and its scheduled
 * inputs. CDK names an output `<construct path><id><8 hex digits>`; the output's value must be a
 * `Ref` to a state machine of the same template, else this throws.
 */
export function deployedJobs(template: CfnTemplate): DeployedJob[] {
  const resources = template.Resources ?? {};
  const jobs: DeployedJob[] = [];
  for (const [job, id] of Object.entries(JOB_OUTPUT_IDS) as [JobName, string][]) {
    const hits = Object.entries(template.Outputs ?? {}).filter(([key]) => new RegExp(`^[A-Za-z0-9]*${id}[0-9A-F]{8}$`).test(key));
    if (hits.length === 0) continue;
    if (hits.length > 1) throw new TemplateError(`${hits.length} outputs named ${id}: ${hits.map(([k]) => k).join(', ')}`);
    const [outputKey, output] = hits[0] as [string, { Value?: unknown }];
    const stateMachine = refOf(output.Value);
    if (!stateMachine || resources[stateMachine]?.Type !== 'AWS::StepFunctions::StateMachine') {
      throw new TemplateError(`output ${outputKey} is not a Ref to a state machine: ${JSON.stringify(output.Value)}`);
    }
    const scheduled: ScheduledInput[] = [];
    for (const [scheduleId, r] of Object.entries(resources)) {
      if (r.Type !== 'AWS::Scheduler::Schedule') continue;
      const target = (r.Properties?.Target ?? {}) as { Arn?: unknown; Input?: unknown };
      if (refOf(target.Arn) !== stateMachine) continue;
      if (typeof target.Input !== 'string') throw new TemplateError(`schedule ${scheduleId} passes no literal input`);
      const input = JSON.parse(target.Input) as unknown;
      if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new TemplateError(`schedule ${scheduleId}: input is not a JSON object`);
      scheduled.push({ schedule: String(r.Properties?.Name ?? scheduleId), enabled: r.Properties?.State !== 'DISABLED', input: input as JsonObject });
    }
    jobs.push({ job, outputKey, stateMachine, scheduled });
  }
  return jobs;
}

/**
 * A reconcile request that compares everything landed so far. The scheduled inputs leave rows
 * applied within `cutoffSeconds` (900 s by default) alone as in flight, which is every row a test
 * has just written; this is the scheduled full run with the cutoff at the start of the run.
 */
export function settledReconcile(scheduledFull: JsonObject): ReconcileRequest {
  return { ...(scheduledFull as ReconcileRequest), mode: 'full', cutoffSeconds: 0 };
}

/** Replay of the test's landing window into the live tables: every record in it is already applied. */
export function replayTestWindow(config: TidemarkConfig, runId: string, window: { since: number; until: number }, now: number): ReplayRequest {
  return { runId, tables: config.tables.map((t) => t.source), since: window.since, until: window.until, into: 'live', now };
}

/** The erase state machine's input (eraseDefinition): the run and the request object `submitErase` stored. */
export function eraseInput(runId: string, requestKey: string): { runId: string; requestKey: string } {
  return { runId, requestKey };
}

/** The AWS Parameters and Secrets Lambda extension, as the CDK names its layer ARN (any region, either architecture). */
const PARAMS_AND_SECRETS_LAYER = /AWS-Parameters-and-Secrets-Lambda-Extension/;

/**
 * The layer ARNs a function may get: literal ones, and for `Fn::FindInMap` (how the CDK names an
 * AWS-published layer in a stack without a fixed region) every region's entry of that map.
 */
function layerArns(template: CfnTemplate, layers: unknown): string[] {
  if (!Array.isArray(layers)) return [];
  return layers.flatMap((layer: unknown) => {
    if (typeof layer === 'string') return [layer];
    const find = (layer as { 'Fn::FindInMap'?: unknown })?.['Fn::FindInMap'];
    if (!Array.isArray(find) || typeof find[0] !== 'string' || typeof find[2] !== 'string') return [];
    const [map, , key] = find as [string, unknown, string];
    return Object.values(template.Mappings?.[map] ?? {}).flatMap((byKey) => (typeof byKey[key] === 'string' ? [byKey[key] as string] : []));
  });
}

/**
 * Why the deployed erase function cannot run on LocalStack, or null.
 * - With the extension layer on it (the stack's generated ledger key secret, the default, or a
 *   `secretsmanager:` reference), it reads the key through the AWS Parameters and Secrets Lambda
 *   extension, which LocalStack does not emulate: the extension calls the real Secrets Manager
 *   endpoint (localstack/localstack issue 10349, open), so the read fails.
 * - With an `env:<NAME>` reference and no extension, the template must set that variable on it.
 */
export function eraseBlocker(template: CfnTemplate, config: TidemarkConfig): string | null {
  const reference = config.replay.erase.ledgerKeySecret;
  const resources = template.Resources ?? {};
  const machine = deployedJobs(template).find((j) => j.job === 'erase')?.stateMachine;
  if (!machine) return 'the stack outputs no erase state machine';
  const substitutions = (resources[machine]?.Properties?.DefinitionSubstitutions ?? {}) as Record<string, unknown>;
  const functionIds = Object.values(substitutions).flatMap((v) => {
    const getAtt = (v as { 'Fn::GetAtt'?: unknown })?.['Fn::GetAtt'];
    return Array.isArray(getAtt) && typeof getAtt[0] === 'string' ? [getAtt[0]] : [];
  });
  if (functionIds.length === 0) throw new TemplateError(`state machine ${machine} names no function in its definition substitutions`);
  const viaExtension = functionIds.filter((id) => layerArns(template, resources[id]?.Properties?.Layers).some((arn) => PARAMS_AND_SECRETS_LAYER.test(arn)));
  if (viaExtension.length > 0) {
    return `the deployed erase function (${viaExtension.join(', ')}) reads the ledger key from Secrets Manager through the AWS Parameters and Secrets Lambda extension layer, which LocalStack does not emulate (the extension calls the real AWS endpoint; localstack/localstack#10349), so it cannot read the ledger key here`;
  }
  if (!reference.startsWith('env:')) return null;
  // The default env: reference is deployed as the stack's generated secret, read with GetSecretValue.
  const generated = Object.values(resources).some((r) => r.Type === 'AWS::SecretsManager::Secret' && r.Properties?.Name === ledgerKeySecretName(config.name));
  if (generated) return null;
  const name = reference.slice('env:'.length);
  const missing = functionIds.filter((id) => {
    const variables = ((resources[id]?.Properties?.Environment ?? {}) as { Variables?: Record<string, unknown> }).Variables ?? {};
    return !(name in variables);
  });
  return missing.length === 0
    ? null
    : `replay.erase.ledgerKeySecret is ${reference}, but the deployed erase function (${missing.join(', ')}) has no ${name} in its environment, so it cannot read the ledger key`;
}
