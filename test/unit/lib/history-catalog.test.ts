/**
 * The Glue catalog and the Athena workgroup of lib/history.ts, rendered from functions/sql's
 * schemas: JSON sources with snake_case columns mapped to the lines' fields and projected
 * partitions, Iceberg tables through OpenTableFormatInput with their partition specs, the workgroup
 * enforced with its results location, encryption and cutoff, or an existing one named by the
 * config; and what the stack around them keeps (lifecycle of the jobs' scratch, PITR on every
 * table a full reconcile exports).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { HISTORY, QUARANTINE_LINES, RAW_EVENTS, RAW_LINES, TABLE_HOURS, TABLE_SIDE, type TableSchema } from '../../../functions/sql/schemas.js';
import { splitPartsPrefix } from '../../../functions/adapters/raw-layout.js';
import { History, ICEBERG_TABLES, icebergFields, icebergPartitionSpec } from '../../../lib/history.js';
import { ATHENA_RESULTS_RETENTION_DAYS, JOB_SCRATCH_RETENTION_DAYS, jobOutputsRetentionDays } from '../../../lib/raw-store.js';
import { ENV, templateOf, testConfig } from './fixtures/stack.js';

type Props = Record<string, unknown>;
/** A Glue partition-projection placeholder, `${name}` (Glue's syntax, not JavaScript's). */
const ph = (name: string): string => ['$', '{', name, '}'].join('');

function historyTemplate(patch: Record<string, unknown>, withKey = false): Template {
  const stack = new Stack(new App(), 'HistoryTest', { env: ENV });
  const bucket = s3.Bucket.fromBucketName(stack, 'Raw', 'shop-cdc-raw');
  const config = testConfig(patch);
  new History(stack, 'History', { config, bucket, ...(withKey ? { encryptionKey: new kms.Key(stack, 'Key') } : {}) });
  return Template.fromStack(stack);
}

const tablesOf = (t: Template): Map<string, Props> =>
  new Map(
    Object.values(t.findResources('AWS::Glue::Table') as Record<string, { Properties: Props }>).map((r) => {
      const p = r.Properties;
      return [String((p.TableInput as { Name?: string } | undefined)?.Name ?? p.Name), p];
    }),
  );

describe('the history catalog', () => {
  const template = historyTemplate({});
  const tables = tablesOf(template);

  it('creates the database and every table of functions/sql in it', () => {
    template.hasResourceProperties('AWS::Glue::Database', { CatalogId: '111122223333', DatabaseInput: { Name: 'tidemark_shop' } });
    assert.deepEqual([...tables.keys()].sort(), ['erase_keys', 'expected_state', 'history', 'quarantine_lines', 'raw_events', 'raw_lines', 'table_hours', 'table_side', 'truncates']);
    for (const t of tables.values()) assert.equal(t.DatabaseName, 'tidemark_shop');
  });

  const jsonSource = (schema: TableSchema, location: string, template: string) => {
    const input = tables.get(schema.name)?.TableInput as { StorageDescriptor: Props; PartitionKeys: { Name: string }[]; Parameters: Record<string, string> };
    assert.ok(input, schema.name);
    const sd = input.StorageDescriptor as { Location: string; Columns: { Name: string; Type: string }[]; SerdeInfo: { SerializationLibrary: string; Parameters: Record<string, string> } };
    assert.equal(sd.Location, location);
    assert.equal(sd.SerdeInfo.SerializationLibrary, 'org.openx.data.jsonserde.JsonSerDe');
    assert.deepEqual(
      sd.Columns.map((c) => c.Name),
      schema.columns.map((c) => c.name),
    );
    for (const c of sd.Columns) assert.match(c.Name, /^[a-z0-9_]+$/, `${schema.name}.${c.Name} is snake_case`);
    // Every column whose field is camelCase is mapped to it (lowercase: the SerDe lowercases keys first).
    for (const c of schema.columns) {
      const mapped = sd.SerdeInfo.Parameters[`mapping.${c.name}`];
      if (c.field !== undefined && c.field.toLowerCase() !== c.name) assert.equal(mapped, c.field.toLowerCase(), `${schema.name}.${c.name}`);
      else assert.equal(mapped, undefined);
    }
    assert.deepEqual(
      input.PartitionKeys.map((k) => k.Name),
      (schema.partitionKeys ?? []).map((k) => k.name),
    );
    assert.equal(input.Parameters['projection.enabled'], 'true');
    assert.equal(input.Parameters['storage.location.template'], template);
    return input.Parameters;
  };

  it('reads raw batch objects with snake_case columns mapped to the lines’ fields, dt and hr projected', () => {
    const params = jsonSource(RAW_LINES, 's3://shop-cdc-raw/raw/', `s3://shop-cdc-raw/raw/dt=${ph('dt')}/hr=${ph('hr')}/`);
    assert.equal(params['projection.dt.type'], 'date');
    assert.equal(params['projection.hr.range'], '0,23');
    const sd = (tables.get('raw_lines')?.TableInput ?? {}) as { StorageDescriptor: { SerdeInfo: { Parameters: Record<string, string> } } };
    assert.ok(sd.StorageDescriptor);
    assert.equal(sd.StorageDescriptor.SerdeInfo.Parameters['mapping.key_id'], 'keyid');
    assert.equal(sd.StorageDescriptor.SerdeInfo.Parameters['mapping.commit_ts'], 'committs');
  });

  it('keeps the legacy per-table layout readable, with source_table injected', () => {
    const params = jsonSource(RAW_EVENTS, 's3://shop-cdc-raw/raw/', `s3://shop-cdc-raw/raw/table=${ph('source_table')}/dt=${ph('dt')}/hr=${ph('hr')}/`);
    assert.equal(params['projection.source_table.type'], 'injected');
  });

  it('reads quarantine by hour, and the table side by run (run_id injected)', () => {
    jsonSource(QUARANTINE_LINES, 's3://shop-cdc-raw/quarantine/', `s3://shop-cdc-raw/quarantine/dt=${ph('dt')}/hr=${ph('hr')}/`);
    const params = jsonSource(TABLE_SIDE, 's3://shop-cdc-raw/history/table_side/', `s3://shop-cdc-raw/history/table_side/run_id=${ph('run_id')}/`);
    assert.equal(params['projection.run_id.type'], 'injected');
  });

  it('creates the Iceberg tables through OpenTableFormatInput, partitioned as their schemas say, under the warehouse', () => {
    for (const schema of ICEBERG_TABLES) {
      const t = tables.get(schema.name);
      assert.ok(t, schema.name);
      assert.equal(t.TableInput, undefined, 'an Iceberg table carries no TableInput');
      const iceberg = (t.OpenTableFormatInput as { IcebergInput: { MetadataOperation: string; Version: string; IcebergTableInput: Props } }).IcebergInput;
      assert.equal(iceberg.MetadataOperation, 'CREATE');
      assert.equal(iceberg.Version, '2');
      const input = iceberg.IcebergTableInput as {
        Location: string;
        Schema: { Fields: { Id: number; Name: string; Type: string; Required: boolean }[] };
        PartitionSpec: { Fields: { Name: string; SourceId: number; Transform: string }[] };
        Properties: Record<string, string>;
      };
      assert.equal(input.Location, `s3://shop-cdc-raw/history/warehouse/${schema.name}/`);
      assert.deepEqual(
        input.Schema.Fields.map((f) => f.Name),
        schema.columns.map((c) => c.name),
      );
      assert.deepEqual(
        input.Schema.Fields.map((f) => f.Id),
        schema.columns.map((_, i) => i + 1),
      );
      assert.ok(input.Schema.Fields.every((f) => f.Required === false));
      const byId = new Map(input.Schema.Fields.map((f) => [f.Id, f.Name]));
      assert.deepEqual(
        input.PartitionSpec.Fields.map((f) => [byId.get(f.SourceId), f.Transform]),
        (schema.partitionedBy ?? []).map((name) => [name, 'identity']),
      );
      assert.equal(input.Properties['write.format.default'], 'parquet');
      // VACUUM's bounds: snapshots older than history.maintenance.snapshotRetentionDays (3) expire.
      assert.equal(input.Properties.vacuum_max_snapshot_age_seconds, String(3 * 86_400), schema.name);
      assert.equal(input.Properties.vacuum_min_snapshots_to_keep, '1');
    }
    assert.deepEqual(
      (icebergPartitionSpec(HISTORY).fields as { name: string }[]).map((f) => f.name),
      ['source_table', 'dt'],
    );
    assert.deepEqual(
      (icebergPartitionSpec(TABLE_HOURS).fields as { name: string }[]).map((f) => f.name),
      ['dt'],
    );
  });

  it('sets every Iceberg table\'s snapshot retention from history.maintenance.snapshotRetentionDays', () => {
    const seven = tablesOf(historyTemplate({ history: { maintenance: { snapshotRetentionDays: 7 } } }));
    for (const schema of ICEBERG_TABLES) {
      const table = seven.get(schema.name);
      assert.ok(table, schema.name);
      const props = (table.OpenTableFormatInput as { IcebergInput: { IcebergTableInput: { Properties: Record<string, string> } } }).IcebergInput.IcebergTableInput.Properties;
      assert.equal(props.vacuum_max_snapshot_age_seconds, '604800', schema.name);
    }
  });

  it('types Iceberg fields as Iceberg does (long, date, a map with its own ids)', () => {
    const fields = new Map(icebergFields(HISTORY).map((f) => [f.name, f]));
    assert.equal(fields.get('commit_ts')?.type, 'long');
    assert.equal(fields.get('dt')?.type, 'date');
    assert.equal(fields.get('hr')?.type, 'int');
    assert.equal(fields.get('is_snapshot')?.type, 'boolean');
    const headers = JSON.parse(String(fields.get('headers')?.type)) as Record<string, unknown>;
    assert.deepEqual(headers, { type: 'map', 'key-id': HISTORY.columns.length + 1, key: 'string', 'value-id': HISTORY.columns.length + 2, value: 'string', 'value-required': false });
    assert.throws(() => icebergFields(RAW_LINES), /struct columns/);
    assert.throws(() => icebergPartitionSpec({ ...TABLE_HOURS, partitionedBy: ['nope'] }), /nope is not a column/);
  });

  it('creates an enforced workgroup on engine 3, results under <history>athena/ with SSE-S3, no cutoff by default', () => {
    template.hasResourceProperties('AWS::Athena::WorkGroup', {
      Name: 'shop-jobs',
      State: 'ENABLED',
      WorkGroupConfiguration: {
        EnforceWorkGroupConfiguration: true,
        PublishCloudWatchMetricsEnabled: true,
        EngineVersion: { SelectedEngineVersion: 'Athena engine version 3' },
        BytesScannedCutoffPerQuery: Match.absent(),
        ResultConfiguration: { OutputLocation: 's3://shop-cdc-raw/history/athena/', ExpectedBucketOwner: '111122223333', EncryptionConfiguration: { EncryptionOption: 'SSE_S3' } },
      },
    });
    const [wg] = Object.values(template.findResources('AWS::Athena::WorkGroup') as Record<string, { DeletionPolicy?: string }>);
    assert.equal(wg?.DeletionPolicy, 'Retain');
  });

  it('encrypts results with the pipeline key and cuts queries off at the configured MB', () => {
    const t = historyTemplate({ history: { bytesScannedCutoffMb: 500 } }, true);
    t.hasResourceProperties('AWS::Athena::WorkGroup', {
      WorkGroupConfiguration: {
        BytesScannedCutoffPerQuery: 500_000_000,
        ResultConfiguration: { EncryptionConfiguration: { EncryptionOption: 'SSE_KMS', KmsKey: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Key'), 'Arn'] } } },
      },
    });
  });

  it('refuses a cutoff below Athena’s 10 MB', () => {
    assert.throws(() => testConfig({ history: { bytesScannedCutoffMb: 5 } }), /bytesScannedCutoffMb/);
  });
});

describe('the history in the stack, with an existing workgroup and a named database', () => {
  const template = templateOf(testConfig({ history: { workGroup: 'analytics', database: 'cdc_history' } }));

  it('creates no workgroup and runs every job in the named one, with the tables of the named database', () => {
    template.resourceCountIs('AWS::Athena::WorkGroup', 0);
    const machines = Object.values(template.findResources('AWS::StepFunctions::StateMachine') as Record<string, { Properties: Props }>);
    const jobs = machines.filter((m) => /-(compaction|reconcile|snapshot)$/.test(String(m.Properties.StateMachineName)));
    assert.equal(jobs.length, 3);
    for (const m of jobs) assert.equal((m.Properties.DefinitionSubstitutions as Record<string, unknown>).AthenaWorkGroup, 'analytics');
    const text = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    assert.match(text, /:workgroup\/analytics"/);
    assert.doesNotMatch(text, /workgroup\/shop-jobs/);
    assert.match(text, /:table\/cdc_history\/history"/);
    template.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'cdc_history' } });
  });

  it('expires the jobs’ scratch under the history prefix, and no raw by rule (compaction deletes it past the grace)', () => {
    const [bucket] = Object.values(template.findResources('AWS::S3::Bucket', { Properties: { BucketName: 'shop-cdc-raw' } }) as Record<string, { Properties: Props }>);
    assert.ok(bucket);
    const rules = (bucket.Properties.LifecycleConfiguration as { Rules: { Id: string; Prefix?: string; ExpirationInDays?: number }[] }).Rules;
    const byId = new Map(rules.map((r) => [r.Id, r]));
    assert.deepEqual(byId.get('expire-athena-results'), { Id: 'expire-athena-results', Prefix: 'history/athena/', ExpirationInDays: ATHENA_RESULTS_RETENTION_DAYS, Status: 'Enabled' });
    assert.equal(byId.get('expire-job-outputs')?.Prefix, 'history/unload/');
    assert.equal(byId.get('expire-job-outputs')?.ExpirationInDays, JOB_SCRATCH_RETENTION_DAYS);
    // Query outputs hold what the reports hold: never kept longer than the reports are.
    assert.equal(jobOutputsRetentionDays(3), 3);
    assert.equal(jobOutputsRetentionDays(90), JOB_SCRATCH_RETENTION_DAYS);
    assert.equal(jobOutputsRetentionDays(), JOB_SCRATCH_RETENTION_DAYS);
    assert.equal(byId.get('expire-table-side')?.Prefix, 'history/table_side/');
    assert.equal(byId.get('expire-split-record-parts')?.Prefix, splitPartsPrefix('raw/'));
    assert.ok(
      // The parts of split Aurora DSQL records live under raw/ with their own expiry; no raw record does.
      rules.every((r) => r.ExpirationInDays === undefined || !(r.Prefix ?? '').startsWith('raw/') || r.Prefix === splitPartsPrefix('raw/')),
      'raw is never expired by a rule',
    );
    assert.ok(!rules.some((r) => r.Prefix?.startsWith('history/warehouse') || r.Prefix?.startsWith('history/state')), 'the history itself and its state never expire');
  });

  it('keeps point-in-time recovery on every target table, which a full reconcile exports', () => {
    const tables = Object.values(template.findResources('AWS::DynamoDB::Table') as Record<string, { Properties: Props }>);
    assert.ok(tables.length >= 4);
    for (const t of tables) assert.deepEqual(t.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true }, String(t.Properties.TableName));
  });
});
