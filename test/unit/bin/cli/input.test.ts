/**
 * `tidemark plan` and `apply` read their input as bytes (issue 10, item 8): a line that is not
 * valid UTF-8 reaches the pipeline unchanged and is reported as `invalid-utf8`, never applied with
 * U+FFFD in place of the bad bytes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseMessages, splitLines } from '../../../../bin/cli/input.js';
import { runPlan } from '../../../../bin/cli/plan.js';
import { parseConfig } from '../../../../lib/config/config.js';
import { pgMessage } from '../../../helpers/debezium.js';

const config = parseConfig({
  name: 'input-test',
  tables: [{ source: 'public.customers', target: 'customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'input-test-raw' },
});

const insert = (id: number, name: string, lsn: number) => JSON.stringify(pgMessage({ table: 'customers', op: 'c', after: { id, name }, lsn, lastCommitLsn: lsn - 8 }));

function file(parts: readonly (string | Uint8Array)[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-input-'));
  const path = join(dir, 'in.jsonl');
  writeFileSync(path, Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)))));
  return path;
}

describe('CLI input read as bytes', () => {
  it('splits on the newline byte only, keeping every other byte, and skips blank lines', () => {
    const bytes = Buffer.from([0x61, 0x0a, 0xff, 0xfe, 0x0d, 0x0a, 0x20, 0x0a, 0x62]);
    assert.deepEqual(
      splitLines(bytes).map((l) => [...l]),
      [[0x61], [0xff, 0xfe, 0x0d], [0x20], [0x62]],
    );
    const { messages } = parseMessages(bytes, 'value');
    assert.deepEqual(
      messages.map((m) => [m.line, [...(m.value ?? [])]]),
      [
        [1, [0x61]],
        [2, [0xff, 0xfe, 0x0d]],
        [4, [0x62]],
      ],
    );
  });

  it('plan reports a line with invalid UTF-8 as invalid-utf8 and applies the others', () => {
    // "Ren\xE9" in Latin-1: the byte 0xE9 alone is not UTF-8. Read as text it would become "Ren\uFFFD".
    const bad = Buffer.concat([Buffer.from(insert(2, 'Ren', 33_228_016).replace('"Ren"', '"Ren'), 'utf8')]);
    const cut = bad.indexOf(Buffer.from('"Ren')) + 4;
    const latin1 = Buffer.concat([bad.subarray(0, cut), Buffer.from([0xe9, 0x22]), bad.subarray(cut)]);
    const path = file([insert(1, 'Ann', 33_228_008), '\n', latin1, '\n', insert(3, 'Cy', 33_228_024), '\n']);
    const report = runPlan(config, path, 'value');
    assert.deepEqual(
      report.problems.map((p) => [p.line, p.reason.split(':')[0]]),
      [[2, 'invalid-utf8']],
    );
    assert.deepEqual(report.lines.map((l) => JSON.parse(l).row.name).sort(), ['Ann', 'Cy']);
  });

  it('record shape: an envelope line that is not UTF-8 or not JSON goes to the pipeline as bytes and is rejected there', () => {
    const path = file(['{"value": ', Buffer.from([0xc3, 0x28]), '}\n', '{"value": \n']);
    const { messages, problems } = parseMessages(readFileSync(path), 'record');
    assert.equal(problems.length, 0);
    assert.equal(messages.length, 2);
    const report = runPlan(config, path, 'record');
    assert.deepEqual(
      report.problems.map((p) => [p.line, p.reason.split(':')[0]]),
      [
        [1, 'invalid-utf8'],
        [2, 'invalid-json'],
      ],
    );
  });

  it('record shape: keyBase64 and valueBase64 carry bytes exactly; a lone surrogate in a text value is refused, not rewritten', () => {
    const key = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
    const line = JSON.stringify({ keyBase64: key.toString('base64'), valueBase64: Buffer.from('{"x":1}').toString('base64'), topic: 't' });
    const { messages, problems } = parseMessages(Buffer.from(`${line}\n{"value":"\\udc80"}\n{"valueBase64":"@@"}\n`), 'record');
    assert.equal(messages.length, 1);
    assert.deepEqual([...(messages[0]?.key ?? [])], [...key]);
    assert.equal(Buffer.from(messages[0]?.value ?? []).toString('utf8'), '{"x":1}');
    assert.deepEqual(
      problems.map((p) => [p.line, /surrogate|base64/.test(p.reason)]),
      [
        [2, true],
        [3, true],
      ],
    );
  });
});

