/**
 * Builds what the published package runs, so that it works from node_modules with no TypeScript,
 * tsx or esbuild (`npm pack` runs it as `prepack`):
 * - dist/lib, dist/functions: the construct library compiled by tsc, with declarations;
 * - dist/handlers/<name>/index.mjs: each Lambda handler bundled exactly as `cdk synth` bundles it;
 * - dist/cli/main.mjs: the CLI, its dependencies left to node_modules, split so that each command's
 *   code is a chunk loaded when the command runs (`tidemark --help` loads main.mjs and commander).
 *
 *   node --import tsx bin/build.ts
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ESM_REQUIRE_BANNER, PACKAGE_ROOT, PREBUILT_HANDLERS_DIR } from '../lib/defaults.js';
import { bundleHandler } from '../lib/handler-asset.js';

/** The Lambda handlers under functions/ that the constructs deploy. */
export const HANDLERS = ['ingest', 'replay', 'erase', 'jobs'] as const;

const dist = path.join(PACKAGE_ROOT, 'dist');
const require = createRequire(path.join(PACKAGE_ROOT, 'package.json'));

rmSync(dist, { recursive: true, force: true });
const tsc = path.join(path.dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(PACKAGE_ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

for (const name of HANDLERS) {
  const out = path.join(PREBUILT_HANDLERS_DIR, name);
  mkdirSync(out, { recursive: true });
  bundleHandler(path.join(PACKAGE_ROOT, 'functions', `${name}.ts`), out, true);
}

const esbuild = require('esbuild') as { buildSync(options: Record<string, unknown>): unknown };
const cliDir = path.join(dist, 'cli');
esbuild.buildSync({
  entryPoints: [path.join(PACKAGE_ROOT, 'bin', 'cli', 'main.ts')],
  outdir: cliDir,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  chunkNames: '[name]-[hash]',
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: ESM_REQUIRE_BANNER },
  logLevel: 'error',
});
// The emulators preload this beside their own module.
copyFileSync(path.join(PACKAGE_ROOT, 'bin', 'local', 'loopback-only.cjs'), path.join(cliDir, 'loopback-only.cjs'));
console.log(`built ${path.relative(PACKAGE_ROOT, dist)}/: lib, handlers (${HANDLERS.join(', ')}), cli`);
