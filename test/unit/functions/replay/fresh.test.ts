/**
 * Fresh tables through the replay job's own plan step (`planReplaySql`), over a mocked DynamoDB
 * (aws-sdk-client-mock) and the in-memory S3: which names are accepted, what a fresh table is
 * created with (the live table's key, encryption, point-in-time recovery and deletion protection,
 * and this run's tags), and which existing tables are refused. A refused plan sends no
 * CreateTable, no write and no Scan, and writes no manifest, so verify never samples the table.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  DynamoDBServiceException,
  GetItemCommand,
  ListTagsOfResourceCommand,
  QueryCommand,
  ResourceNotFoundException,
  type TableDescription,
  UpdateContinuousBackupsCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseConfig, type TidemarkConfig } from '../../../../lib/config/config.js';
import { replayContext } from '../../../../functions/composition.js';
import { replayTables } from '../../../../functions/replay/deps.js';
import { FRESH_TABLE_TAGS, FreshTableError } from '../../../../functions/replay/fresh.js';
import type { ReplayRequest } from '../../../../functions/replay/job.js';
import { planReplaySql } from '../../../../functions/replay/sql-job.js';
import { ReplayRefusedError } from '../../../../functions/replay/safety.js';
import { SelectionError } from '../../../../functions/replay/selection.js';
import type { Log } from '../../../../functions/telemetry/sinks.js';
import { type FakeS3, fakeS3 } from '../../../helpers/fake-s3.js';

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const PIPELINE_KEY = 'arn:aws:kms:us-east-1:111122223333:key/0a1b2c3d-1111-2222-3333-444455556666';
const LIVE = 'shop-customers';
const FRESH = 'shop-fresh-customers';
const RUN = 'replay-20261130T060000-a1b2c3';

const configOf = (encryption: TidemarkConfig['encryption']) =>
  parseConfig({
    name: 'shop',
    tables: [{ source: 'public.customers', target: LIVE, key: ['id'], keyTypes: { id: 'number' } }],
    raw: { bucket: 'shop-cdc-raw' },
    encryption,
  });

const keyOf = { KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' as const }], AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'N' as const }] };
const arnOf = (name: string) => `arn:aws:dynamodb:us-east-1:111122223333:table/${name}`;
/** The live table as the stack deploys it under `kms`: the pipeline key, PITR (35 days), deletion protection. */
const liveKms: TableDescription = {
  TableName: LIVE,
  TableArn: arnOf(LIVE),
  TableStatus: 'ACTIVE',
  ...keyOf,
  SSEDescription: { Status: 'ENABLED', SSEType: 'KMS', KMSMasterKeyArn: PIPELINE_KEY },
  DeletionProtectionEnabled: true,
};
const freshActive: TableDescription = { TableName: FRESH, TableArn: arnOf(FRESH), TableStatus: 'ACTIVE', ...keyOf };
const notFound = () => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: {} });
const serviceError = (name: string) => new DynamoDBServiceException({ name, $fault: 'client', message: name, $metadata: {} });
const tags = (run: string, pipeline = 'shop') => ({
  Tags: [
    { Key: FRESH_TABLE_TAGS.pipeline, Value: pipeline },
    { Key: FRESH_TABLE_TAGS.run, Value: run },
  ],
});

describe('replay into a fresh table (the plan step)', () => {
  const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const ddb = mockClient(dynamodb);
  let s3: FakeS3;

  /** The live table `live` with PITR as given; the fresh table absent until created, then ACTIVE. */
  function account(live: TableDescription, pitr: { PointInTimeRecoveryStatus: 'ENABLED' | 'DISABLED'; RecoveryPeriodInDays?: number } | 'unsupported', fresh: 'absent' | TableDescription = 'absent') {
    ddb.reset();
    // The status table: an empty erase ledger.
    ddb.on(QueryCommand).resolves({ Items: [] });
    ddb.on(GetItemCommand).resolves({});
    ddb.on(DescribeTableCommand, { TableName: LIVE }).resolves({ Table: live });
    if (fresh === 'absent') ddb.on(DescribeTableCommand, { TableName: FRESH }).rejectsOnce(notFound()).resolves({ Table: freshActive });
    else ddb.on(DescribeTableCommand, { TableName: FRESH }).resolves({ Table: fresh });
    ddb.on(CreateTableCommand).resolves({});
    ddb.on(DescribeTimeToLiveCommand).resolves({ TimeToLiveDescription: { TimeToLiveStatus: 'DISABLED' } });
    ddb.on(UpdateTimeToLiveCommand).resolves({});
    if (pitr === 'unsupported') ddb.on(DescribeContinuousBackupsCommand).rejects(serviceError('UnknownOperationException'));
    else {
      ddb.on(DescribeContinuousBackupsCommand, { TableName: LIVE }).resolves({ ContinuousBackupsDescription: { ContinuousBackupsStatus: 'ENABLED', PointInTimeRecoveryDescription: pitr } });
      ddb.on(DescribeContinuousBackupsCommand, { TableName: FRESH }).resolves({ ContinuousBackupsDescription: { ContinuousBackupsStatus: 'ENABLED', PointInTimeRecoveryDescription: { PointInTimeRecoveryStatus: 'DISABLED' } } });
    }
    ddb.on(UpdateContinuousBackupsCommand).resolves({});
  }

  const plan = (config: TidemarkConfig, into: string, runId = RUN) => {
    const request: ReplayRequest = { runId, tables: ['public.customers'], into, now: Date.parse('2026-11-30T06:00:00Z') };
    return planReplaySql(replayContext(config, { s3: s3.client, dynamodb }, quiet), request);
  };
  const created = (): CreateTableCommandInput => {
    const calls = ddb.commandCalls(CreateTableCommand);
    assert.equal(calls.length, 1, 'one CreateTable');
    return calls[0]?.args[0].input as CreateTableCommandInput;
  };
  /** Nothing was created, changed or written, and no manifest exists for verify to run from. */
  const untouched = () => {
    assert.equal(ddb.commandCalls(CreateTableCommand).length, 0, 'CreateTable');
    assert.equal(ddb.commandCalls(UpdateTimeToLiveCommand).length, 0, 'UpdateTimeToLive');
    assert.equal(ddb.commandCalls(UpdateContinuousBackupsCommand).length, 0, 'UpdateContinuousBackups');
    assert.deepEqual(
      s3.keys().filter((k) => k.endsWith('manifest.json')),
      [],
    );
  };

  beforeEach(() => {
    s3 = fakeS3();
  });
  afterEach(() => s3.restore());

  it('refuses a table outside <pipeline>-fresh- before reading anything: no DescribeTable, no CreateTable, no manifest', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' });
    for (const name of ['shop-payments', 'shop-eu-customers']) {
      await assert.rejects(plan(configOf('kms'), `fresh:${name}`), (e: unknown) => e instanceof ReplayRefusedError && /must be named shop-fresh-<suffix>/.test(e.message), name);
    }
    assert.equal(ddb.commandCalls(DescribeTableCommand).length, 0);
    untouched();
  });

  it('replayTables holds the same rule for a target built without the parser', () => {
    const config = configOf('kms');
    assert.throws(() => replayTables(config, ['public.customers'], { kind: 'fresh', target: 'shop-payments' }), (e: unknown) => e instanceof SelectionError && /shop-fresh-<suffix>/.test(e.message));
    assert.equal(replayTables(config, ['public.customers'], { kind: 'fresh', target: FRESH }).get('public.customers')?.target, FRESH);
  });

  it('under kms: creates the table with the live key schema, the pipeline key, deletion protection, PITR with its recovery period, and this run’s tags', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED', RecoveryPeriodInDays: 14 });
    const out = await plan(configOf('kms'), `fresh:${FRESH}`);
    assert.equal(out.freshTable, 'created');
    const input = created();
    assert.equal(input.TableName, FRESH);
    assert.deepEqual(input.KeySchema, liveKms.KeySchema);
    assert.deepEqual(input.SSESpecification, { Enabled: true, SSEType: 'KMS', KMSMasterKeyId: PIPELINE_KEY });
    assert.equal(input.DeletionProtectionEnabled, true);
    assert.deepEqual(input.Tags, [
      { Key: 'tidemark:pipeline', Value: 'shop' },
      { Key: 'tidemark:fresh-run', Value: RUN },
    ]);
    const pitr = ddb.commandCalls(UpdateContinuousBackupsCommand).map((c) => c.args[0].input);
    assert.deepEqual(pitr, [{ TableName: FRESH, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 14 } }]);
    assert.equal(ddb.commandCalls(UpdateTimeToLiveCommand).length, 1, 'TTL on __expiresAt');
  });

  it('under aws-managed: the AWS managed key (no key id), and no PITR or deletion protection where the live table has none', async () => {
    const live: TableDescription = { ...liveKms, SSEDescription: { Status: 'ENABLED', SSEType: 'KMS', KMSMasterKeyArn: 'arn:aws:kms:us-east-1:111122223333:key/aws-dynamodb' }, DeletionProtectionEnabled: false };
    account(live, { PointInTimeRecoveryStatus: 'DISABLED' });
    await plan(configOf('aws-managed'), `fresh:${FRESH}`);
    const input = created();
    assert.deepEqual(input.SSESpecification, { Enabled: true, SSEType: 'KMS' });
    assert.equal(input.DeletionProtectionEnabled, false);
    assert.equal(ddb.commandCalls(UpdateContinuousBackupsCommand).length, 0);
  });

  it('under kms, refuses to create a weaker copy when the live table reports no customer-managed key', async () => {
    account({ ...liveKms, SSEDescription: undefined }, { PointInTimeRecoveryStatus: 'ENABLED' });
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), (e: unknown) => e instanceof FreshTableError && /no customer-managed key/.test(e.message));
    untouched();
  });

  it('retries enabling PITR while DynamoDB still prepares the new table’s backups', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' });
    ddb.on(UpdateContinuousBackupsCommand).rejectsOnce(serviceError('ContinuousBackupsUnavailableException')).resolves({});
    await plan(configOf('kms'), `fresh:${FRESH}`);
    assert.equal(ddb.commandCalls(UpdateContinuousBackupsCommand).length, 2);
  });

  it('copies no PITR from an endpoint without the continuous-backups API (DynamoDB Local), where the live table has none either', async () => {
    account(liveKms, 'unsupported');
    assert.equal((await plan(configOf('kms'), `fresh:${FRESH}`)).freshTable, 'created');
    assert.equal(ddb.commandCalls(UpdateContinuousBackupsCommand).length, 0);
  });

  it('refuses an existing table with the same key schema that no replay of this pipeline created (no tags)', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' }, freshActive);
    ddb.on(ListTagsOfResourceCommand).resolves({ Tags: [{ Key: 'team', Value: 'payments' }] });
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), (e: unknown) => e instanceof FreshTableError && /was not created by a replay of pipeline shop/.test(e.message));
    assert.deepEqual(ddb.commandCalls(ListTagsOfResourceCommand).map((c) => c.args[0].input.ResourceArn), [arnOf(FRESH)]);
    untouched();
  });

  it('refuses a table of another pipeline, and one whose tags cannot be read', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' }, freshActive);
    ddb.on(ListTagsOfResourceCommand).resolves(tags(RUN, 'other'));
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), /was not created by a replay of pipeline shop/);
    ddb.on(ListTagsOfResourceCommand).rejects(serviceError('UnknownOperationException'));
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), (e: unknown) => e instanceof FreshTableError && /tags cannot be read/.test(e.message));
    untouched();
  });

  it('refuses a table another run created, naming the run to continue it with fresh:<table>@<run>', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' }, freshActive);
    ddb.on(ListTagsOfResourceCommand).resolves(tags('replay-earlier'));
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), (e: unknown) => e instanceof FreshTableError && e.message.includes(`--into fresh:${FRESH}@replay-earlier`));
    untouched();
  });

  it('reuses the table this run created (a retried plan step), and the one a continuation names', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' }, freshActive);
    ddb.on(ListTagsOfResourceCommand).resolves(tags(RUN));
    assert.equal((await plan(configOf('kms'), `fresh:${FRESH}`)).freshTable, 'present');
    assert.equal(ddb.commandCalls(CreateTableCommand).length, 0);
    assert.equal(ddb.commandCalls(UpdateContinuousBackupsCommand).length, 1, 'PITR completed on the reused table');
    ddb.on(ListTagsOfResourceCommand).resolves(tags('replay-earlier'));
    assert.equal((await plan(configOf('kms'), `fresh:${FRESH}@replay-earlier`, 'replay-catch-up')).freshTable, 'present');
  });

  it('a retried plan step that finds its table still CREATING waits for it, then reads its tags', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' }, freshActive);
    ddb.on(DescribeTableCommand, { TableName: FRESH }).resolvesOnce({ Table: { ...freshActive, TableStatus: 'CREATING' } }).resolvesOnce({ Table: { ...freshActive, TableStatus: 'CREATING' } }).resolves({ Table: freshActive });
    ddb.on(ListTagsOfResourceCommand).resolves(tags(RUN));
    assert.equal((await plan(configOf('kms'), `fresh:${FRESH}`)).freshTable, 'present');
    assert.equal(ddb.commandCalls(ListTagsOfResourceCommand).length, 1);
    assert.equal(ddb.commandCalls(DescribeTableCommand, { TableName: FRESH }).length, 3);
  });

  it('a continuation creates nothing: the table it names must exist', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' });
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}@replay-earlier`), /no rebuild of run replay-earlier to continue/);
    untouched();
  });

  it('a table created meanwhile by another attempt (ResourceInUseException) is checked like any existing one', async () => {
    account(liveKms, { PointInTimeRecoveryStatus: 'ENABLED' });
    ddb.on(CreateTableCommand).rejects(serviceError('ResourceInUseException'));
    ddb.on(ListTagsOfResourceCommand).resolves(tags('replay-other'));
    await assert.rejects(plan(configOf('kms'), `fresh:${FRESH}`), /created by run replay-other/);
  });
});
