#!/usr/bin/env node
// The tidemark CLI. In a clone it runs the TypeScript sources through tsx (no build step); the
// installed package runs the prebuilt dist/cli/main.mjs (no tsx, no TypeScript). Either way the
// commands load lazily, so `tidemark --help` loads commander and the command table only.
//
// The AWS SDK's NodeVersionSupportWarning is switched off with the SDK's own documented variable
// (unless the caller set it): package.json `engines` already states the Node versions tidemark
// supports, and the warning would otherwise precede the output of every command.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const source = fileURLToPath(new URL('./cli/main.ts', import.meta.url));
const built = fileURLToPath(new URL('../dist/cli/main.mjs', import.meta.url));
let main;
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('./cli/main.ts'));
} else {
  ({ main } = await import(built));
}
process.exitCode = await main(process.argv);
