/**
 * The bucket's key layout (functions/adapters/raw-layout.ts), the one module that builds and parses
 * raw, spill, quarantine and job keys: segment encodings (current injective, first lossy), and the
 * keys each reader and writer derives from them.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compactedHourKey,
  compactionFrontierKey,
  compactionStatePrefix,
  decodeSegment,
  encodeSegment,
  eraseKeysObjectKey,
  eraseKeysRunPrefix,
  findingsPartKey,
  jobRunPrefix,
  jobRunsPrefix,
  jobUnloadPrefix,
  legacySegment,
  manifestUploadKey,
  manifestUploadsPrefix,
  mayHoldKeys,
  parseRawObjectKey,
  quarantineHourPrefix,
  quarantineObjectKey,
  RUN_FILES,
  RUN_FOLDERS,
  rawBatchKey,
  rawDayPrefix,
  rawHourPrefix,
  rawObjectKey,
  rawObjectOfShard,
  rawTableDayPrefix,
  rawTableHourPrefix,
  reportRunPrefix,
  reportRunsPrefix,
  resultKey,
  resultsPrefix,
  runFile,
  runFolder,
  runPartitionPrefix,
  segmentNames,
  spilledRowsPrefix,
  spillObjectKey,
  spillPrefix,
  spillPrefixes,
  tableReportKey,
  tableSegments,
  tableSideRunPrefix,
  unloadPrefix,
} from '../../../../functions/adapters/raw-layout.js';
import { PACKAGE_ROOT } from '../../../../lib/defaults.js';

const batch = { shard: 'shardId-000000000000', firstSequence: '100', lastSequence: '200', firstArrival: Date.parse('2026-11-30T06:15:00Z') };

describe('raw layout: segment encodings', () => {
  it('keeps plain names as they are and percent-encodes the rest', () => {
    assert.equal(encodeSegment('public.orders'), 'public.orders');
    assert.equal(encodeSegment('public.café'), 'public.caf%C3%A9');
    assert.equal(encodeSegment('dbo.Order Details'), 'dbo.Order%20Details');
    assert.equal(encodeSegment('public.caf_'), 'public.caf_');
    assert.equal(encodeSegment('a/b=c%d'), 'a%2Fb%3Dc%25d');
    assert.equal(encodeSegment('x\ud800y'), 'x%uD800y', 'a lone surrogate has no UTF-8 form');
  });

  it('encodes injectively (property): distinct names never share a segment, and decoding inverts it', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        assert.equal(decodeSegment(encodeSegment(a)), a);
        assert.match(encodeSegment(a), /^[A-Za-z0-9._%u-]*$/);
        if (a !== b) assert.notEqual(encodeSegment(a), encodeSegment(b));
      }),
      { numRuns: 500 },
    );
  });

  it('decodes %XX bytes and %uXXXX surrogates, and leaves what is no encoding as it is', () => {
    assert.equal(decodeSegment('public.caf%C3%A9'), 'public.café');
    assert.equal(decodeSegment('a%uD800b%25'), 'a\uD800b%');
    assert.equal(decodeSegment('bad%ZZ'), 'bad%ZZ');
  });

  it('knows the first, lossy form, and looks under both', () => {
    assert.equal(legacySegment('public.café'), 'public.caf_');
    assert.deepEqual(tableSegments('public.café'), ['public.caf%C3%A9', 'public.caf_']);
    assert.deepEqual(tableSegments('public.orders'), ['public.orders']);
    assert.ok(segmentNames('public.caf_', 'public.café') && segmentNames('public.caf%C3%A9', 'public.café'));
    assert.ok(!segmentNames('public.caf%C3%A9', 'public.caf_'));
  });
});

describe('raw layout: keys', () => {
  it('names raw and quarantine objects by table, arrival hour, shard, sequences and digest, and parses raw keys back', () => {
    const key = rawObjectKey('raw/', 'public.café', batch, 'abc');
    assert.equal(key, 'raw/table=public.caf%C3%A9/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    assert.equal(quarantineObjectKey('quarantine/', batch, 'abc'), 'quarantine/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    const parts = parseRawObjectKey('raw/', key);
    assert.deepEqual(parts, { layout: 'table', tableSegment: 'public.caf%C3%A9', hourStart: Date.parse('2026-11-30T06:00:00Z'), name: 'shardId-000000000000-100-200-abc' });
    assert.ok(parts && rawObjectOfShard(parts, 'shardId-000000000000'));
    assert.ok(parts && !rawObjectOfShard(parts, 'shardId-000000000001'));
    const batchKey = rawBatchKey('raw/', batch, 'abc');
    assert.equal(batchKey, 'raw/dt=2026-11-30/hr=06/shardId-000000000000-100-200-abc.jsonl.gz');
    const batchParts = parseRawObjectKey('raw/', batchKey);
    assert.deepEqual(batchParts, { layout: 'batch', tableSegment: null, hourStart: Date.parse('2026-11-30T06:00:00Z'), name: 'shardId-000000000000-100-200-abc' });
    assert.ok(batchParts && rawObjectOfShard(batchParts, 'shardId-000000000000'));
    assert.equal(parseRawObjectKey('raw/', 'raw/spill/table=t/abc/a11.json.gz'), null);
    assert.equal(parseRawObjectKey('raw/', 'other/table=t/dt=2026-11-30/hr=06/x.jsonl.gz'), null);
  });

  it('finds a spilled row of a table with a space or a non-ASCII letter under the prefix its writer used', () => {
    for (const table of ['public.café', 'dbo.Order Details', 'public.orders']) {
      const keyId = '["42"]';
      const written = spillObjectKey('raw/', table, keyId, 'a15');
      assert.ok(
        spillPrefixes('raw/', table, keyId).some((p) => written.startsWith(p)),
        `${written} is under ${spillPrefixes('raw/', table, keyId).join(', ')}`,
      );
    }
    assert.deepEqual(spillPrefixes('raw/', 'dbo.Order Details', '["1"]'), ['raw/spill/table=dbo.Order%20Details/WyIxIl0/', 'raw/spill/table=dbo.Order_Details/WyIxIl0/']);
  });

  it('keeps each job run under its own prefix', () => {
    assert.equal(jobRunPrefix('jobs/', 'erase', 'r1'), 'jobs/erase/r1/');
    assert.equal(jobRunPrefix('jobs/', 'replay', 'r1'), 'jobs/replay/r1/');
    assert.equal(jobRunsPrefix('jobs/', 'compaction'), 'jobs/compaction/');
    assert.equal(jobRunsPrefix('jobs/', 'maintenance'), 'jobs/maintenance/');
    assert.equal(reportRunsPrefix('reports/', 'reconcile'), 'reports/reconcile/');
    assert.equal(reportRunPrefix('reports/', 'snapshot', 's1'), 'reports/snapshot/s1/');
    assert.equal(tableReportKey('reports/', 'public.café', 'r1', '.json'), 'reports/reconcile/public.caf%C3%A9/r1.json');
    assert.equal(manifestUploadsPrefix('reports/'), 'reports/manifests/');
    assert.equal(manifestUploadKey('reports/', 'keys.jsonl', 42), 'reports/manifests/42-keys.jsonl');
  });

  it('names the objects and folders of a run', () => {
    const run = jobRunPrefix('jobs/', 'replay', 'r1');
    assert.equal(runFile(run, 'queries'), 'jobs/replay/r1/queries.json');
    assert.equal(runFile(run, 'manifest'), 'jobs/replay/r1/manifest.json');
    assert.equal(runFile(run, 'keys'), 'jobs/replay/r1/keys.json');
    assert.equal(runFile(run, 'buckets'), 'jobs/replay/r1/buckets.json');
    assert.equal(runFile(run, 'summary'), 'jobs/replay/r1/summary.json');
    assert.equal(runFile(run, 'verify'), 'jobs/replay/r1/verify.json');
    assert.equal(runFolder(run, 'events'), 'jobs/replay/r1/events/');
    assert.equal(resultsPrefix(run), 'jobs/replay/r1/results/');
    assert.equal(resultKey(run, 0), 'jobs/replay/r1/results/000000.json');
    assert.equal(resultKey(run, 42), 'jobs/replay/r1/results/000042.json');
    assert.equal(resultKey(run, 1234567), 'jobs/replay/r1/results/1234567.json', 'past six digits the number is written whole');
    const erase = jobRunPrefix('jobs/', 'erase', 'e1');
    assert.equal(runFile(erase, 'request'), 'jobs/erase/e1/request.json');
    assert.equal(runFile(erase, 'begin'), 'jobs/erase/e1/begin.json');
    assert.equal(runFile(erase, 'findQueries'), 'jobs/erase/e1/find-queries.json');
    assert.equal(runFile(erase, 'historyQueries'), 'jobs/erase/e1/history-queries.json');
    assert.equal(runFile(erase, 'objects'), 'jobs/erase/e1/objects.jsonl');
    assert.equal(runFolder(erase, 'objects'), 'jobs/erase/e1/objects/');
    assert.equal(runFolder(erase, 'found'), 'jobs/erase/e1/found/');
    assert.equal(resultKey(erase, 7), 'jobs/erase/e1/results/000007.json');
    const reconcile = reportRunPrefix('reports/', 'reconcile', 'c1');
    assert.equal(runFile(reconcile, 'run'), 'reports/reconcile/c1/run.json');
    assert.equal(runFile(reconcile, 'exports'), 'reports/reconcile/c1/exports.json');
    assert.equal(runFile(reconcile, 'classifyQueries'), 'reports/reconcile/c1/classify-queries.json');
    assert.equal(runFile(reconcile, 'windowQueries'), 'reports/reconcile/c1/window-queries.json');
    assert.equal(runFile(reconcile, 'repairKeys'), 'reports/reconcile/c1/repair-keys.json');
    assert.equal(runFile(reconcile, 'repairQueries'), 'reports/reconcile/c1/repair-queries.json');
    assert.equal(runFile(reconcile, 'repairOutcomes'), 'reports/reconcile/c1/repair-outcomes.json');
    assert.equal(runFile(reconcile, 'report'), 'reports/reconcile/c1/report.json');
    assert.equal(runFolder(reconcile, 'findings'), 'reports/reconcile/c1/findings/');
    assert.equal(findingsPartKey(reconcile, 3), 'reports/reconcile/c1/findings/part-00003.jsonl.gz');
    // A run id of `*`: the IAM resource of one object of every run.
    assert.equal(runFile(jobRunPrefix('jobs/', 'replay', '*'), 'queries'), 'jobs/replay/*/queries.json');
    assert.equal(runFolder(jobRunPrefix('jobs/', 'replay', '*'), 'events'), 'jobs/replay/*/events/');
    // Every name is one path segment (a file) or one folder, and no two are the same.
    for (const name of Object.values(RUN_FILES)) assert.match(name, /^[a-z-]+\.jsonl?$/);
    for (const name of Object.values(RUN_FOLDERS)) assert.match(name, /^[a-z-]+\/$/);
    assert.equal(new Set(Object.values(RUN_FILES)).size, Object.keys(RUN_FILES).length);
  });

  it('names the hours and days of raw and quarantine, and the spilled rows', () => {
    const at = Date.parse('2026-11-30T06:15:00Z');
    assert.equal(rawHourPrefix('raw/', at), 'raw/dt=2026-11-30/hr=06/');
    assert.equal(rawDayPrefix('raw/', at), 'raw/dt=2026-11-30/');
    assert.equal(rawTableHourPrefix('raw/', 'public.caf%C3%A9', at), 'raw/table=public.caf%C3%A9/dt=2026-11-30/hr=06/');
    assert.equal(rawTableDayPrefix('raw/', 'public.caf%C3%A9', at), 'raw/table=public.caf%C3%A9/dt=2026-11-30/');
    assert.equal(quarantineHourPrefix('quarantine/', at), 'quarantine/dt=2026-11-30/hr=06/');
    assert.ok(quarantineObjectKey('quarantine/', batch, 'abc').startsWith(quarantineHourPrefix('quarantine/', batch.firstArrival)));
    assert.equal(spilledRowsPrefix('raw/'), 'raw/spill/');
    assert.ok(spillPrefix('raw/', 'public.orders', '["1"]').startsWith(spilledRowsPrefix('raw/')));
  });

  it('names the history objects the jobs keep per run', () => {
    assert.equal(runPartitionPrefix('history/table_side/', 'r 1'), 'history/table_side/run_id=r%201/');
    assert.equal(tableSideRunPrefix('history/', 'r1'), 'history/table_side/run_id=r1/');
    assert.equal(eraseKeysRunPrefix('history/', 'e1'), 'history/erase_keys/run_id=e1/');
    assert.equal(eraseKeysObjectKey('history/', 'e1'), 'history/erase_keys/run_id=e1/keys.jsonl.gz');
    assert.equal(compactionStatePrefix('history/'), 'history/state/');
    assert.equal(compactionFrontierKey('history/'), 'history/state/compaction.json');
    assert.equal(compactedHourKey('history/', Date.parse('2026-11-30T06:00:00Z')), 'history/state/hours/dt=2026-11-30/hr=06.json');
    assert.equal(jobUnloadPrefix('history/', 'reconcile'), 'history/unload/reconcile/');
    assert.equal(unloadPrefix('history/', 'reconcile', 'r1', 'window-keys'), 'history/unload/reconcile/r1/window-keys/');
  });

  it('tells the job outputs that can hold keys from those that hold only counts', () => {
    const keyed = ['findings', 'window-keys', 'export', 'repair', 'orphans'];
    for (const part of keyed) assert.equal(mayHoldKeys('history/', `${unloadPrefix('history/', 'reconcile', 'r1', part)}x/0.json.gz`), true, part);
    for (const part of ['counts', 'anomalies', 'resnapshots']) assert.equal(mayHoldKeys('history/', `${unloadPrefix('history/', 'snapshot', 's1', part)}0.json.gz`), false, part);
    // Anything of another shape is read, to be safe.
    assert.equal(mayHoldKeys('history/', 'history/unload/stray.json.gz'), true);
    assert.equal(mayHoldKeys('history/', 'history/unload/reconcile/r1/counts'), true);
    assert.equal(mayHoldKeys('history/', 'reports/reconcile/r1/report.json'), true);
  });
});

/** The product's source files (functions/, lib/, bin/), but raw-layout.ts, as `[path, text]`. */
function productSources(): [string, string][] {
  const out: [string, string][] = [];
  for (const dir of ['functions', 'lib', 'bin']) {
    for (const f of readdirSync(path.join(PACKAGE_ROOT, dir), { recursive: true, encoding: 'utf8' })) {
      const file = path.posix.join(dir, f.split(path.sep).join('/'));
      if (!/\.(ts|mts|mjs)$/.test(file) || file.endsWith('.d.ts') || file === 'functions/adapters/raw-layout.ts') continue;
      out.push([file, readFileSync(path.join(PACKAGE_ROOT, file), 'utf8')]);
    }
  }
  return out;
}

/**
 * Where a source builds one of a run's object names itself: the name appended to an expression
 * (`${prefix}queries.json`), to an IAM wildcard (`…*\u002Fbuckets.json`), or as a string literal
 * (`'summary.json'`). Doc comments name them as `<run>/queries.json`, which none of these match;
 * a comment that wrote an IAM wildcard out would, and should say it otherwise.
 */
function runNamesBuiltOutsideLayout(files: readonly (readonly [string, string])[]): string[] {
  const names = [...Object.values(RUN_FILES), ...Object.values(RUN_FOLDERS)];
  const escaped = (name: string) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const patterns = names.map((name) => ({ name, re: new RegExp(`(?:\\}|\\*/|['"])${escaped(name)}(?![\\w])`) }));
  const found: string[] = [];
  for (const [file, text] of files) for (const { name, re } of patterns) if (re.test(text)) found.push(`${file}: ${name}`);
  return found;
}

describe('raw layout: the only place that names a run\'s objects', () => {
  const files = productSources();

  it('reads the product sources', () => {
    assert.ok(files.length > 100, `${files.length} files`);
    assert.ok(files.some(([f]) => f === 'functions/erase/erase.ts') && files.some(([f]) => f === 'lib/replay/jobs.ts') && files.some(([f]) => f.startsWith('bin/')));
  });

  it('finds no run object named outside raw-layout.ts', () => {
    assert.deepEqual(runNamesBuiltOutsideLayout(files), []);
  });

  it('would find one that came back', () => {
    // Source text as the product would have it (template literals with their placeholders escaped).
    const back: [string, string][] = [
      ['a.ts', `const key = \`\${prefix}queries.json\`;`],
      ['b.ts', `putJson(s3, bucket, \`\${erasePrefix(config, runId)}results/\${String(n).padStart(6, '0')}.json\`, out);`],
      ['c.ts', `bucket.arnForObjects(\`\${runs}*/buckets.json\`)`],
      ['d.ts', `const summaryKey = prefix + 'summary.json';`],
      ['e.ts', `const items = \`\${runPrefix(config, runId)}objects.jsonl\`;`],
      ['f.ts', `const request = \`\${p}request.json\`, manifest = \`\${p}manifest.json\`, exports = \`\${p}exports.json\`;`],
    ];
    assert.deepEqual(runNamesBuiltOutsideLayout(back), [
      'a.ts: queries.json',
      'b.ts: results/',
      'c.ts: buckets.json',
      'd.ts: summary.json',
      'e.ts: objects.jsonl',
      'f.ts: exports.json',
      'f.ts: manifest.json',
      'f.ts: request.json',
    ]);
    // What the doc comments say, and names that only begin like a run's object, are not builds.
    assert.deepEqual(runNamesBuiltOutsideLayout([['g.ts', ` * S3 layout: <jobs>replay/<run>/{manifest.json, queries.json}, \`<run>/objects.jsonl\`\nconst k = \`\${p}keys.jsonl.gz\`;`]]), []);
  });
});
