/** The telemetry contract: names unique, identity helper, hour-row keys, and the docs table checked against it. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { STATUS_COLUMNS } from '../../../../bin/cli/state.js';
import {
  COUNTER_DESCRIPTIONS,
  COUNTER_NAMES,
  COUNTERS,
  DISTRIBUTION_DESCRIPTIONS,
  DISTRIBUTIONS,
  HEALTH,
  HEALTH_DESCRIPTIONS,
  identityGap,
  METRIC_NAMES,
  OUTCOMES,
} from '../../../../functions/telemetry/contract.js';

/** The counters table of docs/operations.md, as the contract says it must read. */
function expectedDocsTable(): string {
  const rows = COUNTER_NAMES.map((c) => `| \`${c}\` | \`${COUNTERS[c].metric}\` | ${COUNTERS[c].unit} | ${COUNTERS[c].outcome ? 'yes' : ''} | ${COUNTER_DESCRIPTIONS[c]} |`);
  for (const [name, d] of Object.entries(DISTRIBUTIONS)) rows.push(`| - | \`${d.metric}\` | ${d.unit} |  | ${DISTRIBUTION_DESCRIPTIONS[name as keyof typeof DISTRIBUTIONS]} |`);
  for (const [name, h] of Object.entries(HEALTH)) rows.push(`| - | \`${h.metric}\` | ${h.unit} |  | ${HEALTH_DESCRIPTIONS[name as keyof typeof HEALTH]} |`);
  return ['| counter (status attribute) | metric | unit | outcome | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

describe('telemetry contract', () => {
  it('describes exactly the counters and distributions, in their order (descriptions apart, so the Lambda bundle leaves them out)', () => {
    assert.deepEqual(Object.keys(COUNTER_DESCRIPTIONS), COUNTER_NAMES);
    assert.deepEqual(Object.keys(DISTRIBUTION_DESCRIPTIONS), Object.keys(DISTRIBUTIONS));
    assert.deepEqual(Object.keys(HEALTH_DESCRIPTIONS), Object.keys(HEALTH));
    for (const text of [...Object.values(COUNTER_DESCRIPTIONS), ...Object.values(DISTRIBUTION_DESCRIPTIONS)]) assert.ok(text.length > 0);
  });

  it('names every metric once', () => {
    assert.equal(new Set(METRIC_NAMES).size, METRIC_NAMES.length);
    assert.deepEqual(OUTCOMES, ['applied', 'stale', 'duplicates', 'conflicts', 'superseded', 'quarantined', 'controls', 'truncates', 'failed', 'held']);
  });

  it('measures the accounting identity on summaries and status rows', () => {
    assert.equal(identityGap({ received: 5, applied: 2, stale: 1, quarantined: 1, controls: 1 }), 0);
    assert.equal(identityGap({ received: 5, applied: 2 }), 3);
    assert.equal(identityGap({ received: '4', superseded: 4, note: 'x' } as never), 0, 'status rows may hold numbers as strings');
    assert.equal(identityGap({}), 0);
  });

  it('shows received, the outcomes and placeholders as status columns', () => {
    assert.deepEqual(STATUS_COLUMNS, ['table', 'state', 'phase', 'received', ...OUTCOMES, 'placeholders', 'lagMs', 'ordering', 'lastPosition']);
  });

  it('is listed in docs/operations.md exactly as it is', () => {
    const docs = readFileSync(new URL('../../../../docs/operations.md', import.meta.url), 'utf8');
    const between = docs.split('<!-- counters:begin -->')[1]?.split('<!-- counters:end -->')[0]?.trim();
    assert.equal(between, expectedDocsTable(), `docs/operations.md is out of date; the counters table should read:\n${expectedDocsTable()}`);
  });
});
