/**
 * The esbuild plugins of a Lambda bundle besides `sdkSchemaKeysPlugin` (sdk-schema-keys.mjs).
 * Plain JavaScript: the child process that bundles (bundle-handler.mjs) loads it with no
 * TypeScript loader.
 */
import { readFile } from 'node:fs/promises';

/**
 * Resolves one relative import of one SDK file to a shim instead: for modules that no package entry
 * point exposes, so an esbuild alias cannot reach them (`BUNDLE_REPLACEMENTS` in handler-asset.ts).
 * @param {readonly { importer: string; request: string; shim: string }[]} replacements
 *   `importer`: the importing file's path from `node_modules/`; `request`: the import specifier
 *   as written there; `shim`: the absolute path of the stand-in.
 */
export function replaceModulesPlugin(replacements) {
  const literal = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const filter = new RegExp(`^(?:${replacements.map((r) => literal(r.request)).join('|')})$`);
  return {
    name: 'tidemark-replace-modules',
    setup(build) {
      build.onResolve({ filter }, (args) => {
        const importer = args.importer.replace(/\\/g, '/');
        const hit = replacements.find((r) => r.request === args.path && importer.endsWith(`/node_modules/${r.importer}`));
        return hit ? { path: hit.shim } : undefined;
      });
    },
  };
}

/** An AWS SDK client's own package.json, which its runtime config imports whole for one field. */
export const SDK_CLIENT_PACKAGE_JSON = /[\\/]node_modules[\\/]@aws-sdk[\\/]client-[a-z0-9-]+[\\/]package\.json$/;

/**
 * Ships only `name` and `version` of an SDK client's package.json: its runtime config imports the
 * file whole (`import packageInfo from "../package.json"`) to put `packageInfo.version` in the
 * user agent, and esbuild keeps every field of a default-imported JSON (2.5 KB each: scripts,
 * dependencies). test/unit/cdk/bundle.test.ts checks no bundled file reads another field.
 */
export function sdkPackageVersionPlugin() {
  return {
    name: 'tidemark-sdk-package-version',
    setup(build) {
      build.onLoad({ filter: SDK_CLIENT_PACKAGE_JSON }, async (args) => {
        const { name, version } = JSON.parse(await readFile(args.path, 'utf8'));
        return { contents: JSON.stringify({ name, version }), loader: 'json' };
      });
    },
  };
}

/** The AWS partitions table of the SDK's endpoint functions (`aws.partition`). */
export const SDK_PARTITIONS_FILE = /[\\/]node_modules[\\/]@aws-sdk[\\/]core[\\/]dist-es[\\/]submodules[\\/]client[\\/]util-endpoints[\\/]lib[\\/]aws[\\/]partitions\.js$/;

/**
 * The partitions module without the regions' display names (`"af-south-1": { "description":
 * "Africa (Cape Town)" }` becomes `"af-south-1": {}`), about 2 KB. `aws.partition` looks a region up
 * by its key and returns the partition's outputs merged with the region's entry, and the endpoint
 * rules read only named outputs of that result (`name`, `dnsSuffix`, `supportsFIPS`, ...), never a
 * `description`: test/unit/cdk/bundle-shims.test.ts checks the rules of every installed client.
 * Returns the source unchanged unless it is exactly `export const partitionsInfo = <JSON>;`.
 * @param {string} source
 * @returns {{ code: string; trimmed: number }}
 */
export function trimPartitionDescriptions(source) {
  const m = /^export const partitionsInfo = (\{[\s\S]*\});\s*$/.exec(source);
  if (!m) return { code: source, trimmed: 0 };
  let info;
  try {
    info = JSON.parse(m[1] ?? '');
  } catch {
    return { code: source, trimmed: 0 };
  }
  let trimmed = 0;
  for (const partition of info.partitions ?? []) {
    for (const region of Object.values(partition.regions ?? {})) {
      if (region && typeof region === 'object' && 'description' in region) {
        delete region.description;
        trimmed++;
      }
    }
  }
  return { code: `export const partitionsInfo = ${JSON.stringify(info)};\n`, trimmed };
}

/** Applies `trimPartitionDescriptions` to the SDK's partitions module. */
export function sdkPartitionsPlugin() {
  return {
    name: 'tidemark-sdk-partitions',
    setup(build) {
      build.onLoad({ filter: SDK_PARTITIONS_FILE }, async (args) => ({ contents: trimPartitionDescriptions(await readFile(args.path, 'utf8')).code, loader: 'js' }));
    },
  };
}
