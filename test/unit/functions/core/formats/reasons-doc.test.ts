/**
 * The quarantine reasons are a closed vocabulary listed once (functions/core/reasons.ts); the docs
 * table must list exactly those reasons, each with the same one-line description.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { isQuarantineReason, QUARANTINE_REASON_NAMES, QUARANTINE_REASONS } from '../../../../../functions/core/reasons.js';

function documentedReasons(): Map<string, string> {
  const text = readFileSync(new URL('../../../../../docs/formats.md', import.meta.url), 'utf8');
  const section = text.split(/^## Quarantine reasons$/m)[1];
  assert.ok(section !== undefined, 'docs/formats.md has a "## Quarantine reasons" section');
  const body = section.split(/^## /m)[0] ?? '';
  const rows = new Map<string, string>();
  for (const m of body.matchAll(/^\| `([a-z0-9-]+)` \| (.*) \|$/gm)) {
    const [, reason, description] = m;
    if (reason !== undefined && description !== undefined) rows.set(reason, description);
  }
  return rows;
}

describe('quarantine reasons in docs/formats.md', () => {
  it('lists every reason of reasons.ts, and no other, with the same description', () => {
    const documented = documentedReasons();
    assert.deepEqual([...documented.keys()].sort(), [...QUARANTINE_REASON_NAMES].sort());
    for (const reason of QUARANTINE_REASON_NAMES) assert.equal(documented.get(reason), QUARANTINE_REASONS[reason], reason);
  });
});

describe('the reason names and their descriptions (two constants, so the Lambda bundle ships names only)', () => {
  it('describe exactly the names, in the same order', () => {
    assert.deepEqual(Object.keys(QUARANTINE_REASONS), [...QUARANTINE_REASON_NAMES]);
    assert.equal(new Set(QUARANTINE_REASON_NAMES).size, QUARANTINE_REASON_NAMES.length);
  });

  it('recognizes the names and nothing else, not even inherited keys', () => {
    for (const reason of QUARANTINE_REASON_NAMES) assert.ok(isQuarantineReason(reason), reason);
    for (const other of ['', 'toString', '__proto__', 'constructor', 'Bad-Key', 'bad-key ']) assert.equal(isQuarantineReason(other), false, other);
  });
});
