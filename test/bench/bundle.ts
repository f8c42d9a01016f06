/**
 * The Lambda bundles as `cdk synth` builds them (lib/handler-asset.ts: the AWS SDK as published, the
 * one credential-provider alias): bytes minified and gzipped (the deployment zip deflates the
 * bundle), and cold start in a fresh node process: the import of the bundle alone, and with the
 * first (empty) batch, which loads the shipped config and builds the clients.
 *
 *   npm run bench:bundle [-- runs]     (default 15 cold starts per handler, interleaved)
 *
 * `npm run bench` prints the same table (fewer runs) beside the SDK CPU figures. Timings are noisy
 * on a shared machine: compare the medians of one run, not runs of different days.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parseConfig } from '../../lib/config/config.js';
import { RUNTIME_CONFIG_FILE } from '../../functions/config/runtime.js';
import { PACKAGE_ROOT } from '../../lib/defaults.js';
import { BUNDLE_FILE, bundleHandler } from '../../lib/handler-asset.js';
import { median } from './cpu.js';

/** The handlers `bin/build.ts` prebuilds and the constructs deploy. */
const HANDLERS = ['ingest', 'replay', 'erase', 'jobs'] as const;

export interface BundleFigures {
  readonly handler: string;
  readonly minifiedBytes: number;
  readonly gzipBytes: number;
  /** Median ms to import the bundle in a fresh node. */
  readonly importMs: number;
  /** Median ms to import it and handle an empty batch (ingest only; NaN for the others). */
  readonly firstBatchMs: number;
}

/** Milliseconds to import the bundle, and to import it and handle an empty batch, in a fresh node. */
function coldStartMs(file: string, withBatch: boolean): { importMs: number; firstBatchMs: number } {
  const call = withBatch ? 'await m.handler({ Records: [] });' : '';
  const script = `const t = process.hrtime.bigint(); const m = await import(${JSON.stringify(file)}); const i = process.hrtime.bigint(); ${call} const e = process.hrtime.bigint(); process.stdout.write('\\n' + JSON.stringify([Number(i - t) / 1e6, Number(e - t) / 1e6]));`;
  const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' },
    encoding: 'utf8',
  });
  // The handler's own log lines (Powertools, JSON) come first; the timings are the last line.
  const [importMs, firstBatchMs] = JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as number[];
  return { importMs: importMs ?? Number.NaN, firstBatchMs: withBatch ? (firstBatchMs ?? Number.NaN) : Number.NaN };
}

/** Builds every handler bundle and measures it; `runs` cold starts each, interleaved across handlers. */
export function measureBundles(runs: number): BundleFigures[] {
  const root = mkdtempSync(path.join(tmpdir(), 'tidemark-bundle-bench-'));
  try {
    const config = parseConfig(JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'tidemark.config.json'), 'utf8')));
    const files = HANDLERS.map((name) => {
      const dir = path.join(root, name);
      mkdirSync(dir);
      bundleHandler(path.join(PACKAGE_ROOT, 'functions', `${name}.ts`), dir);
      writeFileSync(path.join(dir, RUNTIME_CONFIG_FILE), JSON.stringify(config));
      return path.join(dir, BUNDLE_FILE);
    });
    const times = HANDLERS.map(() => [] as { importMs: number; firstBatchMs: number }[]);
    for (let r = 0; r < runs; r++) {
      for (const [i, file] of files.entries()) times[i]?.push(coldStartMs(file, HANDLERS[i] === 'ingest'));
    }
    return HANDLERS.map((handler, i) => {
      const bytes = readFileSync(files[i] as string);
      const t = times[i] ?? [];
      return {
        handler,
        minifiedBytes: bytes.length,
        gzipBytes: gzipSync(bytes, { level: 9 }).length,
        importMs: median(t.map((x) => x.importMs)),
        firstBatchMs: median(t.map((x) => x.firstBatchMs)),
      };
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The table `npm run bench` and `npm run bench:bundle` print. */
export function bundleTable(figures: readonly BundleFigures[], runs: number): string[] {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const ms = (n: number) => (Number.isNaN(n) ? '-' : `${n.toFixed(0)} ms`);
  const lines = [`${'handler'.padEnd(8)}${'minified'.padStart(13)}${'gzip'.padStart(12)}${`import (n=${runs})`.padStart(18)}${'+ empty batch'.padStart(15)}`];
  for (const f of figures) lines.push(`${f.handler.padEnd(8)}${kb(f.minifiedBytes).padStart(13)}${kb(f.gzipBytes).padStart(12)}${ms(f.importMs).padStart(18)}${ms(f.firstBatchMs).padStart(15)}`);
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 15);
  for (const line of bundleTable(measureBundles(runs), runs)) console.log(line);
}
