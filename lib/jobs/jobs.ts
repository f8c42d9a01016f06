/**
 * `TidemarkJobs`: the scheduled jobs of a pipeline, each its own state machine over Athena
 * (docs/contract.md, "Jobs"; docs/jobs.md; docs/history.md §4): hourly compaction of raw into the
 * Iceberg history (`history.compaction.schedule`), reconcile (a window schedule and a full
 * schedule), snapshot detection and table maintenance (OPTIMIZE and VACUUM of the Iceberg tables,
 * `history.maintenance.schedule`). One Lambda function per handler of functions/jobs/handlers.ts,
 * each granted exactly what its step does; the state machines' roles hold what their service tasks
 * do: Athena queries in the jobs' workgroup, the Glue tables those queries read and write, the S3
 * prefixes under them, and, for reconcile, DynamoDB point-in-time exports of the target tables.
 */
import { Duration, type RemovalPolicy, Stack, Token, Validations, type CfnResource } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { athenaResultsPrefix, compactionStatePrefix, historyWarehousePrefix, jobRunsPrefix, jobUnloadPrefix, manifestUploadsPrefix, rawBatchesPrefix, reportRunsPrefix, tableSidePrefix } from '../../functions/adapters/raw-layout.js';
import { ALL_TABLES, RECONCILE_METRICS, RECONCILE_WINDOW_FINDINGS_METRIC, SNAPSHOT_FINDING_METRICS } from '../../functions/telemetry/job-metrics.js';
import type { TidemarkConfig } from '../config/config.js';
import type { CurrentState } from '../current-state.js';
import { METRIC_NAMESPACE, SERVICE_NAME } from '../defaults.js';
import type { History, HistoryTableName } from '../history.js';
import { arnChars, chunksBySize, KEY_ACTIONS, tableStatements } from '../ingest-function.js';
import type { RawStore } from '../raw-store.js';
import type { LedgerKeyAccess } from '../replay/jobs.js';
import {
  ATHENA_WORKGROUP,
  COMPACTION_TASKS,
  compactionDefinition,
  MAINTENANCE_TASKS,
  maintenanceDefinition,
  QUERY_AT_FUNCTION,
  RECONCILE_TASKS,
  reconcileDefinition,
  SNAPSHOT_TASKS,
  snapshotDefinition,
} from './definitions.js';
import { JobFunction, TidemarkJob } from './job.js';

export interface TidemarkJobsProps {
  readonly config: TidemarkConfig;
  readonly rawStore: RawStore;
  readonly currentState: CurrentState;
  /** The Glue tables and the Athena workgroup the jobs' queries use. */
  readonly history: History;
  /** @default - AWS-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** Where job alarms notify. @default - no action */
  readonly alarmTopic?: sns.ITopic;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Source file of the job handlers; it must export every task's handler.
   * @default `functions/jobs.ts`, or the prebuilt handlers of the installed package
   */
  readonly entry?: string;
  /** The erase ledger key, read at cold start: log lines name keys by its keyed hash. @default - log lines name no keys */
  readonly ledgerKey?: LedgerKeyAccess;
}

/** The key prefixes the jobs read and write, from the config (functions/adapters/raw-layout.ts). */
export function jobPrefixes(config: Pick<TidemarkConfig, 'raw' | 'history' | 'jobs' | 'replay'>) {
  const h = config.history.prefix;
  return {
    raw: config.raw.prefix,
    /** The batch objects (compaction lists them by hour). */
    rawBatches: rawBatchesPrefix(config.raw.prefix),
    quarantine: config.raw.quarantinePrefix,
    /** Compaction's frontier and hour markers. */
    state: compactionStatePrefix(h),
    warehouse: historyWarehousePrefix(h),
    tableSide: tableSidePrefix(h),
    unloadReconcile: jobUnloadPrefix(h, 'reconcile'),
    unloadSnapshot: jobUnloadPrefix(h, 'snapshot'),
    athenaResults: athenaResultsPrefix(h),
    /** Compaction's stored queries (`<jobs prefix>compaction/<run>/`). */
    compactionRuns: jobRunsPrefix(config.replay.jobsPrefix, 'compaction'),
    /** Table maintenance's stored queries (`<jobs prefix>maintenance/<run>/`). */
    maintenanceRuns: jobRunsPrefix(config.replay.jobsPrefix, 'maintenance'),
    /** Reconcile's and snapshot detection's runs and reports. */
    reconcileReports: reportRunsPrefix(config.jobs.reportPrefix, 'reconcile'),
    snapshotReports: reportRunsPrefix(config.jobs.reportPrefix, 'snapshot'),
    /** Uploaded key-set manifests (reconcile --manifest). */
    manifests: manifestUploadsPrefix(config.jobs.reportPrefix),
  };
}

/** What the tables of each job's queries are (functions/sql/statements: compact, fold, count; classify, window keys; anomalies, re-snapshots, orphans). */
export const JOB_TABLES = {
  compaction: { reads: ['raw_lines', 'raw_events', 'quarantine_lines', 'history', 'expected_state', 'truncates', 'table_hours'], writes: ['history', 'expected_state', 'truncates', 'table_hours'] },
  reconcile: { reads: ['raw_lines', 'history', 'expected_state', 'truncates', 'table_side'], writes: [] },
  snapshot: { reads: ['history', 'expected_state', 'table_hours'], writes: [] },
  // OPTIMIZE rewrites each table's files and commits; VACUUM expires snapshots and deletes their files.
  maintenance: { reads: ['history', 'expected_state', 'truncates', 'table_hours'], writes: ['history', 'expected_state', 'truncates', 'table_hours'] },
} as const satisfies Record<string, { reads: readonly HistoryTableName[]; writes: readonly HistoryTableName[] }>;

/** Athena actions of the `.sync` integration (Step Functions developer guide, "Run Athena queries with Step Functions", IAM policies). */
export const ATHENA_QUERY_ACTIONS = ['athena:StartQueryExecution', 'athena:GetQueryExecution', 'athena:StopQueryExecution'] as const;
/** What Athena reads of the Glue catalog for a query. */
export const GLUE_READ_ACTIONS = ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartition', 'glue:GetPartitions'] as const;

export class TidemarkJobs extends Construct {
  readonly compaction: TidemarkJob;
  readonly reconcile: TidemarkJob;
  readonly snapshot: TidemarkJob;
  /** OPTIMIZE and VACUUM of the Iceberg tables, on `history.maintenance.schedule`. */
  readonly maintenance: TidemarkJob;
  /** Every task function, by handler export name (`jobQueryAt`, `compactionPlan`, …). */
  readonly functions: ReadonlyMap<string, lambda.Function>;
  /** Finding alarms: `reconcile-ahead`, `reconcile-window-findings`, and one per snapshot finding kind. */
  readonly findingAlarms: ReadonlyMap<string, cloudwatch.Alarm>;

  constructor(scope: Construct, id: string, props: TidemarkJobsProps) {
    super(scope, id);
    const { config, rawStore, currentState, history } = props;
    const stack = Stack.of(this);
    const bucket = rawStore.bucket;
    const p = jobPrefixes(config);
    const targetNames = config.tables.map((t) => t.target);
    const status = currentState.statusTable.tableArn;
    const statement = (sid: string, acts: readonly string[], resources: string[], conditions?: Record<string, unknown>) =>
      new iam.PolicyStatement({ sid, actions: [...acts], resources, ...(conditions ? { conditions } : {}) });
    const objects = (sid: string, acts: readonly string[], prefixes: readonly string[]) => statement(sid, acts, prefixes.map((x) => rawStore.objectsUnder(x)));
    const list = (sid: string, prefixes: readonly string[]) => statement(sid, ['s3:ListBucket'], [bucket.bucketArn], { StringLike: { 's3:prefix': prefixes.map((x) => `${x}*`) } });
    // S3 answers a GET of a missing key with 404 only to a caller that may list the bucket (else 403):
    // the steps that read an object which may not exist yet (compaction's frontier and hour markers)
    // may list it, so "absent" is told apart from "denied". Keys name tables and runs, never rows.
    const listForNotFound = statement('ListBucketForNotFound', ['s3:ListBucket'], [bucket.bucketArn]);
    const ackPrefixes = new Map<iam.Role, Set<string>>();
    const acknowledge = (role: iam.Role, prefixes: readonly string[]) => {
      const set = ackPrefixes.get(role) ?? new Set<string>();
      for (const x of prefixes) set.add(x);
      ackPrefixes.set(role, set);
    };

    const functions = new Map<string, lambda.Function>();
    const fn = (job: string, handler: string, description: string, grants: readonly iam.PolicyStatement[], prefixes: readonly string[]): lambda.Function => {
      const made = new JobFunction(this, handler.charAt(0).toUpperCase() + handler.slice(1), {
        config: props.ledgerKey ? props.ledgerKey.runtimeConfig(config) : config,
        job,
        handler,
        description,
        grant: (role) => {
          for (const s of grants) role.addToPrincipalPolicy(s);
          if (props.ledgerKey) props.ledgerKey.grantRead(role);
        },
        ...(props.entry ? { entry: props.entry } : {}),
        ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
        ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
      });
      acknowledge(made.role, prefixes);
      functions.set(handler, made.function);
      return made.function;
    };
    const onTargets = (sid: string, acts: string[]) => tableStatements(this, sid, acts, targetNames);

    // One query fetcher for every job's query loop: it reads the queries a planning step stored.
    const queryAt = fn('jobs', 'jobQueryAt', 'fetch the next stored query of a query loop', [objects('ReadStoredQueries', ['s3:GetObject'], [p.compactionRuns, p.reconcileReports, p.snapshotReports, p.maintenanceRuns])], [
      p.compactionRuns,
      p.reconcileReports,
      p.snapshotReports,
      p.maintenanceRuns,
    ]);

    // Compaction: plan (frontier, hours, late objects) → queries → finish (markers, frontier, raw past the grace).
    const compactionFunctions = {
      [COMPACTION_TASKS.plan]: fn(
        'compaction',
        'compactionPlan',
        'find the closed hours and late objects, store their queries',
        [listForNotFound, objects('ReadFrontierAndMarkers', ['s3:GetObject'], [p.state]), objects('StoreQueries', ['s3:PutObject'], [p.compactionRuns])],
        [p.state, p.compactionRuns],
      ),
      [COMPACTION_TASKS.finish]: fn(
        'compaction',
        'compactionFinish',
        'mark the compacted hours, move the frontier, delete raw past the grace',
        [
          listForNotFound,
          objects('ReadAndWriteFrontierAndMarkers', ['s3:GetObject', 's3:PutObject'], [p.state]),
          // Raw past its grace, once its hour is compacted: raw's expiry is this deletion, not a lifecycle rule.
          objects('DeleteCompactedRaw', ['s3:DeleteObject'], [p.rawBatches]),
        ],
        [p.state, p.rawBatches],
      ),
      [QUERY_AT_FUNCTION]: queryAt,
    };

    const reconcileFunctions = {
      [RECONCILE_TASKS.plan]: fn(
        'reconcile',
        'reconcilePlan',
        'fix the run, store its queries and export items',
        [
          listForNotFound,
          objects('ReadFrontier', ['s3:GetObject'], [p.state]),
          objects('WriteRun', ['s3:PutObject'], [p.reconcileReports]),
          ...onTargets('DescribeTargets', ['dynamodb:DescribeTable']),
          // Each table's status row: keys a held (suspended or stopped) table has not applied are labelled, not findings.
          statement('ReadLifecycles', ['dynamodb:BatchGetItem'], [status]),
        ],
        [p.state, p.reconcileReports],
      ),
      [RECONCILE_TASKS.exportFiles]: fn('reconcile', 'reconcileExportFiles', "name a finished export's data-file list", [], []),
      [RECONCILE_TASKS.tableSide]: fn(
        'reconcile',
        'reconcileTableSide',
        "write one export data file's items as the table side",
        [objects('ReadExportFiles', ['s3:GetObject'], [p.unloadReconcile]), objects('WriteTableSide', ['s3:PutObject'], [p.tableSide])],
        [p.unloadReconcile, p.tableSide],
      ),
      [RECONCILE_TASKS.windowSide]: fn(
        'reconcile',
        'reconcileWindowSide',
        "read a window's keys from their tables as the table side",
        [objects('ReadWindowKeys', ['s3:GetObject'], [p.unloadReconcile]), objects('WriteTableSide', ['s3:PutObject'], [p.tableSide]), ...onTargets('ReadTargets', ['dynamodb:BatchGetItem'])],
        [p.unloadReconcile, p.tableSide],
      ),
      [RECONCILE_TASKS.repairPlan]: fn(
        'reconcile',
        'reconcileRepairPlan',
        "--repair: the repairable findings' keys, and the replay-select query of their events",
        [
          listForNotFound,
          objects('ReadFindingsAndFrontier', ['s3:GetObject'], [p.unloadReconcile, p.state]),
          objects('StoreRepairQueries', ['s3:PutObject'], [p.reconcileReports]),
          statement('ReadLedger', ['dynamodb:Query'], [status]),
        ],
        [p.unloadReconcile, p.state, p.reconcileReports],
      ),
      [RECONCILE_TASKS.repair]: fn(
        'reconcile',
        'reconcileRepair',
        "--repair: the selected events of each key folded and written through the guarded writer",
        [
          list('ListRepairEvents', [p.unloadReconcile]),
          objects('ReadRepairEvents', ['s3:GetObject'], [p.unloadReconcile, p.reconcileReports]),
          objects('WriteOutcomes', ['s3:PutObject'], [p.reconcileReports]),
          ...onTargets('GuardedRepairWrites', ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:GetItem']),
        ],
        [p.unloadReconcile, p.reconcileReports],
      ),
      [RECONCILE_TASKS.report]: fn(
        'reconcile',
        'reconcileReport',
        'read the classes back, write the reports, emit metrics, record the last run, clear the scratch',
        [
          list('ListResults', [p.unloadReconcile, p.tableSide]),
          // The findings and counts, the table side (a manifest's diff), repair outcomes and an uploaded manifest.
          objects('ReadResults', ['s3:GetObject'], [p.unloadReconcile, p.tableSide, p.reconcileReports, p.manifests]),
          ...onTargets('ReadManifestKeys', ['dynamodb:BatchGetItem']),
          objects('WriteReports', ['s3:PutObject'], [p.reconcileReports]),
          objects('DeleteScratch', ['s3:DeleteObject'], [p.unloadReconcile, p.tableSide]),
          statement('RecordLastRun', ['dynamodb:UpdateItem'], [status]),
        ],
        [p.unloadReconcile, p.tableSide, p.reconcileReports, p.manifests],
      ),
      [QUERY_AT_FUNCTION]: queryAt,
    };

    const snapshotFunctions = {
      [SNAPSHOT_TASKS.plan]: fn(
        'snapshot',
        'snapshotPlan',
        'fix the run and its tables, store its queries',
        [
          objects('StoreQueries', ['s3:PutObject'], [p.snapshotReports]),
          // Each table's status row: held (suspended or stopped) tables are labelled, not queried.
          statement('ReadLifecycles', ['dynamodb:BatchGetItem'], [status]),
        ],
        [p.snapshotReports],
      ),
      [SNAPSHOT_TASKS.report]: fn(
        'snapshot',
        'snapshotReport',
        'read the findings back, tombstone orphans (apply), write the report, emit metrics, record open findings, clear the scratch',
        [
          list('ListResults', [p.unloadSnapshot]),
          objects('ReadResults', ['s3:GetObject'], [p.unloadSnapshot]),
          objects('WriteReport', ['s3:PutObject'], [p.snapshotReports]),
          objects('DeleteScratch', ['s3:DeleteObject'], [p.unloadSnapshot]),
          // Orphan tombstones go through the ingest's guarded writer (a conditional put or update, a read on a lost race).
          ...onTargets('TombstoneOrphans', ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
          // Each table's open findings (`job#snapshot` in its partition), read by `tidemark status`.
          statement('RecordOpenFindings', ['dynamodb:UpdateItem'], [status]),
          // Each table's schema row, last report and status row: the drift since that report.
          statement('ReadSchemaDrift', ['dynamodb:BatchGetItem'], [status]),
        ],
        [p.unloadSnapshot, p.snapshotReports],
      ),
      [QUERY_AT_FUNCTION]: queryAt,
    };
    const maintenanceFunctions = {
      [MAINTENANCE_TASKS.plan]: fn('maintenance', 'maintenancePlan', "store each Iceberg table's OPTIMIZE and VACUUM", [objects('StoreQueries', ['s3:PutObject'], [p.maintenanceRuns])], [p.maintenanceRuns]),
      [QUERY_AT_FUNCTION]: queryAt,
    };
    this.functions = functions;

    // ---- the state machines' own service tasks ------------------------------------------------
    const glueArns = (tables: readonly HistoryTableName[]) => history.glueArns(tables);
    /** What every query loop needs: the workgroup, the catalog, the results location, the key. */
    const queryGrants = (job: keyof typeof JOB_TABLES, reads: readonly string[], writes: readonly string[]) => {
      const tables = JOB_TABLES[job];
      const out = [
        statement('RunQueries', ATHENA_QUERY_ACTIONS, [history.workGroupArn]),
        statement('ReadCatalog', GLUE_READ_ACTIONS, glueArns(tables.reads)),
        ...(tables.writes.length > 0 ? [statement('CommitIcebergTables', ['glue:UpdateTable'], glueArns(tables.writes).slice(2))] : []),
        statement('LocateBucket', ['s3:GetBucketLocation'], [bucket.bucketArn]),
        list('ListQueryData', [p.athenaResults, ...reads, ...writes]),
        objects('QueryResults', ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], [p.athenaResults]),
        objects('ReadQueryData', ['s3:GetObject'], reads),
        ...(writes.length > 0 ? [objects('WriteQueryData', ['s3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], writes)] : []),
      ];
      // Athena reads and writes SSE-KMS objects and encrypts its results (SSE_KMS) with the caller's
      // key grants: S3 makes those key calls, so the grant holds only through S3.
      if (props.encryptionKey) out.push(statement('QueryDataUnderPipelineKey', KEY_ACTIONS, [props.encryptionKey.keyArn], { StringEquals: { 'kms:ViaService': `s3.${stack.region}.amazonaws.com` } }));
      return out;
    };
    const grantTo = (statements: readonly iam.PolicyStatement[], prefixes: readonly string[]) => (role: iam.Role) => {
      for (const s of statements) role.addToPrincipalPolicy(s);
      acknowledge(role, prefixes);
    };
    const workGroup = { [ATHENA_WORKGROUP]: history.workGroupName };
    const common = {
      config,
      substitutions: workGroup,
      ...(props.encryptionKey ? { encryptionKey: props.encryptionKey } : {}),
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
      ...(props.removalPolicy ? { removalPolicy: props.removalPolicy } : {}),
    };

    // Compaction reads raw, quarantine and the warehouse, and writes the Iceberg tables' data and metadata.
    const compactionReads = [p.raw, p.quarantine, p.warehouse];
    const compactionWrites = [p.warehouse];
    this.compaction = new TidemarkJob(this, 'Compaction', {
      ...common,
      job: 'compaction',
      definition: compactionDefinition(),
      functions: compactionFunctions,
      grantStateMachine: grantTo(queryGrants('compaction', compactionReads, compactionWrites), [p.athenaResults, ...compactionReads, ...compactionWrites]),
      schedules: [{ id: 'Hourly', expression: config.history.compaction.schedule, enabled: config.history.compaction.enabled, input: {} }],
    });

    // Reconcile: the queries read the warehouse, raw (hours not compacted yet) and the table side, and
    // unload their results; each target table is exported point in time (PITR is on for every target,
    // lib/current-state.ts) into the run's unload prefix, and the Distributed Maps read their items
    // (the export list, each export's data-file list, the window's key files) from S3.
    const reconcileReads = [p.warehouse, p.raw, p.tableSide, p.unloadReconcile, p.reconcileReports];
    const reconcileWrites = [p.unloadReconcile];
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
    // `table/<target>/export/<id>`: per target while they fit one statement; past that, one pattern over
    // the targets' common name prefix (exports of those tables only), so the role stays within IAM's
    // limits at hundreds of tables. The exports themselves are started on the targets by name only.
    const exportResources = describeExportResources(targetNames);
    const exportGrants = [
      ...onTargets('ExportTargets', ['dynamodb:ExportTableToPointInTime']),
      ...tableStatements(this, 'DescribeExports', ['dynamodb:DescribeExport'], exportResources),
      // DynamoDB writes the export with the caller's permissions.
      objects('WriteExports', ['s3:PutObjectAcl'], [p.unloadReconcile]),
    ];
    this.reconcile = new TidemarkJob(this, 'Reconcile', {
      ...common,
      job: 'reconcile',
      definition: reconcileDefinition(),
      functions: reconcileFunctions,
      grantStateMachine: (role) => {
        grantTo([...queryGrants('reconcile', reconcileReads, reconcileWrites), ...exportGrants], [p.athenaResults, ...reconcileReads, ...reconcileWrites])(role);
        for (const resource of exportResources) {
          Validations.of(role).acknowledge({
            id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:${region}:${account}:table/${resource}]`,
            reason: exportResources.length === targetNames.length ? "Export ARNs are generated per export; only this target table's exports are reachable." : "Export ARNs are generated per export; only exports of tables named like the pipeline's targets are reachable.",
          });
        }
      },
      schedules: [
        { id: 'Window', expression: config.jobs.reconcile.window.schedule, enabled: config.jobs.reconcile.window.enabled, input: { mode: 'window' } },
        { id: 'Full', expression: config.jobs.reconcile.full.schedule, enabled: config.jobs.reconcile.full.enabled, input: { mode: 'full' } },
      ],
    });

    // Snapshot detection reads the warehouse (table_hours, history, expected_state) and unloads its findings.
    const snapshotReads = [p.warehouse, p.unloadSnapshot];
    const snapshotWrites = [p.unloadSnapshot];
    this.snapshot = new TidemarkJob(this, 'Snapshot', {
      ...common,
      job: 'snapshot',
      definition: snapshotDefinition(),
      functions: snapshotFunctions,
      grantStateMachine: grantTo(queryGrants('snapshot', snapshotReads, snapshotWrites), [p.athenaResults, ...snapshotReads, ...snapshotWrites]),
      schedules: [{ id: 'Detect', expression: config.jobs.snapshot.schedule, enabled: config.jobs.snapshot.enabled, input: {} }],
    });

    // Maintenance: OPTIMIZE reads and rewrites the warehouse's data files and commits each table;
    // VACUUM deletes the files only expired snapshots reference (Athena needs s3:DeleteObject for
    // that, else VACUUM succeeds and deletes nothing). The bucket is versioned: a deleted file stays
    // a noncurrent version until the bucket's noncurrent-version rule removes it.
    const maintenanceData = [p.warehouse];
    this.maintenance = new TidemarkJob(this, 'Maintenance', {
      ...common,
      job: 'maintenance',
      definition: maintenanceDefinition(),
      functions: maintenanceFunctions,
      grantStateMachine: grantTo(
        [...queryGrants('maintenance', maintenanceData, maintenanceData), objects('ExpireSnapshotFiles', ['s3:DeleteObject'], maintenanceData)],
        [p.athenaResults, ...maintenanceData],
      ),
      schedules: [{ id: 'Daily', expression: config.history.maintenance.schedule, enabled: config.history.maintenance.enabled, input: {} }],
    });

    // Finding alarms read the all-tables totals the report steps emit (table = "*").
    const alarms = new Map<string, cloudwatch.Alarm>();
    const findingAlarm = (alarmId: string, metricName: string, description: string) => {
      const alarm = new cloudwatch.Alarm(this, `${alarmId}Alarm`, {
        alarmName: `${config.name}-${alarmId}`,
        alarmDescription: description,
        metric: new cloudwatch.Metric({
          namespace: METRIC_NAMESPACE,
          metricName,
          dimensionsMap: { service: SERVICE_NAME, pipeline: config.name, table: ALL_TABLES },
          statistic: 'Sum',
          period: Duration.hours(1),
        }),
        threshold: 0,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      if (props.alarmTopic) alarm.addAlarmAction(new actions.SnsAction(props.alarmTopic));
      alarms.set(alarmId, alarm);
    };
    findingAlarm('reconcile-ahead', RECONCILE_METRICS.ahead, 'Reconcile found rows ahead of raw: raw lost data (critical)');
    findingAlarm('reconcile-window-findings', RECONCILE_WINDOW_FINDINGS_METRIC, 'The scheduled window reconcile found rows that disagree with raw');
    for (const [kind, metric] of Object.entries(SNAPSHOT_FINDING_METRICS)) findingAlarm(`snapshot-${kind}`, metric, `Snapshot detection: ${kind}`);
    this.findingAlarms = alarms;

    // Object keys are per run, per hour and per batch: the grants name prefixes, not objects.
    const bucketId = stack.resolve(stack.getLogicalId(bucket.node.defaultChild as CfnResource)) as string;
    for (const [role, prefixes] of ackPrefixes) {
      for (const prefix of prefixes) {
        Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`, reason: `Objects under "${prefix}" only; their keys are per run, hour or batch.` });
      }
    }
  }

  /** Every job's state machine, by job name. */
  get jobs(): ReadonlyMap<'compaction' | 'reconcile' | 'snapshot' | 'maintenance', TidemarkJob> {
    return new Map([
      ['compaction', this.compaction],
      ['reconcile', this.reconcile],
      ['snapshot', this.snapshot],
      ['maintenance', this.maintenance],
    ]);
  }
}

/** The longest prefix `names` all start with. */
export function commonPrefix(names: readonly string[]): string {
  if (names.length === 0) return '';
  let prefix = names[0] ?? '';
  for (const n of names) while (!n.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}

/**
 * The `table/…` resources of the targets' exports for DescribeExport: `<target>/export/*` each while
 * they fit one size-bounded statement, else `<common prefix>*` + `/export/*` when the targets share a
 * name prefix (DescribeExport reads an export's metadata only; the tables exported stay named one by one).
 */
export function describeExportResources(targetNames: readonly string[]): string[] {
  const each = targetNames.map((name) => `${name}/export/*`);
  const prefix = commonPrefix(targetNames);
  if (chunksBySize(each, arnChars).length <= 1 || prefix === '') return each;
  return [`${prefix}*/export/*`];
}
