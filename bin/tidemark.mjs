#!/usr/bin/env node
// The tidemark CLI. In a clone it runs the TypeScript sources through tsx (no build step); the
// installed package runs the prebuilt dist/cli/main.mjs (no tsx, no TypeScript).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
