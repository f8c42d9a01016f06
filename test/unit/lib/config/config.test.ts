import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { bucketNameProblems, closestField, configFromEnv, parseConfig } from '../../../../lib/config/config.js';
import { loadRuntimeConfig, RUNTIME_CONFIG_FILE } from '../../../../functions/config/runtime.js';
import { ConfigError } from '../../../../functions/core/errors.js';

const valid = { name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'] }], raw: { bucket: 'shop-raw' } };
const CLUSTER = 'arn:aws:kafka:us-east-1:111122223333:cluster/shop/0a1b2c3d-1111-2222-3333-444455556666-1';

/** The issues of an invalid config (fails the test when it is valid). */
function issuesOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.issues;
  }
  assert.fail('the config was accepted');
}

describe('config resolution', () => {
  it('fills every default in one place: format, tombstones, prefixes, status table, stream, record age', () => {
    const c = parseConfig(valid);
    assert.equal(c.format, 'auto');
    assert.equal(c.tables[0]?.tombstoneTtlDays, 7);
    assert.deepEqual(c.tables[0]?.keyTypes, {});
    assert.equal(c.raw.prefix, 'raw/');
    assert.equal(c.raw.quarantinePrefix, 'quarantine/');
    assert.equal(c.statusTable, 'shop-status');
    assert.deepEqual(c.source, { type: 'kinesis', streamName: 'shop-cdc', create: true, shardCount: 0, retentionHours: 24 });
    assert.equal(c.ingest.maxRecordAgeSeconds, 12 * 3600, 'half of the 24 h retention');
    assert.deepEqual(c.apply, { concurrency: 16, maxInFlight: 48, maxColumns: 5000, maxRetries: 6, maxItemBytes: 350_000 });
    assert.deepEqual(c.dms, { beforeImageField: 'before-image' });
    assert.equal(c.alarms.offsetLag, 100_000);
    assert.equal(c.ingest.reservedConcurrency, undefined);
    assert.equal(c.ingest.statusMaxAgeSeconds, 30, "a container re-reads a status row older than 30 s");
  });

  it('fills the nested defaults of a partly given section (no repeated default objects)', () => {
    const c = parseConfig({ ...valid, apply: { concurrency: 4 }, ingest: { batchSize: 10 }, alarms: { conflicts: 3 } });
    assert.deepEqual(c.apply, { concurrency: 4, maxInFlight: 48, maxColumns: 5000, maxRetries: 6, maxItemBytes: 350_000 });
    assert.equal(c.ingest.batchSize, 10);
    assert.equal(c.ingest.retryAttempts, 5);
    assert.equal(c.alarms.conflicts, 3);
    assert.equal(c.alarms.staleRate, 0.5);
  });

  it('derives the record age from a longer retention, capped at Lambda’s 7 days', () => {
    assert.equal(parseConfig({ ...valid, source: { type: 'kinesis', retentionHours: 48 } }).ingest.maxRecordAgeSeconds, 48 * 1800);
    assert.equal(parseConfig({ ...valid, source: { type: 'kinesis', retentionHours: 8760 } }).ingest.maxRecordAgeSeconds, 604_800);
    assert.equal(parseConfig({ ...valid, source: { type: 'msk', clusterArn: CLUSTER, topic: 't.public.orders' } }).ingest.maxRecordAgeSeconds, 84 * 3600);
  });

  it('rejects a record age that is not well below retention', () => {
    const issues = issuesOf({ ...valid, ingest: { maxRecordAgeSeconds: 86_400 } });
    assert.match(issues.join('\n'), /ingest\.maxRecordAgeSeconds: 86400 must be at most half the source's retention \(24 h/);
    assert.doesNotThrow(() => parseConfig({ ...valid, ingest: { maxRecordAgeSeconds: 43_200 } }));
  });

  it('defaults kafkaTombstones from the format: delete for debezium-flattened, auto under auto, ignore otherwise; a table may override', () => {
    assert.equal(parseConfig(valid).kafkaTombstones, 'auto');
    assert.equal(parseConfig(valid).tables[0]?.kafkaTombstones, 'auto');
    assert.equal(parseConfig({ ...valid, format: 'debezium' }).kafkaTombstones, 'ignore');
    const flat = parseConfig({ ...valid, format: 'debezium-flattened' });
    assert.equal(flat.kafkaTombstones, 'delete');
    assert.equal(flat.tables[0]?.kafkaTombstones, 'delete');
    const mixed = parseConfig({
      ...valid,
      format: 'debezium',
      kafkaTombstones: 'delete',
      tables: [valid.tables[0], { source: 'public.lines', target: 'shop-lines', key: ['id'], kafkaTombstones: 'ignore' }],
    });
    assert.deepEqual(
      mixed.tables.map((t) => t.kafkaTombstones),
      ['delete', 'ignore'],
    );
    assert.match(issuesOf({ ...valid, kafkaTombstones: 'drop' }).join(), /kafkaTombstones/);
  });
});

describe('config validation', () => {
  it('history.maintenance: daily by default, enabled, three days of snapshots; a bad schedule or retention is refused with its path', () => {
    assert.deepEqual(parseConfig(valid).history.maintenance, { schedule: 'cron(30 3 * * ? *)', enabled: true, snapshotRetentionDays: 3 });
    assert.deepEqual(parseConfig({ ...valid, history: { maintenance: { schedule: 'rate(12 hours)', snapshotRetentionDays: 7 } } }).history.maintenance, { schedule: 'rate(12 hours)', enabled: true, snapshotRetentionDays: 7 });
    const issues = issuesOf({ ...valid, history: { maintenance: { schedule: 'daily', enabled: 'yes', snapshotRetentionDays: 0 } } });
    assert.deepEqual([...new Set(issues.map((i) => i.split(':')[0]))].sort(), ['history.maintenance.enabled', 'history.maintenance.schedule', 'history.maintenance.snapshotRetentionDays']);
    assert.ok(issues.some((i) => /history\.maintenance\.schedule: must be an EventBridge Scheduler expression/.test(i)), issues.join('\n'));
    assert.ok(issuesOf({ ...valid, history: { maintenance: { snapshotRetentionDays: 91 } } }).some((i) => i.startsWith('history.maintenance.snapshotRetentionDays')));
  });

  it('reports every problem together, each with its path', () => {
    const bad = { name: 'Shop!', tables: [valid.tables[0], { source: 'public.lines', target: 'x', key: [] }], raw: { bucket: 'B' } };
    const issues = issuesOf(bad);
    const paths = [...new Set(issues.map((i) => i.split(':')[0]))];
    assert.deepEqual(paths.sort(), ['name', 'raw.bucket', 'tables[1].key', 'tables[1].target'].sort());
    assert.ok(issues.includes('tables[1].key: must not be empty'));
  });

  it('rejects unknown fields at every level with a "did you mean" hint', () => {
    const issues = issuesOf({
      ...valid,
      tables: [{ ...valid.tables[0], keytypes: { order_id: 'number' } }],
      raw: { bucket: 'shop-raw', quarantineprefix: 'q/' },
      ingest: { batchsize: 5 },
      retention: 3,
    });
    assert.ok(issues.includes('tables[0]: unknown field "keytypes" (did you mean "keyTypes"?)'), issues.join('\n'));
    assert.ok(issues.includes('raw: unknown field "quarantineprefix" (did you mean "quarantinePrefix"?)'), issues.join('\n'));
    assert.ok(issues.includes('ingest: unknown field "batchsize" (did you mean "batchSize"?)'), issues.join('\n'));
    assert.ok(issues.some((i) => i.startsWith('(root): unknown field "retention" (known fields: name, format,')), issues.join('\n'));
    assert.match(issuesOf({ ...valid, source: { type: 'kinesis', streamname: 's' } }).join(), /did you mean "streamName"/);
  });

  it('suggests the closest field only when it is close', () => {
    assert.equal(closestField('keytypes', ['key', 'keyTypes']), 'keyTypes');
    assert.equal(closestField('tabels', ['tables', 'name']), 'tables');
    assert.equal(closestField('zzz', ['tables', 'name']), undefined);
  });

  it('rejects key columns that start with the reserved "__" prefix, duplicate sources and keyTypes of non-key columns', () => {
    const bad = { ...valid, tables: [valid.tables[0], { source: 'public.orders', target: 'other', key: ['__id'], keyTypes: { Id: 'number' } }] };
    const issues = issuesOf(bad).join('\n');
    assert.match(issues, /tables\[1\]\.source: "public\.orders" is already configured/);
    assert.match(issues, /tables\[1\]\.key\[0\]: "__id" starts with "__"/);
    assert.match(issues, /tables\[1\]\.keyTypes\.Id: "Id" is not a key column/);
  });

  it('rejects a raw prefix equal to, or a prefix of, the quarantine prefix (either way), and prefixes over aws/lambda/', () => {
    const withRaw = (raw: object) => ({ ...valid, raw: { bucket: 'shop-raw', ...raw } });
    assert.match(issuesOf(withRaw({ prefix: 'data/', quarantinePrefix: 'data/' })).join(), /raw\.quarantinePrefix: "data\/" and raw\.prefix "data\/" must not be equal/);
    assert.match(issuesOf(withRaw({ prefix: 'data/', quarantinePrefix: 'data/q/' })).join(), /must not be equal or a prefix/);
    assert.match(issuesOf(withRaw({ prefix: 'data/raw/', quarantinePrefix: 'data/' })).join(), /must not be equal or a prefix/);
    assert.match(issuesOf(withRaw({ prefix: '' })).join(), /raw\.prefix: must not be empty/);
    assert.match(issuesOf(withRaw({ prefix: 'aws/' })).join(), /the on-failure destination: "aws\/lambda\/" and raw\.prefix "aws\/" must not be equal or a prefix/);
    assert.doesNotThrow(() => parseConfig(withRaw({ prefix: 'raw/', quarantinePrefix: 'rawq/' })));
  });

  it('validates replay.jobsPrefix and jobs.reportPrefix as raw.prefix is validated: non-empty, apart from every other prefix (issue 20, item 11)', () => {
    const withReplay = (replay: object) => ({ ...valid, replay });
    assert.match(issuesOf(withReplay({ jobsPrefix: '' })).join(), /replay\.jobsPrefix: must be a key prefix ending in "\/"/);
    assert.match(issuesOf(withReplay({ jobsPrefix: 'raw/jobs/' })).join(), /replay\.jobsPrefix: "raw\/jobs\/" and raw\.prefix "raw\/" must not be equal or a prefix/);
    assert.match(issuesOf(withReplay({ jobsPrefix: 'reports/' })).join(), /jobs\.reportPrefix: "reports\/" and replay\.jobsPrefix "reports\/"/);
    assert.match(issuesOf(withReplay({ jobsPrefix: 'aws/' })).join(), /"aws\/lambda\/" and replay\.jobsPrefix "aws\/"/);
    assert.match(issuesOf({ ...valid, jobs: { reportPrefix: 'quarantine/r/' } }).join(), /jobs\.reportPrefix: "quarantine\/r\/" and raw\.quarantinePrefix "quarantine\/"/);
    // A separate on-failure bucket frees aws/ in the raw bucket.
    assert.doesNotThrow(() => parseConfig({ ...valid, replay: { jobsPrefix: 'aws/', onFailureBucket: 'shop-failed' } }));
  });

  it('rejects a status table that is also a target', () => {
    assert.match(issuesOf({ ...valid, statusTable: 'shop-orders' }).join(), /statusTable: "shop-orders" is also a target table/);
  });
});

describe('S3 bucket naming rules', () => {
  // Every rule of the S3 user guide, "General purpose bucket naming rules".
  const cases: [string, RegExp][] = [
    ['ab', /3-63 characters/],
    ['a'.repeat(64), /3-63 characters/],
    ['Shop-raw', /lowercase/],
    ['shop_raw', /lowercase/],
    ['-shop', /begin and end/],
    ['shop.', /begin and end/],
    ['shop..raw', /two adjacent periods/],
    ['192.168.5.4', /IP address/],
    ['xn--shop', /prefix "xn--"/],
    ['sthree-shop', /prefix "sthree-"/],
    ['sthree-configurator-x', /prefix "sthree-"/],
    ['amzn-s3-demo-shop', /prefix "amzn-s3-demo-"/],
    ['shop-s3alias', /suffix "-s3alias"/],
    ['shop--ol-s3', /suffix "--ol-s3"/],
    ['shop.mrap', /suffix ".mrap"/],
    ['shop--x-s3', /suffix "--x-s3"/],
    ['shop--table-s3', /suffix "--table-s3"/],
  ];
  for (const [name, rule] of cases) {
    it(`rejects "${name.length > 20 ? `${name.slice(0, 12)}…` : name}"`, () => {
      assert.match(bucketNameProblems(name).join(), rule);
      assert.match(issuesOf({ ...valid, raw: { bucket: name } }).join(), /raw\.bucket: S3 bucket name/);
    });
  }

  it('accepts valid names, dots included', () => {
    for (const name of ['shop-raw', 'abc', 'a.b.c', '1shop', 'shop-cdc-raw-111122223333', 'a'.repeat(63)]) assert.deepEqual(bucketNameProblems(name), [], name);
  });

  it('agrees with an independent statement of the rules on arbitrary names', () => {
    const reserved = /^(xn--|sthree-|amzn-s3-demo-)|(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/;
    const ok = (n: string) =>
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(n) && !n.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(n) && !reserved.test(n);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9.\-A_]{0,66}$/), (name) => {
        assert.equal(bucketNameProblems(name).length === 0, ok(name), name);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('MSK source', () => {
  const msk = (source: object) => ({ ...valid, tables: [valid.tables[0], { source: 'inventory.items', target: 'shop-items', key: ['id'] }], source: { type: 'msk', clusterArn: CLUSTER, ...source } });

  it('reads one topic, a list, or <prefix>.<table> for every table, each with its consumer group base', () => {
    assert.deepEqual(parseConfig(msk({ topic: 'shop.all' })).source, {
      type: 'msk',
      clusterArn: CLUSTER,
      retentionHours: 168,
      topics: ['shop.all'],
      consumerGroupId: 'shop-ingest',
    });
    const listed = parseConfig(msk({ topics: ['a', 'b', 'a'], consumerGroupId: 'cdc' })).source;
    assert.ok(listed.type === 'msk');
    assert.deepEqual([listed.topics, listed.consumerGroupId], [['a', 'b'], 'cdc']);
    const prefixed = parseConfig(msk({ topicPrefix: 'dbserver1' })).source;
    assert.ok(prefixed.type === 'msk');
    assert.deepEqual(prefixed.topics, ['dbserver1.public.orders', 'dbserver1.inventory.items']);
  });

  it('asks for exactly one of topic, topics or topicPrefix', () => {
    assert.match(issuesOf(msk({})).join(), /source: give exactly one of topic, topics or topicPrefix/);
    assert.match(issuesOf(msk({ topic: 'a', topicPrefix: 'b' })).join(), /got topic, topicPrefix/);
  });

  it('rejects what is not an MSK cluster ARN and topic names Kafka refuses', () => {
    assert.match(issuesOf(msk({ clusterArn: 'arn:aws:kinesis:us-east-1:111122223333:stream/x', topic: 't' })).join(), /source\.clusterArn: must be an MSK cluster ARN/);
    assert.match(issuesOf(msk({ topic: 'bad topic' })).join(), /source\.topic: must be a Kafka topic name/);
  });
});

describe('config loading', () => {
  it('fails fast at cold start naming the missing environment variable', () => {
    assert.throws(() => configFromEnv({}), /Environment variable TIDEMARK_CONFIG is required/);
    assert.equal(configFromEnv({ TIDEMARK_CONFIG: JSON.stringify(valid) }).name, 'shop');
  });

  it('the runtime loads the resolved config shipped beside the bundle, then TIDEMARK_CONFIG, and names all when neither exists', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tidemark-runtime-config-'));
    try {
      const resolved = parseConfig(valid);
      assert.throws(() => loadRuntimeConfig({}, dir), /tidemark\.config\.json does not exist, and neither TIDEMARK_CONFIG_FILE nor the environment variable TIDEMARK_CONFIG is set/);
      assert.deepEqual(loadRuntimeConfig({ TIDEMARK_CONFIG: JSON.stringify(resolved) }, dir), resolved);
      writeFileSync(path.join(dir, RUNTIME_CONFIG_FILE), JSON.stringify(resolved));
      assert.deepEqual(loadRuntimeConfig({ TIDEMARK_CONFIG: '{"name":"other","tables":[]}' }, dir), resolved, 'the shipped file wins');
      writeFileSync(path.join(dir, RUNTIME_CONFIG_FILE), '{"oops"');
      assert.throws(() => loadRuntimeConfig({}, dir), ConfigError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
