/**
 * Bundles one Lambda handler with esbuild's asynchronous `build`, the only esbuild API that runs
 * plugins. `bundleHandler` (lib/handler-asset.ts) runs this script as a child process and waits for
 * it, because the CDK synthesizes synchronously (so does the CDK's own NodejsFunction, which spawns
 * esbuild).
 *
 *   node lib/bundler/bundle-handler.mjs < request.json > metafile.json
 *
 * stdin: `{ "options": <esbuild options>, "replacements": [...] }` as JSON (`bundleOptions` and
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts: plain data only); stdout: the metafile as JSON.
 * esbuild's errors go to stderr and the exit code is 1.
 */
import { build } from 'esbuild';
import { replaceModulesPlugin, sdkPackageVersionPlugin, sdkPartitionsPlugin } from './plugins.mjs';
import { sdkSchemaKeysPlugin } from './sdk-schema-keys.mjs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { options, replacements } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
try {
  const plugins = [sdkSchemaKeysPlugin(), sdkPackageVersionPlugin(), sdkPartitionsPlugin(), replaceModulesPlugin(replacements)];
  const result = await build({ ...options, metafile: true, plugins });
  process.stdout.write(JSON.stringify(result.metafile));
} catch (err) {
  // esbuild has already printed its diagnostics (logLevel "error"); say which entry failed.
  process.stderr.write(`bundling ${options.entryPoints}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
