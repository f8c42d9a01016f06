import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { templateOf, testConfig } from './fixtures/stack.js';

const SNAPSHOT = fileURLToPath(new URL('./__snapshots__/template.json', import.meta.url));
const HEX64 = /[0-9a-f]{64}/g;

/** The template with asset hashes (S3 keys, asset parameters, any 64-hex string) masked. */
function masked(template: unknown): string {
  const text = JSON.stringify(
    template,
    (key, value: unknown) => {
      if (key === 'S3Key' && typeof value === 'string') return '<asset>.zip';
      if (typeof value === 'string') return value.replace(HEX64, '<hash>');
      return value;
    },
    2,
  );
  return `${text.replace(/AssetParameters[A-Za-z0-9]+/g, 'AssetParameters<hash>')}\n`;
}

describe('TidemarkStack template', () => {
  it('matches the reviewed snapshot (UPDATE_SNAPSHOTS=1 rewrites it)', () => {
    const actual = masked(templateOf(testConfig()).toJSON());
    if (process.env.UPDATE_SNAPSHOTS === '1' || !existsSync(SNAPSHOT)) {
      mkdirSync(fileURLToPath(new URL('./__snapshots__', import.meta.url)), { recursive: true });
      writeFileSync(SNAPSHOT, actual);
    }
    assert.equal(actual, readFileSync(SNAPSHOT, 'utf8'), 'the template changed: review the diff, then rerun with UPDATE_SNAPSHOTS=1');
  });
});
