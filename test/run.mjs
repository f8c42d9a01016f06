#!/usr/bin/env node
// Runs node's test runner (with tsx) over every *.test.ts below the given folders.
// Node 20's `--test` does not expand globs, so the files are found here.
// Usage: node test/run.mjs [--concurrency N] <dir> [<dir> …]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
let concurrency = '1';
const dirs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--concurrency') concurrency = args[++i];
  else dirs.push(args[i]);
}

function find(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return find(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

const files = dirs.flatMap(find);
if (files.length === 0) {
  console.error(`no *.test.ts files under ${dirs.join(', ')}`);
  process.exit(1);
}
// The engines field states the supported Node versions; the SDK's own variable keeps its warning out of the log.
const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ?? 'true' };
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
