/**
 * The CLI as a subprocess, where no AWS endpoint is needed: options checked with their range
 * before anything starts (defect 1: `apply --batch-size 0` hung), every config problem reported
 * at once (defect 4), a JSON mistake named by line and column, job inputs refused at once (defect
 * 6: `reconcile --since yesterday` ran the state machine for 20 s first), `plan --strict`, a
 * closed pipe ending the command quietly (defect 2), and no SDK warning on any command.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../../../bin/tidemark.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tidemark-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const config = join(dir, 'tidemark.config.json');
writeFileSync(config, JSON.stringify({ name: 'shop', tables: [{ source: 'public.orders', target: 'shop-orders', key: ['order_id'], keyTypes: { order_id: 'number' } }], raw: { bucket: 'shop-raw' } }));
// No endpoint, region or credentials: a command that reached AWS would fail differently (and slowly).
const env = { PATH: process.env.PATH ?? '', HOME: dir, AWS_EC2_METADATA_DISABLED: 'true' };

function tidemark(args: readonly string[], options: { input?: string } = {}) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, env, encoding: 'utf8', timeout: 60_000, ...(options.input !== undefined ? { input: options.input } : {}) });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
}

const pg = (id: number, lsn: number) =>
  JSON.stringify({ before: null, after: { order_id: id, status: 'paid' }, source: { connector: 'postgresql', name: 'shop', db: 'shop', schema: 'public', table: 'orders', lsn, sequence: `["${lsn - 8}","${lsn}"]`, ts_ms: 1_700_000_000_000 }, op: 'c', ts_ms: 1_700_000_000_100 });

describe('tidemark as a subprocess, before any AWS call', () => {
  it('refuses apply --batch-size 0 or abc at once, naming the range (it used to hang)', () => {
    writeFileSync(join(dir, 'one.jsonl'), `${pg(1, 100)}\n`);
    for (const bad of ['0', 'abc']) {
      const r = tidemark(['apply', '-c', config, '-i', join(dir, 'one.jsonl'), '--batch-size', bad]);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`option '--batch-size <n>' argument '${bad}' is invalid. must be an integer from 1 to 10000`));
      assert.ok(r.ms < 30_000, `${r.ms} ms`);
    }
  });

  it('reports schema problems, a duplicate source and a "/raw" prefix together', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        name: 'shop',
        tables: [
          { source: 'public.orders', target: 'shop-orders', key: ['order_id'] },
          { source: 'public.orders', target: 'shop-orders-2', key: ['order_id'] },
        ],
        raw: { bucket: 'shop-raw', prefix: '/raw' },
        ingest: { batchSize: 0 },
      }),
    );
    const r = tidemark(['plan', '-c', bad, '-i', join(dir, 'one.jsonl')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /ingest\.batchSize: /);
    assert.match(r.stderr, /tables\[1\]\.source: "public\.orders" is already configured at tables\[0\]/);
    assert.match(r.stderr, /raw\.prefix: "\/raw" must not start with "\/"/);
  });

  it('names the line and column of a JSON mistake in the config file and in --key', () => {
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{\n  "name": "shop",\n  "tables": [}\n}\n');
    const r = tidemark(['status', '-c', broken]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /broken\.json is invalid:\n {2}- the file is not valid JSON at line 3, column 14: Array item expected but got '}'/);
    const key = tidemark(['get', '-c', config, '-t', 'public.orders', '-k', '{order_id: 7}']);
    assert.equal(key.status, 2);
    assert.equal(key.stderr, "tidemark: --key is not valid JSON at line 1, column 2: Quoted object key expected but got 'o'\n  fix: --key '{\"order_id\": 7}'\n");
  });

  it('refuses malformed job inputs before starting anything (reconcile --since yesterday, --cutoff-seconds abc)', () => {
    const since = tidemark(['reconcile', '-c', config, '--since', 'yesterday']);
    assert.equal(since.status, 2);
    assert.match(since.stderr, /^tidemark: reconcile input is invalid: since must be an ISO 8601 time \(2026-11-30T06:00:00Z\), got "yesterday"\n {2}fix: /);
    assert.ok(since.ms < 30_000, `${since.ms} ms`);
    const cutoff = tidemark(['reconcile', '-c', config, '--cutoff-seconds', 'abc']);
    assert.equal(cutoff.status, 2);
    assert.match(cutoff.stderr, /option '--cutoff-seconds <n>' argument 'abc' is invalid/);
    const inverted = tidemark(['replay', '-c', config, '-t', 'public.orders', '--since', '2026-12-01', '--until', '2026-11-30']);
    assert.equal(inverted.status, 2);
    assert.match(inverted.stderr, /^tidemark: --since \(2026-12-01T00:00:00\.000Z\) must be before --until \(2026-11-30T00:00:00\.000Z\)/);
    const positions = tidemark(['replay', '-c', config, '-t', 'public.orders', '--from-position', '[2000,2000]', '--to-position', '[1000,1000]']);
    assert.equal(positions.status, 2);
    assert.match(positions.stderr, /^tidemark: --from-position \[2000,2000\] is above --to-position \[1000,1000\]: the range selects nothing/);
    const table = tidemark(['snapshot-check', '-c', config, '-t', 'public.nope']);
    assert.equal(table.status, 2);
    assert.match(table.stderr, /table "public\.nope" is not configured \(configured: public\.orders\)/);
  });

  it('plan --strict exits 1 with a rejected line and says where apply quarantines it; --json ends with the summary', () => {
    const input = join(dir, 'mixed.jsonl');
    writeFileSync(input, `${pg(2, 200)}\nnot json\n${pg(10, 300)}\n`);
    const human = tidemark(['plan', '-c', config, '-i', input, '--strict']);
    assert.equal(human.status, 1);
    assert.match(human.stdout, /order_id=2 .*\n.*order_id=10 /, 'keys sorted as numbers');
    assert.match(human.stdout, /line 2: invalid-json: /);
    assert.match(human.stdout, /apply quarantines undecodable records under s3:\/\/shop-raw\/quarantine\//);
    const json = tidemark(['plan', '-c', config, '-i', input, '--json']);
    assert.equal(json.status, 0);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual((lines.at(-1)?.summary as Record<string, unknown>)?.rejected, 1);
    assert.equal(lines[0]?.position, 'a3192.a3200', 'encoded positions under --json');
  });

  it('ends quietly when the reader of its output goes away (| head)', () => {
    const many = join(dir, 'many.jsonl');
    writeFileSync(many, `${Array.from({ length: 20_000 }, (_, i) => pg(i + 1, 100 + i * 10)).join('\n')}\n`);
    const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" plan -c "${config}" -i "${many}" --json | head -3`], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').length, 3);
    assert.equal(r.stderr, '', 'no EPIPE, no unhandled error event');
  });

  it('prints help and local env errors without the SDK warning', () => {
    const help = tidemark(['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /put \[options\]\s+write a file of messages onto the configured/);
    const envr = tidemark(['local', 'env']);
    assert.equal(envr.status, 2);
    assert.equal(envr.stderr, 'tidemark: the local emulators are not running\n  fix: npx tidemark local up (or npm start -- --keep)\n');
  });
});
