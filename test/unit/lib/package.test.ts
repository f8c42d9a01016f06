/**
 * tidemark as users get it: `npm pack` (which prebuilds the handler, the library and the CLI),
 * installed into a scratch CDK app outside the repository, then synthesized and `npx tidemark plan`.
 *
 * Offline, on purpose. The test first tries `npm install --offline` of the tarball in an empty
 * folder; here it cannot resolve the dependencies (npm's cache holds tarballs but not the registry
 * metadata), so it falls back, and says so in its output: the scratch app links each
 * already-installed dependency one by one (`node_modules/<name>` and `node_modules/@scope/<name>`
 * links; scope folders and `.bin` are real folders, so nothing can reach through a link into the
 * shared install) and installs only the tarball, by extracting it. npm is never run inside the
 * scratch app. No TypeScript, tsx or esbuild is used by the app, the construct or the CLI.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'tidemark-pack-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_offline: 'true', CDK_DISABLE_CLI_TELEMETRY: 'true', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });

/** Links every installed package except tidemark itself into `modules`, package by package. */
function linkDependencies(source: string, modules: string): void {
  mkdirSync(path.join(modules, '.bin'), { recursive: true });
  for (const entry of readdirSync(source)) {
    if (entry.startsWith('.') || entry === 'tidemark') continue;
    if (entry.startsWith('@')) {
      mkdirSync(path.join(modules, entry));
      for (const pkg of readdirSync(path.join(source, entry))) symlinkSync(path.join(source, entry, pkg), path.join(modules, entry, pkg));
    } else {
      symlinkSync(path.join(source, entry), path.join(modules, entry));
    }
  }
}

describe('the packed package in a scratch CDK app (offline)', () => {
  const packDir = path.join(scratch, 'pack');
  let app = path.join(scratch, 'app');
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
    // First the ordinary way, in an empty folder (nothing shared to reach): npm install --offline.
    const npmApp = path.join(scratch, 'npm-app');
    mkdirSync(npmApp);
    const version = (name: string) => JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'node_modules', name, 'package.json'), 'utf8')).version as string;
    writeFileSync(
      path.join(npmApp, 'package.json'),
      JSON.stringify({ name: 'scratch-cdk-app', private: true, type: 'module', dependencies: { tidemark: `file:${tarball}`, 'aws-cdk-lib': version('aws-cdk-lib'), constructs: version('constructs') } }),
    );
    try {
      run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], npmApp);
      app = npmApp;
      console.log('installed the tarball with npm install --offline');
      return;
    } catch (err) {
      const reason = String((err as { stderr?: string }).stderr ?? err).split('\n').find((l) => l.includes('npm error')) ?? String(err);
      console.log(`npm install --offline cannot resolve the dependencies here (${reason.trim()}): linking the installed ones and installing only the tarball`);
    }
    const modules = path.join(app, 'node_modules');
    linkDependencies(path.join(PACKAGE_ROOT, 'node_modules'), modules);
    mkdirSync(path.join(modules, 'tidemark'));
    run('tar', ['-xzf', tarball, '-C', path.join(modules, 'tidemark'), '--strip-components=1'], scratch);
    symlinkSync('../tidemark/bin/tidemark.mjs', path.join(modules, '.bin', 'tidemark'));
  });

  it('synthesizes a TidemarkPipeline imported from the package, with the prebuilt handler and the config in its asset', () => {
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch-cdk-app', private: true, type: 'module' }));
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
      ['shop-snapshot-snapshotDetect', 'jobs'],
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

  it('runs `npx tidemark plan` from the package, without tsx', () => {
    const input = path.join(app, 'changes.jsonl');
    // A Debezium PostgreSQL create event, the first line of this repository's plan fixture.
    const fixture = readFileSync(path.join(PACKAGE_ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl'), 'utf8').split('\n')[0] ?? '';
    writeFileSync(input, `${fixture}\n`);
    const out = run('npx', ['--offline', '--no', 'tidemark', 'plan', '-i', input, '-c', 'tidemark.config.json'], app, { NODE_OPTIONS: '' });
    const planned = JSON.parse(out.trim().split('\n')[0] ?? '{}') as { key?: unknown; row?: unknown };
    assert.deepEqual([planned.key, planned.row], [{ id: 1 }, { id: 1, name: 'Anne', bio: 'A' }]);
  });
});
