/**
 * tidemark as users get it: `npm pack` (which prebuilds the handlers, the library and the CLI),
 * installed for real into a scratch CDK app outside the repository with `npm install` of the
 * tarball (`--prefer-offline`: npm's cache first, the registry for the rest). There is no fallback:
 * if the install fails, the test fails, and nothing ever links this repository's node_modules, so a
 * package the code imports but package.json does not declare breaks here. Then the app is
 * synthesized offline, and the installed CLI runs `plan`, `status --help` and `reconcile --help`,
 * and says exactly what to install for the commands that need dev dependencies (the emulators, the
 * local state-machine engine). No TypeScript, tsx or esbuild is used by the app, the construct or
 * the CLI.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'tidemark-pack-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const quietEnv = { CDK_DISABLE_CLI_TELEMETRY: 'true', npm_config_fund: 'false', npm_config_audit: 'false', NODE_OPTIONS: '' };
const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...quietEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });

describe('the packed package in a scratch CDK app (offline)', () => {
  const packDir = path.join(scratch, 'pack');
  const app = path.join(scratch, 'app');
  mkdirSync(packDir);
  mkdirSync(app);

  it('packs the prebuilt handler, compiled library with types, and the CLI, and no TypeScript sources', () => {
    const out = run('npm', ['pack', '--silent', '--pack-destination', packDir], PACKAGE_ROOT);
    const tarball = path.join(packDir, out.trim().split('\n').pop() ?? '');
    assert.ok(existsSync(tarball), out);
    const files = run('tar', ['-tzf', tarball], scratch).split('\n');
    const handlers = ['ingest', 'replay', 'erase', 'jobs'].map((h) => `package/dist/handlers/${h}/index.mjs`);
    for (const f of [...handlers, 'package/dist/lib/index.js', 'package/dist/lib/index.d.ts', 'package/dist/cli/main.mjs', 'package/bin/tidemark.mjs']) {
      assert.ok(files.includes(f), `${f} is packed`);
    }
    assert.deepEqual(
      files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
      [],
    );
    const pkg = JSON.parse(run('tar', ['-xzOf', tarball, 'package/package.json'], scratch)) as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(pkg.peerDependencies ?? {}).sort(), ['aws-cdk-lib', 'constructs']);
    assert.deepEqual(pkg.exports?.['.'], { types: './dist/lib/index.d.ts', import: './dist/lib/index.js' });
    assert.equal(pkg.private, undefined, 'a publishable package (npm publish refuses a private one)');
    const version = (name: string) => JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'node_modules', name, 'package.json'), 'utf8')).version as string;
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'scratch-cdk-app', private: true, type: 'module', dependencies: { tidemark: `file:${tarball}`, 'aws-cdk-lib': version('aws-cdk-lib'), constructs: version('constructs') } }),
    );
    // A real install of the tarball and what it declares: no fallback, no link to this repository.
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], app);
    const installed = path.join(app, 'node_modules', 'tidemark');
    assert.ok(existsSync(path.join(installed, 'dist', 'cli', 'main.mjs')), 'tidemark is installed from the tarball');
    assert.ok(existsSync(path.join(installed, 'LICENSE')), 'the LICENSE ships');
    assert.ok(!existsSync(path.join(app, 'node_modules', 'aws-local-stepfunctions')), 'dev dependencies are not installed');
    assert.match(readFileSync(path.join(installed, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
  });

  it('synthesizes a TidemarkPipeline imported from the package, with the prebuilt handler and the config in its asset', () => {
    writeFileSync(path.join(app, 'tidemark.config.json'), readFileSync(path.join(PACKAGE_ROOT, 'tidemark.config.json')));
    writeFileSync(
      path.join(app, 'app.mjs'),
      [
        "import { App, Stack } from 'aws-cdk-lib';",
        "import { loadConfigFile, TidemarkPipeline } from 'tidemark';",
        "const app = new App({ outdir: 'cdk.out' });",
        "const stack = new Stack(app, 'Scratch', { env: { account: '111122223333', region: 'us-east-1' } });",
        "new TidemarkPipeline(stack, 'Cdc', { config: loadConfigFile('tidemark.config.json') });",
        'app.synth();',
      ].join('\n'),
    );
    run(process.execPath, ['app.mjs'], app);
    const template = JSON.parse(readFileSync(path.join(app, 'cdk.out', 'Scratch.template.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    // Each function runs its prebuilt handler, with the resolved config beside it and not in its environment.
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    for (const [functionName, handler] of [
      ['shop-ingest', 'ingest'],
      ['shop-replay', 'replay'],
      ['shop-erase', 'erase'],
      ['shop-reconcile-reconcilePlan', 'jobs'],
      ['shop-snapshot-snapshotReport', 'jobs'],
    ]) {
      const fn = functions.find((r) => r.Properties.FunctionName === functionName);
      assert.ok(fn, `${functionName} is synthesized`);
      const key = (fn.Properties.Code as { S3Key?: unknown }).S3Key;
      assert.equal(typeof key, 'string', `${functionName} has an asset`);
      const assetDir = path.join(app, 'cdk.out', `asset.${String(key).replace(/\.zip$/, '')}`);
      assert.ok(existsSync(path.join(assetDir, 'tidemark.config.json')), `${functionName}: the asset carries the config`);
      const bundled = readFileSync(path.join(assetDir, 'index.mjs'));
      assert.deepEqual(bundled, readFileSync(path.join(app, 'node_modules', 'tidemark', 'dist', 'handlers', handler, 'index.mjs')), `${functionName}: the prebuilt ${handler} handler`);
      const variables = (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
      assert.ok(!('TIDEMARK_CONFIG' in variables), `${functionName}: no config in the environment`);
    }
  });

  const tidemark = (...args: string[]) => spawnSync('npx', ['--offline', '--no', 'tidemark', ...args], { cwd: app, encoding: 'utf8', env: { ...process.env, ...quietEnv } });

  it('runs `npx tidemark plan` from the package, without tsx', () => {
    const input = path.join(app, 'changes.jsonl');
    // A Debezium PostgreSQL create event, the first line of this repository's plan fixture.
    const fixture = readFileSync(path.join(PACKAGE_ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl'), 'utf8').split('\n')[0] ?? '';
    writeFileSync(input, `${fixture}\n`);
    const human = tidemark('plan', '-i', input, '-c', 'tidemark.config.json');
    assert.equal(human.status, 0, human.stderr);
    assert.match(human.stdout, /public\.customers\s+id=1\s+c\s+LSN /);
    const json = tidemark('plan', '-i', input, '-c', 'tidemark.config.json', '--json');
    const [planned, summary] = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { key?: unknown; row?: unknown; summary?: { keys?: number } });
    assert.deepEqual([planned?.key, planned?.row], [{ id: 1 }, { id: 1, name: 'Anne', bio: 'A' }]);
    assert.equal(summary?.summary?.keys, 1);
  });

  it('shows `status --help` and `reconcile --help` from the package', () => {
    for (const command of ['status', 'reconcile']) {
      const help = tidemark(command, '--help');
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, new RegExp(`^Usage: tidemark ${command} \\[options\\]`));
      assert.equal(help.stderr, '', 'nothing on stderr: no SDK warning, no missing package');
    }
  });

  it('says exactly what to install for the commands that need dev dependencies', () => {
    const up = tidemark('local', 'up');
    assert.equal(up.status, 2);
    assert.match(up.stderr, /^tidemark: tidemark local up needs amplify-dynamodb-simulator, kinesalite, s3rver, dev dependencies not installed here\n {2}fix: npm install --save-dev amplify-dynamodb-simulator@2\.9\.30 kinesalite@3\.3\.3 s3rver@3\.7\.1/);
    const reconcile = tidemark('reconcile', '-c', 'tidemark.config.json');
    assert.equal(reconcile.status, 2);
    assert.match(reconcile.stderr, /needs aws-local-stepfunctions, a dev dependency not installed here\n {2}fix: npm install --save-dev aws-local-stepfunctions@3\.0\.0, or run the deployed one with --on aws/);
  });
});
