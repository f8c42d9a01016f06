/**
 * `JobFunction`: one task's Lambda function, with a role holding only that task's grants.
 * `TidemarkJob`: one Step Functions state machine for one job (compaction, reconcile, snapshot
 * detection), deployed from the shared ASL definition (`definitions.ts`) with its substitutions (the
 * task functions, the Athena workgroup): a state-machine role that may invoke exactly its functions,
 * do what its service tasks do (granted by the job), and, with a Distributed Map, start its own child
 * executions; execution logging, X-Ray tracing, an alarm on failed executions, and EventBridge
 * Scheduler schedules with retries and a dead-letter queue.
 */
import { Arn, ArnFormat, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../config/config.js';
import { INGEST_RUNTIME, METRIC_NAMESPACE } from '../defaults.js';
import { encryptStateMachine } from '../encryption.js';
import { handlerCode } from '../handler-asset.js';
import { KEY_ACTIONS } from '../ingest-function.js';

/** Name of the jobs' handler bundle: `functions/jobs.ts`, prebuilt as `dist/handlers/jobs/`. */
export const JOBS_HANDLER = 'jobs';

/**
 * The jobs' code asset, staged once per config and entry and shared by every task function of both
 * jobs (each names its export as handler): one esbuild run per pipeline, not one per function. The
 * resolved config travels in the asset as `tidemark.config.json`, as for the ingest function.
 */
const staged = new WeakMap<TidemarkConfig, Map<string, string>>();
export function jobsCode(config: TidemarkConfig, entry?: string): lambda.Code {
  let byEntry = staged.get(config);
  if (!byEntry) {
    byEntry = new Map();
    staged.set(config, byEntry);
  }
  const key = entry ?? '';
  let directory = byEntry.get(key);
  if (directory === undefined) {
    directory = handlerCode({ name: JOBS_HANDLER, config, ...(entry ? { entry } : {}) }).directory;
    byEntry.set(key, directory);
  }
  // A fresh asset per call: an asset belongs to one stack, and a config may be synthesized in several.
  return lambda.Code.fromAsset(directory);
}

/** One task function: the handler export it runs and what its role may do. */
export interface JobFunctionProps {
  readonly config: TidemarkConfig;
  /** Names the function `<pipeline>-<job>-<handler>` and its role's description. */
  readonly job: string;
  /** Export of the jobs entry, e.g. `reconcilePlan`. */
  readonly handler: string;
  readonly description: string;
  /** Adds exactly this task's permissions to its role. */
  readonly grant: (role: iam.Role) => void;
  /**
   * Source file of the handlers; it must export `handler`.
   * @default `functions/jobs.ts`, or the prebuilt handlers of the installed package
   */
  readonly entry?: string;
  /** @default - AWS-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** @default 1024 */
  readonly memoryMb?: number;
  /** @default Duration.minutes(15) */
  readonly timeout?: Duration;
}

/** A job task's Lambda function, with its own log group and a role holding only its task's grants. */
export class JobFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: JobFunctionProps) {
    super(scope, id);
    const { config, job } = props;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const functionName = `${config.name}-${job}-${props.handler}`.slice(0, 64);
    const logGroup = new logs.LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
    });
    this.role = new iam.Role(this, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: `tidemark ${config.name} ${job}: ${props.description}` });
    logGroup.grantWrite(this.role);
    props.grant(this.role);
    if (props.encryptionKey) {
      // The ingest's key actions and no more: GenerateDataKey to put reports, queries and table-side
      // files (SSE-KMS), Decrypt to read them, the unloaded results and the ledger key secret. S3,
      // DynamoDB and Secrets Manager encrypt with data keys, so no task calls kms:Encrypt, and none
      // creates a resource under the key, which is what would need kms:DescribeKey.
      this.role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'UsePipelineKey', actions: [...KEY_ACTIONS], resources: [props.encryptionKey.keyArn] }));
    }
    this.function = new lambda.Function(this, 'Function', {
      functionName,
      description: `tidemark ${config.name} ${job}: ${props.description}`,
      code: jobsCode(config, props.entry),
      handler: `index.${props.handler}`,
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memoryMb ?? 1024,
      timeout: props.timeout ?? Duration.minutes(15),
      role: this.role,
      logGroup,
      environment: {
        POWERTOOLS_SERVICE_NAME: `tidemark-${job}`,
        POWERTOOLS_METRICS_NAMESPACE: METRIC_NAMESPACE,
      },
    });
    Validations.of(this.function).acknowledge({ id: 'AwsSolutions-L1', reason: 'The jobs runtime is pinned to nodejs22.x, like the ingest function.' });
  }
}

export interface JobScheduleProps {
  /** Construct id, e.g. `Window`. */
  readonly id: string;
  /** EventBridge Scheduler expression. */
  readonly expression: string;
  readonly enabled: boolean;
  /** The execution input. */
  readonly input: Record<string, unknown>;
}

export interface TidemarkJobProps {
  readonly config: TidemarkConfig;
  /** Job name: the state machine is `<pipeline>-<job>`. */
  readonly job: string;
  /** The ASL definition, with `${Name}` task resources. */
  readonly definition: Record<string, unknown>;
  /** Substitution name → the task function it names (a function may serve several jobs). */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** Further definition substitutions (the Athena workgroup). @default - none */
  readonly substitutions?: Readonly<Record<string, string>>;
  /** Adds what the state machine's own service tasks need (Athena, Glue, S3, DynamoDB exports) to its role. */
  readonly grantStateMachine?: (role: iam.Role) => void;
  readonly schedules: readonly JobScheduleProps[];
  /** @default - AWS-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** Where the failed-executions alarm notifies. @default - no action */
  readonly alarmTopic?: sns.ITopic;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/** Whether a definition holds a Distributed Map (at any depth). */
export function hasDistributedMap(definition: unknown): boolean {
  if (Array.isArray(definition)) return definition.some(hasDistributedMap);
  if (definition === null || typeof definition !== 'object') return false;
  const o = definition as Record<string, unknown>;
  if ((o.ProcessorConfig as { Mode?: unknown } | undefined)?.Mode === 'DISTRIBUTED') return true;
  return Object.values(o).some(hasDistributedMap);
}

export class TidemarkJob extends Construct {
  readonly stateMachine: sfn.StateMachine;
  /** Substitution name → task function. */
  readonly functions: ReadonlyMap<string, lambda.IFunction>;
  readonly role: iam.Role;
  readonly deadLetterQueue: sqs.Queue;
  readonly failedAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: TidemarkJobProps) {
    super(scope, id);
    const { config, job } = props;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const withKey = props.encryptionKey ? { encryptionKey: props.encryptionKey } : {};
    const stateMachineName = `${config.name}-${job}`;

    const functions = new Map<string, lambda.IFunction>(Object.entries(props.functions));
    this.functions = functions;

    const logGroup = new logs.LogGroup(this, 'ExecutionLogs', {
      logGroupName: `/aws/vendedlogs/states/${stateMachineName}`,
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy,
      ...withKey,
    });
    const role = new iam.Role(this, 'StateMachineRole', { assumedBy: new iam.ServicePrincipal('states.amazonaws.com'), description: `tidemark ${config.name} ${job} state machine` });
    const stack = Stack.of(this);
    const ownArn = Arn.format({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME }, stack);
    const executionsArn = Arn.format({ service: 'states', resource: 'execution', resourceName: `${stateMachineName}/*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }, stack);
    this.role = role;
    role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'InvokeTasks', actions: ['lambda:InvokeFunction'], resources: [...new Set([...functions.values()])].map((f) => f.functionArn) }));
    props.grantStateMachine?.(role);
    // Distributed Map runs each item as a child execution of this state machine: only a definition
    // holding one may start, describe and stop its own executions.
    if (hasDistributedMap(props.definition)) {
      role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'DistributedMapChildren', actions: ['states:StartExecution'], resources: [ownArn] }));
      role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'DistributedMapChildStatus', actions: ['states:DescribeExecution', 'states:StopExecution'], resources: [executionsArn] }));
      const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
      const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:${region}:${account}:execution:${stateMachineName}/*]`,
        reason: 'Distributed Map child executions get generated names; only executions of this state machine are reachable.',
      });
    }

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName,
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(props.definition)),
      definitionSubstitutions: { ...Object.fromEntries([...functions].map(([name, fn]) => [name, fn.functionArn])), ...props.substitutions },
      role,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
      timeout: Duration.hours(12),
      removalPolicy,
    });
    // The definition and execution history under the pipeline key, with a key policy that names this
    // account for the log delivery service (lib/encryption.ts).
    if (props.encryptionKey) encryptStateMachine(this.stateMachine, props.encryptionKey, stateMachineName);
    // The role's log-delivery and X-Ray statements (added by CDK) need "*": those APIs take no resource.
    Validations.of(role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: 'CloudWatch Logs vended delivery and X-Ray actions do not support resource-level permissions.' });

    this.deadLetterQueue = new sqs.Queue(this, 'ScheduleDeadLetters', {
      queueName: `${stateMachineName}-schedule-failures`,
      retentionPeriod: Duration.days(14),
      enforceSSL: true,
      ...(props.encryptionKey ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: props.encryptionKey } : { encryption: sqs.QueueEncryption.KMS_MANAGED }),
    });
    Validations.of(this.deadLetterQueue).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'This queue is itself the dead letter of the schedules.' });
    const schedulerRole = new iam.Role(this, 'SchedulerRole', { assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com'), description: `tidemark ${config.name} ${job} schedules` });
    this.stateMachine.grantStartExecution(schedulerRole);
    // Named actions only (grantSendMessages would add kms:ReEncrypt* and kms:GenerateDataKey*).
    schedulerRole.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'DeadLetters', actions: ['sqs:SendMessage'], resources: [this.deadLetterQueue.queueArn] }));
    if (props.encryptionKey) {
      schedulerRole.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'EncryptDeadLetters', actions: ['kms:Decrypt', 'kms:GenerateDataKey'], resources: [props.encryptionKey.keyArn] }));
    }
    for (const s of props.schedules) {
      new scheduler.CfnSchedule(this, `${s.id}Schedule`, {
        name: `${stateMachineName}-${s.id.toLowerCase()}`.slice(0, 64),
        description: `tidemark ${config.name}: ${job} (${s.id})`,
        scheduleExpression: s.expression,
        scheduleExpressionTimezone: 'UTC',
        state: s.enabled ? 'ENABLED' : 'DISABLED',
        flexibleTimeWindow: { mode: 'OFF' },
        target: {
          arn: this.stateMachine.stateMachineArn,
          roleArn: schedulerRole.roleArn,
          input: JSON.stringify(s.input),
          retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 },
          deadLetterConfig: { arn: this.deadLetterQueue.queueArn },
        },
      });
    }

    this.failedAlarm = new cloudwatch.Alarm(this, 'ExecutionsFailed', {
      alarmName: `${stateMachineName}-failed`,
      alarmDescription: `A ${job} execution failed, timed out or was aborted`,
      metric: new cloudwatch.MathExpression({
        expression: 'FILL(f, 0) + FILL(t, 0) + FILL(a, 0)',
        usingMetrics: { f: this.stateMachine.metricFailed(), t: this.stateMachine.metricTimedOut(), a: this.stateMachine.metricAborted() },
        period: Duration.hours(1),
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmTopic) this.failedAlarm.addAlarmAction(new actions.SnsAction(props.alarmTopic));
  }
}
