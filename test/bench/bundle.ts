/**
 * The ingest bundle before and after the lean-bundle change, side by side: bytes (raw and gzip, as
 * in the Lambda zip) and cold start in a fresh node process: the import of the bundle alone, and
 * with the first (empty) batch, which loads the config and builds the clients.
 *
 * - before: the config validated by zod at cold start from `TIDEMARK_CONFIG`, source maps on
 *   (`--enable-source-maps`), the whole credential chain and the Kinesis client;
 * - after: what `cdk synth` ships now (handler-asset.ts): the resolved config read from the asset,
 *   no source map, environment credentials, no Kinesis client, only the SDK schemas the handler
 *   uses (lib/bundler/), and stand-ins for the SDK code it never runs (lib/bundle-shims/).
 *
 *   node --import tsx test/bench/bundle.ts [runs]     (default 15 runs each, interleaved)
 *
 * Timings are noisy on a shared machine: read the ratio, not the milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { parseConfig } from '../../functions/commons/config.js';
import { RUNTIME_CONFIG_FILE } from '../../functions/commons/runtime-config.js';
import { PACKAGE_ROOT } from '../../lib/defaults.js';
import { BUNDLE_FILE, bundleHandler, bundleOptions } from '../../lib/handler-asset.js';

type Plugin = { name: string; setup(build: { onResolve(o: { filter: RegExp }, cb: (a: { path: string }) => { path: string } | undefined): void }): void };
type Esbuild = { buildSync(o: Record<string, unknown>): unknown; build(o: Record<string, unknown>): Promise<unknown> };
const esbuild = createRequire(path.join(PACKAGE_ROOT, 'package.json'))('esbuild') as Esbuild;

const runs = Number(process.argv[2] ?? 15);
const root = mkdtempSync(path.join(tmpdir(), 'tidemark-bundle-bench-'));
const entry = path.join(PACKAGE_ROOT, 'functions', 'ingest.ts');
const rawConfig = readFileSync(path.join(PACKAGE_ROOT, 'tidemark.config.json'), 'utf8');

async function buildBefore(dir: string): Promise<void> {
  // The handler as it was: `configFromEnv` from the zod module instead of the shipped file.
  const shim = path.join(dir, 'config-from-env.ts');
  writeFileSync(shim, `export { configFromEnv as loadRuntimeConfig } from ${JSON.stringify(path.join(PACKAGE_ROOT, 'functions', 'commons', 'config.ts'))};\n`);
  const viaZod: Plugin = {
    name: 'config-via-zod',
    setup(build) {
      build.onResolve({ filter: /runtime-config\.js$/ }, () => ({ path: shim }));
    },
  };
  const { alias: _alias, legalComments: _legal, ...options } = bundleOptions(entry, path.join(dir, BUNDLE_FILE), true);
  await esbuild.build({ ...options, plugins: [viaZod] });
}

/** Milliseconds to import the bundle, and to import it and handle an empty batch (which loads the config), in a fresh node. */
function coldStartMs(dir: string, env: Record<string, string>, nodeArgs: string[]): { importMs: number; firstBatchMs: number } {
  const script = `const t = process.hrtime.bigint(); const m = await import(${JSON.stringify(path.join(dir, BUNDLE_FILE))}); const i = process.hrtime.bigint(); await m.handler({ Records: [] }); const e = process.hrtime.bigint(); process.stdout.write('\\n' + JSON.stringify([Number(i - t) / 1e6, Number(e - t) / 1e6]));`;
  const out = execFileSync(process.execPath, [...nodeArgs, '--no-warnings', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y', ...env },
    encoding: 'utf8',
  });
  // The handler's own log lines (Powertools, JSON) come first; the timings are the last line.
  const [importMs, firstBatchMs] = JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as number[];
  return { importMs: importMs ?? Number.NaN, firstBatchMs: firstBatchMs ?? Number.NaN };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  const before = path.join(root, 'before');
  const afterDir = path.join(root, 'after');
  mkdirSync(before);
  mkdirSync(afterDir);
  await buildBefore(before);
  bundleHandler(entry, afterDir);
  writeFileSync(path.join(afterDir, RUNTIME_CONFIG_FILE), JSON.stringify(parseConfig(JSON.parse(rawConfig))));

  const size = (dir: string) => {
    const bytes = readFileSync(path.join(dir, BUNDLE_FILE));
    let map = 0;
    try {
      map = readFileSync(path.join(dir, `${BUNDLE_FILE}.map`)).length;
    } catch {}
    return { raw: bytes.length, gzip: gzipSync(bytes).length, map };
  };
  const times = { before: [] as { importMs: number; firstBatchMs: number }[], after: [] as { importMs: number; firstBatchMs: number }[] };
  for (let i = 0; i < runs; i++) {
    times.before.push(coldStartMs(before, { TIDEMARK_CONFIG: rawConfig }, ['--enable-source-maps']));
    times.after.push(coldStartMs(afterDir, {}, []));
  }
  const b = size(before);
  const a = size(afterDir);
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
  const row = (label: string, x: string, y: string, ratio: string) => console.log(`${label.padEnd(36)}${x.padStart(12)}${y.padStart(12)}${ratio.padStart(14)}`);
  row('', 'before', 'after', 'after/before');
  row('bundle (minified)', kb(b.raw), kb(a.raw), (a.raw / b.raw).toFixed(2));
  row('bundle (gzip)', kb(b.gzip), kb(a.gzip), (a.gzip / b.gzip).toFixed(2));
  row('source map shipped', kb(b.map), kb(a.map), '');
  for (const [label, key] of [
    ['cold import, median', 'importMs'],
    ['import + first batch, median', 'firstBatchMs'],
  ] as const) {
    const mb = median(times.before.map((t) => t[key]));
    const ma = median(times.after.map((t) => t[key]));
    row(`${label} (n=${runs})`, `${mb.toFixed(0)} ms`, `${ma.toFixed(0)} ms`, (ma / mb).toFixed(2));
  }
}

try {
  await main();
} finally {
  rmSync(root, { recursive: true, force: true });
}
