/**
 * Every import declared: product code (functions/, lib/, bin/ files that ship or run) imports only
 * packages that package.json lists in `dependencies` or `peerDependencies`, so the installed package
 * works without this repository's node_modules. The rule, explicitly:
 *
 *   - from the package's entry points (the CLI, the library, the four handlers), every file reached
 *     by static imports may import only declared packages (and `node:` built-ins);
 *   - a dev-only package may be imported by clone-only tooling (CLONE_ONLY: never shipped, never run
 *     from the installed package) or by a module the CLI loads lazily inside the commands that need
 *     it (LAZY_DEV_ONLY, each with its packages), and such a module must be reached only through a
 *     dynamic `import()`, after bin/cli/dev-packages.ts has checked the package is there;
 *   - every product file is reached from an entry point, is clone-only tooling, or is at least reached
 *     from the tests (the jobs' SQL layer and the local DuckDB engine, until the jobs on SQL wire them
 *     in), so nothing is dead; the first rule holds for every file, reached or not.
 *
 * Type-only imports (`import type …`) are erased: they do not count for packages, only for reaching a file.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../lib/defaults.js';

interface Edge {
  readonly file: string;
  readonly specifier: string;
  /** Repository-relative target of a relative import; null for a package. */
  readonly target: string | null;
  /** `type`: an `import type`, erased at run time; it counts only for reaching a file. */
  readonly kind: 'static' | 'dynamic' | 'type';
}

/**
 * The package's entry points: the CLI (its launcher loads bin/cli/main.ts), the library, the handlers,
 * and the esbuild alias bundled into every handler in place of the SDK's default credential chain.
 */
const ENTRIES = [
  'bin/tidemark.mjs',
  'bin/cli/main.ts',
  'lib/index.ts',
  'lib/read.ts',
  'functions/ingest.ts',
  'functions/replay.ts',
  'functions/erase.ts',
  'functions/jobs.ts',
  'lib/bundle-aliases/credentials-from-env.ts',
];
/** Clone-only tooling: the CDK app of this repository, the build, the network-namespace launcher. */
const CLONE_ONLY = ['bin/app.ts', 'bin/build.ts', 'bin/with-loopback.mjs'];
/** Modules the CLI imports lazily, and the dev-only packages each may import. */
const LAZY_DEV_ONLY: Readonly<Record<string, readonly string[]>> = {
  'bin/local/stepfunctions.ts': ['aws-local-stepfunctions'],
  'bin/local/duckdb-engine.ts': ['@duckdb/node-api'],
  'bin/local/duckdb-values.ts': ['@duckdb/node-api'],
};

const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
const DECLARED = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);

const STATIC = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

const packageOf = (specifier: string): string => (specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] ?? ''));
const resolve = (file: string, specifier: string): string => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts');

/** The value imports of one source text: static ones (type-only excluded) and dynamic `import()`s. */
export function edgesOf(file: string, text: string): Edge[] {
  const out: Edge[] = [];
  for (const m of text.matchAll(STATIC)) {
    const specifier = m[3] ?? '';
    out.push({ file, specifier, target: specifier.startsWith('.') ? resolve(file, specifier) : null, kind: m[2] !== undefined ? 'type' : 'static' });
  }
  for (const m of text.matchAll(DYNAMIC)) {
    const specifier = m[1] ?? '';
    out.push({ file, specifier, target: specifier.startsWith('.') ? resolve(file, specifier) : null, kind: 'dynamic' });
  }
  return out;
}

/** Files reached from `entries` over edges of the given kinds. */
function reached(edges: readonly Edge[], entries: readonly string[], kinds: readonly Edge['kind'][]): Set<string> {
  const seen = new Set(entries);
  const queue = [...entries];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const e of edges) {
      if (e.file !== file || e.target === null || !kinds.includes(e.kind) || seen.has(e.target)) continue;
      seen.add(e.target);
      queue.push(e.target);
    }
  }
  return seen;
}

/** Every broken rule, one line each naming the file, the import and the rule. */
export function undeclared(edges: readonly Edge[], files: readonly string[], tested: ReadonlySet<string> = new Set()): string[] {
  const problems: string[] = [];
  const eager = reached(edges, ENTRIES, ['static']);
  const all = reached(edges, ENTRIES, ['static', 'dynamic', 'type']);
  for (const e of edges) {
    if (e.target !== null || e.specifier.startsWith('node:') || e.kind !== 'static') continue;
    const name = packageOf(e.specifier);
    if (DECLARED.has(name) || CLONE_ONLY.includes(e.file)) continue;
    if (LAZY_DEV_ONLY[e.file]?.includes(name)) continue;
    problems.push(`${e.file} imports ${name}, which package.json does not declare in dependencies or peerDependencies`);
  }
  for (const file of Object.keys(LAZY_DEV_ONLY)) {
    if (eager.has(file)) problems.push(`${file} imports dev-only packages and is reached by static imports from an entry point: load it with import() inside the commands that need it`);
  }
  for (const file of files) {
    if (!all.has(file) && !CLONE_ONLY.includes(file) && !tested.has(file)) problems.push(`${file} is neither reached from an entry point nor clone-only tooling`);
  }
  return problems;
}

function sources(dir: string): string[] {
  return readdirSync(path.join(PACKAGE_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|mts|mjs)$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')));
}

describe('every import declared', () => {
  const files = [...sources('functions'), ...sources('lib'), ...sources('bin')];
  const edges = files.flatMap((f) => edgesOf(f, readFileSync(path.join(PACKAGE_ROOT, f), 'utf8')));
  const tests = sources('test');
  const tested = reached([...edges, ...tests.flatMap((f) => edgesOf(f, readFileSync(path.join(PACKAGE_ROOT, f), 'utf8')))], tests, ['static', 'dynamic', 'type']);

  it('reads the imports of every product file, the lazy ones too', () => {
    assert.ok(files.length > 100, `${files.length} files`);
    assert.ok(edges.some((e) => e.file === 'bin/cli/dev-packages.ts' && e.target === 'bin/local/stepfunctions.ts' && e.kind === 'dynamic'));
    assert.ok(edges.some((e) => e.file === 'bin/local/stepfunctions.ts' && e.specifier === 'aws-local-stepfunctions' && e.kind === 'static'));
  });

  it('product code imports only declared packages; dev-only ones only from clone-only tooling or lazily loaded local commands', () => {
    assert.deepEqual(undeclared(edges, files, tested), []);
  });

  it('fails on an undeclared import, and on a dev-only module imported eagerly', () => {
    const injected = [
      ...edges,
      ...edgesOf('functions/adapters/raw-store.ts', "import { x } from '@smithy/core';\n"),
      ...edgesOf('bin/cli/main.ts', "import { runLocalStateMachine } from '../local/stepfunctions.js';\n"),
      ...edgesOf('bin/cli/commands/read.ts', "import type { Lazy } from 'aws-local-stepfunctions';\n"),
    ];
    assert.deepEqual(undeclared(injected, files, tested), [
      'functions/adapters/raw-store.ts imports @smithy/core, which package.json does not declare in dependencies or peerDependencies',
      'bin/local/stepfunctions.ts imports dev-only packages and is reached by static imports from an entry point: load it with import() inside the commands that need it',
    ]);
  });
});
