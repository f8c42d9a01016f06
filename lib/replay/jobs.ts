/**
 * `ReplayJobs`: the on-demand replay and erase state machines, each with its one Lambda (every step
 * of a machine is one function, the step named in its input). The definitions are those of
 * ./definitions.ts, deployed as they are, with `${ReplayFunction}` / `${EraseFunction}` substituted.
 * Replay is the machine on SQL (`replaySqlDefinition`): its query loop also names
 * `${JobQueryAtFunction}` (a function of the jobs bundle that fetches the run's stored query, reading
 * only `<jobsPrefix>replay/<run>/queries.json`) and `${AthenaWorkGroup}` (the history's workgroup).
 *
 * Least privilege, per function:
 * - replay reads compaction's frontier (one object), writes job manifests, queries, items and
 *   results under `<jobsPrefix>replay/` and reads the selection's files there, writes spilled rows
 *   under the raw prefix and reads them back, reads stored positions and writes
 *   under the guard to the target tables, and may create, tag and fill fresh tables named
 *   `<pipeline>-fresh-*` only (never deletes one), with the live tables' encryption (under `kms`,
 *   CreateGrant and DescribeKey on the pipeline key through DynamoDB only), point-in-time recovery
 *   and deletion protection; it reads the erase ledger and raises truncate watermarks;
 * - erase also deletes and rewrites raw and quarantine objects (with their versions), deletes the
 *   key's item, writes the ledger, and writes and deletes its run's keys under
 *   `<history>erase_keys/`; its state machine runs erase's queries (lib/replay/definitions.ts) in
 *   the jobs' Athena workgroup: it reads raw, the run's keys and the Iceberg history and
 *   expected_state, rewrites those two (MERGE, OPTIMIZE) and expires their old files (VACUUM), and
 *   unloads what it found under the run's prefix; Glue only on those tables (UpdateTable on the two
 *   it commits), KMS only through S3 under `kms`.
 *   key's item, and writes the ledger.
 * The replay state machine's role runs Athena queries in the one workgroup, reads the Glue catalog,
 * the history database and the two tables replay-select reads (`history`, `raw_lines`), reads their
 * data (the warehouse and raw prefixes), writes the workgroup's results under `<history>athena/`
 * and the selection's UNLOAD under `<jobsPrefix>replay/<run>/events/`, reads the Map's items
 * (`<jobsPrefix>replay/<run>/buckets.json`), and, under `kms`, uses the pipeline key through S3 only.
 * Both read the erase ledger key from Secrets Manager with GetSecretValue (the SDK call in
 * functions/adapters/erase-ledger.ts; no extension layer, so it also deploys where AWS's layers cannot be
 * fetched, such as LocalStack), allowed to read that one secret:
 * - `ledgerKeySecret: secretsmanager:<id>`: the operator's secret, as named;
 * - `ledgerKeySecret: env:<VARIABLE>` (the default): nothing would set that variable on a deployed
 *   function, and putting the key in its environment would show it to anyone who may read the
 *   function's configuration. So the stack generates the key in a secret of its own,
 *   `tidemark/<pipeline>/erase-ledger-key` (`ledgerKeySecretName`), and ships the functions a
 *   config whose reference is `secretsmanager:` that name. The CLI keeps the `env:` reference: an
 *   operator exports the same key, read with `aws secretsmanager get-secret-value` (docs/replay.md).
 */
import { ArnFormat, type CfnResource, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { TidemarkConfig } from '../config/config.js';
import { ledgerKeySecretName } from '../config/replay.js';
import { freshTablePrefix } from '../../functions/config/types.js';
import type { CurrentState } from '../current-state.js';
import { INGEST_RUNTIME } from '../defaults.js';
import { handlerCode } from '../handler-asset.js';
import { encryptStateMachine, freshTableKeyStatement } from '../encryption.js';
import { KEY_ACTIONS, tableStatements } from '../ingest-function.js';
import type { RawStore } from '../raw-store.js';
import {
  athenaResultsPrefix,
  compactionFrontierKey,
  compactionStatePrefix,
  eraseKeysPrefix,
  historyWarehousePrefix,
  jobOutputsPrefix,
  jobRunPrefix,
  jobRunsPrefix,
  rawBatchesPrefix,
  rawTablesPrefix,
  runFile,
  runFolder,
  spilledRowsPrefix,
} from '../../functions/adapters/raw-layout.js';
import type { History, HistoryTableName } from '../history.js';
import { ATHENA_WORKGROUP, QUERY_AT_FUNCTION } from '../jobs/asl.js';
import { JobFunction } from '../jobs/job.js';
import { ATHENA_QUERY_ACTIONS, GLUE_READ_ACTIONS } from '../jobs/jobs.js';
import { ERASE_FUNCTION, eraseDefinition, REPLAY_FUNCTION, replaySqlDefinition } from './definitions.js';

/** What replay does to the items of a live or fresh table: guarded writes (with their pre-reads) and the diff's scan. */
const REPLAY_ITEM_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Scan', 'dynamodb:DeleteItem'];
/**
 * What replay does to a fresh table besides its items (functions/replay/fresh.ts): create it with
 * its tags (CreateTable with Tags needs TagResource), read the tags back before reusing it, wait for
 * it, and set TTL and point-in-time recovery as the live table has them.
 */
export const FRESH_TABLE_ACTIONS = [
  'dynamodb:CreateTable',
  'dynamodb:TagResource',
  'dynamodb:ListTagsOfResource',
  'dynamodb:DescribeTable',
  'dynamodb:DescribeTimeToLive',
  'dynamodb:UpdateTimeToLive',
  'dynamodb:DescribeContinuousBackups',
  'dynamodb:UpdateContinuousBackups',
];
/**
 * What the replay role may not do to the status table, should its name fall under the fresh-table
 * prefix (the default `<name>-status` does not, but `statusTable` is configurable): every item and
 * table call of a fresh table but the watermark and ledger calls.
 */
export const STATUS_TABLE_DENIED = ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:Scan', ...FRESH_TABLE_ACTIONS];

/**
 * Characters of the generated ledger key: letters and digits only (no quoting surprises when an
 * operator exports it), 64 of them, about 380 bits, well above the ledger's 16-byte minimum.
 */
export const GENERATED_LEDGER_KEY_LENGTH = 64;

/** `config` with the ledger key read from Secrets Manager, as the deployed functions are given it. */
function withLedgerKeySecret(config: TidemarkConfig, secretName: string): TidemarkConfig {
  return { ...config, replay: { ...config.replay, erase: { ...config.replay.erase, ledgerKeySecret: `secretsmanager:${secretName}` } } };
}

/**
 * What a function that hashes keys needs of the erase ledger key: the config it runs with (the key
 * read from Secrets Manager), and read access to exactly that secret. The replay and erase
 * functions match and write ledger entries with it; the ingest and the jobs name keys in their log
 * lines by its keyed hash.
 */
export interface LedgerKeyAccess {
  /** `config` as the deployed functions are given it. */
  runtimeConfig(config: TidemarkConfig): TidemarkConfig;
  /** GetSecretValue on the one secret, for `role`. */
  grantRead(role: iam.Role): void;
}

export interface ReplayJobsProps {
  readonly config: TidemarkConfig;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  /**
   * The Glue tables and the Athena workgroup replay's selection query and erase's queries (raw, its
   * run's keys, history, expected state) run over and in.
   */
  readonly history: History;
  /**
   * Handler source files; each must export `handler`.
   * @default `functions/replay.ts` and `functions/erase.ts`, or the prebuilt handlers of the installed package
   */
  readonly entries?: { readonly replay?: string; readonly erase?: string };
  /** @default - AWS-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

export class ReplayJobs extends Construct {
  readonly replayFunction: lambda.Function;
  readonly eraseFunction: lambda.Function;
  readonly replayStateMachine: sfn.StateMachine;
  readonly eraseStateMachine: sfn.StateMachine;
  /** Fetches the replay run's stored query for the state machine's query loop (`jobQueryAt` of the jobs bundle). */
  readonly replayQueryAtFunction: lambda.Function;
  /**
   * The erase ledger key the stack generated, when `replay.erase.ledgerKeySecret` is `env:…`;
   * undefined with a `secretsmanager:` reference (the operator's secret).
   */
  readonly ledgerKeySecret?: secretsmanager.Secret;
  /** The ledger key as the ingest, the jobs, replay and erase read it. */
  readonly ledgerKey: LedgerKeyAccess;
  /** The staged code folders (bundle and the config the functions run with), for inspection. */
  readonly codeDirectories: { readonly replay: string; readonly erase: string };

  constructor(scope: Construct, id: string, props: ReplayJobsProps) {
    super(scope, id);
    const { rawStore, currentState } = props;
    let config = props.config;
    if (config.replay.erase.ledgerKeySecret.startsWith('env:')) {
      const secretName = ledgerKeySecretName(config.name);
      // The value is generated by Secrets Manager at creation: it is in no template, no
      // environment and no log. Retained by default: without it no ledger entry can be matched
      // again, so an erased key could come back through replay.
      this.ledgerKeySecret = new secretsmanager.Secret(this, 'LedgerKeySecret', {
        secretName,
        description: `tidemark ${config.name}: HMAC key of the erase ledger (rotate by adding a key id, never by replacing: docs/replay.md)`,
        generateSecretString: { passwordLength: GENERATED_LEDGER_KEY_LENGTH, excludePunctuation: true, includeSpace: false },
        removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
        ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
      });
      config = withLedgerKeySecret(config, secretName);
    }
    const reference = config.replay.erase.ledgerKeySecret;
    this.ledgerKey = {
      runtimeConfig: (c) => ({ ...c, replay: { ...c.replay, erase: { ...c.replay.erase, ledgerKeySecret: reference } } }),
      grantRead: (role) => this.grantLedgerKey(role, reference),
    };
    const jobProps: ReplayJobsProps = { ...props, config };
    const raw = config.raw;
    const jobs = config.replay.jobsPrefix;
    const stack = Stack.of(this);
    const freshTables = stack.formatArn({ service: 'dynamodb', resource: 'table', resourceName: `${freshTablePrefix(config.name)}*` });
    // Target tables by name in size-bounded statements: 500 tables stay within IAM's policy limits.
    const targetNames = config.tables.map((t) => t.target);
    const opts = { maxConcurrency: config.replay.maxConcurrency, toleratedFailurePercentage: config.replay.toleratedFailurePercentage };

    // The stored query of every replay run (a run id of `*`).
    const replayQueries = runFile(jobRunPrefix(jobs, 'replay', '*'), 'queries');
    const replay = this.jobFunction('Replay', `${config.name}-replay`, 'replay', props.entries?.replay, jobProps, [
      // Compaction's frontier (where history ends and raw begins), the run's objects, spilled rows.
      statement('ReadFrontierRunsAndSpills', ['s3:GetObject'], [rawStore.bucket.arnForObjects(compactionFrontierKey(config.history.prefix)), rawStore.objectsUnder(jobs), rawStore.objectsUnder(spilledRowsPrefix(raw.prefix))]),
      statement('ListRaw', ['s3:ListBucket'], [rawStore.bucket.bucketArn]),
      statement('WriteJobsAndSpills', ['s3:PutObject'], [rawStore.objectsUnder(jobs), rawStore.objectsUnder(spilledRowsPrefix(raw.prefix))]),
      // The live tables: guarded writes, the diff's scan, and what a fresh table copies of them:
      // DescribeTable (key schema, encryption, deletion protection), DescribeContinuousBackups (PITR).
      ...tableStatements(this, 'GuardedReplayWrites', [...REPLAY_ITEM_ACTIONS, 'dynamodb:DescribeTable', 'dynamodb:DescribeContinuousBackups'], targetNames),
      statement('CreateFreshTables', [...REPLAY_ITEM_ACTIONS, ...FRESH_TABLE_ACTIONS], [freshTables]),
      ...(props.encryptionKey ? [freshTableKeyStatement(props.encryptionKey, stack)] : []),
      statement('WatermarksAndLedger', ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'], [currentState.statusTable.tableArn]),
      // A status table named under the fresh prefix: a fresh replay must never create, fill, scan
      // or empty it, whatever table name it is given (the job refuses it as well).
      new iam.PolicyStatement({ sid: 'NotTheStatusTable', effect: iam.Effect.DENY, actions: STATUS_TABLE_DENIED, resources: [currentState.statusTable.tableArn] }),
    ]);
    const erase = this.jobFunction('Erase', `${config.name}-erase`, 'erase', props.entries?.erase, jobProps, [
      // Raw, quarantine, the jobs' runs and reports, and the failed batches Lambda keeps under aws/lambda/: every copy of a key.
      statement(
        'RewriteRawAndQuarantine',
        ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion'],
        [
          rawStore.objectsUnder(raw.prefix),
          rawStore.objectsUnder(raw.quarantinePrefix),
          rawStore.objectsUnder(jobs),
          rawStore.objectsUnder(config.jobs.reportPrefix),
          // The jobs' SQL outputs (reconcile findings, snapshot orphans) name keys too.
          rawStore.objectsUnder(jobOutputsPrefix(config.history.prefix)),
          rawStore.objectsUnder(config.replay.onFailurePrefix),
          // The run's keys (erase_keys): written by begin, deleted with every version at the end.
          rawStore.objectsUnder(eraseKeysPrefix(config.history.prefix)),
        ],
      ),
      statement('ListRawAndVersions', ['s3:ListBucket', 's3:ListBucketVersions'], [rawStore.bucket.bucketArn]),
      // Compaction's frontier and hour markers, read only: Find names the compacted hours' objects from history.
      statement('ReadCompactionState', ['s3:GetObject'], [rawStore.objectsUnder(compactionStatePrefix(config.history.prefix))]),
      ...tableStatements(this, 'EraseItem', ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'], targetNames),
      statement('Ledger', ['dynamodb:PutItem', 'dynamodb:Query'], [currentState.statusTable.tableArn]),
    ]);
    this.replayFunction = replay.fn;
    this.eraseFunction = erase.fn;
    this.codeDirectories = { replay: replay.directory, erase: erase.directory };

    // The query loop's fetch: the jobs bundle's `jobQueryAt`, allowed to read the replay runs' stored queries only.
    const queryAtObjects = rawStore.bucket.arnForObjects(replayQueries);
    this.replayQueryAtFunction = new JobFunction(this, 'ReplayQueryAt', {
      config,
      job: 'replay',
      handler: 'jobQueryAt',
      description: "fetch the replay run's stored selection query for the query loop",
      grant: (role) => {
        role.addToPrincipalPolicy(statement('ReadStoredQueries', ['s3:GetObject'], [queryAtObjects]));
        this.ledgerKey.grantRead(role);
        Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::<${logicalId(rawStore.bucket)}.Arn>/${replayQueries}]`, reason: 'the stored query of a replay run; run ids are generated per run.' });
      },
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
      ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
    }).function;

    this.acknowledge(props);
    this.replayStateMachine = this.machine('ReplayStateMachine', `${config.name}-replay`, replaySqlDefinition(opts), REPLAY_FUNCTION, this.replayFunction, props, {
      substitutions: { [QUERY_AT_FUNCTION]: this.replayQueryAtFunction.functionArn, [ATHENA_WORKGROUP]: props.history.workGroupName },
      invoke: [this.replayQueryAtFunction],
      grant: (machine) => this.grantReplaySelection(machine, props),
    });
    // The erase function also answers its query loops' fetch; the queries run in the jobs' workgroup.
    this.eraseStateMachine = this.machine('EraseStateMachine', `${config.name}-erase`, eraseDefinition(opts), ERASE_FUNCTION, this.eraseFunction, props, {
      substitutions: { [QUERY_AT_FUNCTION]: this.eraseFunction.functionArn, [ATHENA_WORKGROUP]: props.history.workGroupName },
      invoke: [],
      grant: (machine) => this.grantEraseQueries(machine.role, props),
    });
  }

  private jobFunction(
    id: string,
    functionName: string,
    handlerName: string,
    entry: string | undefined,
    props: ReplayJobsProps,
    statements: iam.PolicyStatement[],
  ): { fn: lambda.Function; directory: string } {
    const { config } = props;
    const logGroup = new logs.LogGroup(this, `${id}LogGroup`, {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
    });
    const role = new iam.Role(this, `${id}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: `tidemark ${config.name} ${id.toLowerCase()} job` });
    logGroup.grantWrite(role);
    for (const s of statements) role.addToPrincipalPolicy(s);
    // The ingest's key actions: GenerateDataKey to put S3 objects (manifests, results, rewritten raw),
    // Decrypt to read raw and the ledger key secret. S3, DynamoDB and Secrets Manager encrypt with
    // data keys, so no kms:Encrypt; kms:DescribeKey only where a table is created under the key
    // (replay's CreateFreshTablesUnderPipelineKey).
    if (props.encryptionKey) role.addToPrincipalPolicy(statement('UsePipelineKey', [...KEY_ACTIONS], [props.encryptionKey.keyArn]));
    this.ledgerKey.grantRead(role);
    // The bundle with the resolved config beside it (read by loadRuntimeConfig at cold start): the
    // config never travels in the environment, which Lambda caps at 4 KB.
    const { code, directory } = handlerCode({ name: handlerName, config, ...(entry ? { entry } : {}) });
    const fn = new lambda.Function(this, `${id}Function`, {
      functionName,
      description: `tidemark ${config.name}: ${id.toLowerCase()} job steps`,
      code,
      handler: 'index.handler',
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 1024,
      timeout: Duration.minutes(15),
      role,
      logGroup,
    });
    return { fn, directory };
  }

  /** GetSecretValue on the ledger key's secret: the generated one by its ARN, the operator's by name or ARN. */
  private grantLedgerKey(role: iam.Role, reference: string): void {
    const secretId = reference.startsWith('secretsmanager:') ? reference.slice('secretsmanager:'.length) : null;
    if (this.ledgerKeySecret) {
      // The generated secret's own ARN (its random suffix included): no wildcard.
      role.addToPrincipalPolicy(statement('ReadLedgerKey', ['secretsmanager:GetSecretValue'], [this.ledgerKeySecret.secretArn]));
    } else if (secretId) {
      const arn = secretId.startsWith('arn:') ? secretId : Stack.of(this).formatArn({ service: 'secretsmanager', resource: 'secret', resourceName: `${secretId}-??????`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
      role.addToPrincipalPolicy(statement('ReadLedgerKey', ['secretsmanager:GetSecretValue'], [arn]));
      if (!secretId.startsWith('arn:')) {
        const { region, account } = env(this);
        Validations.of(role).acknowledge({
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:${region}:${account}:secret:${secretId}-??????]`,
          reason: 'the one ledger key secret: Secrets Manager appends six random characters to a secret name.',
        });
      }
    }
  }

  /**
   * What the erase state machine's Athena tasks need (their queries run with its role): the
   * workgroup; the catalog's raw_lines, raw_events, erase_keys, history and expected_state (and
   * committing the last two); raw, the run's keys and the warehouse read, the warehouse written and
   * its expired files deleted (VACUUM), the finds unloaded under the erase runs' prefix and the
   * Map's items read back from there, the query results; the pipeline key through S3 only.
   */
  private grantEraseQueries(role: iam.IRole, props: ReplayJobsProps): void {
    const { config, rawStore, history } = props;
    const h = config.history.prefix;
    const stack = Stack.of(this);
    const bucket = rawStore.bucket;
    const runs = jobRunsPrefix(config.replay.jobsPrefix, 'erase');
    const raw = [rawBatchesPrefix(config.raw.prefix), rawTablesPrefix(config.raw.prefix)];
    const keys = eraseKeysPrefix(h);
    const warehouse = historyWarehousePrefix(h);
    const results = athenaResultsPrefix(h);
    const objects = (prefixes: readonly string[]) => prefixes.map((p) => rawStore.objectsUnder(p));
    const add = (sid: string, actions: readonly string[], resources: string[], conditions?: Record<string, unknown>) =>
      role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions: [...actions], resources, ...(conditions ? { conditions } : {}) }));
    const glue = history.glueArns(['raw_lines', 'raw_events', 'erase_keys', 'history', 'expected_state']);
    add('RunEraseQueries', ATHENA_QUERY_ACTIONS, [history.workGroupArn]);
    add('ReadEraseCatalog', GLUE_READ_ACTIONS, glue);
    add('CommitErasedTables', ['glue:UpdateTable'], history.glueArns(['history', 'expected_state']).slice(2));
    add('LocateBucket', ['s3:GetBucketLocation'], [bucket.bucketArn]);
    add('ListQueryData', ['s3:ListBucket'], [bucket.bucketArn], { StringLike: { 's3:prefix': [...raw, keys, warehouse, results, runs].map((p) => `${p}*`) } });
    add('ReadQueryData', ['s3:GetObject'], objects([...raw, keys, warehouse]));
    add('QueryResults', ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], objects([results]));
    add('WriteErasedTables', ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], objects([warehouse]));
    add('UnloadFinds', ['s3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], objects([runs]));
    // The Rewrite Map's ItemReader reads the objects found (`<run>/objects.jsonl`) with this role.
    add('ReadMapItems', ['s3:GetObject'], objects([runs]));
    if (props.encryptionKey) add('QueryDataUnderPipelineKey', KEY_ACTIONS, [props.encryptionKey.keyArn], { StringEquals: { 'kms:ViaService': `s3.${stack.region}.amazonaws.com` } });
    const bucketId = `<${logicalId(bucket)}.Arn>`;
    for (const p of new Set([...raw, keys, warehouse, results, runs])) {
      Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${bucketId}/${p}*]`, reason: `erase's queries read or write objects under "${p}" only; their keys are per hour, run or data file.` });
    }
  }

  private machine(
    id: string,
    name: string,
    definition: Record<string, unknown>,
    substitution: string,
    fn: lambda.IFunction,
    props: ReplayJobsProps,
    more?: { substitutions: Record<string, string>; invoke: lambda.IFunction[]; grant: (machine: sfn.StateMachine) => void },
  ): sfn.StateMachine {
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      logGroupName: `/aws/vendedlogs/states/${name}`,
      retention: props.config.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
    });
    const machine = new sfn.StateMachine(this, id, {
      stateMachineName: name,
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
      definitionSubstitutions: { [substitution]: fn.functionArn, ...more?.substitutions },
      // Every event, without execution data: inputs and outputs may hold keys (never row values).
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
    });
    // Under `kms`, the definition and execution history under the pipeline key, as reconcile and snapshot.
    if (props.encryptionKey) encryptStateMachine(machine, props.encryptionKey, name);
    fn.grantInvoke(machine);
    for (const other of more?.invoke ?? []) other.grantInvoke(machine);
    more?.grant(machine);
    // A Distributed Map runs its iterations as child executions of the same state machine.
    const self = Stack.of(this).formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const executions = Stack.of(this).formatArn({ service: 'states', resource: 'execution', resourceName: `${name}:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    machine.addToRolePolicy(statement('RunDistributedMap', ['states:StartExecution'], [self]));
    machine.addToRolePolicy(statement('WatchDistributedMap', ['states:DescribeExecution', 'states:StopExecution'], [executions]));
    const ack = (findingId: string, reason: string) => Validations.of(machine).acknowledge({ id: findingId, reason });
    ack('AwsSolutions-IAM5[Resource::*]', 'X-Ray tracing and CloudWatch Logs delivery of a state machine need "*": their APIs have no resource-level permissions.');
    for (const f of [fn, ...(more?.invoke ?? [])]) ack(`AwsSolutions-IAM5[Resource::<${logicalId(f)}.Arn>:*]`, 'lambda:InvokeFunction on the job function and its versions, granted by grantInvoke.');
    const { region, account } = env(this);
    ack(`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:${region}:${account}:execution:${name}:*]`, 'the Distributed Map child executions of this state machine; their names are generated.');
    return machine;
  }

  /**
   * What the replay machine's own service tasks do: the selection query on Athena in the one
   * workgroup (the catalog, the history database, `history` and `raw_lines`; their data; the
   * workgroup's results; the UNLOAD of the run's events), and the Map's ItemReader (the run's
   * `buckets.json`). Under `kms`, the pipeline key through S3 only.
   */
  private grantReplaySelection(machine: sfn.StateMachine, props: ReplayJobsProps): void {
    const { config, rawStore, history } = props;
    const stack = Stack.of(this);
    const bucket = rawStore.bucket;
    // Every replay run (a run id of `*`), for the IAM resource patterns of its objects.
    const everyRun = jobRunPrefix(config.replay.jobsPrefix, 'replay', '*');
    const reads = [historyWarehousePrefix(config.history.prefix), config.raw.prefix];
    const results = athenaResultsPrefix(config.history.prefix);
    const events = runFolder(everyRun, 'events');
    const buckets = runFile(everyRun, 'buckets');
    const add = (s: iam.PolicyStatement) => machine.addToRolePolicy(s);
    add(statement('RunSelectionQuery', [...ATHENA_QUERY_ACTIONS], [history.workGroupArn]));
    add(statement('ReadCatalog', [...GLUE_READ_ACTIONS], history.glueArns(REPLAY_SELECT_TABLES)));
    add(statement('LocateBucket', ['s3:GetBucketLocation'], [bucket.bucketArn]));
    add(new iam.PolicyStatement({ sid: 'ListQueryData', actions: ['s3:ListBucket'], resources: [bucket.bucketArn], conditions: { StringLike: { 's3:prefix': [results, ...reads, events].map((x) => `${x}*`) } } }));
    add(statement('QueryResults', ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], [rawStore.objectsUnder(results)]));
    add(statement('ReadQueryData', ['s3:GetObject'], reads.map((x) => rawStore.objectsUnder(x))));
    add(statement('UnloadEvents', ['s3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], [rawStore.objectsUnder(events)]));
    add(statement('ReadMapItems', ['s3:GetObject'], [bucket.arnForObjects(buckets)]));
    if (props.encryptionKey) {
      add(new iam.PolicyStatement({ sid: 'QueryDataUnderPipelineKey', actions: [...KEY_ACTIONS], resources: [props.encryptionKey.keyArn], conditions: { StringEquals: { 'kms:ViaService': `s3.${stack.region}.amazonaws.com` } } }));
    }
    const bucketId = `<${logicalId(bucket)}.Arn>`;
    const role = machine.role;
    for (const p of [results, ...reads, events]) {
      Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${bucketId}/${p}*]`, reason: `objects under "${p}": query results, history files, raw batches and a run's selection are named per query, hour or run.` });
    }
    Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${bucketId}/${buckets}]`, reason: "the Map's ItemReader reads the run's bucket list; run ids are generated per run." });
  }

  /** The wildcards the job functions need, each with its reason (cdk-nag AwsSolutions). */
  private acknowledge(props: ReplayJobsProps): void {
    const { region, account } = env(this);
    const bucket = `<${logicalId(props.rawStore.bucket)}.Arn>`;
    const { raw, replay, name } = props.config;
    const prefixes: [lambda.Function, string[]][] = [
      [this.replayFunction, [replay.jobsPrefix, spilledRowsPrefix(raw.prefix)]],
      [this.eraseFunction, [raw.prefix, raw.quarantinePrefix, replay.jobsPrefix, props.config.jobs.reportPrefix, jobOutputsPrefix(props.config.history.prefix), replay.onFailurePrefix, eraseKeysPrefix(props.config.history.prefix), compactionStatePrefix(props.config.history.prefix)]],
    ];
    for (const [fn, list] of prefixes) {
      const role = fn.role;
      if (!role) continue;
      for (const p of new Set(list)) {
        Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${bucket}/${p}*]`, reason: `objects under "${p}": raw, job and spill object keys are per batch or per run and not known in advance.` });
      }
      Validations.of(fn).acknowledge({ id: 'AwsSolutions-L1', reason: 'The job runtime is pinned to nodejs22.x, the Node line the project bundles for and tests against.' });
    }
    const replayRole = this.replayFunction.role;
    if (replayRole) {
      Validations.of(replayRole).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:${region}:${account}:table/${freshTablePrefix(name)}*]`,
        reason: `replay --into fresh:<table> creates and fills a table the operator names; it must start with the reserved prefix "${freshTablePrefix(name)}", and the job reuses only a table tagged as its own.`,
      });
    }
  }
}

/** Region and account as cdk-nag prints them in finding ids: literal, or `<AWS::Region>` for an environment-agnostic stack. */
function env(c: Construct): { region: string; account: string } {
  const stack = Stack.of(c);
  return {
    region: Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region,
    account: Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account,
  };
}

function logicalId(c: Construct): string {
  const stack = Stack.of(c);
  return stack.resolve(stack.getLogicalId(c.node.defaultChild as CfnResource)) as string;
}

/** The tables replay-select reads (functions/sql/statements/replay-select.ts): history before the frontier, raw's batch objects from it. */
export const REPLAY_SELECT_TABLES: readonly HistoryTableName[] = ['history', 'raw_lines'];


function statement(sid: string, actions: string[], resources: string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({ sid, actions, resources });
}
