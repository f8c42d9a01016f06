/** `tidemark run` checkpoints: atomic writes, and recovery from a torn or empty file. */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CheckpointFile } from '../../../../bin/local/checkpoints.js';

const dirs: string[] = [];
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-ckpt-'));
  dirs.push(dir);
  return join(dir, 'checkpoints', 'cdc.json');
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('checkpoints', () => {
  it('starts empty, saves, and loads what was saved, leaving no temporary file', () => {
    const path = fresh();
    const file = new CheckpointFile(path);
    assert.deepEqual(file.load(), {});
    file.save({ 'shardId-0': '100' });
    file.save({ 'shardId-0': '200', 'shardId-1': '7' });
    assert.deepEqual(new CheckpointFile(path).load(), { 'shardId-0': '200', 'shardId-1': '7' });
    assert.deepEqual(readdirSync(join(path, '..')).sort(), ['cdc.json', 'cdc.json.prev']);
  });

  for (const [name, content] of [
    ['empty', ''],
    ['torn', '{"shardId-0": "20'],
    ['not an object', '[1,2]'],
    ['a non-string sequence', '{"shardId-0": 5}'],
  ] as const) {
    it(`recovers from a ${name} checkpoint: the previous one, with a warning`, () => {
      const path = fresh();
      const warnings: string[] = [];
      const file = new CheckpointFile(path, (m) => warnings.push(m));
      file.save({ 'shardId-0': '100' });
      file.save({ 'shardId-0': '200' });
      writeFileSync(path, content);
      assert.deepEqual(file.load(), { 'shardId-0': '100' });
      assert.equal(warnings.length, 1);
    });
  }

  it('starts from the trim horizon when neither the file nor its previous version is whole', () => {
    const path = fresh();
    const file = new CheckpointFile(path, () => {});
    writeFileSync(path, '');
    assert.deepEqual(file.load(), {});
    file.save({ a: '1' });
    assert.deepEqual(file.load(), { a: '1' });
    assert.equal(existsSync(`${path}.prev`), false, 'a torn file is not kept as the previous version');
  });
});
