/**
 * CLI start-up: wall time of `tidemark --help`, the installed package's way (bin/tidemark.mjs over
 * the prebuilt dist/cli, no tsx) and a clone's (the same launcher over the TypeScript sources,
 * through tsx), against bare `node -e ''`. Targets: installed ≤ 0.3 s, clone ≤ 1 s, on an idle
 * machine, so the load average is printed with the figures.
 *
 * The installed layout is the package's own files (bin/tidemark.mjs, dist/, package.json) copied to
 * a scratch folder whose node_modules links to this repository's: the code path of an install,
 * without the install. dist/ is built first when it is missing or older than bin/cli/.
 *
 *   node --import tsx test/bench/startup.ts [--runs 15]      (also part of `npm run bench`)
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Newest modification time of the files below `dir`. */
function newest(dir: string): number {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).reduce((t, f) => Math.max(t, statSync(path.join(dir, f)).mtimeMs), 0);
}

/** Builds dist/ unless it is newer than the CLI sources. */
function ensureBuilt(log: (line: string) => void): void {
  const main = path.join(ROOT, 'dist', 'cli', 'main.mjs');
  if (existsSync(main) && statSync(main).mtimeMs >= Math.max(newest(path.join(ROOT, 'bin', 'cli')), newest(path.join(ROOT, 'bin', 'local')))) return;
  log('startup: building dist/ (bin/build.ts) …');
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bin', 'build.ts')], { cwd: ROOT, stdio: 'ignore' });
  if (r.status !== 0) throw new Error('bin/build.ts failed');
}

/** The package's files in a scratch folder, with the repository's node_modules linked in. */
function installedLayout(): { dir: string; launcher: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'tidemark-startup-'));
  const pkg = path.join(dir, 'node_modules', 'tidemark');
  mkdirSync(path.join(pkg, 'bin'), { recursive: true });
  cpSync(path.join(ROOT, 'bin', 'tidemark.mjs'), path.join(pkg, 'bin', 'tidemark.mjs'));
  cpSync(path.join(ROOT, 'dist'), path.join(pkg, 'dist'), { recursive: true });
  cpSync(path.join(ROOT, 'package.json'), path.join(pkg, 'package.json'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(pkg, 'node_modules'));
  return { dir, launcher: path.join(pkg, 'bin', 'tidemark.mjs') };
}

/** Wall milliseconds of `node …args`, `runs` times (after one warm-up run). */
function time(args: readonly string[], runs: number): number[] {
  const env = { ...process.env, NODE_OPTIONS: '' };
  spawnSync(process.execPath, args, { stdio: 'ignore', env });
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, args, { stdio: 'ignore', env });
    out.push(performance.now() - t0);
    if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}`);
  }
  return out.sort((a, b) => a - b);
}

const at = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

/** The start-up section of the bench: median, p90 and best of each way, and whether it meets its target. */
export function startupSection(log: (line: string) => void, runs = 15): void {
  ensureBuilt(log);
  const layout = installedLayout();
  try {
    const [one, five] = loadavg();
    log(`== CLI start-up: tidemark --help, ${runs} runs each (load average ${one?.toFixed(2)} / ${five?.toFixed(2)} on ${process.platform}, node ${process.version}) ==`);
    const rows: [string, number[], number | null][] = [
      ["node -e ''", time(['-e', ''], runs), null],
      ['installed package', time([layout.launcher, '--help'], runs), 300],
      ['clone (tsx)', time([path.join(ROOT, 'bin', 'tidemark.mjs'), '--help'], runs), 1000],
    ];
    for (const [name, t, target] of rows) {
      const verdict = target === null ? '' : at(t, 0.5) <= target ? `  meets ≤ ${s(target)}` : `  OVER ${s(target)}`;
      log(`  ${name.padEnd(18)} median ${s(at(t, 0.5))}  p90 ${s(at(t, 0.9))}  best ${s(t[0] ?? Number.NaN)}${verdict}`);
    }
  } finally {
    rmSync(layout.dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const i = process.argv.indexOf('--runs');
  startupSection((line) => console.log(line), i > 0 ? Number(process.argv[i + 1]) : 15);
}
