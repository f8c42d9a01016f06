/**
 * The code asset of a tidemark function: the handler bundle plus the validated, resolved config as
 * `tidemark.config.json` beside it. The runtime reads that file at cold start
 * (`functions/config/runtime.ts`), so the config never travels in the environment (4 KB cap)
 * and the bundle needs no zod.
 *
 * The bundle comes from one of two places:
 * - a clone of the repository: the handler's TypeScript is bundled with esbuild at synth time;
 * - the installed package: `npm pack` prebuilt it into `dist/handlers/<name>/index.mjs`, so the
 *   construct works from node_modules with no esbuild and no TypeScript sources.
 *
 *   const { code } = handlerCode({ name: 'ingest', config });   // lambda.Code, handler "index.handler"
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { TidemarkConfig } from './config/config.js';
import { errorMessage } from '../functions/core/errors.js';
import { RUNTIME_CONFIG_FILE } from '../functions/config/runtime.js';
import { ESM_REQUIRE_BANNER, PACKAGE_ROOT, PREBUILT_HANDLERS_DIR } from './defaults.js';

/** File name of every handler bundle; the Lambda handler is `index.handler`. */
export const BUNDLE_FILE = 'index.mjs';

export interface HandlerCodeProps {
  /** Handler name: `functions/<name>.ts` in the repository, `dist/handlers/<name>/` in the package. */
  readonly name: string;
  /** The resolved config shipped beside the bundle. */
  readonly config: TidemarkConfig;
  /**
   * Handler source file to bundle instead (tests, custom handlers); it must export `handler`.
   * @default `functions/<name>.ts`, or the prebuilt bundle when the sources are not there
   */
  readonly entry?: string;
  /**
   * Emit a source map beside the bundle (then set `NODE_OPTIONS=--enable-source-maps`).
   * @default false
   */
  readonly sourceMap?: boolean;
}

export interface HandlerCode {
  readonly code: lambda.Code;
  /** The staged folder (bundle + config), for inspection. */
  readonly directory: string;
  /** Bytes of `index.mjs`. */
  readonly bundleBytes: number;
}

/**
 * esbuild aliases of every Lambda bundle. One only, a documented bloat of the SDK's default chain:
 * `@aws-sdk/credential-provider-node` becomes the environment provider (lib/bundle-aliases/), which
 * Lambda always satisfies with the role's credentials. Every other SDK module is bundled as
 * published: no SDK file is replaced, trimmed or bypassed, so an SDK upgrade is a bundle-time
 * question, never a runtime error.
 */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  '@aws-sdk/credential-provider-node': path.join(PACKAGE_ROOT, 'lib', 'bundle-aliases', 'credentials-from-env.ts'),
};

/**
 * esbuild options of a handler bundle (documented esbuild options only): one minified ESM file for
 * node22 with the pinned AWS SDK inside (no reliance on the runtime's copy), `module` before `main`
 * so the SDK's ES modules tree-shake, no source map unless asked, no legal comments.
 */
export function bundleOptions(entry: string, outfile: string, sourceMap: boolean) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node' as const,
    format: 'esm' as const,
    target: 'node22',
    minify: true,
    sourcemap: sourceMap,
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_BANNER },
    alias: { ...BUNDLE_ALIASES },
    legalComments: 'none' as const,
    metafile: true,
    logLevel: 'error' as const,
  };
}

/** The parts of esbuild's metafile read here. */
export interface BundleMetafile {
  readonly inputs: Record<string, { readonly bytes: number }>;
  readonly outputs: Record<string, { readonly bytes: number; readonly inputs: Record<string, { readonly bytesInOutput: number }> }>;
}

type Esbuild = { buildSync(options: ReturnType<typeof bundleOptions>): { metafile?: BundleMetafile } };

/**
 * Bundles `entry` into `outDir/index.mjs` with esbuild's synchronous API, as the CDK synthesizes
 * (esbuild is a devDependency: present in a clone; the installed package ships prebuilt bundles).
 */
export function bundleHandler(entry: string, outDir: string, sourceMap = false): { metafile: BundleMetafile } {
  let esbuild: Esbuild;
  try {
    esbuild = createRequire(path.join(PACKAGE_ROOT, 'package.json'))('esbuild') as Esbuild;
  } catch {
    throw new Error(`bundling ${entry} needs esbuild (npm install --save-dev esbuild), or use the prebuilt handler of the published package`);
  }
  try {
    const result = esbuild.buildSync(bundleOptions(entry, path.join(outDir, BUNDLE_FILE), sourceMap));
    if (!result.metafile) throw new Error('esbuild returned no metafile');
    return { metafile: result.metafile };
  } catch (err) {
    throw new Error(`bundling ${entry} failed: ${errorMessage(err)}`);
  }
}

const stagingRoot = ((): (() => string) => {
  let root: string | undefined;
  return () => {
    if (root === undefined) {
      const created = mkdtempSync(path.join(tmpdir(), 'tidemark-assets-'));
      root = created;
      // The CDK copies each asset into its output folder; the staging copies can go at exit.
      process.once('exit', () => rmSync(created, { recursive: true, force: true }));
    }
    return root;
  };
})();

/** Stages the handler bundle and the resolved config into one folder and returns it as Lambda code. */
export function handlerCode(props: HandlerCodeProps): HandlerCode {
  const source = props.entry ?? path.join(PACKAGE_ROOT, 'functions', `${props.name}.ts`);
  const prebuilt = path.join(PREBUILT_HANDLERS_DIR, props.name);
  const configText = `${JSON.stringify(props.config)}\n`;
  const work = mkdtempSync(path.join(stagingRoot(), `${props.name}-`));
  if (existsSync(source)) {
    bundleHandler(source, work, props.sourceMap ?? false);
  } else if (props.entry === undefined && existsSync(path.join(prebuilt, BUNDLE_FILE))) {
    copyFileSync(path.join(prebuilt, BUNDLE_FILE), path.join(work, BUNDLE_FILE));
    const map = path.join(prebuilt, `${BUNDLE_FILE}.map`);
    if (props.sourceMap && existsSync(map)) copyFileSync(map, path.join(work, `${BUNDLE_FILE}.map`));
  } else {
    throw new Error(`no handler "${props.name}": neither ${source} nor a prebuilt ${path.join(prebuilt, BUNDLE_FILE)} exists`);
  }
  writeFileSync(path.join(work, RUNTIME_CONFIG_FILE), configText);
  const bundle = readFileSync(path.join(work, BUNDLE_FILE));
  // Content-addressed folder name: the same bundle and config give the same asset.
  const digest = createHash('sha256').update(bundle).update(configText).digest('hex').slice(0, 16);
  const directory = path.join(stagingRoot(), `${props.name}-${digest}`);
  if (!existsSync(directory)) {
    mkdirSync(directory);
    for (const f of [BUNDLE_FILE, `${BUNDLE_FILE}.map`, RUNTIME_CONFIG_FILE]) {
      if (existsSync(path.join(work, f))) copyFileSync(path.join(work, f), path.join(directory, f));
    }
  }
  rmSync(work, { recursive: true, force: true });
  return { code: lambda.Code.fromAsset(directory), directory, bundleBytes: bundle.length };
}
