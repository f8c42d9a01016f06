/**
 * The layers the tree shows, held by a check over the import graph: each product file may import
 * only its own layer and the layers below it, and the Lambda runtime never imports infrastructure
 * or tooling packages. A new upward import (core reaching into adapters, an adapter into a use
 * case, the runtime into `lib/`) fails here with the file, the import and the rule.
 *
 *   functions/core        pure logic: formats, position, plan            imports nothing else
 *   functions/config      the resolved config's types, its loader        core
 *   functions/telemetry   the telemetry contract and sinks                core, config
 *   functions/adapters    AWS I/O and the bucket layout                   core, config, telemetry
 *   functions/sql         the jobs' SQL: schemas, statements, dialects     core, config
 *   functions/<use case>  ingest, replay, erase, jobs                     the above (replay → ingest: on-failure batches re-ingest; jobs → replay: repair)
 *   functions/ handlers   entries, handler(s).ts, composition.ts          any of functions/
 *   lib/                  constructs and the build-time config            functions/ below use cases
 *   bin/, localstack/     the CLI, local tooling                          anything
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../lib/defaults.js';

const USE_CASES = ['ingest', 'replay', 'erase', 'jobs'] as const;
type Layer = 'core' | 'config' | 'telemetry' | 'adapters' | 'sql' | (typeof USE_CASES)[number] | 'handlers' | 'lib' | 'tooling';

/** What each layer may import, besides itself. */
const MAY_IMPORT: Readonly<Record<Layer, readonly Layer[]>> = {
  core: [],
  config: ['core'],
  telemetry: ['core', 'config'],
  adapters: ['core', 'config', 'telemetry'],
  // Pure string builders and schemas: what the use cases, handlers, the CDK and tooling render and run.
  sql: ['core', 'config'],
  ingest: ['core', 'config', 'telemetry', 'adapters'],
  // `replay --from-dlq` puts whole failed batches through the ingest path itself.
  replay: ['core', 'config', 'telemetry', 'adapters', 'sql', 'ingest'],
  erase: ['core', 'config', 'telemetry', 'adapters', 'sql'],
  // Reconcile's repair applies replay-select's rows as replay does (functions/replay/bucket-merge.ts); replay never imports jobs.
  jobs: ['core', 'config', 'telemetry', 'adapters', 'sql', 'replay'],
  handlers: ['core', 'config', 'telemetry', 'adapters', 'sql', 'ingest', 'replay', 'erase', 'jobs'],
  lib: ['core', 'config', 'telemetry', 'adapters', 'sql'],
  tooling: ['core', 'config', 'telemetry', 'adapters', 'sql', 'ingest', 'replay', 'erase', 'jobs', 'handlers', 'lib'],
};

/** Packages the Lambda runtime (functions/) must never import: infrastructure, build-time validation, CLI. */
const NOT_IN_RUNTIME = ['aws-cdk-lib', 'constructs', 'cdk-nag', 'zod', 'commander', 'cli-progress', 'esbuild'];

/** The layer of a repository-relative path. */
export function layerOf(file: string): Layer {
  const parts = file.split('/');
  if (parts[0] === 'lib') return 'lib';
  if (parts[0] !== 'functions') return 'tooling';
  if (parts.length === 2) return 'handlers';
  const folder = parts[1] as string;
  const name = parts[parts.length - 1] ?? '';
  if ((USE_CASES as readonly string[]).includes(folder)) return name === 'handler.ts' || name === 'handlers.ts' ? 'handlers' : (folder as Layer);
  if (folder === 'core' || folder === 'config' || folder === 'telemetry' || folder === 'adapters' || folder === 'sql') return folder;
  return 'handlers';
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

export interface ImportEdge {
  readonly file: string;
  readonly specifier: string;
  /** Repository-relative target for a relative specifier; null for a package. */
  readonly target: string | null;
  readonly typeOnly: boolean;
}

/** The imports of one source text (relative ones resolved against `file`). */
export function importsOf(file: string, text: string): ImportEdge[] {
  const out: ImportEdge[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const specifier = m[2] ?? m[3] ?? '';
    const target = specifier.startsWith('.') ? path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts') : null;
    out.push({ file, specifier, target, typeOnly: m[1] !== undefined });
  }
  return out;
}

/** Every rule an edge breaks, as one line naming the file, the import and the rule. */
export function violations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.file);
    if (e.target === null) {
      const pkg = e.specifier.startsWith('@') ? e.specifier.split('/').slice(0, 2).join('/') : (e.specifier.split('/')[0] ?? '');
      if (e.file.startsWith('functions/') && !e.typeOnly && NOT_IN_RUNTIME.includes(pkg)) out.push(`${e.file} imports ${e.specifier}: the Lambda runtime must not carry ${pkg}`);
      continue;
    }
    const to = layerOf(e.target);
    if (to !== from && !MAY_IMPORT[from].includes(to)) out.push(`${e.file} imports ${e.specifier}: ${from} may import only ${[from, ...MAY_IMPORT[from]].join(', ')}, not ${to}`);
  }
  return out;
}

function sources(dir: string): string[] {
  return readdirSync(path.join(PACKAGE_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|mts|mjs)$/.test(f) && !f.endsWith('.d.ts') && !f.endsWith('.d.mts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')));
}

describe('import layers', () => {
  const files = [...sources('functions'), ...sources('lib'), ...sources('bin')];
  const edges = files.flatMap((f) => importsOf(f, readFileSync(path.join(PACKAGE_ROOT, f), 'utf8')));

  it('reads the import graph of every product file', () => {
    assert.ok(files.length > 100, `${files.length} files`);
    assert.ok(edges.filter((e) => e.target !== null).length > 300, `${edges.length} imports`);
    assert.ok(edges.some((e) => e.file === 'functions/adapters/storage.ts' && e.target === 'functions/core/normalize.ts'));
  });

  it('no file imports a layer above its own, and the runtime imports no infrastructure or tooling package', () => {
    assert.deepEqual(violations(edges), []);
  });

  it('fails on an injected upward import, and on infrastructure in the runtime', () => {
    const injected = [
      ...importsOf('functions/core/plan.ts', "import { DynamoWriter } from '../adapters/dynamo-writer.js';\n"),
      ...importsOf('functions/adapters/raw-store.ts', "import { mapLimit } from '../ingest/concurrency.js';\n"),
      ...importsOf('functions/erase/erase.ts', "import { planReplay } from '../replay/job.js';\n"),
      ...importsOf('functions/ingest/apply.ts', "import { ingestDeps } from '../composition.js';\n"),
      ...importsOf('lib/history.ts', "import { x } from '../bin/cli/main.js';\n"),
      ...importsOf('functions/config/runtime.ts', "import { z } from 'zod';\n"),
      ...importsOf('functions/sql/dialect.ts', "import { RawStore } from '../adapters/raw-store.js';\n"),
      ...importsOf('functions/ingest.ts', "import type { Stack } from 'aws-cdk-lib';\nimport { App } from 'aws-cdk-lib';\n"),
    ];
    assert.deepEqual(violations(injected), [
      'functions/core/plan.ts imports ../adapters/dynamo-writer.js: core may import only core, not adapters',
      'functions/adapters/raw-store.ts imports ../ingest/concurrency.js: adapters may import only adapters, core, config, telemetry, not ingest',
      'functions/erase/erase.ts imports ../replay/job.js: erase may import only erase, core, config, telemetry, adapters, sql, not replay',
      'functions/ingest/apply.ts imports ../composition.js: ingest may import only ingest, core, config, telemetry, adapters, not handlers',
      'lib/history.ts imports ../bin/cli/main.js: lib may import only lib, core, config, telemetry, adapters, sql, not tooling',
      'functions/config/runtime.ts imports zod: the Lambda runtime must not carry zod',
      'functions/sql/dialect.ts imports ../adapters/raw-store.js: sql may import only sql, core, config, not adapters',
      'functions/ingest.ts imports aws-cdk-lib: the Lambda runtime must not carry aws-cdk-lib',
    ]);
  });
});
