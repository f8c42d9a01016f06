/**
 * The code asset of a tidemark function: the handler bundle plus the validated, resolved config as
 * `tidemark.config.json` beside it. The runtime reads that file at cold start
 * (`functions/commons/runtime-config.ts`), so the config never travels in the environment (4 KB cap)
 * and the bundle needs no zod.
 *
 * The bundle comes from one of two places:
 * - a clone of the repository: the handler's TypeScript is bundled with esbuild at synth time;
 * - the installed package: `npm pack` prebuilt it into `dist/handlers/<name>/index.mjs`, so the
 *   construct works from node_modules with no esbuild and no TypeScript sources.
 *
 *   const { code } = handlerCode({ name: 'ingest', config });   // lambda.Code, handler "index.handler"
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { TidemarkConfig } from '../functions/commons/config.js';
import { errorMessage } from '../functions/core/errors.js';
import { RUNTIME_CONFIG_FILE } from '../functions/commons/runtime-config.js';
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

const shim = (file: string): string => path.join(PACKAGE_ROOT, 'lib', 'bundle-shims', file);

/**
 * Modules replaced in Lambda bundles by lean stand-ins (`lib/bundle-shims/`), each one the Lambda
 * never runs, or runs only to its first branch. Each shim throws a clear error if reached, except
 * the endpoint cache, a smaller implementation of the same class; the CLI and tests keep the real
 * modules, and test/unit/cdk/bundle.test.ts runs the bundle against S3 and DynamoDB stand-ins.
 */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  // The environment provider, which Lambda always satisfies, instead of the whole credential chain.
  '@aws-sdk/credential-provider-node': shim('credentials-from-env.ts'),
  // The Lambda never calls Kinesis: its records come from the event source mapping.
  '@aws-sdk/client-kinesis': shim('no-kinesis.ts'),
  // The event-stream codec of S3 SelectObjectContent, which the Lambda never sends.
  '@smithy/core/event-streams': shim('no-event-streams.ts'),
  // DynamoDB's endpoint-discovery cache, consulted on every request: the same class over a Map, not mnemonist.
  '@aws-sdk/endpoint-cache': shim('endpoint-cache.ts'),
};

/** A relative import inside a dependency resolved to a shim: for files no package entry point exposes. */
export interface BundleReplacement {
  /** The importing file, from `node_modules/`. */
  readonly importer: string;
  /** The import specifier as written in that file. */
  readonly request: string;
  /** The stand-in's absolute path. */
  readonly shim: string;
}

const STREAM_HELPERS = '@smithy/core/dist-es/submodules/serde/util-stream';

/** Files inside SDK packages replaced in Lambda bundles, each for the reason in its shim's header. */
export const BUNDLE_REPLACEMENTS: readonly BundleReplacement[] = [
  // Pure-JavaScript hashes: the node hashes' fallback for a `node:crypto` without the algorithm.
  { importer: '@smithy/core/dist-es/submodules/checksum/sha256/Sha256Node.js', request: './Sha256Js', shim: shim('no-js-hashes.ts') },
  { importer: '@aws-sdk/checksums/dist-es/submodules/sha/sha1/Sha1Node.js', request: './Sha1Js', shim: shim('no-js-hashes.ts') },
  { importer: '@smithy/core/dist-es/submodules/checksum/md5/Md5Node.js', request: './Md5Js', shim: shim('no-js-hashes.ts') },
  { importer: '@smithy/core/dist-es/submodules/checksum/crc32/Crc32Node.js', request: './Crc32Js', shim: shim('no-js-hashes.ts') },
  // CRC64-NVME and CRC32C, in pure JavaScript: no request or validation of the runtime selects them.
  { importer: '@aws-sdk/checksums/dist-es/submodules/crc/crc64-nvme/Crc64Nvme.js', request: './Crc64NvmeJs', shim: shim('no-unused-crcs.ts') },
  { importer: '@aws-sdk/checksums/dist-es/submodules/crc/crc32c/Crc32cNode.js', request: './Crc32cJs', shim: shim('no-unused-crcs.ts') },
  // The user-agent and logger middleware, which `lean` (functions/commons/clients.ts) removes from every client.
  { importer: '@aws-sdk/core/dist-es/submodules/client/index.js', request: './middleware-user-agent/user-agent-middleware', shim: shim('lean-removed-middleware.ts') },
  { importer: '@aws-sdk/core/dist-es/submodules/client/index.js', request: './middleware-logger/loggerMiddleware', shim: shim('lean-removed-middleware.ts') },
  // The S3 Express session provider: tidemark's bucket is a general purpose bucket, never a directory bucket.
  {
    importer: '@aws-sdk/middleware-sdk-s3/dist-es/submodules/s3/middleware-s3-configuration/s3Configuration.js',
    request: '../middleware-s3-express/classes/S3ExpressIdentityProviderImpl',
    shim: shim('no-s3-express.ts'),
  },
  // The header encoder of event-stream message signing: the Lambda signs no event stream.
  { importer: '@smithy/signature-v4/dist-es/SignatureV4.js', request: './HeaderFormatter', shim: shim('no-event-signing.ts') },
  // Web-stream twins of the stream helpers: the Lambda's bodies are node streams, strings or Buffers.
  { importer: `${STREAM_HELPERS}/sdk-stream-mixin.js`, request: './sdk-stream-mixin.browser', shim: shim('no-web-streams.ts') },
  { importer: `${STREAM_HELPERS}/checksum/createChecksumStream.js`, request: './createChecksumStream.browser', shim: shim('no-web-streams.ts') },
  // The streaming-body checksum helpers: the Lambda computes no checksum over a streaming request body.
  { importer: '@smithy/core/dist-es/submodules/serde/index.js', request: './util-stream/getAwsChunkedEncodingStream', shim: shim('no-streaming-checksums.ts') },
  { importer: '@smithy/core/dist-es/submodules/serde/index.js', request: './util-stream/createBufferedReadable', shim: shim('no-streaming-checksums.ts') },
  // The instance-metadata region lookup: Lambda always sets AWS_REGION and AWS_EXECUTION_ENV.
  {
    importer: '@smithy/core/dist-es/submodules/config/config-resolver/regionConfig/config.js',
    request: './getInstanceMetadataRegion',
    shim: shim('no-imds-region.ts'),
  },
  {
    importer: '@smithy/core/dist-es/submodules/config/defaults-mode/resolveDefaultsModeConfig.js',
    request: '../config-resolver/regionConfig/getInstanceMetadataRegion',
    shim: shim('no-imds-region.ts'),
  },
  // The multi-region (SigV4a) signer around S3's SigV4 one: tidemark never signs for a multi-region access point.
  { importer: '@aws-sdk/signature-v4-multi-region/dist-es/index.js', request: './SignatureV4MultiRegion', shim: shim('no-sigv4a.ts') },
  // The XML request serializer: no S3 operation tidemark sends has an XML request body.
  { importer: '@aws-sdk/core/dist-es/submodules/protocols/xml/XmlCodec.js', request: './XmlShapeSerializer', shim: shim('no-xml-serializer.ts') },
];

/**
 * esbuild options of a handler bundle: one minified ESM file for node22 with the pinned AWS SDK
 * inside (no reliance on the runtime's copy), the aliases above, no legal comments. `bundleHandler`
 * adds the plugins of lib/bundler/ (the replacements above, the SDK schema and package.json trims).
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

/** The script that bundles in a child process (esbuild runs plugins only in its asynchronous API). */
export const BUNDLER_SCRIPT = path.join(PACKAGE_ROOT, 'lib', 'bundler', 'bundle-handler.mjs');

/**
 * Bundles `entry` into `outDir/index.mjs` with esbuild (a devDependency: present in a clone).
 * Synchronous, as the CDK synthesizes: the build runs in a child node process
 * (lib/bundler/bundle-handler.mjs) that adds the plugins: `BUNDLE_REPLACEMENTS`, the SDK schemas
 * the handler never uses dropped (lib/bundler/sdk-schema-keys.mjs), and the SDK clients'
 * package.json cut to name and version (lib/bundler/plugins.mjs).
 */
export function bundleHandler(entry: string, outDir: string, sourceMap = false): { metafile: BundleMetafile } {
  try {
    createRequire(path.join(PACKAGE_ROOT, 'package.json')).resolve('esbuild');
  } catch {
    throw new Error(`bundling ${entry} needs esbuild (npm install --save-dev esbuild), or use the prebuilt handler of the published package`);
  }
  const options = bundleOptions(entry, path.join(outDir, BUNDLE_FILE), sourceMap);
  const child = spawnSync(process.execPath, [BUNDLER_SCRIPT], {
    input: JSON.stringify({ options, replacements: BUNDLE_REPLACEMENTS }),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    // Only the bundler's own flags: not a loader or inspector of the parent.
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  if (child.error !== undefined) throw new Error(`bundling ${entry}: ${errorMessage(child.error)}`);
  if (child.status !== 0) throw new Error(`bundling ${entry} failed (exit ${child.status ?? child.signal}):\n${child.stderr.trim()}`);
  return { metafile: JSON.parse(child.stdout) as BundleMetafile };
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
