/**
 * The CLI's text for people: durations as `4m05s`, tables that never pass 100 columns, and a JSON
 * mistake named by option or file, line and column.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonErrorText, jsonOptionValue, keyOption, lineAndColumn } from '../../../../bin/cli/json-input.js';
import { intIn } from '../../../../bin/cli/options.js';
import { humanDuration, renderTable, summaryLine } from '../../../../bin/cli/output.js';
import { CliError } from '../../../../bin/cli/errors.js';

describe('CLI text', () => {
  it('writes durations for people', () => {
    assert.deepEqual([850, 7_200, 45_000, 245_052, 3 * 3600_000 + 120_000, 2 * 86_400_000 + 4 * 3600_000].map(humanDuration), ['850ms', '7.2s', '45s', '4m05s', '3h02m', '2d04h']);
  });

  it('cuts the flexible columns of a wide table to 100 columns, keeping the others whole', () => {
    const rows = [['public.orders', 'x'.repeat(300), '12345', 'y'.repeat(80)]];
    const text = renderTable([{ header: 'table' }, { header: 'row', flex: true }, { header: 'n', align: 'right' }, { header: 'more', flex: true }], rows);
    for (const line of text.split('\n')) assert.ok(line.length <= 100, `${line.length}`);
    assert.match(text, /public\.orders {2}x+… {2}12345 {2}y+…/);
  });

  it('ends --json with {"summary":{…}} and may keep older top-level fields beside it', () => {
    assert.deepEqual(JSON.parse(summaryLine({ command: 'erase', itemsDeleted: 1 }, { itemDeleted: true })), { summary: { command: 'erase', itemsDeleted: 1 }, itemDeleted: true });
  });
});

describe('JSON the user typed', () => {
  it('names the option, the line and the column, and shows an example', () => {
    assert.throws(
      () => keyOption('{order_id: 7}'),
      (e: unknown) => e instanceof CliError && e.message === "--key is not valid JSON at line 1, column 2: Quoted object key expected but got 'o'" && e.fix === `--key '{"order_id": 7}'`,
    );
    assert.throws(() => keyOption('[7]'), (e: unknown) => e instanceof CliError && e.message === '--key must be a JSON object of the key columns');
    assert.equal(String((jsonOptionValue('--key', '{"id": 12345678901234567890}', '{}') as { id: unknown }).id), '12345678901234567890', 'exact, not through a float');
  });

  it('finds the line and column of a config file mistake from the parser position', () => {
    const text = '{\n  "name": "shop",\n  "tables": [}\n}';
    let message = '';
    try {
      JSON.parse(text);
    } catch (e) {
      message = jsonErrorText('the file', text, e);
    }
    assert.equal(message, "the file is not valid JSON at line 3, column 14: Array item expected but got '}'");
    assert.deepEqual(lineAndColumn('ab\ncd', 4), { line: 2, column: 2 });
  });

  it('refuses a numeric option outside its range, naming the range', () => {
    const batch = intIn(1, 10_000);
    assert.equal(batch('500'), 500);
    for (const bad of ['0', 'abc', '', '1.5', '10001', ' ']) assert.throws(() => batch(bad), /must be an integer from 1 to 10000/);
  });
});
