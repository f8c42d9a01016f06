#!/usr/bin/env node
// The tidemark CLI. The CLI is TypeScript run through tsx, so it works from a fresh clone
// with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./cli/main.ts');
process.exitCode = await main(process.argv);
